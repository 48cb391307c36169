package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// sandbox runs `vis-agent sandbox` commands for one test: its own VIS_HOME
// and workspace, a short idle time, and a cleanup that stops every host
// the test started.
type sandbox struct {
	t    testing.TB
	bin  string
	home string
	ws   string
	env  []string
}

func newSandbox(t testing.TB, py testenv.Python, extra ...string) *sandbox {
	t.Helper()
	home := t.TempDir()
	sb := &sandbox{t: t, bin: testenv.Binary(t), home: home, ws: t.TempDir()}
	sb.env = userEnv(py, home, append([]string{"VIS_ENV_IDLE_TTL_MS=120000"}, extra...))
	t.Cleanup(sb.stopAll)
	return sb
}

// stopAll stops every session's host, and kills what does not stop.
func (sb *sandbox) stopAll() {
	folders, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "sessions", "*"))
	for _, f := range folders {
		var meta struct{ Name, Workspace string }
		if data, err := os.ReadFile(filepath.Join(f, "session.json")); err == nil {
			json.Unmarshal(data, &meta)
			cmd := exec.Command(sb.bin, "sandbox", "stop", "--force", "--session", meta.Name, "--workspace", meta.Workspace)
			cmd.Env = sb.env
			cmd.Run()
		}
		rec := sb.record(f)
		for _, pid := range []int{rec.HostPID, rec.ChildPID} {
			if pid > 0 && processAlive(pid) && strings.Contains(cmdline(pid), "sandbox") {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

type hostRecord struct {
	HostPID  int `json:"host_pid"`
	ChildPID int `json:"child_pid"`
}

func (sb *sandbox) record(folder string) hostRecord {
	var r hostRecord
	data, _ := os.ReadFile(filepath.Join(folder, "host.json"))
	json.Unmarshal(data, &r)
	return r
}

// folder is the one session folder of name.
// hostLog waits up to 30 s for session name's host.log to contain every
// want: the proxy logs a connection when it ends (with its byte counts),
// which can be after the block that opened it has answered.
func (sb *sandbox) hostLog(name string, wants ...string) {
	sb.t.Helper()
	path := filepath.Join(sb.folder(name), "host.log")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		log, _ := os.ReadFile(path)
		missing := false
		for _, w := range wants {
			missing = missing || !strings.Contains(string(log), w)
		}
		if !missing || time.Now().After(deadline) {
			contains(sb.t, "the host's log", string(log), wants...)
			return
		}
	}
}

func (sb *sandbox) folder(name string) string {
	sb.t.Helper()
	m, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "sessions", name+"-*"))
	if len(m) != 1 {
		sb.t.Fatalf("session folders of %s: %v", name, m)
	}
	return m[0]
}

type result struct {
	stdout, stderr string
	code           int
}

func (sb *sandbox) command(args ...string) *exec.Cmd {
	cmd := exec.Command(sb.bin, append([]string{"sandbox"}, args...)...)
	cmd.Env = sb.env
	cmd.Dir = sb.ws
	return cmd
}

func (sb *sandbox) run(args ...string) result {
	sb.t.Helper()
	return sb.runFor(3*time.Minute, args...)
}

