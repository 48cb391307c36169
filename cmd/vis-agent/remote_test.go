package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// sshServer is a real OpenSSH server of one test, on a loopback port: its
// host key, client key, server and client configs are made in the test's
// temp folder, and its sessions get the environment of the "remote"
// sandbox (its own VIS_HOME). The client side reaches it through an `ssh`
// on PATH that adds `-F` the test's config: the user's ~/.ssh is never
// read or written.
type sshServer struct {
	dir    string
	bin    string // the folder of the ssh wrapper, first on the local PATH
	alias  string // the Host of the client config
	remote *sandbox
	// sessions counts the ssh connections sshd accepted.
	sessions atomic.Int64
}

// remoteEngine skips a test of a real remote engine (sshd, podman) unless
// VIS_TEST_REMOTE=1, which make test-remote sets after it installed them:
// make test neither needs nor installs them. Under make test-remote a
// missing piece fails the test, so that it cannot pass without running.
func remoteEngine(t *testing.T, need ...string) {
	t.Helper()
	if os.Getenv("VIS_TEST_REMOTE") != "1" {
		t.Skip("a real remote engine: run make test-remote")
	}
	for _, p := range need {
		var err error
		if filepath.IsAbs(p) {
			_, err = os.Stat(p)
		} else {
			_, err = exec.LookPath(p)
		}
		if err != nil {
			t.Fatalf("%s is missing (%v): make test-remote installs it", p, err)
		}
	}
}

// startSSH starts sshd for remote (make test-remote installs OpenSSH's
// server and makes its privilege separation folder, /run/sshd).
func startSSH(t *testing.T, remote *sandbox) *sshServer {
	t.Helper()
	remoteEngine(t, "/usr/sbin/sshd", "/run/sshd", "ssh", "ssh-keygen")
	dir := t.TempDir()
	srv := &sshServer{dir: dir, bin: filepath.Join(dir, "bin"), alias: "vistest", remote: remote}
	for _, key := range []string{"host_key", "client_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub := func(key string) string {
		b, err := os.ReadFile(filepath.Join(dir, key+".pub"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("authorized_keys", pub("client_key")+"\n", 0o600)
	remoteHome := t.TempDir() // HOME of the remote sessions: uv's cache lands there
	var env []string
	for _, kv := range remote.env {
		if strings.HasPrefix(kv, "VIS_") {
			env = append(env, strconv.Quote(kv))
		}
	}
	env = append(env, strconv.Quote("HOME="+remoteHome))
	if err := os.Mkdir(srv.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write("bin/ssh", fmt.Sprintf("#!/bin/sh\nexec %s -F %s \"$@\"\n", mustLook(t, "ssh"), filepath.Join(dir, "ssh_config")), 0o755)
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		write("sshd_config", strings.Join([]string{
			"ListenAddress 127.0.0.1", "Port " + port, "HostKey " + filepath.Join(dir, "host_key"),
			"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"), "PidFile " + filepath.Join(dir, "sshd.pid"),
			"StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
			"PermitRootLogin prohibit-password", "SetEnv " + strings.Join(env, " "), "",
		}, "\n"), 0o600)
		write("known_hosts", fmt.Sprintf("[127.0.0.1]:%s %s\n", port, pub("host_key")), 0o600)
		write("ssh_config", strings.Join([]string{
			"Host " + srv.alias, "  HostName 127.0.0.1", "  Port " + port, "  User " + currentUser(t),
			"  IdentityFile " + filepath.Join(dir, "client_key"), "  IdentitiesOnly yes",
			"  UserKnownHostsFile " + filepath.Join(dir, "known_hosts"), "  StrictHostKeyChecking yes", "  BatchMode yes",
			"  ControlPath " + filepath.Join(dir, "cm-%C"), "",
		}, "\n"), 0o600)
		cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			cmd.Wait()
		})
		listening := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			var log []string
			for sc.Scan() {
				log = append(log, sc.Text())
				if strings.Contains(sc.Text(), "Server listening") {
					listening <- ""
					break
				}
			}
			listening <- strings.Join(log, "\n") // what it said before it exited
			for sc.Scan() {
				if strings.Contains(sc.Text(), "Accepted publickey") {
					srv.sessions.Add(1)
				}
			}
		}()
		select {
		case msg := <-listening:
			if msg == "" {
				return srv
			}
			if attempt < 2 && strings.Contains(msg, "Address already in use") {
				continue
			}
			t.Fatalf("sshd did not start:\n%s", msg)
		case <-time.After(20 * time.Second):
			t.Fatal("sshd did not listen within 20 s")
		}
	}
}

