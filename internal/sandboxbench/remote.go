package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// remoteRoundTrips times `x = 1` on the warm session bench of ws through
// the client API, in turn: here (its socket), through url with the
// multiplexer (bin's `sandbox mux`), and through url with an engine run
// per request; n rounds after 3 warm-up ones, each after gap idle (a
// client process's start: an agent's commands come that far apart, and
// a machine whose cores went idle wakes each process on the way more
// slowly). The client process's own start is left out: the added latency
// of the connection alone. For the floor under any design, it also times
// a line sent round trip through a local `cat` and through one engine
// connection running `cat` there, kept open (nothing of ours on the way).
func remoteRoundTrips(bin, url, ws string, n int, gap time.Duration) error {
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
	cat, err := newEcho([]string{"cat"})
	if err != nil {
		return err
	}
	defer cat.close()
	engineCat, err := newEcho(t.Engine([]string{"cat"}))
	if err != nil {
		return err
	}
	defer engineCat.close()
	names := []string{ways[0].name, ways[1].name, ways[2].name, "a line: cat", "a line: engine running cat"}
	times := make([][]time.Duration, len(names))
	fmt.Printf("idle before each round trip: %s; load before: %s", gap, loadavg())
	for i := -3; i < n; i++ {
		for k := range names {
			time.Sleep(gap)
			var d time.Duration
			switch k {
			case 3:
				d, err = cat.roundTrip()
			case 4:
				d, err = engineCat.roundTrip()
			default:
				d, err = timeBlock(ways[k].s, "x = 1")
			}
			if err != nil {
				return fmt.Errorf("%s: %w", names[k], err)
			}
			if i >= 0 {
				times[k] = append(times[k], d)
			}
		}
	}
	fmt.Printf("load after: %s", loadavg())
	local := median(times[0])
	for k, name := range names {
		med := median(times[k])
		if k < len(ways) {
			fmt.Printf("%-28s median %8.3f ms (%+.3f ms)\n", name, ms(med), ms(med-local))
		} else {
			fmt.Printf("%-28s median %8.3f ms\n", name, ms(med))
		}
	}
	return nil
}

// echo is a process kept running that sends each line back.
type echo struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newEcho(argv []string) (*echo, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return &echo{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

func (e *echo) roundTrip() (time.Duration, error) {
	start := time.Now()
	if _, err := io.WriteString(e.in, "ping\n"); err != nil {
		return 0, err
	}
	if _, err := e.out.ReadString('\n'); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func (e *echo) close() {
	e.in.Close()
	e.cmd.Wait()
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}