// runFor is run, failing the test when the command takes longer than
// bound (a hang).
func (sb *sandbox) runFor(bound time.Duration, args ...string) result {
	sb.t.Helper()
	cmd := sb.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		sb.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		sb.t.Fatalf("vis-agent sandbox %s hung", strings.Join(args, " "))
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// block runs code in session name and requires status want.
func (sb *sandbox) block(name, code string, want int, extra ...string) result {
	sb.t.Helper()
	r := sb.run(append([]string{"run", "--session", name, "-c", code}, extra...)...)
	if r.code != want {
		sb.t.Fatalf("block %q: status %d, want %d\nstdout: %s\nstderr: %s", code, r.code, want, r.stdout, r.stderr)
	}
	return r
}

func (sb *sandbox) jsonBlock(name, code string, extra ...string) map[string]any {
	sb.t.Helper()
	r := sb.run(append([]string{"run", "--json", "--session", name, "-c", code}, extra...)...)
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		sb.t.Fatalf("--json output: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return v
}

// oldestAndNewest are the oldest and the newest CPython found (one, when
// only one is).
func oldestAndNewest(t *testing.T) []testenv.Python {
	pys := testenv.Pythons(t)
	if len(pys) > 1 {
		pys = []testenv.Python{pys[0], pys[len(pys)-1]}
	}
	return pys
}

func contains(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestSandboxSessions is a session's life on every CPython: persistence
// across commands, repair, errors, a stop and the restore notice with what
// came back and what did not, del, spill files, kill -9 of the child and
// of the host.
func TestSandboxSessions(t *testing.T) {
	t.Parallel()
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			// The shared packages are importable, as in `vis-agent python`.
			pkgs := t.TempDir()
			os.WriteFile(filepath.Join(pkgs, "vis_shared_mod.py"), []byte("WHERE = 'shared'\n"), 0o644)
			sb := newSandbox(t, py, "VIS_PYTHON_PACKAGES="+pkgs)
			if r := sb.block("pk", "import vis_shared_mod\nprint(vis_shared_mod.WHERE)", 0); r.stdout != "shared\n" {
				t.Errorf("a shared package: %q", r.stdout)
			}
			r := sb.block("s", "x = 41\ndef inc(n=1):\n    \"\"\"Adds to x.\"\"\"\n    return x + n\nprint(inc())", 0)
			if r.stdout != "42\n" {
				t.Fatalf("first block printed %q", r.stdout)
			}
			if r := sb.block("s", "print(inc(2), session.name, session.python == sys.version.split()[0])", 0); r.stdout != "43 s True\n" {
				t.Errorf("second block printed %q", r.stdout)
			}
			// Errors: the block's frames, the helper's source line.
			r = sb.block("s", "y = 0\ninc('a')", 1)
			contains(t, "traceback", r.stderr, `File "<block 3>", line 2, in <module>`, `File "<block 1>", line 4, in inc`, "return x + n", "TypeError")
			if strings.Contains(r.stderr, "driver.py") {
				t.Errorf("the runtime's frames are shown:\n%s", r.stderr)
			}
			// Repair: the note comes first, the block runs.
			r = sb.block("s", "print('fixed'", 0)
			if !strings.HasPrefix(r.stdout, "Repaired this block before running it. Python refused it with") || !strings.HasSuffix(r.stdout, "fixed\n") {
				t.Errorf("repaired block printed %q", r.stdout)
			}
			// Not repairable: Python's message, the line with a caret; nothing ran.
			r = sb.block("s", "ran = 1\nz = [1, 2\nq = }", 1)
			contains(t, "unrepairable block", r.stderr, "SyntaxError", "^")
			if r := sb.block("s", "print('ran' in globals())", 0); r.stdout != "False\n" {
				t.Errorf("an unrepairable block ran: %q", r.stdout)
			}
			r = sb.block("s", "# only a comment\n\n", 1)
			contains(t, "comment-only block", r.stderr, "only comments")
			// JSON: exactly the documented fields.
			v := sb.jsonBlock("s", "print('j'); 1/0")
			var keys []string
			for k := range v {
				keys = append(keys, k)
			}
			want := "attachments duration_ms error notice repair_note repaired restarted session stdout timed_out workspace"
			if got := strings.Join(sortStrings(keys), " "); got != want {
				t.Errorf("--json fields: %s, want %s", got, want)
			}
			e, _ := v["error"].(map[string]any)
			if v["stdout"] != "j\n" || e["type"] != "ZeroDivisionError" || e["line"] != 1.0 || !strings.HasPrefix(e["excerpt"].(string), "1: print('j'); 1/0") {
				t.Errorf("--json result: %v", v)
			}
			// A value that cannot be saved, a helper that uses it, a spilled
			// string, and a deleted name.
			sb.block("s", "gen = (i for i in range(3))\ndef use_gen():\n    return next(gen)\nbig = 'b' * (3 << 20)\ngone = 5\ndel gone", 0)
			sb.run("stop", "--session", "s")
			r = sb.block("s", "print(inc(), len(big))", 0)
			contains(t, "restore notice", r.stdout, "[Sandbox restarted]", "stopped", "inc", "gen", "use_gen", "42 "+str(3<<20)+"\n")
			if strings.Contains(r.stdout, "gone") {
				t.Errorf("a deleted name came back:\n%s", r.stdout)
			}
			r = sb.block("s", "print(gen)", 1)
			contains(t, "NameError of a lost name", r.stderr, "NameError", "gen", "did not come back")
			if r := sb.block("s", "print(x)", 0); strings.Contains(r.stdout, "[Sandbox restarted]") {
				t.Errorf("the notice was shown twice:\n%s", r.stdout)
			}
			// kill -9 of the child, then of the host.
			folder := sb.folder("s")
			syscall.Kill(sb.record(folder).ChildPID, syscall.SIGKILL)
			r = sb.block("s", "print(x)", 0)
			contains(t, "notice after the child was killed", r.stdout, "[Sandbox restarted]", "signal 9", "41\n")
			host := sb.record(folder).HostPID
			syscall.Kill(host, syscall.SIGKILL)
			r = sb.block("s", "print(x)", 0)
			contains(t, "notice after the host was killed", r.stdout, "[Sandbox restarted]", "host process was killed", "41\n")
			// The timeout's SIGINT interrupts a runaway loop on this CPython.
			v = sb.jsonBlock("s", "while True: pass", "--timeout", "3s")
			if e, _ := v["error"].(map[string]any); v["timed_out"] != true || e["type"] != "KeyboardInterrupt" {
				t.Errorf("timed out loop: %v", v)
			}
			// defs lists what the session defined.
			d := sb.run("defs", "--session", "s")
			contains(t, "defs", d.stdout, "inc(n=<int>)", "Adds to x.", "x: int")
		})
	}
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func str(n int) string { return strconv.Itoa(n) }

// TestSandboxTimeoutAndRetire: a runaway loop is interrupted at its
// timeout and the child lives on; a block stuck in C, and one that ignores
// SIGINT, get their child retired with a hang record, and the next block
// runs restored in a new one.
func TestSandboxTimeoutAndRetire(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	sb.block("loop", "keep = 7", 0)
	child := sb.record(sb.folder("loop")).ChildPID
	started := time.Now()
	v := sb.jsonBlock("loop", "print('spinning', flush=True)\nwhile True: pass", "--timeout", "1s")
	if took := time.Since(started); took > 8*time.Second {
		t.Errorf("the 3 s timeout took %s", took)
	}
	e, _ := v["error"].(map[string]any)
	if v["timed_out"] != true || e["type"] != "KeyboardInterrupt" || v["stdout"] != "spinning\n" {
		t.Errorf("timed out block: %v", v)
	}
	if r := sb.block("loop", "print(keep)", 0); r.stdout != "7\n" || sb.record(sb.folder("loop")).ChildPID != child {
		t.Errorf("after an interrupt the child changed or lost state: %q", r.stdout)
	}

	var wg sync.WaitGroup
	for name, code := range map[string]string{
		"stuck":    "print('into C')\nsum(range(10**15))",
		"ignoring": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb.block(name, "kept = '"+name+"'", 0)
			pid := sb.record(sb.folder(name)).ChildPID
			r := sb.block(name, code, 1, "--timeout", "3s")
			contains(t, name+" block", r.stderr, "retired", "hang record")
			if name == "stuck" && r.stdout != "into C\n" {
				t.Errorf("the output printed before the retire: %q", r.stdout)
			}
			dirs, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "logs", "*", fmt.Sprintf("sandbox-%s-%d", name, pid)))
			if len(dirs) != 1 {
				t.Errorf("%s: no hang record folder for pid %d", name, pid)
				return
			}
			for _, f := range []string{"hang.json", "python-stacks.log"} {
				st, err := os.Stat(filepath.Join(dirs[0], f))
				if err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("%s: %s: %v %v", name, f, err, st)
				}
			}
			stacks, _ := os.ReadFile(filepath.Join(dirs[0], "python-stacks.log"))
			contains(t, name+" stacks", string(stacks), "<block 2>")
			if processAlive(pid) {
				t.Errorf("%s: the retired child %d is alive", name, pid)
			}
			r = sb.block(name, "print(kept)", 0)
			contains(t, name+" next block", r.stdout, "[Sandbox restarted]", "retired", name+"\n")
		}()
	}
	wg.Wait()
}

