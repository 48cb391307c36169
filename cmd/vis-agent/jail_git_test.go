package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// Issue 31's second hole: a .git the user makes while a session lives
// (git init, git clone) was writable by the session, and git runs its
// hooks and settings as the user at the next commit. The child kept only
// a .git that was there when it started, and the shell() shield was
// computed at the first shell() call and kept for the host's life, so
// even after `sandbox restart` a shell() command planted a hook.

// gitInit runs git init in dir as the user would, with no settings or
// templates of the machine's, and adds a .gitmodules.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitmodules"), []byte("[submodule \"lib\"]\n\tpath = lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitAttack is a block that tries every way into .git the red team used:
// a hook, the config, a hard link to it, a write through a symbolic
// link, the host's patch(), and the same from a shell() command, which
// then tries to commit (and gets the hint).
const gitAttack = `import os
E = "ESC" + "APED"
` + attemptPy + `def through_link():
    os.symlink(".git/hooks/post-checkout", "hook-link")
    open("hook-link", "w").write("#!/bin/sh\n")
attempt("a hook", lambda: open(".git/hooks/pre-commit", "w").write("#!/bin/sh\n"))
attempt("the config", lambda: open(".git/config", "a").write("[core]\n\thooksPath = /tmp\n"))
attempt("a hard link to the config", lambda: os.link(".git/config", "config-link"))
attempt("a write through a symlink", through_link)
attempt("patch() of the config", lambda: patch(".git/config", "[core]", "[core]\n\tfsmonitor = evil"))
attempt("the .gitmodules", lambda: open(".gitmodules", "a").write("[submodule \"x\"]\n\tpath = x\n"))
r = shell("E=" + E + "; echo '#!/bin/sh' > .git/hooks/pre-commit && echo $E hook; echo '[core]' >> .git/config && echo $E config; "
          "ln .git/config config-link2 && echo $E link; ln -s .git/hooks/post-merge merge-link; echo x > merge-link && echo $E symlink; "
          "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && echo $E commit", wait=60)
print(r.out, r.err)
print(repr(r).splitlines()[-1])
`

// gitState is what the user's git reads of dir's .git: its files, and
// the config's names (a hard link is a second one).
func gitState(t *testing.T, dir string) string {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s%s links %d", treeState(t, filepath.Join(dir, ".git")), treeState(t, filepath.Join(dir, ".gitmodules")), st.Sys().(*syscall.Stat_t).Nlink)
}

// checkGitAttack runs gitAttack in session name of workspace ws and
// fails when any way into ws/.git got through.
func checkGitAttack(t *testing.T, sb *sandbox, name, ws string) result {
	t.Helper()
	before := gitState(t, ws)
	r := sb.block(name, gitAttack, 0, "--workspace", ws)
	all := r.stdout + r.stderr
	if escaped(all) {
		t.Errorf("got into .git:\n%s", all)
	}
	contains(t, "the attack", r.stdout, "a hook -> refused", "the config -> refused", "a hard link to the config -> refused",
		"a write through a symlink -> refused", "patch() of the config -> refused", "the .gitmodules -> refused",
		"hint: the workspace's .git is read-only in the jail: leave commits to the user")
	if after := gitState(t, ws); after != before {
		t.Errorf("the .git changed:\nbefore %s\nafter  %s", before, after)
	}
	for _, f := range []string{"config-link", "config-link2"} {
		if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s was made", f)
		}
	}
	return r
}

// TestSandboxJailGitMadeLater: the user runs git init in the workspace
// of a live session, after a block, after a first shell() command, and
// before a restart: the next block and its shell() commands cannot plant
// a hook, change the config, hard-link it or write through a symbolic
// link into it; the block that follows the git init is told why the
// session's Python was replaced.
func TestSandboxJailGitMadeLater(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		for _, c := range []struct {
			name, first string
			restart     bool
		}{
			{"after-a-block", "x = 1", false},
			{"after-a-shell", `print(shell("true", wait=60))`, false},
			{"then-restart", `print(shell("true", wait=60))`, true},
		} {
			ws := filepath.Join(sb.ws, c.name)
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			sb.block(c.name, c.first, 0, "--workspace", ws)
			gitInit(t, ws)
			if c.restart {
				if r := sb.run("restart", "--session", c.name, "--workspace", ws); r.code != 0 {
					t.Fatalf("restart: %d %s", r.code, r.stderr)
				}
			}
			r := checkGitAttack(t, sb, c.name, ws)
			if !c.restart {
				contains(t, c.name, r.stdout+r.stderr, filepath.Join(ws, ".git")+" appeared", "while the session ran: git's files at the top of a root are kept read-only")
			}
		}
	})
}

