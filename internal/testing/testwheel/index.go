package testwheel

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Index writes a PEP 503 "simple" index for the wheels (*.whl) in wheelDir
// under indexDir: indexDir/index.html links every project, and
// indexDir/<project>/index.html (project being the PEP 503 normalized name
// from the wheel's METADATA) links a copy of each of its wheels, beside it,
// with a #sha256= fragment and, when the wheel declares one, a
// data-requires-python attribute. pip takes file://indexDir as an
// --index-url; Serve puts it on http for tools that want that. Returns
// indexDir. Fails the test on error, and when wheelDir holds no wheel.
func Index(t testing.TB, wheelDir, indexDir string) string {
	t.Helper()
	if err := writeIndex(wheelDir, indexDir); err != nil {
		t.Fatalf("testwheel: index of %s: %v", wheelDir, err)
	}
	return indexDir
}

type indexEntry struct {
	file, sha256, requiresPython string
}

func writeIndex(wheelDir, indexDir string) error {
	wheels, err := filepath.Glob(filepath.Join(wheelDir, "*.whl"))
	if err != nil {
		return err
	}
	if len(wheels) == 0 {
		return fmt.Errorf("no *.whl file")
	}
	sort.Strings(wheels)
	projects := map[string][]indexEntry{}
	for _, w := range wheels {
		data, err := os.ReadFile(w)
		if err != nil {
			return err
		}
		name, requiresPython, err := wheelMetadata(data)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(w), err)
		}
		project := ProjectName(name)
		if want := FileName(name) + "-"; !strings.HasPrefix(strings.ToLower(filepath.Base(w)), want) {
			return fmt.Errorf("%s: file name does not start with %s although METADATA names %s", filepath.Base(w), want, name)
		}
		pdir := filepath.Join(indexDir, project)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pdir, filepath.Base(w)), data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		projects[project] = append(projects[project], indexEntry{filepath.Base(w), hex.EncodeToString(sum[:]), requiresPython})
	}

	var names []string
	for p := range projects {
		names = append(names, p)
	}
	sort.Strings(names)
	const head = "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" content=\"1.0\">\n<title>%s</title>\n</head>\n<body>\n"
	const tail = "</body>\n</html>\n"
	var root strings.Builder
	fmt.Fprintf(&root, head, "Simple index")
	for _, p := range names {
		fmt.Fprintf(&root, "<a href=\"%s/\">%s</a><br>\n", url.PathEscape(p), html.EscapeString(p))
		var page strings.Builder
		fmt.Fprintf(&page, head, "Links for "+html.EscapeString(p))
		fmt.Fprintf(&page, "<h1>Links for %s</h1>\n", html.EscapeString(p))
		for _, e := range projects[p] {
			attr := ""
			if e.requiresPython != "" {
				attr = fmt.Sprintf(" data-requires-python=\"%s\"", html.EscapeString(e.requiresPython))
			}
			fmt.Fprintf(&page, "<a href=\"%s#sha256=%s\"%s>%s</a><br>\n", url.PathEscape(e.file), e.sha256, attr, html.EscapeString(e.file))
		}
		page.WriteString(tail)
		if err := os.WriteFile(filepath.Join(indexDir, p, "index.html"), []byte(page.String()), 0o644); err != nil {
			return err
		}
	}
	root.WriteString(tail)
	return os.WriteFile(filepath.Join(indexDir, "index.html"), []byte(root.String()), 0o644)
}

// wheelMetadata reads Name and Requires-Python from the METADATA of the
// wheel in data.
func wheelMetadata(data []byte) (name, requiresPython string, err error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", "", err
	}
	for _, f := range zr.File {
		dir, base, ok := strings.Cut(f.Name, "/")
		if !ok || base != "METADATA" || !strings.HasSuffix(dir, ".dist-info") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return "", "", err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return "", "", err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				break // the body follows the headers
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.ToLower(k) {
			case "name":
				name = strings.TrimSpace(v)
			case "requires-python":
				requiresPython = strings.TrimSpace(v)
			}
		}
		if name == "" {
			return "", "", fmt.Errorf("%s has no Name", f.Name)
		}
		return name, requiresPython, nil
	}
	return "", "", fmt.Errorf("no .dist-info/METADATA")
}

// Serve serves indexDir (as Index writes it) over http on 127.0.0.1 until the
// test's cleanup and returns its index URL, "http://127.0.0.1:PORT/simple",
// for --index-url.
func Serve(t testing.TB, indexDir string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(indexDir, "index.html")); err != nil {
		t.Fatalf("testwheel: serving %s: %v (write it with Index first)", indexDir, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/simple/", http.StripPrefix("/simple/", http.FileServer(http.Dir(indexDir))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/simple"
}

// ServeTLS serves indexDir as Serve does, over https with a certificate
// for 127.0.0.1 issued by a certificate authority of its own (as a
// company's TLS inspection has), and returns the index URL and the
// authority's certificate (PEM), which no trust store holds.
func ServeTLS(t testing.TB, indexDir string) (url string, caPEM []byte) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/simple/", http.StripPrefix("/simple/", http.FileServer(http.Dir(indexDir))))
	srv := httptest.NewUnstartedServer(mux)
	cert, caPEM, err := issue()
	if err != nil {
		t.Fatalf("testwheel: a certificate for the index: %v", err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/simple", caPEM
}

// issue makes a certificate authority and a server certificate it signed
// for 127.0.0.1: the server's key pair and the authority's PEM.
func issue() (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vis-agent test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