// TestSandboxClients: clients starting a session at once get one host; a
// second block waits its turn and says so; a client that goes away
// interrupts its block; interrupt stops a block.
func TestSandboxClients(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = sb.run("run", "--session", "race", "-c", fmt.Sprintf("import os\nprint(os.getppid())\nn%d = %d", i, i))
		}()
	}
	wg.Wait()
	hosts := map[string]bool{}
	for _, r := range results {
		if r.code != 0 {
			t.Fatalf("a racing client failed: %+v", r)
		}
		hosts[r.stdout] = true
	}
	if len(hosts) != 1 {
		t.Errorf("racing clients saw %d hosts: %v", len(hosts), hosts)
	}

	slow := sb.command("run", "--session", "race", "-c", "import time\ntime.sleep(2.5)\nprint('slow done')")
	var slowOut bytes.Buffer
	slow.Stdout = &slowOut
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	r := sb.block("race", "print('second')", 0)
	slow.Wait()
	contains(t, "waiting client", r.stderr, "waiting")
	if r.stdout != "second\n" || slowOut.String() != "slow done\n" {
		t.Errorf("outputs: %q %q", r.stdout, slowOut.String())
	}

	gone := sb.command("run", "--session", "race", "-c", "import time\ntime.sleep(3)\nfinished = True")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	gone.Process.Kill()
	gone.Wait()
	if r := sb.block("race", "print('finished' in globals())", 0); r.stdout != "False\n" {
		t.Errorf("the block of a client that went away: %q", r.stdout)
	}

	spin := sb.command("run", "--session", "race", "-c", "print('spin', flush=True)\nwhile True: pass")
	var spinErr bytes.Buffer
	stdout, _ := spin.StdoutPipe()
	spin.Stderr = &spinErr
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	stdout.Read(buf)
	if r := sb.run("interrupt", "--session", "race"); r.code != 0 {
		t.Errorf("interrupt: %+v", r)
	}
	spin.Wait()
	if spin.ProcessState.ExitCode() != 1 || !strings.Contains(spinErr.String(), "KeyboardInterrupt") {
		t.Errorf("interrupted block: %d %s", spin.ProcessState.ExitCode(), spinErr.String())
	}

	// A thread of an earlier block that keeps printing between blocks
	// does not confuse the next requests.
	sb.block("race", "import threading\ndef chatter():\n    while True:\n        print('tick')\n        time.sleep(0.001)\nthreading.Thread(target=chatter, daemon=True).start()", 0)
	time.Sleep(500 * time.Millisecond)
	if r := sb.block("race", "print('next')", 0); !strings.Contains(r.stdout, "next\n") {
		t.Errorf("after a chattering thread: %q", r.stdout)
	}
	if d := sb.run("defs", "--session", "race"); d.code != 0 || !strings.Contains(d.stdout, "chatter") {
		t.Errorf("defs after a chattering thread: %+v", d)
	}
	sb.run("restart", "--session", "race")

	// Ctrl-C on the client interrupts its block.
	spin = sb.command("run", "--session", "race", "-c", "print('spin', flush=True)\nwhile True: pass")
	spinErr.Reset()
	stdout, _ = spin.StdoutPipe()
	spin.Stderr = &spinErr
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	stdout.Read(buf)
	spin.Process.Signal(os.Interrupt)
	spin.Wait()
	if spin.ProcessState.ExitCode() != 1 || !strings.Contains(spinErr.String(), "KeyboardInterrupt") {
		t.Errorf("block interrupted by Ctrl-C: %d %s", spin.ProcessState.ExitCode(), spinErr.String())
	}
}

