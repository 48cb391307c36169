package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// children are the pids of session name's interpreter processes (the child
// and its standby), found by their command line.
func (sb *sandbox) children(name string) []int {
	sb.t.Helper()
	want := "sandbox\x00child\x00--dir\x00" + sb.folder(name) + "\x00"
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && processAlive(pid) && strings.Contains(cmdline(pid)+"\x00", want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// standby waits for session name's standby and returns its pid.
func (sb *sandbox) standby(name string) int {
	sb.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		child := sb.record(sb.folder(name)).ChildPID
		for _, pid := range sb.children(name) {
			if pid != child {
				// started: give it the time to import and wait
				time.Sleep(3 * time.Second)
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	sb.t.Fatalf("session %s has no standby Python process: %v", name, sb.children(name))
	return 0
}

// gone waits until pid has ended.
func gone(t *testing.T, what string, pid int) {
	t.Helper()
	for i := 0; i < 100 && processAlive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if processAlive(pid) {
		t.Errorf("%s: process %d still runs", what, pid)
	}
}

// TestSandboxWarmRestart, on the oldest and newest CPython: a session whose
// snapshot holds a value of a third-party module gets a standby process,
// which a restart swaps in (the state, the helpers and the notice as
// before; --fresh too); a preloaded module changed on disk makes it stale
// (the new process imports the new file), a policy change discards it, and
// stop and rm leave no process behind. sandbox.warm_restart = false makes
// none.
func TestSandboxWarmRestart(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("w", "print(1)", 0)
			// a third-party package, as install() would put it in the
			// session's package folder
			pkg := filepath.Join(sb.folder("w"), "packages", py.Version.Short(), "vistp")
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			mod := filepath.Join(pkg, "__init__.py")
			write := func(version int) {
				src := "VERSION = " + strconv.Itoa(version) + "\nclass Thing:\n    def __init__(self, n):\n        self.n = n\n"
				if err := os.WriteFile(mod, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				at := time.Now().Add(time.Duration(version) * time.Minute)
				os.Chtimes(mod, at, at)
			}
			write(1)
			sb.block("w", "import vistp\nthing = vistp.Thing(41)\nx = 1\ndef helper():\n    return thing.n + x\nprint(vistp.VERSION)", 0)

			warm := sb.standby("w")
			// jailed as the session's process is (its kernel layer is in
			// force before any Python runs, sandbox/jail)
			status, _ := os.ReadFile("/proc/" + strconv.Itoa(warm) + "/status")
			contains(t, "the standby's status", string(status), "NoNewPrivs:\t1", "Seccomp:\t2")
			contains(t, "the standby's command line", cmdline(warm), "--drop-privileges")
			sb.ok("restart", "--session", "w")
			r := sb.block("w", "print(helper(), type(thing).__name__, vistp.VERSION)", 0)
			contains(t, "after a warm restart", r.stdout, "[Sandbox restarted] The session was restarted (vis-agent sandbox restart).",
				"Restored helpers (1): helper; variables (2): thing, x; imports (1): vistp.", "\n42 Thing 1\n")
			if child := sb.record(sb.folder("w")).ChildPID; child != warm {
				t.Errorf("the child after the restart is %d, not the standby %d", child, warm)
			}

			// Two crashes in a row, the second in the standby the first
			// swapped in: another standby is made for the next block all the
			// same, with no block in between.
			warm = sb.standby("w")
			sb.run("run", "--session", "w", "-c", "import os; os.kill(os.getpid(), 9)")
			r = sb.run("run", "--session", "w", "-c", "import os; os.kill(os.getpid(), 9)")
			contains(t, "the second crash", r.stderr, "killed by signal 9")
			again := sb.standby("w")
			r = sb.block("w", "print(helper())", 0)
			contains(t, "after two crashes", r.stdout, "[Sandbox restarted]", "\n42\n")
			if child := sb.record(sb.folder("w")).ChildPID; child != again || again == warm {
				t.Errorf("the child after two crashes is %d, not the standby %d made after them (the first was %d)", child, again, warm)
			}

			// a preloaded module changed on disk: stale, imported afresh
			warm = sb.standby("w")
			write(2)
			sb.ok("restart", "--session", "w")
			r = sb.block("w", "print(helper(), vistp.VERSION)", 0)
			contains(t, "after the module changed", r.stdout, "[Sandbox restarted]", "\n42 2\n")
			if child := sb.record(sb.folder("w")).ChildPID; child == warm {
				t.Errorf("the stale standby %d was swapped in", warm)
			}
			gone(t, "the stale standby", warm)

			// --fresh uses it too, and starts empty
			warm = sb.standby("w")
			sb.ok("restart", "--session", "w", "--fresh")
			r = sb.block("w", "print('thing' in globals())", 0)
			contains(t, "after restart --fresh", r.stdout, "the session starts empty", "\nFalse\n")
			if child := sb.record(sb.folder("w")).ChildPID; child != warm {
				t.Errorf("the child after restart --fresh is %d, not the standby %d", child, warm)
			}

			// a policy change discards it
			sb.block("w", "import vistp\nthing = vistp.Thing(1)", 0)
			warm = sb.standby("w")
			r = sb.block("w", "print(thing.n)", 0, "--no-network")
			contains(t, "under another policy", r.stdout, "another jail policy", "\n1\n")
			gone(t, "the standby of the old policy", warm)

			// stop and rm leave nothing behind
			warm = sb.standby("w")
			child := sb.record(sb.folder("w")).ChildPID
			sb.ok("stop", "--session", "w")
			gone(t, "the standby after stop", warm)
			gone(t, "the child after stop", child)
			sb.block("w", "print(thing.n)", 0, "--no-network")
			warm = sb.standby("w")
			folder := sb.folder("w")
			sb.ok("rm", "--session", "w")
			gone(t, "the standby after rm", warm)
			if _, err := os.Stat(folder); !os.IsNotExist(err) {
				t.Errorf("rm left the session folder: %v", err)
			}

			// off: no standby
			if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nwarm_restart = false\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sb.block("off", "print(1)", 0)
			pkg = filepath.Join(sb.folder("off"), "packages", py.Version.Short(), "vistp")
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			mod = filepath.Join(pkg, "__init__.py")
			write(3)
			sb.block("off", "import vistp\nthing = vistp.Thing(3)", 0)
			time.Sleep(5 * time.Second)
			if pids := sb.children("off"); len(pids) != 1 {
				t.Errorf("with warm_restart = false: %d Python processes %v", len(pids), pids)
			}
		})
	}
}

// TestSandboxStandbyKeepsTheTempFolder: a standby started while the
// session's interpreter lives leaves that interpreter's temp folder alone
// (it emptied the session's one folder under it, so every other pytest
// run failed with FileNotFoundError); each interpreter has its own, and a
// standby swapped in by a restart works in its own.
func TestSandboxStandbyKeepsTheTempFolder(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("tmp", "print(1)", 0)
			testenv.WriteTree(t, filepath.Join(sb.folder("tmp"), "packages", py.Version.Short()), map[string]string{"vistmp/__init__.py": "X = 1\n"})
			sb.block("tmp", `import tempfile, os, vistmp
fd, kept = tempfile.mkstemp(); os.write(fd, b"kept"); os.close(fd)
print("tmp", tempfile.gettempdir())`, 0)
			warm := sb.standby("tmp")
			r := sb.block("tmp", `print("links", os.stat(tempfile.gettempdir()).st_nlink > 0, open(kept).read())
with tempfile.TemporaryFile() as f:
    f.write(b"x"); f.seek(0); print("temporary", f.read())`, 0)
			contains(t, "the block after the standby started", r.stdout, "links True kept", "temporary b'x'")
			sb.ok("restart", "--session", "tmp")
			r = sb.block("tmp", `import tempfile, os
print("pid", os.getpid(), "tmp", tempfile.gettempdir())
with tempfile.NamedTemporaryFile() as f:
    print("named", os.path.exists(f.name))`, 0)
			contains(t, "the swapped-in standby", r.stdout, "pid "+strconv.Itoa(warm)+" ", "named True")
		})
	}
}

// TestSandboxWarmRestartData: a pandas frame and a numpy array come back
// through the standby, which imported pandas ahead, jailed (the wheelhouse
// of `make test-wheels`).
func TestSandboxWarmRestartData(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.installData(wheels)
			sb.block("d", "import pandas as pd, numpy as np\ndf = pd.DataFrame({'a': np.arange(100_000), 's': [f'r{i}' for i in range(100_000)]})\ndef total():\n    return int(df.a.sum())", 0)
			warm := sb.standby("d")
			sb.ok("restart", "--session", "d")
			start := time.Now()
			r := sb.block("d", "import sys\nprint(total(), df.s.iloc[-1], 'pandas' in sys.modules)", 0)
			t.Logf("restart to first result through the standby: %s", time.Since(start))
			contains(t, "the frame after a warm restart", r.stdout, "[Sandbox restarted]", "variables (1): df;", "\n4999950000 r99999 True\n")
			if child := sb.record(sb.folder("d")).ChildPID; child != warm {
				t.Errorf("the child after the restart is %d, not the standby %d", child, warm)
			}
		})
	}
}