func mustLook(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func currentUser(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// connectionsSince is how many ssh connections sshd accepted since it had
// accepted before: its log is read as it comes, so this waits up to 5 s
// for want of them, then a little more for any beyond.
func (srv *sshServer) connectionsSince(before, want int64) int64 {
	for deadline := time.Now().Add(5 * time.Second); srv.sessions.Load()-before < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return srv.sessions.Load() - before
}

// url is the --host of the server, running the built binary there.
func (srv *sshServer) url() string { return "ssh://" + srv.alias + srv.remote.bin }

// client is a sandbox of the local machine (its own VIS_HOME, which a
// remote session must leave empty) whose ssh is the test's.
func (srv *sshServer) client(t *testing.T, py testenv.Python) *sandbox {
	lb := newSandbox(t, py)
	for i, kv := range lb.env {
		if strings.HasPrefix(kv, "PATH=") {
			lb.env[i] = "PATH=" + srv.bin + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return lb
}

// TestRemoteSSH drives sessions through --host ssh://… to a real sshd on
// this machine: blocks, state, streaming, Ctrl-C, a timeout, list and the
// control commands, attachments read and commented through the
// connection and written locally, MCP with a cancelled call, a dropped
// connection (the block goes on there) and a remote vis-agent that cannot
// serve the request.
func TestRemoteSSH(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	rb := newSandbox(t, py)
	srv := startSSH(t, rb)
	lb := srv.client(t, py)
	noMuxLeft(t, lb)
	host := srv.url()
	remote := func(args ...string) []string {
		return append(args, "--host", host, "--session", "r", "--workspace", rb.ws)
	}

	t.Run("run", func(t *testing.T) {
		lb.ok(remote("run", "-c", "x = 41\ndef inc(n):\n    return n + 1")...)
		if r := lb.ok(remote("run", "-c", "print(inc(x))")...); r.stdout != "42\n" {
			t.Errorf("the second block: %q", r.stdout)
		}
		r := lb.run(remote("run", "-c", "1/0")...)
		if r.code != 1 || !strings.Contains(r.stderr, "ZeroDivisionError") {
			t.Errorf("a failing block: %+v", r)
		}
		// The session is the remote machine's: nothing here.
		if _, err := os.Stat(filepath.Join(lb.home, "sandbox", "sessions")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the local VIS_HOME has sessions: %v", err)
		}
		rb.folder("r")
		d := lb.ok(remote("defs")...)
		contains(t, "defs through ssh", d.stdout, "inc(n)", "x: int")
		// The same through VIS_SANDBOX_HOST.
		lb.env = append(lb.env, "VIS_SANDBOX_HOST="+host)
		defer func() { lb.env = lb.env[:len(lb.env)-1] }()
		if r := lb.ok("run", "--session", "r", "--workspace", rb.ws, "-c", "print(x)"); r.stdout != "41\n" {
			t.Errorf("through VIS_SANDBOX_HOST: %q", r.stdout)
		}
		l := lb.ok("list", "--json")
		contains(t, "list through ssh", l.stdout, `"name": "r"`, `"state": "running"`, rb.ws)
	})

	t.Run("carried before Go", func(t *testing.T) {
		// A client of its own, whose one run plan is this command line's:
		// the code last, as runpath.c wants it.
		lc := srv.client(t, py)
		noMuxLeft(t, lc)
		carried := func(args ...string) []string {
			return append([]string{args[0], "--host", host, "--session", "r", "--workspace", rb.ws}, args[1:]...)
		}
		pastRacy(t, lc.bin)
		lc.ok(carried("run", "-c", "x = 41")...)
		_, ino := lc.runPlan()
		for _, code := range []string{
			`print("out"); import sys; print("err", file=sys.stderr, flush=True); print("more")`,
			`x + 1`,
			`1/0`,
			`print('fixed'`,
			`attach(b"hello" * 300, "a.txt")`,
			`raise SystemExit(3)`,
		} {
			c, g := lc.run(carried("run", "-c", code)...), lc.goRun(carried("run", "-c", code)...)
			if c.code != g.code || unstable.ReplaceAllString(c.stdout, "") != unstable.ReplaceAllString(g.stdout, "") ||
				unstable.ReplaceAllString(c.stderr, "") != unstable.ReplaceAllString(g.stderr, "") {
				t.Errorf("block %q: carried %d %q %q, through Go %d %q %q", code, c.code, c.stdout, c.stderr, g.code, g.stdout, g.stderr)
			}
		}
		checkCtrlC(t, lc, carried)
		if _, now := lc.runPlan(); now != ino {
			t.Fatal("the plan was saved again: the blocks went through Go")
		}
		// The multiplexer killed under a streaming block: Go's error for a
		// dropped connection, and the block goes on there.
		cmd, stderr := startStreamed(t, lc, carried("run", "-c", "import time\nprint('go', flush=True)\ntime.sleep(2)\nopen('finished-carried', 'w').close()")...)
		mux := theMux(t, lc)
		syscall.Kill(mux, syscall.SIGKILL)
		cmd.Wait()
		if msg := stderr.String(); cmd.ProcessState.ExitCode() != 1 ||
			msg != "vis-agent: no answer from the remote session: the connection to "+host+" ended (the connection dropped); a block goes on running there\n" {
			t.Errorf("dropped connection: status %d, stderr %q", cmd.ProcessState.ExitCode(), msg)
		}
		waitFile(t, filepath.Join(rb.ws, "finished-carried"))
		if _, now := lc.runPlan(); now != ino {
			t.Fatal("the dropped block went through Go")
		}
		for deadline := time.Now().Add(10 * time.Second); processAlive(mux); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the killed multiplexer still runs")
			}
		}
		// No multiplexer answering: Go starts one, and the block runs once.
		if r := lc.ok(carried("run", "-c", "print(x + 1)")...); r.stdout != "42\n" {
			t.Errorf("without a multiplexer: %q", r.stdout)
		}
		if theMux(t, lc) == mux {
			t.Error("no new multiplexer")
		}
		if _, now := lc.runPlan(); now == ino {
			t.Error("a run without a multiplexer did not go through Go (which saves the plan again)")
		}
	})

	t.Run("streaming and Ctrl-C", func(t *testing.T) { checkCtrlC(t, lb, remote) })

	t.Run("timeout", func(t *testing.T) {
		v := lb.jsonBlock("r", "while True: pass", "--host", host, "--workspace", rb.ws, "--timeout", "3s")
		if e, _ := v["error"].(map[string]any); v["timed_out"] != true || e["type"] != "KeyboardInterrupt" {
			t.Errorf("timed out loop: %v", v)
		}
	})

	t.Run("attachments", func(t *testing.T) {
		lb.ok(remote("run", "-c", "attach(b'remote bytes\\n', filename='notes.txt', commentable=True)")...)
		l := lb.ok(remote("attachments")...)
		contains(t, "attachments through ssh", l.stdout, "notes.txt", "13 B", "yes")
		lb.ok(remote("attachment", "comment", "notes.txt", "--version", "-1", "looks right")...)
		dest := filepath.Join(t.TempDir(), "got.txt")
		lb.ok(remote("attachment", "get", "notes.txt", "-o", dest)...)
		if b, err := os.ReadFile(dest); string(b) != "remote bytes\n" {
			t.Errorf("attachment get wrote %q, %v", b, err)
		}
		r := lb.ok(remote("run", "-c", "print(get_attachment('notes.txt').get('comments'))")...)
		contains(t, "the comment, seen in the session", r.stdout, "looks right")
		lb.failsWith(1, "no attachment", remote("attachment", "get", "missing.txt", "-o", dest)...)
	})

	t.Run("mcp", func(t *testing.T) {
		c := connectMCPCommand(t, lb.command("mcp", "--host", host, "--session", "m", "--workspace", rb.ws))
		c.python("y = 2", false)
		if text, _ := c.python("print(y * 21)", false); text != "42\n" {
			t.Errorf("python through ssh: %q", text)
		}
		// A cancelled call interrupts its block there.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, _, _, err := c.call(ctx, "python", map[string]any{"code": "import time\nopen('m-started', 'w').close()\ntime.sleep(60)\nslept = True"}, false)
			done <- err
		}()
		waitFile(t, filepath.Join(rb.ws, "m-started"))
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
		started := time.Now()
		if text, _ := c.python("print('slept' in globals())", false); text != "False\n" {
			t.Errorf("after the cancel: %q", text)
		}
		if took := time.Since(started); took > 15*time.Second {
			t.Errorf("the call after the cancel took %s", took)
		}
	})

	t.Run("repl", func(t *testing.T) {
		tm := newTerm(t, lb.env, lb.ws, 120, 32, lb.bin, "sandbox", "repl", "--host", host, "--session", "q", "--workspace", rb.ws)
		tm.waitFor(">>>", "nothing defined yet")
		tm.typed("z = 5")
		tm.typed("print(z * 2, flush=True)")
		tm.waitFor("\n10")
		tm.tmux("send-keys", "-t", "0", "-l", "print('spinning', flush=True)")
		tm.keys("M-Enter")
		tm.typed("while True: pass")
		tm.keys("Enter")
		tm.waitFor("\nspinning", "running")
		tm.keys("C-c")
		tm.waitFor("KeyboardInterrupt")
		tm.waitForIdle()
		tm.typed("print('z is', z)")
		tm.waitFor("z is 5")
	})

	t.Run("one connection for many requests", func(t *testing.T) {
		lb.ok(remote("run", "-c", "pass")...)
		mux := theMux(t, lb)
		ssh := childNamed(t, mux, "ssh")
		before := srv.sessions.Load()
		for range 3 {
			lb.ok(remote("run", "-c", "pass")...)
		}
		lb.ok("list", "--host", host)
		if n := srv.connectionsSince(before, 0); n != 0 {
			t.Errorf("4 requests opened %d ssh connections", n)
		}
		if theMux(t, lb) != mux || childNamed(t, mux, "ssh") != ssh {
			t.Error("the requests did not all go through the one multiplexer and its ssh")
		}
	})

	// A dropped connection: the multiplexer's ssh killed, or the
	// multiplexer itself, under a streaming block; the block goes on there,
	// and the next request starts another multiplexer.
	for _, victim := range []string{"ssh", "vis-agent"} {
		t.Run("dropped connection: "+victim+" killed", func(t *testing.T) {
			done := "finished-" + victim
			cmd, stderr := startStreamed(t, lb, remote("run", "-c", "import time\nprint('go', flush=True)\ntime.sleep(3)\nopen('"+done+"', 'w').close()")...)
			mux := theMux(t, lb)
			pid := mux
			if victim == "ssh" {
				pid = childNamed(t, mux, "ssh")
			}
			syscall.Kill(pid, syscall.SIGKILL)
			cmd.Wait()
			msg := strings.TrimSpace(stderr.String())
			if cmd.ProcessState.ExitCode() != 1 || strings.Contains(msg, "\n") || !strings.Contains(msg, "goes on running there") {
				t.Errorf("dropped connection: status %d, stderr %q", cmd.ProcessState.ExitCode(), msg)
			}
			waitFile(t, filepath.Join(rb.ws, done))
			if r := lb.ok(remote("run", "-c", "print(x)")...); r.stdout != "41\n" {
				t.Errorf("after the drop: %q", r.stdout)
			}
			if again := theMux(t, lb); again == mux {
				t.Error("the next request did not start another multiplexer")
			}
		})
	}

	t.Run("without the multiplexer", func(t *testing.T) {
		lb.env = append(lb.env, "VIS_SANDBOX_MUX=0")
		defer func() { lb.env = lb.env[:len(lb.env)-1] }()
		mux := theMux(t, lb)
		before := srv.sessions.Load()
		if r := lb.ok(remote("run", "-c", "print(x)")...); r.stdout != "41\n" {
			t.Errorf("without the multiplexer: %q", r.stdout)
		}
		if n := srv.connectionsSince(before, 1); n != 1 {
			t.Errorf("a request without the multiplexer opened %d ssh connections", n)
		}
		// A dropped connection: the client's own ssh killed.
		cmd, stderr := startStreamed(t, lb, remote("run", "-c", "import time\nprint('go', flush=True)\ntime.sleep(3)\nopen('finished', 'w').close()")...)
		syscall.Kill(childNamed(t, cmd.Process.Pid, "ssh"), syscall.SIGKILL)
		cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if cmd.ProcessState.ExitCode() != 1 || strings.Contains(msg, "\n") || !strings.Contains(msg, "goes on running there") {
			t.Errorf("dropped connection: status %d, stderr %q", cmd.ProcessState.ExitCode(), msg)
		}
		waitFile(t, filepath.Join(rb.ws, "finished"))
		if theMux(t, lb) != mux {
			t.Error("the multiplexer changed")
		}
	})

	t.Run("the multiplexer's socket refuses another user", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil || os.Getuid() != 0 {
			t.Skip("needs root and setpriv")
		}
		mux := theMux(t, lb)
		socks, _ := filepath.Glob(filepath.Join(lb.home, "sandbox", "remote", "*.sock"))
		if len(socks) != 1 {
			t.Fatalf("sockets: %v", socks)
		}
		// Open the way for nobody (the folder's 0700 and the socket's
		// 0600 keep it out first), so that the peer check is what is
		// tested.
		for p := socks[0]; p != filepath.Dir(filepath.Dir(lb.home)); p = filepath.Dir(p) {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, st.Mode().Perm()|0o077)
			defer os.Chmod(p, st.Mode().Perm())
		}
		// Closed at once: whatever the probe did last (send, read) ends,
		// and no ack comes.
		probe := "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntry:\n    s.sendall(b'{\"args\": []}\\n')\n    got = s.recv(100)\nexcept (ConnectionResetError, BrokenPipeError):\n    got = b''\nprint(repr(got))"
		out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", probe, socks[0]).CombinedOutput()
		if strings.TrimSpace(string(out)) != "b''" || err != nil {
			t.Errorf("nobody on the socket got %q (%v)", out, err)
		}
		logs, _ := filepath.Glob(filepath.Join(lb.home, "sandbox", "remote", "*.log"))
		if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), fmt.Sprintf("mux %d: ", mux)) || !strings.Contains(string(b), "refused a connection") {
			t.Errorf("the log:\n%s", b)
		}
	})

	t.Run("the multiplexer exits when idle", func(t *testing.T) {
		syscall.Kill(theMux(t, lb), syscall.SIGKILL)
		lb.env = append(lb.env, "VIS_SANDBOX_MUX_IDLE=1s")
		defer func() { lb.env = lb.env[:len(lb.env)-1] }()
		lb.ok(remote("run", "-c", "pass")...)
		mux := theMux(t, lb)
		for deadline := time.Now().Add(15 * time.Second); processAlive(mux); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the multiplexer still runs 15 s after its last request, with an idle time of 1 s")
			}
		}
		if socks, _ := filepath.Glob(filepath.Join(lb.home, "sandbox", "remote", "*.sock")); len(socks) != 0 {
			t.Errorf("its socket is left: %v", socks)
		}
	})

	t.Run("a remote vis-agent without --mux", func(t *testing.T) {
		// An older release: connect without --mux. The client goes
		// without the multiplexer, and the request is served.
		old := filepath.Join(t.TempDir(), "vis-agent-before-mux")
		script := fmt.Sprintf("#!/bin/sh\nfor a; do [ \"$a\" = --mux ] && { echo 'Error: unknown flag: --mux' >&2; exit 1; }; done\nexec %s \"$@\"\n", rb.bin)
		if err := os.WriteFile(old, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		before := muxesOf(lb.home)
		if r := lb.ok("run", "--host", "ssh://"+srv.alias+old, "--session", "r", "--workspace", rb.ws, "-c", "print(x)"); r.stdout != "41\n" {
			t.Errorf("through an older vis-agent: %q", r.stdout)
		}
		if after := muxesOf(lb.home); len(after) != len(before) {
			t.Errorf("multiplexers before %v, after %v", before, after)
		}
		logs, _ := filepath.Glob(filepath.Join(lb.home, "sandbox", "remote", "*.log"))
		var all []byte
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			all = append(all, b...)
		}
		contains(t, "the logs", string(all), "unknown flag: --mux", "did not answer as a multiplexed connect")
		// The next request does not try again (for 5 minutes): one ssh
		// connection, its own.
		conns := srv.sessions.Load()
		lb.ok("run", "--host", "ssh://"+srv.alias+old, "--session", "r", "--workspace", rb.ws, "-c", "print(x)")
		if n := srv.connectionsSince(conns, 1); n != 1 {
			t.Errorf("the next request opened %d ssh connections", n)
		}
	})

	t.Run("control commands", func(t *testing.T) {
		lb.ok(remote("interrupt")...)
		lb.ok(remote("restart")...)
		lb.ok(remote("stop")...)
		if r := lb.run(remote("interrupt")...); r.code != 1 || !strings.Contains(r.stderr, `session "r" is not running`) {
			t.Errorf("interrupt of a stopped session: %+v", r)
		}
		lb.ok(remote("stop")...) // already stopped: fine
		if r := lb.ok(remote("run", "-c", "print(x)")...); !strings.HasSuffix(r.stdout, "41\n") {
			t.Errorf("after a stop: %q", r.stdout)
		}
		lb.ok(remote("rm", "--force")...)
		if m, _ := filepath.Glob(filepath.Join(rb.home, "sandbox", "sessions", "r-*")); len(m) != 0 {
			t.Errorf("rm through ssh left %v", m)
		}
		lb.failsWith(1, `no session "r"`, remote("attachments")...)
	})

	t.Run("the policy is the remote side's", func(t *testing.T) {
		// A request asking for no jail and the network gets connect's:
		// the remote user's settings and the flags ssh ran it with.
		cmd := exec.Command(filepath.Join(srv.bin, "ssh"), "-T", srv.alias, rb.bin+" sandbox connect --session p --no-network --workspace "+rb.ws)
		cmd.Env = lb.env
		in, _ := cmd.StdinPipe()
		defer in.Close()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(in, `{"v": 1, "op": "run", "code": "print(session.access.is_jailed, session.access.network)", "policy": {"jail": false, "network": true}}`)
		var got []string
		sc := bufio.NewScanner(out)
		for sc.Scan() && !strings.Contains(sc.Text(), `"result"`) {
			got = append(got, sc.Text())
		}
		in.Close()
		cmd.Wait()
		contains(t, "the block's access", strings.Join(got, "\n"), `"data":"True False\n"`)
	})

	t.Run("the host flags reach the remote side", func(t *testing.T) {
		r := lb.ok("run", "--host", host, "--session", "hosts", "--workspace", rb.ws, "--allow-host", "*.example.test",
			"--deny-host", "evil.example.test", "-c", "print(session.access.network, session.access.hosts)")
		if r.stdout != "True {'allow': ['pypi.org', 'files.pythonhosted.org', '*.example.test'], 'deny': ['evil.example.test']}\n" {
			t.Errorf("the remote session's network: %q", r.stdout)
		}
		lb.ok("stop", "--host", host, "--session", "hosts", "--workspace", rb.ws)
	})

	t.Run("version mismatch", func(t *testing.T) {
		// Another protocol version, as a newer client would send it.
		cmd := exec.Command(filepath.Join(srv.bin, "ssh"), "-T", srv.alias, rb.bin+" sandbox connect --workspace "+rb.ws)
		cmd.Env = lb.env
		in, _ := cmd.StdinPipe()
		defer in.Close()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(in, `{"v": 99, "op": "status"}`)
		line, _ := bufio.NewReader(out).ReadString('\n')
		contains(t, "the answer to another version", line, `"ev":"error"`, "version 99", "speaks 1", "same vis-agent release")
		in.Close()
		cmd.Wait()
		// A remote vis-agent without connect (an older release): its
		// own message, in one line.
		old := filepath.Join(t.TempDir(), "old-vis-agent")
		if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'Error: unknown command \"connect\" for \"vis-agent sandbox\"' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		lb.failsWith(1, `unknown command "connect"`, "run", "--host", "ssh://"+srv.alias+old, "-c", "print(1)")
	})
}

