package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestProxyFigures measures the proxy against direct on loopback: a
// 100 MB download and 1,000 small requests (on one kept-alive
// connection, and each on a new one), through the proxy and direct.
// VIS_PROXY_FIGURES=1 runs it (BENCHMARKS.md); it fails when the proxy
// keeps less than 0.8 of the direct throughput or adds more than 1 ms a
// request.
func TestProxyFigures(t *testing.T) {
	if os.Getenv("VIS_PROXY_FIGURES") != "1" {
		t.Skip("VIS_PROXY_FIGURES=1 runs the figures")
	}
	const big = 100 << 20
	chunk := make([]byte, 1<<20)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(big))
			for i := 0; i < big/len(chunk); i++ {
				w.Write(chunk)
			}
			return
		}
		io.WriteString(w, "small")
	})
	srv := httptest.NewServer(handler)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(handler)
	defer tlsSrv.Close()
	u, _ := url.Parse(srv.URL)
	tu, _ := url.Parse(tlsSrv.URL)
	proxy, _ := start(t, []string{"127.0.0.1"}, nil, nil)
	client := func(via *url.URL, keepAlive bool) *http.Client {
		tr := &http.Transport{DisableKeepAlives: !keepAlive, DisableCompression: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		if via != nil {
			tr.Proxy = http.ProxyURL(via)
		}
		return &http.Client{Transport: tr}
	}
	get := func(c *http.Client, path string) {
		target := "http://" + u.Host + path
		if path == "/big-tls" {
			target = "https://" + tu.Host + "/big"
		}
		resp, err := c.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	best := func(n int, f func()) time.Duration {
		var min time.Duration
		for i := 0; i < n; i++ {
			start := time.Now()
			f()
			if d := time.Since(start); min == 0 || d < min {
				min = d
			}
		}
		return min
	}
	// download returns the best MB/s of direct and proxied downloads
	// taking turns (the machine's load changes less between two turns
	// than between two series), and the process's CPU time a MB of
	// each (all three parties are in this process).
	download := func(path string) (direct, proxied float64, dcpu, pcpu time.Duration) {
		const rounds = 7
		cd, cp := client(nil, true), client(proxy, true)
		var bd, bp time.Duration
		for i := 0; i < rounds; i++ {
			for _, side := range []struct {
				c    *http.Client
				best *time.Duration
				cpu  *time.Duration
			}{{cd, &bd, &dcpu}, {cp, &bp, &pcpu}} {
				cpu, start := cpuTime(), time.Now()
				get(side.c, path)
				d := time.Since(start)
				*side.cpu += cpuTime() - cpu
				if *side.best == 0 || d < *side.best {
					*side.best = d
				}
			}
		}
		mb := func(d time.Duration) float64 { return float64(big) / d.Seconds() / 1e6 }
		return mb(bd), mb(bp), dcpu / (rounds * big >> 20), pcpu / (rounds * big >> 20)
	}
	small := func(via *url.URL, keepAlive bool) time.Duration {
		c := client(via, keepAlive)
		return best(3, func() {
			for i := 0; i < 1000; i++ {
				get(c, "/small")
			}
		}) / 1000
	}
	for _, path := range []string{"/big-tls", "/big"} {
		direct, proxied, dcpu, pcpu := download(path)
		how := map[string]string{"/big-tls": "HTTPS (CONNECT)", "/big": "plain HTTP"}[path]
		fmt.Printf("100 MB download, %s: direct %.0f MB/s (CPU %v a MB), through the proxy %.0f MB/s (CPU %v a MB) (%.2fx)\n",
			how, direct, dcpu.Round(time.Microsecond), proxied, pcpu.Round(time.Microsecond), proxied/direct)
		if proxied < 0.8*direct {
			t.Errorf("%s through the proxy %.0f MB/s, less than 0.8 of direct (%.0f MB/s)", how, proxied, direct)
		}
	}
	for _, keep := range []bool{true, false} {
		d, p := small(nil, keep), small(proxy, keep)
		fmt.Printf("1,000 small requests (keep-alive %v): direct %v, through the proxy %v a request (+%v)\n", keep, d.Round(time.Microsecond), p.Round(time.Microsecond), (p - d).Round(time.Microsecond))
		if p-d > time.Millisecond {
			t.Errorf("the proxy adds %v a request (keep-alive %v), more than 1 ms", p-d, keep)
		}
	}
}

// cpuTime is the CPU time this process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
