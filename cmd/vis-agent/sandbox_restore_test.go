package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// chattySetup is a session whose restore prints, warns and raises: an
// imported module that prints to both streams and warns, a __setstate__
// that prints and one that raises.
const chattySetup = `open("chatty.py", "w").write(
    "import sys, warnings\n"
    "print('chatty says hi')\n"
    "print('chatty to stderr', file=sys.stderr)\n"
    "warnings.warn('old API', FutureWarning)\n")
import chatty
class Loud:
    def __setstate__(self, state):
        print("setstate", state)
        self.__dict__.update(state)
class Broken:
    def __setstate__(self, state):
        raise ValueError("no way")
loud, broken = Loud(), Broken()
loud.x, broken.y = 1, 2
kept = "kept"
`

// restoredChatty checks the block after a restart of a chattySetup
// session: it ran, and its notice names why and shows what restoring
// printed, warned and raised.
func restoredChatty(t *testing.T, what string, r result, why string) {
	t.Helper()
	contains(t, what, r.stdout, "[Sandbox restarted] ", why, "\nRestoring printed:\n  chatty says hi\n  chatty to stderr\n",
		"FutureWarning: old API", "setstate {'x': 1}", "  broken: could not be restored: ValueError: no way",
		"variables (2): kept, loud", "\n1 kept\n")
	if r.stderr != "" {
		t.Errorf("%s: stderr %q", what, r.stderr)
	}
}

// TestSandboxRestoreNeverBricks: whatever a restore prints, warns or
// raises, on every way a session restarts (restart, retire, eviction,
// idle exit), the next block runs and its notice shows it; a restore that
// kills its process, or an unreadable snapshot, starts the session empty
// with a notice saying why; restart --fresh and --drop discard the
// snapshot or names of it. On the oldest and the newest CPython.
func TestSandboxRestoreNeverBricks(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("s", chattySetup, 0)
			sb.ok("restart", "--session", "s")
			restoredChatty(t, "after restart", sb.block("s", "print(loud.x, kept)", 0), "restarted (vis-agent sandbox restart)")

			// retire: a timeout the block does not unwind from (broken,
			// lost in the restart, is back to fail again)
			sb.block("s", "broken = Broken()\nbroken.y = 2", 0)
			r := sb.block("s", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 1, "--timeout", "3s")
			contains(t, "a block that does not unwind", r.stderr, "retired")
			restoredChatty(t, "after a retire", sb.block("s", "print(loud.x, kept)", 0), "was retired")

			// eviction (VIS_ENV_CACHE_MAX) and idle exit
			ev := newSandbox(t, py, "VIS_ENV_CACHE_MAX=1")
			ev.block("a", chattySetup, 0)
			ev.block("b", "x = 1", 0)
			if pid := ev.record(ev.folder("a")).ChildPID; pid != 0 {
				t.Errorf("session a still has child %d with VIS_ENV_CACHE_MAX=1", pid)
			}
			restoredChatty(t, "after an eviction", ev.block("a", "print(loud.x, kept)", 0), "freed memory")
			idle := newSandbox(t, py, "VIS_ENV_IDLE_TTL_MS=500")
			idle.block("i", chattySetup, 0)
			waitExited(t, idle.record(idle.folder("i")).HostPID)
			restoredChatty(t, "after the idle exit", idle.block("i", "print(loud.x, kept)", 0), "idle for 500 ms")

			// the escape hatch: names left out stay out; fresh empties it
			if r := sb.ok("restart", "--session", "s", "--drop", "loud", "--drop", "nothere"); r.stdout != "Restarted session \"s\" without loud, nothere.\n" {
				t.Errorf("restart --drop said %q", r.stdout)
			}
			r = sb.block("s", "print('loud' in globals(), kept)", 0)
			contains(t, "after restart --drop", r.stdout, "Left out on request (1): loud.", "Not in the snapshot, so nothing to leave out: nothere.",
				"\nFalse kept\n")
			sb.ok("restart", "--session", "s")
			if r = sb.block("s", "print('loud' in globals())", 0); strings.Contains(r.stdout, "setstate") || !strings.HasSuffix(r.stdout, "\nFalse\n") {
				t.Errorf("a dropped name came back at the next restart: %q", r.stdout)
			}
			if r := sb.ok("restart", "--session", "s", "--fresh"); r.stdout != "Restarted session \"s\" empty: its snapshot is discarded.\n" {
				t.Errorf("restart --fresh said %q", r.stdout)
			}
			r = sb.block("s", "print('kept' in globals())\nkept", 1)
			contains(t, "after restart --fresh", r.stdout, "The snapshot was discarded: a restart with fresh asked for it; the session starts empty.",
				"It held (4): Broken, Loud, chatty, kept.", "\nFalse\n")
			contains(t, "a name discarded", r.stderr, "NameError", "'kept' did not come back when the sandbox restarted: the snapshot was discarded")
			// a stopped session is started for it
			sb.block("s", "gone = 1", 0)
			sb.ok("stop", "--session", "s")
			sb.ok("restart", "--session", "s", "--fresh")
			if rec := sb.record(sb.folder("s")); rec.ChildPID == 0 {
				t.Error("restart --fresh of a stopped session left no Python process running")
			}
			contains(t, "fresh after stop", sb.block("s", "print('gone' in globals())", 0).stdout, "It held (1): gone.", "\nFalse\n")
			sb.failsWith(2, "give --fresh or --drop, not both", "restart", "--session", "s", "--fresh", "--drop", "x")
			sb.failsWith(2, `--drop "1x": not a Python name`, "restart", "--session", "s", "--drop", "1x")

			// a restore that ends its process: the next start is empty, and says why
			sb.block("s", "class Bomb:\n    def __setstate__(self, state):\n        import os\n        os._exit(3)\nbomb = Bomb()\nbomb.v = 1\nother = 2", 0)
			sb.ok("restart", "--session", "s")
			r = sb.block("s", "print('other' in globals())", 0)
			contains(t, "after a restore that exits", r.stdout, "The snapshot was discarded: restoring it stopped the Python process (it exited with status 3)",
				"It held (3): Bomb, bomb, other.", "\nFalse\n")
			sb.block("s", "back = 3", 0)
			sb.ok("restart", "--session", "s")
			contains(t, "the session after it", sb.block("s", "print(back)", 0).stdout, "Restored variables (1): back.", "\n3\n")

			// an unreadable snapshot
			sb.ok("stop", "--session", "s")
			if err := os.WriteFile(filepath.Join(sb.folder("s"), "state", "snapshot.bin"), []byte("junk"), 0o600); err != nil {
				t.Fatal(err)
			}
			contains(t, "an unreadable snapshot", sb.block("s", "print('back' in globals())", 0).stdout,
				"Restoring failed: the snapshot could not be read: it is not a vis-agent snapshot; the session starts without it.", "\nFalse\n")
		})
	}
}