// muxesOf are the multiplexers of the client whose VIS_HOME is home.
func muxesOf(home string) []int {
	var pids []int
	all, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range all {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "sandbox\x00mux\x00") {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "environ"))
		if !strings.Contains("\x00"+string(env), "\x00VIS_HOME="+home+"\x00") {
			continue
		}
		if pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p))); processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// theMux is the one multiplexer of sb.
func theMux(t *testing.T, sb *sandbox) int {
	t.Helper()
	pids := muxesOf(sb.home)
	if len(pids) != 1 {
		t.Fatalf("the client's multiplexers: %v", pids)
	}
	return pids[0]
}

// noMuxLeft removes the multiplexers' folder of sb at the end of the test
// (as removing VIS_HOME does) and checks that each of them exits.
func noMuxLeft(t *testing.T, sb *sandbox) {
	t.Cleanup(func() {
		os.RemoveAll(filepath.Join(sb.home, "sandbox", "remote"))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			pids := muxesOf(sb.home)
			if len(pids) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("multiplexers outlived their socket: %v", pids)
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				return
			}
		}
	})
}

// startStreamed starts `sandbox args` (a block that prints "go" first)
// and returns once that line has streamed, with its stderr.
func startStreamed(t *testing.T, sb *sandbox, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := sb.command(args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	if l, err := bufio.NewReader(out).ReadString('\n'); l != "go\n" {
		t.Fatalf("streamed output: %q %v", l, err)
	}
	return cmd, stderr
}

// checkCtrlC runs a long block through remote (which adds --host and the
// session, whose x is 41) and presses Ctrl-C once its first line has
// streamed: the block ends with KeyboardInterrupt within 10 s, and the
// session keeps its state without the rest of the block.
func checkCtrlC(t *testing.T, sb *sandbox, remote func(...string) []string) {
	t.Helper()
	cmd, stderr := startStreamed(t, sb, remote("run", "-c", "import time\nprint('go', flush=True)\ntime.sleep(60)\nslept = True")...)
	started := time.Now()
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "KeyboardInterrupt") {
		t.Errorf("Ctrl-C: status %d, stderr %q", code, stderr.String())
	}
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("Ctrl-C took %s", took)
	}
	if r := sb.ok(remote("run", "-c", "print('slept' in globals(), x)")...); r.stdout != "False 41\n" {
		t.Errorf("after Ctrl-C: %q", r.stdout)
	}
}