// TestSandboxLifecycle: idle exit, list, restart, rm, LRU eviction, a
// VIS_HOME too deep for a socket path, and bad command lines.
func TestSandboxLifecycle(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py, "VIS_ENV_CACHE_MAX=2")
	for _, name := range []string{"a", "b"} {
		sb.block(name, "v = '"+name+"'", 0)
	}
	sb.block("c", "v = 'c'", 0)
	// a, least recently used, had its child stopped for c.
	if pid := sb.record(sb.folder("a")).ChildPID; pid != 0 {
		t.Errorf("session a still has child %d with VIS_ENV_CACHE_MAX=2", pid)
	}
	r := sb.block("a", "print(v)", 0)
	contains(t, "evicted session", r.stdout, "[Sandbox restarted]", "memory", "a\n")

	var rows []map[string]any
	l := sb.run("list", "--json")
	if err := json.Unmarshal([]byte(l.stdout), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("list --json: %v %s", err, l.stdout)
	}
	for _, row := range rows {
		if row["state"] != "running" || row["workspace"] != sb.ws {
			t.Errorf("list row: %v", row)
		}
	}
	// A change no block names (a thread's, after its block) is in the last
	// snapshot a stop takes.
	sb.block("t", "import threading, time\ndata = [1]\nthreading.Timer(0.2, data.append, [2]).start()", 0)
	time.Sleep(time.Second)
	sb.block("t", "x = 1", 0)
	// stop, restart and rm say what they did, in one line.
	if r := sb.run("stop", "--session", "t"); r.stdout != "Stopped session \"t\"; its next block restores the snapshot.\n" || r.stderr != "" {
		t.Errorf("stop: %+v", r)
	}
	if r := sb.run("stop", "--session", "t"); r.code != 0 || r.stdout != "Session \"t\" was not running.\n" {
		t.Errorf("stop again: %+v", r)
	}
	contains(t, "a thread's change after stop", sb.block("t", "print(data)", 0).stdout, "[1, 2]\n")

	if r := sb.run("restart", "--session", "b"); r.stdout != "Restarted session \"b\"; its next block restores the snapshot.\n" || r.stderr != "" {
		t.Errorf("restart: %+v", r)
	}
	contains(t, "after restart", sb.block("b", "print(v)", 0).stdout, "restarted (vis-agent sandbox restart)", "b\n")
	if r := sb.run("rm", "--session", "b"); r.code != 0 || r.stdout != "Removed session \"b\" of "+sb.ws+": its snapshot, spill files and attachments.\n" {
		t.Errorf("rm: %+v", r)
	}
	if r := sb.block("b", "print('v' in globals())", 0); r.stdout != "False\n" {
		t.Errorf("after rm: %q", r.stdout)
	}

	// Past the memory budget, the other session's child is stopped first.
	tight := newSandbox(t, py, "VIS_ENV_RSS_BUDGET_MB=1")
	tight.block("m1", "data = list(range(100000))", 0)
	tight.block("m2", "other = 1", 0)
	if pid := tight.record(tight.folder("m1")).ChildPID; pid != 0 {
		t.Errorf("session m1 still has child %d past VIS_ENV_RSS_BUDGET_MB=1", pid)
	}
	contains(t, "after a memory eviction", tight.block("m1", "print(len(data))", 0).stdout, "freed memory", "100000\n")

	// Idle exit.
	idle := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=300")
	idle.block("i", "w = 1", 0)
	host := idle.record(idle.folder("i")).HostPID
	for deadline := time.Now().Add(20 * time.Second); processAlive(host); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle host did not exit")
		}
	}
	contains(t, "after idle", idle.block("i", "print(w)", 0).stdout, "idle for 300 ms", "1\n")

	// A VIS_HOME deeper than a unix socket path allows.
	deep := newSandbox(t, py)
	deep.home = filepath.Join(deep.home, strings.Repeat("d", 60), strings.Repeat("e", 60))
	deep.env = append(deep.env, "VIS_HOME="+deep.home)
	if r := deep.block("deep", "print('deep')", 0); r.stdout != "deep\n" {
		t.Errorf("deep VIS_HOME: %+v", r)
	}

	// No usable CPython: one clear line, status 1, at once.
	broken := newSandbox(t, py, "VIS_PYTHON_NATIVE_PATH=/nonexistent/libpython3.12.so")
	started := time.Now()
	r = broken.block("b", "print(1)", 1)
	contains(t, "without a CPython", r.stderr, "did not start", "/nonexistent/libpython3.12.so")
	if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || time.Since(started) > 20*time.Second {
		t.Errorf("without a CPython: %q after %s", r.stderr, time.Since(started))
	}

	for _, args := range [][]string{
		{"run", "--session", "bad name", "-c", "1"},
		{"run", "--session", strings.Repeat("n", 65), "-c", "1"},
		{"run", "--timeout", "soon", "-c", "1"},
		{"run", "--timeout", "-3s", "-c", "1"},
		{"run", "--nope"},
		{"run", "-c", "1", "file.py"},
		{"run", "--workspace", "/does/not/exist", "-c", "1"},
		{"rm"},
	} {
		r := sb.run(args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("%v: status %d, stderr %q: want 2 and one line", args, r.code, r.stderr)
		}
	}
}

