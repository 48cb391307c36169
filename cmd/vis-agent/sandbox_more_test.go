package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// slowRestore defines a value whose unpickling takes 3 s: a new child
// restoring it keeps a block waiting that long for its start.
const slowRestore = `class Slow:
    def __init__(self):
        self.a = 1
    def __setstate__(self, state):
        import time
        time.sleep(3)
        self.__dict__.update(state)
s = Slow()`

// TestSandboxInterruptBeforeStart: an interrupt that comes while a block
// waits for its child (here, one restoring a slow snapshot) cancels that
// block — `sandbox interrupt` and Ctrl-C of `sandbox run` alike — and the
// session goes on. The host decides this, not the CPython: the oldest and
// newest are enough.
func TestSandboxInterruptBeforeStart(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("w", slowRestore, 0)
			sb.run("restart", "--session", "w")

			// `sandbox interrupt` while the block waits for the child.
			waiting := sb.command("run", "--session", "w", "-c", "print('ran')")
			var out, errb bytes.Buffer
			waiting.Stdout, waiting.Stderr = &out, &errb
			if err := waiting.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if r := sb.run("interrupt", "--session", "w"); r.code != 0 {
				t.Fatalf("interrupt: %+v", r)
			}
			waiting.Wait()
			if code := waiting.ProcessState.ExitCode(); code != 1 || strings.Contains(out.String(), "ran") {
				t.Errorf("interrupted before it started: status %d, stdout %q", code, out.String())
			}
			contains(t, "the cancelled block's error", errb.String(), "KeyboardInterrupt", "before it started")
			if r := sb.block("w", "print(s.a)", 0); !strings.HasSuffix(r.stdout, "1\n") {
				t.Errorf("after the cancelled block: %q", r.stdout)
			}

			// Ctrl-C of `sandbox run` in the same window, on a cold host.
			if r := sb.run("stop", "--session", "w"); r.code != 0 {
				t.Fatalf("stop: %+v", r)
			}
			cold := sb.command("run", "--session", "w", "-c", "print('ran')")
			out.Reset()
			errb.Reset()
			cold.Stdout, cold.Stderr = &out, &errb
			if err := cold.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			cold.Process.Signal(os.Interrupt)
			cold.Wait()
			if code := cold.ProcessState.ExitCode(); code != 1 || strings.Contains(out.String(), "ran") {
				t.Errorf("Ctrl-C before the block started: status %d, stdout %q", code, out.String())
			}
			contains(t, "the cancelled block's error", errb.String(), "KeyboardInterrupt", "before it started")
			// The restore notice waits for the first block that runs.
			r := sb.block("w", "print(s.a)", 0)
			contains(t, "the block after the cancelled one", r.stdout, "[Sandbox restarted]", "Restored classes (1): Slow; variables (1): s.")
			if !strings.HasSuffix(r.stdout, "\n1\n") {
				t.Errorf("after the cancelled block: %q", r.stdout)
			}
		})
	}
}

