package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldSave is a block whose value's pickling (the save after the block)
// waits until the file "release" appears in the workspace, after writing
// "saving": the test decides when the save ends.
const heldSave = `
class Held:
    def __reduce__(self):
        import os, time
        open("saving", "w").close()
        for _ in range(4800):
            if os.path.exists("release"):
                break
            time.sleep(0.05)
        return (Held, ())
held = Held()
n = n + 1 if "n" in globals() else 1
print("answered", n)
`

// TestSandboxAnswerFirst: a block's result goes out before the snapshot
// after it is saved (a save held open does not hold the answer), the next
// block waits for that save, and a kill between the answer and the end of
// the save is named in the next notice, with the values as before.
func TestSandboxAnswerFirst(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			release := filepath.Join(sb.ws, "release")
			saving := filepath.Join(sb.ws, "saving")

			// The answer comes while the save waits for the release: were
			// it after the save, this run would wait for the 60 s loop.
			r := sb.block("a", heldSave, 0)
			contains(t, "the first block", r.stdout, "answered 1")
			waitFile(t, saving)
			// The next block waits for the save, then finds it done.
			next := sb.command("run", "--session", "a", "-c", "print('next', n)")
			var out strings.Builder
			next.Stdout, next.Stderr = &out, &out
			if err := next.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := next.Wait(); err != nil || out.String() != "next 1\n" {
				t.Fatalf("the block after a held save: %v\n%s", err, out.String())
			}
			sb.run("restart", "--session", "a")
			contains(t, "after a restart", sb.block("a", "print('n is', n, type(held).__name__)", 0).stdout,
				"Restored", "n is 1 Held")

			// A kill while the save after block 4 is held: its changes are
			// lost, and the notice says so. (The save after block 3, which
			// pickles held, is done first: the log waits for it.)
			sb.run("log", "--session", "a", "-n", "1")
			os.Remove(release)
			os.Remove(saving)
			r = sb.block("a", heldSave, 0)
			contains(t, "the held block", r.stdout, "answered 2")
			waitFile(t, saving)
			pid := sb.record(sb.folder("a")).ChildPID
			if pid <= 0 {
				t.Fatal("no child in the host record")
			}
			syscall.Kill(pid, syscall.SIGKILL)
			r = sb.block("a", "print('n is', n)", 0)
			contains(t, "after the kill", r.stdout, "[Sandbox restarted]",
				"The changes of block 4 to Held, held, n were not saved: the process stopped after the block answered",
				"n is 1\n")

			// A save past the block's timeout (and its grace) retires the
			// child; stop --force gives a save up at once.
			os.Remove(saving)
			sb.block("a", heldSave, 0, "--timeout", "3s")
			waitFile(t, saving)
			contains(t, "after a save past its timeout", sb.block("a", "print('n is', n)", 0).stdout,
				"Saving the session's state after a block took longer than 8 seconds",
				"were not saved", "n is 1\n")
			os.Remove(saving)
			sb.block("a", heldSave, 0)
			waitFile(t, saving)
			if r := sb.run("stop", "--force", "--session", "a"); r.code != 0 {
				t.Fatalf("stop --force during a save: %+v", r)
			}
			contains(t, "after stop --force", sb.block("a", "print('n is', n)", 0).stdout, "were not saved", "n is 1\n")
			os.WriteFile(release, nil, 0o644) // the saves at the end find it
		})
	}
}

// TestSandboxOneSaveForBlocksThatCame: a block that comes before the host
// asks for the save after the last one (VIS_ENV_SAVE_DELAY_MS, here long)
// runs at once, and one save after it covers both; a kill before that
// save names both blocks.
func TestSandboxOneSaveForBlocksThatCame(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py, "VIS_ENV_SAVE_DELAY_MS=8000")
			sb.block("c", "x = 1", 0)
			sb.block("c", "y = x + 1", 0)
			pid := sb.record(sb.folder("c")).ChildPID
			if pid <= 0 {
				t.Fatal("no child in the host record")
			}
			syscall.Kill(pid, syscall.SIGKILL)
			contains(t, "after a kill before the save", sb.block("c", "print('x' in globals(), 'y' in globals())", 0).stdout,
				"The changes of blocks 1 to 2 to x, y were not saved", "There was no snapshot to restore.", "False False\n")

			sb.block("c", "x = 1", 0)
			sb.block("c", "y = x + 1", 0)
			sb.run("log", "--session", "c", "-n", "1") // waits for the save
			sb.ok("restart", "--session", "c")
			r := sb.block("c", "print(x, y)", 0)
			contains(t, "after the one save", r.stdout, "Restored variables (2): x, y.", "1 2\n")
			if strings.Contains(r.stdout, "were not saved") {
				t.Errorf("a save was lost:\n%s", r.stdout)
			}
		})
	}
}
