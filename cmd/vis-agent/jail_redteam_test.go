package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// The red team's part of the escape corpus (issue 20, second pass):
// attacks found on the merged jail, each run with the C audit hook and
// without it (the test-only binary), on the oldest and newest CPython.

// hookModes runs f for each CPython of oldestAndNewest with the hook and
// without it (the test-only binary), on a sandbox of its own; parallel
// runs the four side by side (not for tests that measure the host).
func hookModes(t *testing.T, parallel bool, f func(t *testing.T, sb *sandbox, hook bool)) {
	forHookModes(t, parallel, func(t *testing.T, py testenv.Python, hook bool) {
		f(t, hookSandbox(t, py, hook), hook)
	})
}

// forHookModes runs f for each CPython of oldestAndNewest, with the hook
// and without it, as subtests named CPYTHON/hook and CPYTHON/no-hook.
func forHookModes(t *testing.T, parallel bool, f func(t *testing.T, py testenv.Python, hook bool)) {
	for _, py := range oldestAndNewest(t) {
		for _, hook := range []bool{true, false} {
			name := py.Name + "/hook"
			if !hook {
				name = py.Name + "/no-hook"
			}
			t.Run(name, func(t *testing.T) {
				if parallel {
					t.Parallel()
				}
				f(t, py, hook)
			})
		}
	}
}

// hookSandbox is a sandbox of py, run by the test-only binary without the
// audit hook unless hook.
func hookSandbox(t *testing.T, py testenv.Python, hook bool, env ...string) *sandbox {
	sb := newSandbox(t, py, env...)
	if !hook {
		sb.bin = testenv.NoHookBinary(t)
		sb.env = append(sb.env, "VIS_TEST_NO_AUDIT_HOOK=1")
	}
	return sb
}

// TestSandboxJailSessionsUnderAReadOnlyRoot: a read-only root that holds
// $VIS_HOME (--read-only-root of its parent, or of ~ when VIS_HOME is
// ~/.vis) showed the jailed child every session's folder: its own key and
// another session's key and snapshot read from the child, cat() of the
// host and a shell() command. The sessions folder is covered whatever
// root holds it: only the session's own state, temp and package folders
// show.
func TestSandboxJailSessionsUnderAReadOnlyRoot(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("victim", `victim_value = "VICTIM-STATE-7f3a"
attach(b"VICTIM-ATTACHMENT-" + b"91d2", filename="private.txt")`, 0)
		victim := sb.folder("victim")
		// A hang record of the victim's (a retired child's stacks), where
		// the host writes them.
		testenv.WriteTree(t, filepath.Join(sb.home, "sandbox", "logs", "2026-12-01", "sandbox-victim-1"),
			map[string]string{"python-stacks.log": "VICTIM-ATTACHMENT-91d2 in a stack\n"})
		parent := filepath.Dir(sb.home)
		sb.block("attacker", "pass", 0, "--read-only-root", parent)
		own := sb.folder("attacker")
		code := fmt.Sprintf(`import os, glob
E = "ESC" + "APED"
VICTIM, OWN, SANDBOX = %q, %q, %q
def attempt(name, f):
    try:
        r = f()
        print(name, "->", E, repr(r)[:80])
    except Exception as e:
        print(name, "-> refused", type(e).__name__)
attempt("its own key", lambda: open(OWN + "/key", "rb").read())
attempt("another session's key", lambda: open(VICTIM + "/key", "rb").read())
attempt("another session's folder", lambda: os.listdir(VICTIM))
attempt("another session's state", lambda: os.listdir(VICTIM + "/state"))
attempt("cat its own key", lambda: cat(OWN + "/key"))
attempt("cat another session's key", lambda: cat(VICTIM + "/key"))
attempt("cat another session's snapshot", lambda: cat(VICTIM + "/state/snapshot.py"))
print("grep found", grep("VICTIM-STATE", VICTIM).total if os.path.isdir(VICTIM) else 0)
# Every file of vis-agent's folder (the attachments store, hang records).
for top, dirs, files in os.walk(os.path.dirname(SANDBOX)):
    for f in files:
        try:
            if b"VICTIM-ATTACHMENT" in open(os.path.join(top, f), "rb").read():
                print(E, "attachment", f)
        except OSError:
            pass
attempt("cat the attachments store", lambda: cat(SANDBOX + "/attachments/attachments.db"))
r = shell("grep -rl VICTIM-ATTACHMENT %%s 2>/dev/null; ls %%s/attachments 2>/dev/null" %% (os.path.dirname(SANDBOX), SANDBOX), wait=60)
print("shell store:", r.out.replace("\n", " | "))
r = shell("cat %%s/key %%s/key %%s/state/* 2>/dev/null | head -c 200; ls %%s 2>/dev/null" %% (OWN, VICTIM, VICTIM, VICTIM), wait=60)
print("shell:", r.out.replace("\n", " | "), "::", r.err)
print("own state", os.listdir(session.access.roots[1]) is not None)
`, victim, own, filepath.Dir(filepath.Dir(own)))
		r := sb.block("attacker", code, 0, "--read-only-root", parent)
		all := r.stdout + r.stderr
		t.Logf("%s", all)
		key, _ := os.ReadFile(filepath.Join(victim, "key"))
		ownKey, _ := os.ReadFile(filepath.Join(own, "key"))
		for what, s := range map[string]string{"the marker": "ESCAPED", "the victim's state": "VICTIM-STATE", "the victim's key": string(key)[:16], "its own key": string(ownKey)[:16], "the victim's files": "session.json", "the victim's attachment": "VICTIM-ATTACHMENT", "the store": "attachments.db"} {
			if strings.Contains(all, s) {
				t.Errorf("%s reached the jailed session:\n%s", what, all)
			}
		}
		contains(t, "the block", r.stdout, "grep found 0", "own state True")
	})
}