// TestSandboxListCountsNames: `sandbox list` counts every name the
// snapshot brings back (helpers, classes, imports, variables), running or
// stopped.
func TestSandboxListCountsNames(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	sb.block("n", "import json as j\nimport email.utils\ndef f():\n    pass\nclass C:\n    pass\nx = 1\nunsaved = (i for i in [])", 0)
	for _, state := range []string{"running", "stopped"} {
		// The names count comes from the save after the block, which may
		// end after its answer: the log waits for it.
		sb.run("log", "--session", "n", "-n", "1")
		r := sb.run("list", "--json")
		var rows []struct {
			Name       string `json:"name"`
			State      string `json:"state"`
			SavedNames int    `json:"saved_names"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("list --json: %v\n%s", err, r.stdout)
		}
		if rows[0].State != state || rows[0].SavedNames != 5 { // j, email, f, C, x
			t.Errorf("list --json: %+v, want %s with 5 names", rows[0], state)
		}
		// the NAMES column, after SNAPSHOT's "N B"
		text := sb.run("list").stdout
		lines := strings.Split(strings.TrimSpace(text), "\n")
		if f := strings.Fields(lines[1]); len(f) < 8 || f[7] != "5" {
			t.Errorf("list: NAMES is not 5:\n%s", text)
		}
		sb.run("stop", "--session", "n")
	}
}

// TestSandboxOutputOrder: what a block prints and what it writes with
// os.write to file descriptors 1 and 2 come out in the order written.
func TestSandboxOutputOrder(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	r := sb.block("o", "import os, sys\nfor i in range(300):\n    print('p', i)\n    os.write(1, b'w %d\\n' % i)\n    if i % 7 == 0:\n        sys.stdout.flush()\n        os.write(2, b'e %d\\n' % i)\n        print('q', i, file=sys.stderr)", 0)
	var want, wantErr strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&want, "p %d\nw %d\n", i, i)
		if i%7 == 0 {
			fmt.Fprintf(&wantErr, "e %d\nq %d\n", i, i)
		}
	}
	if r.stdout != want.String() || r.stderr != wantErr.String() {
		t.Errorf("out of order:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
}

// TestSandboxEnvironment: a session runs with a fixed environment, not
// the one of the client that happened to start it: a second client with
// another environment sees the same one, and no client's secrets.
func TestSandboxEnvironment(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	show := "import os\nprint(sorted((k, v) for k, v in os.environ.items() if k in ('PATH', 'LANG', 'TZ', 'LC_ALL', 'SECRET_TOKEN', 'PYTHONWARNINGS', 'VIS_ENV_IDLE_TTL_MS')))"
	base := sb.env
	sb.env = append(append([]string(nil), base...), "TZ=Asia/Tokyo", "LC_ALL=C", "LANG=de_DE.UTF-8", "SECRET_TOKEN=first",
		"PYTHONWARNINGS=error", "PATH=/opt/first/bin:"+os.Getenv("PATH"))
	first := sb.block("env", show, 0).stdout
	sb.env = append(append([]string(nil), base...), "TZ=UTC", "SECRET_TOKEN=second", "PATH=/opt/second/bin:"+os.Getenv("PATH"))
	second := sb.block("env", show, 0).stdout
	// PATH: the session's python and its package folder's scripts first.
	v := py.Version.Short()
	path := filepath.Join(sb.home, "python", "packages", v, "bin") + ":" + filepath.Join(sb.folder("env"), "packages", v, "bin") +
		":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	want := "[('LANG', 'C.UTF-8'), ('PATH', '" + path + "'), ('VIS_ENV_IDLE_TTL_MS', '120000')]\n"
	if first != want || second != want {
		t.Errorf("the session's environment:\nfirst client  %s\nsecond client %s\nwant          %s", first, second, want)
	}
	rec := sb.record(sb.folder("env"))
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", rec.HostPID))
	if err != nil || bytes.Contains(environ, []byte("SECRET_TOKEN")) || !bytes.Contains(environ, []byte("VIS_HOME=")) {
		t.Errorf("the host's environment (%v): %q", err, environ)
	}
}

// TestSandboxCaughtTimeout: a block that runs past its timeout and catches
// the KeyboardInterrupt (as pytest.main does) still ends with status 1 and
// the timeout line, its --json result has an error, the MCP result says
// it and the journal marks it timed out; the block's own output is kept.
func TestSandboxCaughtTimeout(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	caught := "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('caught it')"
	r := sb.block("to", caught, 1, "--timeout", "1s")
	contains(t, "the caught timeout", r.stdout, "caught it")
	contains(t, "the caught timeout", r.stderr, "ran past its timeout of 3 seconds", "caught the KeyboardInterrupt")
	v := sb.jsonBlock("to", caught, "--timeout", "1s")
	if e, _ := v["error"].(map[string]any); v["timed_out"] != true || e["type"] != "TimeoutError" {
		t.Errorf("--json of a caught timeout: %v", v)
	}
	log := sb.run("log", "--session", "to")
	contains(t, "sandbox log", log.stdout+log.stderr, "timed out")
	c := connectMCP(t, sb, "--session", "to")
	text, _ := c.python(caught, true, "timeout_s", 3)
	contains(t, "the MCP result", text, "caught it", "ran past its timeout", "pass a larger timeout_s")
}

// TestSandboxPlannedRestartClosesFiles: a file a block left open in a
// variable is flushed and closed before a planned restart or stop (its
// buffered writes were lost: the file was empty after the restart), and
// the notice says so.
func TestSandboxPlannedRestartClosesFiles(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			for _, how := range []string{"restart", "stop"} {
				sb.block("fh", `fh = open("notes-`+how+`.txt", "w"); fh.write("kept through a `+how+`")`, 0)
				sb.ok(how, "--session", "fh")
				r := sb.block("fh", `print(open("notes-`+how+`.txt").read())`, 0)
				contains(t, "after "+how, r.stdout, "kept through a "+how+"\n", "fh: closed (its writes were flushed); open files do not come back")
			}
		})
	}
}

// TestSandboxEditsTakeEffect: a module of the workspace changed on disk
// after the session imported it (by patch() or a write) is named in the
// block's output with the way to take it, reload() imports the package
// afresh and rebinds the session's names, and an edit of the same size in
// the same second as the cached bytecode is not served stale after a
// restart (CPython compares whole seconds and the size).
func TestSandboxEditsTakeEffect(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			testenv.WriteTree(t, sb.ws, map[string]string{
				"pkg/__init__.py": "from .val import check\n",
				"pkg/val.py":      "def check():\n    return 1\n",
			})
			r := sb.block("ed", "import pkg\nfrom pkg import check\nprint(check())", 0)
			contains(t, "the first import", r.stdout, "1\n")
			r = sb.block("ed", `patch("pkg/val.py", "return 1", "return 2")`, 0)
			contains(t, "after patch()", r.stderr, "pkg/val.py changed on disk since pkg.val was imported: reload('pkg') or restart")
			r = sb.block("ed", "print('stale', check())\nprint(reload('pkg'))\nprint('fresh', check(), pkg.check is check)", 0)
			contains(t, "reload()", r.stdout, "stale 1\n", "reloaded pkg: 2 modules imported afresh; names bound to the new code: check, pkg", "fresh 2 True\n")
			if strings.Contains(r.stderr, "changed on disk") {
				t.Errorf("a reloaded module is named as changed again:\n%s", r.stderr)
			}
			// The same size, the same second: only the nanoseconds differ.
			sb.block("ed", `st = os.stat("pkg/val.py")
src = open("pkg/val.py").read().replace("return 2", "return 3")
open("pkg/val.py", "w").write(src)
os.utime("pkg/val.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))`, 0)
			sb.ok("restart", "--session", "ed")
			r = sb.block("ed", "print('after restart', check())", 0)
			contains(t, "after a restart", r.stdout, "after restart 3\n")
		})
	}
}
