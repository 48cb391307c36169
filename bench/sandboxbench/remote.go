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
	block := func(s *client.Session) func() (time.Duration, error) {
		return func() (time.Duration, error) { return timeBlock(s, "x = 1") }
	}
	ways := []struct {
		name    string
		session bool // a block's round trip, compared with the local one
		time    func() (time.Duration, error)
	}{
		{"local", true, block(&client.Session{Folder: session.Find(l.Sessions(), m), Meta: m})},
		{"multiplexer", true, block(client.OpenRemote(t, m, args, mux))},
		{"engine per request", true, block(client.OpenRemote(t, m, args, nil))},
		{"a line: cat", false, cat.roundTrip},
		{"a line: engine running cat", false, engineCat.roundTrip},
	}
	times := make([][]time.Duration, len(ways))
	fmt.Printf("idle before each round trip: %s; load before: %s", gap, loadavg())
	for i := -3; i < n; i++ {
		for k, w := range ways {
			time.Sleep(gap)
			d, err := w.time()
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
		if w.session {
			fmt.Printf("%-28s median %8.3f ms (%+.3f ms)\n", w.name, ms(med), ms(med-local))
		} else {
			fmt.Printf("%-28s median %8.3f ms\n", w.name, ms(med))
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