// waitExited waits until process pid has exited.
func waitExited(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); processAlive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
	}
}

// TestSandboxRestoreJailedImport: a jailed session's module that cannot
// write its config folder and warns about it (as matplotlib did with
// ~/.config) is restored with the warning in the notice; the session's
// MPLCONFIGDIR and XDG_CACHE_HOME are in its state folder.
func TestSandboxRestoreJailedImport(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	sb.block("j", `import os
open("configured.py", "w").write(
    "import os, warnings\n"
    "try:\n"
    "    os.makedirs(os.path.expanduser('~/.config/configured'), exist_ok=True)\n"
    "except OSError as e:\n"
    "    warnings.warn(f'~/.config/configured is not writable: {type(e).__name__}')\n")
import configured
print(os.environ["MPLCONFIGDIR"], os.environ["XDG_CACHE_HOME"], os.environ["MPLBACKEND"])`, 0)
	sb.ok("restart", "--session", "j")
	state := filepath.Join(sb.folder("j"), "state")
	r := sb.block("j", "print(os.path.isdir(os.environ['MPLCONFIGDIR']))", 0)
	contains(t, "restored under the jail", r.stdout, "Restoring printed:", "~/.config/configured is not writable: PermissionError", "\nTrue\n")
	r = sb.block("j", "print(os.environ['MPLCONFIGDIR'], os.environ['XDG_CACHE_HOME'], os.environ['MPLBACKEND'])", 0)
	if want := filepath.Join(state, "matplotlib") + " " + filepath.Join(state, "cache") + " Agg\n"; r.stdout != want {
		t.Errorf("the plotting environment: %q, want %q", r.stdout, want)
	}
}