// waitFile waits up to 30 s for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
	}
}

// childNamed is the pid of the child of pid whose command is name.
func childNamed(t *testing.T, pid int, name string) int {
	t.Helper()
	if c := childrenNamed(pid, name); len(c) > 0 {
		return c[0]
	}
	t.Fatalf("no %s child of %d", name, pid)
	return 0
}

// childrenNamed are the children of pid whose command is name.
func childrenNamed(pid int, name string) []int {
	var found []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			child, _ := strconv.Atoi(f)
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == name {
				found = append(found, child)
			}
		}
	}
	return found
}

// TestRemoteBadURL: a --host that could smuggle an option into ssh, or a
// scheme we do not know, is a usage error in one line, and runs nothing.
func TestRemoteBadURL(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	for _, c := range []struct{ url, want string }{
		{"ssh://-oProxyCommand=touch%20pwned", "not a URL"},
		{"ssh://-oProxyCommand=x", `invalid host "-oProxyCommand=x"`},
		{"kubectl://ns/--privileged", "invalid name"},
		{"docker://-it", "container name"},
		{"telnet://box", `unknown scheme "telnet"`},
	} {
		sb.failsWith(2, c.want, "run", "--host", c.url, "-c", "print(1)")
	}
	if _, err := os.Stat(filepath.Join(sb.ws, "pwned")); err == nil {
		t.Error("a URL ran a command")
	}
}