// TestSandboxHugeOutput: 100 MB printed reaches the client whole, and the
// host does not hold it.
func TestSandboxHugeOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	cmd := sb.command("run", "--session", "big", "-c", "line = 'x' * 99\nfor i in range(1_000_000): print(line)")
	var n countWriter
	cmd.Stdout = &n
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if n != 100_000_000 {
		t.Errorf("printed %d bytes, want 100000000", n)
	}
	host := sb.record(sb.folder("big")).HostPID
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", host))
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if kb > 64<<10 {
				t.Errorf("the host peaked at %d kB while passing 100 MB on", kb)
			}
		}
	}
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// TestSandboxKillDuringSnapshot kills the child or the host at random
// moments of blocks that rewrite a large snapshot (pickled values and a
// spill file); the snapshot must always restore.
func TestSandboxKillDuringSnapshot(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	const block = "import random\nvals = {i: random.random() for i in range(30000)}\nbig = 'q' * (2 << 20) + str(random.random())\nrounds = rounds + 1 if 'rounds' in globals() else 1"
	sb.block("k", block, 0)
	folder := sb.folder("k")
	for i := 0; i < 16; i++ {
		cmd := sb.command("run", "--session", "k", "-c", block)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i*7%60) * time.Millisecond)
		rec := sb.record(folder)
		victim := rec.ChildPID
		if i%3 == 2 {
			victim = rec.HostPID
		}
		if victim > 0 {
			syscall.Kill(victim, syscall.SIGKILL)
		}
		cmd.Wait()
	}
	sb.run("stop", "--session", "k")
	r := sb.block("k", "print(len(vals), len(big) > 2 << 20, rounds >= 1)", 0)
	contains(t, "after the kills", r.stdout, "[Sandbox restarted]", "30000 True True\n")
	if strings.Contains(r.stdout, "Did not come back") {
		t.Errorf("values were lost to a kill:\n%s", r.stdout)
	}
}

