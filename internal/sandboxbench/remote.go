package main

import (
	"fmt"
	"os"
	"time"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// remoteRoundTrips times `x = 1` on the warm session bench of ws through
// the client API, in turn: here (its socket), through url with the
// multiplexer (bin's `sandbox mux`), and through url with an engine run
// per request; n rounds after 3 warm-up ones. The client process's own
// start is left out: the added latency of the connection alone.
func remoteRoundTrips(bin, url, ws string, n int) error {
	t, err := client.ParseTarget(url)
	if err != nil {
		return err
	}
	l := paths.New(os.Getenv)
	m := session.Meta{Name: "bench", Workspace: ws}
	args := []string{"--session", "bench", "--workspace", ws}
	mux := &remotemux.Config{Dir: l.RemoteMux(), Command: []string{bin, "sandbox", "mux", "--"}, Env: os.Environ()}
	ways := []struct {
		name string
		s    *client.Session
	}{
		{"local", &client.Session{Folder: session.Find(l.Sessions(), m), Meta: m}},
		{"multiplexer", client.OpenRemote(t, m, args, mux)},
		{"engine per request", client.OpenRemote(t, m, args, nil)},
	}
	times := make([][]time.Duration, len(ways))
	fmt.Printf("load before: %s", loadavg())
	for i := -3; i < n; i++ {
		for k, w := range ways {
			d, err := timeBlock(w.s, "x = 1")
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if i >= 0 {
				times[k] = append(times[k], d)
			}
		}
	}
	fmt.Printf("load after: %s", loadavg())
	local := median(times[0])
	for k, w := range ways {
		med := median(times[k])
		fmt.Printf("%-20s median %8.3f ms (%+.3f ms)\n", w.name, ms(med), ms(med-local))
	}
	return nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}
