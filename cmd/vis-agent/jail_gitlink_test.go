package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxJailGitThroughALink: the workspace's .git is a file whose
// gitdir passes through a symbolic link of the workspace ("gitdir:
// lnk/g", lnk -> sub). The jail kept sub/g read-only, not the link: a
// block made other/g, a git folder whose config runs a command
// (core.fsmonitor), and pointed lnk at other; the user's next git status
// ran it, and no notice told of it (the host watched only the git names
// at the tops of the roots). Now the swap is refused, or the host sees
// it, replaces the session's processes and the next block's notice names
// the link, where it leads and what in the git folder there could run
// code, before any further block runs.
func TestSandboxJailGitThroughALink(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		home, marker := t.TempDir(), filepath.Join(t.TempDir(), "marker")
		git := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = sb.ws
			cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		if err := os.Mkdir(filepath.Join(sb.ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		git("init", "-q", "--separate-git-dir="+filepath.Join(sb.ws, "sub", "g"), sb.ws)
		git("-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "start")
		if err := os.WriteFile(filepath.Join(sb.ws, ".git"), []byte("gitdir: lnk/g\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("sub", filepath.Join(sb.ws, "lnk")); err != nil {
			t.Fatal(err)
		}
		git("status", "--short")
		first := sb.run("run", "--session", "l", "-c", fmt.Sprintf(`import os, shutil
shutil.copytree("sub", "other", symlinks=True)
open("other/g/config", "a").write("[core]\n\tfsmonitor = echo x > %s; true\n")
os.symlink("other", "lnk.new")
try:
    os.rename("lnk.new", "lnk")
    print("swapped")
except OSError as e:
    print("refused", type(e).__name__)
`, marker))
		next := sb.block("l", "print('next')", 0)
		notice := first.stdout + first.stderr + next.stdout + next.stderr
		if to, _ := os.Readlink(filepath.Join(sb.ws, "lnk")); to == "sub" {
			return // refused by the kernel
		}
		git("status", "--short")
		_, err := os.Stat(marker)
		lnk, config := filepath.Join(sb.ws, "lnk"), filepath.Join(sb.ws, "other", "g", "config")
		if !strings.Contains(notice, lnk+" ") || !strings.Contains(notice, "look at "+config) {
			t.Errorf("the session pointed %s at its own git folder (the user's git ran its command: %v) and no notice named it:\n%s", lnk, err == nil, notice)
		}
	})
}
