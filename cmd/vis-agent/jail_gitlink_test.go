package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitWaySwaps are blocks that lead the user's git, whose .git file says
// "gitdir: lnk/g", to a git folder of theirs (other/g, copied from the
// real one with a config that runs a command): the link pointed at
// other, or, where lnk is a folder, lnk and other exchanged in one step
// (renameat2's RENAME_EXCHANGE); changed is what the notice says of lnk,
// config the config it names, where git finds it now.
var gitWaySwaps = map[string]struct {
	link                  bool
	swap, changed, config string
}{
	"a link": {true, `os.symlink("other", "lnk.new")
os.rename("lnk.new", "lnk")`, "changed (now a link to other)", "other/g/config"},
	"a folder": {false, `import ctypes
if ctypes.CDLL(None, use_errno=True).renameat2(-100, b"other", -100, b"lnk", 2) != 0:
    raise OSError(ctypes.get_errno(), "renameat2")`, "changed (now another folder)", "lnk/g/config"},
}

// TestSandboxJailGitThroughALink: the workspace's .git is a file whose
// gitdir passes through a symbolic link of the workspace ("gitdir:
// lnk/g", lnk -> sub), or a folder of it. The jail kept the git folder
// read-only, not the names on the way there: a block made other/g, a git
// folder whose config runs a command (core.fsmonitor), and pointed lnk
// at other; the user's next git status ran it, and no notice told of it
// (the host watched only the git names at the tops of the roots). Now
// the swap is refused, or the host sees it, replaces the session's
// processes and the next block's notice names the name, where the .git
// leads and what in the git folder there could run code, before any
// further block runs.
func TestSandboxJailGitThroughALink(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		for what, c := range gitWaySwaps {
			ws := filepath.Join(sb.ws, strings.ReplaceAll(what, " ", "-"))
			home, marker := t.TempDir(), filepath.Join(t.TempDir(), "marker")
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			real := "lnk"
			if c.link {
				real = "sub"
			}
			if err := os.MkdirAll(filepath.Join(ws, real), 0o755); err != nil {
				t.Fatal(err)
			}
			git("init", "-q", "--separate-git-dir="+filepath.Join(ws, real, "g"), ws)
			git("-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "start")
			if err := os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: lnk/g\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.link {
				if err := os.Symlink("sub", filepath.Join(ws, "lnk")); err != nil {
					t.Fatal(err)
				}
			}
			git("status", "--short")
			before, _ := os.Lstat(filepath.Join(ws, "lnk"))
			name := "s" + fmt.Sprint(c.link)
			first := sb.run("run", "--session", name, "--workspace", ws, "-c", fmt.Sprintf(`import os, shutil
shutil.copytree(os.path.realpath("lnk"), "other", symlinks=True)
open("other/g/config", "a").write("[core]\n\tfsmonitor = echo x > %s; true\n")
try:
    %s
    print("swapped")
except OSError as e:
    print("refused", type(e).__name__)
`, marker, strings.ReplaceAll(c.swap, "\n", "\n    ")))
			next := sb.block(name, "print('next')", 0, "--workspace", ws)
			notice := first.stdout + first.stderr + next.stdout + next.stderr
			if after, err := os.Lstat(filepath.Join(ws, "lnk")); err == nil && os.SameFile(before, after) {
				continue // refused by the kernel
			}
			git("status", "--short")
			_, err := os.Stat(marker)
			lnk, config := filepath.Join(ws, "lnk"), filepath.Join(ws, c.config)
			if !strings.Contains(notice, lnk+" "+c.changed) || !strings.Contains(notice, "look at "+config) {
				t.Errorf("%s: the session led the user's git to its own git folder through %s (the user's git ran its command: %v) and no notice named it:\n%s", what, lnk, err == nil, notice)
			}
		}
	})
}
