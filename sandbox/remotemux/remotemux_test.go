package remotemux

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the multiplexer (roleEnv=mux: Run, its engine
// the test binary again) and the remote side (roleEnv=engine: Serve, each
// stream answered with its flags, then what it reads, upper-cased, once
// its input ends).
const roleEnv = "REMOTEMUX_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "mux":
		url := os.Args[len(os.Args)-1]
		idle, _ := time.ParseDuration(os.Getenv("IDLE"))
		engine := []string{os.Args[0]}
		if e := os.Getenv("ENGINE"); e != "" {
			engine = []string{"/bin/sh", "-c", e}
		}
		os.Setenv(roleEnv, "engine")
		if Run(Options{URL: url, Engine: engine, Dir: os.Getenv("DIR"), Idle: idle, Log: os.Stderr}) != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "engine":
		Serve(os.Stdin, os.Stdout, os.Stderr, func(args []string, in io.Reader, out io.Writer) {
			fmt.Fprintf(out, "args %s\n", strings.Join(args, " "))
			b, _ := io.ReadAll(in)
			fmt.Fprintf(out, "got %s\n", strings.ToUpper(string(b)))
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testConfig is a client's configuration whose multiplexer is the test
// binary, in a folder of the test; env adds to its environment.
func testConfig(t *testing.T, env ...string) Config {
	t.Helper()
	// A short folder: the socket's path fits in sun_path either way, and
	// a long one is tested on its own.
	dir, err := os.MkdirTemp("", "rmux")
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Dir: filepath.Join(dir, "remote"), Command: []string{os.Args[0]},
		Env: append(os.Environ(), append([]string{roleEnv + "=mux", "DIR=" + filepath.Join(dir, "remote"), "IDLE=1m"}, env...)...)}
	t.Cleanup(func() {
		for _, pid := range muxPids(t, c) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	})
	return c
}

// muxPids are the multiplexers c's log says were started.
func muxPids(t *testing.T, c Config) []int {
	b, _ := os.ReadFile(PathsOf(c.Dir, "test://x").Log)
	var pids []int
	for _, m := range regexp.MustCompile(`mux (\d+): .* serving`).FindAllStringSubmatch(string(b), -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// exchange sends text on a stream with args (its first half with the
// stream's header, before the ack), ends its input, and returns all it
// answered.
func exchange(t *testing.T, c Config, args []string, text string) string {
	t.Helper()
	conn, err := c.Connect("test://x", args, []byte(text[:len(text)/2]))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, text[len(text)/2:])
	conn.CloseWrite()
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the multiplexer %d still runs after %s", pid, within)
		}
	}
}

// Streams carry their own flags and half-close; every client, even
// racing to start it, uses the one multiplexer.
func TestStreamsShareOneMultiplexer(t *testing.T) {
	c := testConfig(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			want := fmt.Sprintf("args --session s%d\ngot HELLO %d\n", i, i)
			if got := exchange(t, c, []string{"--session", fmt.Sprintf("s%d", i)}, fmt.Sprintf("hello %d", i)); got != want {
				t.Errorf("stream %d: %q, want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	if pids := muxPids(t, c); len(pids) != 1 {
		t.Errorf("%d multiplexers started: %v", len(pids), pids)
	}
	st, err := os.Stat(c.Dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the folder: %v %v", st.Mode(), err)
	}
	st, err = os.Stat(PathsOf(c.Dir, "test://x").Socket)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the socket: %v %v", st.Mode(), err)
	}
}

// The multiplexer exits after its idle time without a stream, and when its
// socket is removed; a new one then starts.
func TestMultiplexerLifetime(t *testing.T) {
	c := testConfig(t, "IDLE=400ms")
	exchange(t, c, nil, "a")
	pid := muxPids(t, c)[0]
	time.Sleep(200 * time.Millisecond)
	exchange(t, c, nil, "b") // within the idle time: the same one
	if pids := muxPids(t, c); len(pids) != 1 {
		t.Fatalf("a second multiplexer within the idle time: %v", pids)
	}
	// A stream open longer than the idle time keeps it.
	conn, err := c.Connect("test://x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	conn.CloseWrite()
	if b, _ := io.ReadAll(conn); !strings.Contains(string(b), "got") {
		t.Errorf("a long stream: %q", b)
	}
	conn.Close()
	waitGone(t, pid, 5*time.Second)
	if _, err := os.Stat(PathsOf(c.Dir, "test://x").Socket); !os.IsNotExist(err) {
		t.Errorf("the socket outlived its multiplexer: %v", err)
	}
	exchange(t, c, nil, "c")
	pids := muxPids(t, c)
	if len(pids) != 2 {
		t.Fatalf("multiplexers: %v", pids)
	}
	os.Remove(PathsOf(c.Dir, "test://x").Socket)
	waitGone(t, pids[1], 5*time.Second)
}

// An engine that dies ends every open stream (the client reads the end of
// its connection) and its multiplexer; the next client starts another.
func TestEngineDeath(t *testing.T) {
	c := testConfig(t)
	conn, err := c.Connect("test://x", []string{"--session", "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line, _ := bufio.NewReader(conn).ReadString('\n')
	if line != "args --session d\n" {
		t.Fatalf("first line %q", line)
	}
	pid := muxPids(t, c)[0]
	// The engine is a child of whichever of the multiplexer's threads
	// forked it: every thread's list is read.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	killed := 0
	for _, task := range tasks {
		engines, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(engines)) {
			n, _ := strconv.Atoi(f)
			if syscall.Kill(n, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no engine under the multiplexer %d", pid)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(conn); len(b) != 0 || err != nil {
		t.Errorf("after the engine's death: %q %v", b, err)
	}
	waitGone(t, pid, 10*time.Second)
	if got := exchange(t, c, nil, "again"); got != "args \ngot AGAIN\n" {
		t.Errorf("through a new multiplexer: %q", got)
	}
}

// An engine that does not speak the multiplexed protocol (a remote
// vis-agent that does not know --mux) makes Connect fail, with why.
func TestEngineWithoutMux(t *testing.T) {
	c := testConfig(t, `ENGINE=echo 'Error: unknown flag: --mux' >&2; exit 1`)
	_, err := c.Connect("test://x", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer as a multiplexed connect") {
		t.Fatalf("Connect: %v", err)
	}
	p := PathsOf(c.Dir, "test://x")
	log, _ := os.ReadFile(p.Log)
	if !strings.Contains(string(log), "unknown flag: --mux") {
		t.Errorf("the log lacks the engine's words:\n%s", log)
	}
	// The next client does not try again for a while: its engine would
	// fail as well, at its cost.
	if _, err := c.Connect("test://x", nil, nil); err == nil || !strings.Contains(err.Error(), "failed to start") {
		t.Fatalf("the second Connect: %v", err)
	}
	if again, _ := os.ReadFile(p.Log); string(again) != string(log) {
		t.Errorf("the second Connect started another multiplexer:\n%s", again)
	}
	// Past RetryAfter, it does.
	old := time.Now().Add(-RetryAfter - time.Second)
	os.Chtimes(p.Failed, old, old)
	if _, err := c.Connect("test://x", nil, nil); err == nil || !strings.Contains(err.Error(), "did not answer as a multiplexed connect") {
		t.Fatalf("Connect after RetryAfter: %v", err)
	}
}

// A socket path longer than sun_path holds is reached through the folder's
// descriptor.
func TestLongSocketPath(t *testing.T) {
	c := testConfig(t)
	long := filepath.Join(filepath.Dir(c.Dir), strings.Repeat("d", 100), "remote")
	c.Dir = long
	for i, kv := range c.Env {
		if strings.HasPrefix(kv, "DIR=") {
			c.Env[i] = "DIR=" + long
		}
	}
	if got := exchange(t, c, nil, "x"); got != "args \ngot X\n" {
		t.Errorf("through a long path: %q", got)
	}
	if pids := muxPids(t, c); len(pids) == 1 {
		os.Remove(PathsOf(c.Dir, "test://x").Socket)
		waitGone(t, pids[0], 5*time.Second)
	}
}

// A long-lived multiplexer's log is bounded: past its size, one line says
// the rest goes nowhere.
func TestCappedLog(t *testing.T) {
	var b strings.Builder
	c := &cappedLog{w: &b, left: 10}
	for _, s := range []string{"12345", "6789", "abc", "defg"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); !strings.HasPrefix(got, "123456789mux ") || !strings.HasSuffix(got, "the log is full: the rest goes nowhere\n") || strings.Count(got, "full") != 1 {
		t.Errorf("log: %q", got)
	}
}

// A connection to the socket that does not present the multiplexer's key
// is not passed on: its first line would choose connect's flags there
// (--no-jail), so the socket alone, which jailed code may find a way to
// reach, must not be enough (as a session's socket). It failed when the
// multiplexer checked the peer's user only.
func TestStreamNeedsTheKey(t *testing.T) {
	c := testConfig(t)
	exchange(t, c, nil, "a") // the multiplexer runs
	p := PathsOf(c.Dir, "test://x")
	for _, first := range []string{
		`{"args":["--no-jail"]}` + "\n",
		`{"v":1,"key":"` + strings.Repeat("0", 64) + `"}` + "\n" + `{"args":["--no-jail"]}` + "\n",
	} {
		conn, err := net.Dial("unix", p.Socket)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, first)
		conn.(*net.UnixConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(conn)
		conn.Close()
		if len(b) != 0 || err != nil {
			t.Errorf("a connection without the key was answered %q (%v)", b, err)
		}
	}
	if st, err := os.Stat(p.Key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v", err)
	}
	if got := exchange(t, c, nil, "b"); got != "args \ngot B\n" {
		t.Errorf("a client with the key: %q", got)
	}
}