// TestSandboxBlockSources: a block from a file or standard input; the
// hidden commands stay out of the help.
func TestSandboxBlockSources(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	os.WriteFile(filepath.Join(sb.ws, "b.py"), []byte("print('from a file')\n"), 0o644)
	if r := sb.run("run", "b.py"); r.stdout != "from a file\n" {
		t.Errorf("FILE: %+v", r)
	}
	cmd := sb.command("run", "-")
	cmd.Stdin = strings.NewReader("print('from stdin')\n")
	if out, err := cmd.Output(); err != nil || string(out) != "from stdin\n" {
		t.Errorf("stdin: %q %v", out, err)
	}
	help := sb.run("--help")
	contains(t, "sandbox help", help.stdout, "run", "defs", "list", "stop", "restart", "interrupt", "rm")
	if strings.Contains(help.stdout, "  host ") || strings.Contains(help.stdout, "  child ") {
		t.Errorf("hidden commands in the help:\n%s", help.stdout)
	}
}

// TestSandboxCtrlCWhileQueued: Ctrl-C (SIGINT) of a `sandbox run` whose
// block waits behind another client's withdraws its own block, which never
// runs, and leaves the running one alone.
func TestSandboxCtrlCWhileQueued(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	sb.block("q", "queued_ran = False", 0)

	other := sb.command("run", "--session", "q", "-c", "import time\nprint('other started', flush=True)\ntime.sleep(4)\nprint('other finished')")
	var out, errOut bytes.Buffer
	started := make(chan struct{})
	other.Stdout, other.Stderr = &lineSignal{w: &out, line: "other started\n", seen: started}, &errOut
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill() })
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the other client's block did not start: %s%s", out.String(), errOut.String())
	}

	queued := sb.command("run", "--session", "q", "-c", "queued_ran = True")
	var qOut bytes.Buffer
	queued.Stdout, queued.Stderr = &qOut, &qOut
	if err := queued.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // queued behind the other block by now
	queued.Process.Signal(syscall.SIGINT)
	if err := queued.Wait(); err == nil || !strings.Contains(qOut.String(), "KeyboardInterrupt: the block was interrupted before it started") {
		t.Errorf("the interrupted queued run: %v\n%s", err, qOut.String())
	}
	if err := other.Wait(); err != nil || !strings.Contains(out.String(), "other finished") || strings.Contains(errOut.String(), "KeyboardInterrupt") {
		t.Errorf("the other client's block after the Ctrl-C: %v\n%s%s", err, out.String(), errOut.String())
	}
	if r := sb.block("q", "print(queued_ran)", 0); !strings.Contains(r.stdout, "False") {
		t.Errorf("the withdrawn block ran: %s", r.stdout)
	}
}

// lineSignal writes to w and closes seen once line has been written.
type lineSignal struct {
	mu   sync.Mutex
	w    *bytes.Buffer
	line string
	seen chan struct{}
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.seen != nil && strings.Contains(l.w.String(), l.line) {
		close(l.seen)
		l.seen = nil
	}
	return n, err
}