// swapLoop swaps the folder d of the working folder with the symlink
// link, for secs seconds, by renames (a thread of the block or a shell()
// command runs it).
const swapLoop = `import os, time
def swap(secs):
    end, n = time.time() + secs, 0
    while time.time() < end:
        try:
            os.rename("d", "d.real"); os.rename("link", "d")
            os.rename("d", "link"); os.rename("d.real", "d")
            n += 1
        except OSError:
            pass
    return n
`

// TestSandboxJailToolsRaceASwappedFolder: while a thread of the block, or
// a shell() command, swaps a folder of the workspace with a symlink to a
// folder outside the roots, the block calls cat() and grep() through it
// again and again: the host's tools never read or list what the symlink
// leads to.
func TestSandboxJailToolsRaceASwappedFolder(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		out := t.TempDir()
		testenv.WriteTree(t, out, map[string]string{"f.txt": escapeSecret + "\n", "sub/only-here.txt": escapeSecret + "\n"})
		testenv.WriteTree(t, sb.ws, map[string]string{"d/f.txt": "inside\n", "d/sub/g.txt": "inside\n"})
		if err := os.Symlink(out, filepath.Join(sb.ws, "link")); err != nil {
			t.Fatal(err)
		}
		code := swapLoop + fmt.Sprintf("SWAP = %q\n", swapLoop) + `import threading
E = "ESC" + "APED"
def probe(secs):
    end, calls = time.time() + secs, 0
    while time.time() < end:
        for call in (lambda: cat("d/f.txt").text, lambda: cat("d/sub/g.txt").text, lambda: grep("SECRET|only|inside", "d").text):
            try:
                got = call()
                calls += 1
            except Exception as e:
                got = ""
            if "SECRET" in got or "only-here" in got or "could not be read" in got:
                print(E, repr(got)[:200])
                return calls
    return calls
t = threading.Thread(target=lambda: print("thread swaps", swap(3) > 0)); t.start()
print("thread calls", probe(3) > 0); t.join()
s = shell("python3 -c " + shlex.quote(SWAP + "print(swap(3))"), wait=0)
print("shell calls", probe(3) > 0)
w = s.wait(30); print("shell swaps", w.out.strip().isdigit() and int(w.out) > 0, w.err.strip()[-300:])
`
		r := sb.block("racer", code, 0, "--timeout", "60s")
		all := r.stdout + r.stderr
		if escaped(all) || strings.Contains(all, "only-here") {
			t.Errorf("a tool went through the swapped folder:\n%s", all)
		}
		contains(t, "the race", r.stdout, "thread swaps True", "thread calls True", "shell calls True", "shell swaps True")
		t.Logf("%s", all)
	})
}