// TestSandboxJailGitDuringABlock: a block that keeps trying to plant a
// hook, and a shell() command that does the same, run while the user
// runs git init: the session's processes are killed when the host sees
// the new .git, the block ends saying why, and whatever got in before
// (the moment the event takes to reach the host) is named; afterwards
// nothing gets in.
func TestSandboxJailGitDuringABlock(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("race", "x = 1", 0)
		started := filepath.Join(sb.ws, "started")
		type run struct {
			r   result
			err error
		}
		done := make(chan run, 1)
		go func() {
			cmd := sb.command("run", "--session", "race", "-c", `import os, time
r = shell("while :; do echo '#!/bin/sh' > .git/hooks/pre-commit 2>/dev/null && echo planted by shell; done", wait=0)
open("started", "w").close()
end = time.time() + 60
while time.time() < end:
    try:
        open(".git/hooks/pre-commit", "a").write("# planted by the block\n")
    except OSError:
        pass
print("the block ran to its end")
`)
			out, err := cmd.CombinedOutput()
			done <- run{result{stdout: string(out), code: cmd.ProcessState.ExitCode()}, err}
		}()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the block did not start")
			}
		}
		gitInit(t, sb.ws)
		var got run
		select {
		case got = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("the block was not stopped")
		}
		t.Logf("%s", got.r.stdout)
		if got.r.code != 1 || strings.Contains(got.r.stdout, "the block ran to its end") ||
			!strings.Contains(got.r.stdout, filepath.Join(sb.ws, ".git")+" appeared") || !strings.Contains(got.r.stdout, "while the session ran") {
			t.Errorf("the block went on, or was not told why it stopped (status %d):\n%s", got.r.code, got.r.stdout)
		}
		// What the race let in is named in the notice.
		planted := filepath.Join(sb.ws, ".git", "hooks", "pre-commit")
		if _, err := os.Stat(planted); err == nil && !strings.Contains(got.r.stdout, planted+" (not a sample)") {
			t.Errorf("a hook got in and the notice does not name it:\n%s", got.r.stdout)
		}
		os.Remove(planted)
		time.Sleep(300 * time.Millisecond)
		if _, err := os.Stat(planted); err == nil {
			t.Errorf("the shell() command's loop lives on: it planted the hook again")
		}
		checkGitAttack(t, sb, "race", sb.ws)
	})
}

// TestSandboxJailGitOfTheSession: a .git the session makes itself in a
// folder of the workspace is its own to write (the jail keeps only the
// tops of the roots), and what a block or its shell() commands wrote in
// it is named after the block, in its result, its output and the
// journal, so that the user is told before running git there.
func TestSandboxJailGitOfTheSession(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("own", `r = shell("git init -q sub && echo '#!/bin/sh' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit", wait=60)
print(r.status, r.exit, r.err)`, 0)
		contains(t, "shell()", r.stdout+r.stderr, "exited 0", "[.git] changed while the block ran", "sub/.git/hooks/pre-commit", "look at them before you run git there")
		v := sb.jsonBlock("own", `open("sub/.git/config", "a").write("[core]\n\tfsmonitor = evil\n")
import os
os.link("sub/.git/description", "description-link")`)
		names, _ := json.Marshal(v["git"])
		contains(t, "the block's result", string(names), `"sub/.git/config"`, `"sub/.git/description"`)
		if strings.Contains(string(names), "hooks/pre-commit") {
			t.Errorf("the last block's result names what an earlier one wrote: %s", names)
		}
		log := sb.run("log", "--session", "own")
		contains(t, "sandbox log", log.stdout, "[.git] changed while the block ran", "sub/.git/hooks/pre-commit", "sub/.git/config")
		// A block that writes nothing of git's is told nothing.
		if r := sb.block("own", `print(shell("true", wait=60).exit)`, 0); strings.Contains(r.stdout+r.stderr, "[.git]") {
			t.Errorf("a notice for nothing:\n%s%s", r.stdout, r.stderr)
		}
	})
}

// TestSandboxJailGitWithAStandby: a standby Python process, started (and
// its shield computed) before the user's git init, is ended with the
// child, never swapped in: the block after the restart finds .git
// read-only, and ran in another process. (The restart only stops the
// child: the record names the one that ran the block once it answered.)
func TestSandboxJailGitWithAStandby(t *testing.T) {
	t.Parallel()
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		sb := hookSandbox(t, py, hook)
		sb.block("w", "print(1)", 0)
		pkg := filepath.Join(sb.folder("w"), "packages", py.Version.Short(), "vistp")
		testenv.WriteTree(t, pkg, map[string]string{"__init__.py": "class Thing:\n    pass\n"})
		sb.block("w", "import vistp\nthing = vistp.Thing()", 0)
		warm := sb.standby("w")
		gitInit(t, sb.ws)
		sb.ok("restart", "--session", "w")
		checkGitAttack(t, sb, "w", sb.ws)
		if child := sb.record(sb.folder("w")).ChildPID; child == warm {
			t.Errorf("the standby started before git init ran the block")
		}
		gone(t, "the standby", warm)
	})
}

// TestSandboxJailGitRootMovedAndBack: a workspace moved away and back
// while its session lives is the same folder, and the host's watch of it
// was lost when the next Python process started (the kernel keeps one
// watch per folder: dropping the moved name's dropped the folder's), so a
// git init there afterwards went unseen and the block after it planted a
// hook from Python.
func TestSandboxJailGitRootMovedAndBack(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		ws := filepath.Join(sb.ws, "moved")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		sb.block("m", "x = 1", 0, "--workspace", ws)
		if err := os.Rename(ws, ws+"-away"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(ws+"-away", ws); err != nil {
			t.Fatal(err)
		}
		sb.ok("restart", "--session", "m", "--workspace", ws)
		sb.block("m", "x = 2", 0, "--workspace", ws)
		gitInit(t, ws)
		checkGitAttack(t, sb, "m", ws)
	})
}
