package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// testCA makes a certificate authority and a certificate it signed for
// 127.0.0.1; it returns the server's TLS certificate and the CA's PEM file.
func testCA(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, leafKey := key(), key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vis-agent test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}, file
}

// tlsServer serves h over TLS with cert on 127.0.0.1.
func tlsServer(t *testing.T, cert tls.Certificate, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// withoutTrust is env without the trust and proxy variables the tests'
// own environment may carry.
func withoutTrust(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
			"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestSandboxTrust: a session started with SSL_CERT_FILE naming a CA the
// test made reaches a local HTTPS server with it, in a block (the jail
// reads the bundle) and in install() (uv, run by the host, from an HTTPS
// index); http_proxy reaches the block too; API keys do not. Without the
// variable, the block's TLS failure ends with a one-line hint naming
// SSL_CERT_FILE.
func TestSandboxTrust(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	cert, caFile := testCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over TLS") })
	index := installIndex(t)
	mux.Handle("/simple/", http.StripPrefix("/simple/", http.FileServer(http.Dir(index))))
	url := tlsServer(t, cert, mux)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "via the proxy for "+r.URL.String())
	}))
	t.Cleanup(proxy.Close)

	sb := installSandbox(t, py, url+"/simple")
	sb.env = append(withoutTrust(sb.env), "SSL_CERT_FILE="+caFile, "http_proxy="+proxy.URL, "OPENAI_API_KEY=secret")
	r := sb.block("t", `import urllib.request, os
print(urllib.request.urlopen(`+pyQuote(url+"/hello")+`).read().decode())
print(urllib.request.urlopen("http://vis-agent-test.invalid/x").read().decode())
print("key:", "OPENAI_API_KEY" in os.environ, os.environ.get("SSL_CERT_FILE") == `+pyQuote(caFile)+`)
print(install("vis-tiny"))`, 0, "--network", "on")
	contains(t, "the block with the CA", r.stdout, "hello over TLS", "via the proxy for http://vis-agent-test.invalid/x",
		"key: False True", "installed 2 packages")

	bare := installSandbox(t, py, url+"/simple")
	bare.env = withoutTrust(bare.env)
	r = bare.block("t", `import urllib.request
urllib.request.urlopen(`+pyQuote(url+"/hello")+`)`, 1)
	contains(t, "the block without the CA", r.stderr, "CERTIFICATE_VERIFY_FAILED",
		"TLS certificate verification failed: if this machine uses its own CA, start the session from a shell where SSL_CERT_FILE")
	r = bare.block("t", `install("vis-tiny")`, 1)
	contains(t, "install() without the CA", r.stderr, "RuntimeError: install: uv failed")
}

func pyQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