// TestRemoteEngines runs the kubectl:// and docker:// command lines
// against stand-ins for the engines (no cluster and no docker daemon on
// the test machines; TestRemotePodman runs the real podman): each checks
// the arguments it was given as the engine would take them, then runs the
// command part here, so the connection itself is real. What kubectl and
// docker do with them is not tested (docs/kubernetes.md says so). The
// remote session's network is the remote side's default, or what the
// flags ask.
func TestRemoteEngines(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	bin := t.TempDir()
	if err := os.Symlink(sb.bin, filepath.Join(bin, "vis-agent")); err != nil {
		t.Fatal(err)
	}
	// kubectl --context=C exec -i --namespace=N --container=K POD -- CMD...
	kubectl := `#!/bin/sh
[ "$1" = --context=prod ] && [ "$2" = exec ] && [ "$3" = -i ] && [ "$4" = --namespace=team ] && [ "$5" = --container=py ] && [ "$6" = pod-0 ] && [ "$7" = -- ] || { echo "kubectl: unexpected arguments: $*" >&2; exit 1; }
shift 7
echo run >>"$0.runs"
exec "$@"
`
	// docker exec -i NAME CMD...
	docker := `#!/bin/sh
[ "$1" = exec ] && [ "$2" = -i ] && [ "$3" = box ] || { echo "docker: unexpected arguments: $*" >&2; exit 1; }
shift 3
echo run >>"$0.runs"
exec "$@"
`
	for name, text := range map[string]string{"kubectl": kubectl, "docker": docker} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, kv := range sb.env {
		if strings.HasPrefix(kv, "PATH=") {
			sb.env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	noMuxLeft(t, sb)
	for _, url := range []string{"kubectl://team/pod-0/py?context=prod", "docker://box"} {
		sb.ok("run", "--host", url, "--session", "e", "--workspace", sb.ws, "-c", "n = n + 1 if 'n' in globals() else 1")
		if r := sb.ok("run", "--host", url, "--session", "e", "--workspace", sb.ws, "-c", "print('n', n)"); !strings.HasPrefix(r.stdout, "n ") {
			t.Errorf("through %s: %q", url, r.stdout)
		}
	}
	if r := sb.ok("run", "--session", "e", "--workspace", sb.ws, "-c", "print(n)"); r.stdout != "2\n" {
		t.Errorf("the session both engines reached: %q", r.stdout)
	}
	// One multiplexer per target, each running its engine once.
	if pids := muxesOf(sb.home); len(pids) != 2 {
		t.Errorf("multiplexers: %v", pids)
	}
	for _, engine := range []string{"kubectl", "docker"} {
		if b, _ := os.ReadFile(filepath.Join(bin, engine+".runs")); string(b) != "run\n" {
			t.Errorf("%s ran %d times for 2 requests", engine, strings.Count(string(b), "run"))
		}
	}
	// The network is the remote side's to decide, as a local run's: its
	// user's settings (by default the allow list of the package index),
	// then the flags run passes on.
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "True {'allow': ['pypi.org', 'files.pythonhosted.org']}"},
		{[]string{"--network", "on"}, "True None"},
		{[]string{"--allow-host", "x.test"}, "True {'allow': ['pypi.org', 'files.pythonhosted.org', 'x.test']}"},
		{[]string{"--no-network"}, "False None"},
		{[]string{"--network", "allow"}, "True {'allow': ['pypi.org', 'files.pythonhosted.org']}"},
	} {
		r := sb.ok(append([]string{"run", "--host", "docker://box", "--session", "net", "--workspace", sb.ws, "-c",
			"print(session.access.network, session.access.hosts)"}, c.flags...)...)
		if !strings.HasSuffix(r.stdout, c.want+"\n") {
			t.Errorf("the remote session's network under %q: %q, want %q", c.flags, r.stdout, c.want)
		}
	}
}
