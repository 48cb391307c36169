package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The commands a user runs in a workspace a session shaped (issue 31,
// item 7): they run unjailed, so a symlink, a FIFO or a path swapped in a
// loop must never lead them to read, wait on or write a file outside it.

// broken is a Python file `check --fix` repairs (an unclosed bracket),
// and the payload the swapping loops try to land outside.
const broken = "PAYLOAD = (1,\n"

// outsideFiles makes a folder outside the workspace holding a broken
// Python file and a shell start-up file, and returns the folder and a
// function failing the test when either changed.
func outsideFiles(t *testing.T) (string, func(when string)) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"victim.py": "victim = (2,\n", "bashrc": "export SAFE=1\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func(when string) {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		if len(entries) != len(files) {
			t.Errorf("%s: the folder outside holds %d files, not %d", when, len(entries), len(files))
		}
		for name, text := range files {
			if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != text {
				t.Errorf("%s: %s outside the workspace was written: %q", when, name, got)
			}
		}
	}
}

// swapInLoop starts, in session name, a shell() command that swaps path
// (relative to the workspace) between each of states (shell commands
// making path.tmp) until the file "stop" appears in the workspace; the
// test's cleanup makes it. Each state is renamed over path, so path is
// always something.
func swapInLoop(sb *sandbox, name, path string, states ...string) {
	sb.t.Helper()
	var loop strings.Builder
	loop.WriteString("while [ ! -e stop ]; do ")
	for _, s := range states {
		loop.WriteString(s + " && mv -f " + path + ".tmp " + path + "; ")
	}
	loop.WriteString("done")
	r := sb.block(name, "h = shell("+pyQuote(loop.String())+", timeout=600, wait=0)\nprint(h.status)", 0)
	contains(sb.t, "the swapping loop", r.stdout, "running")
	sb.t.Cleanup(func() { os.WriteFile(filepath.Join(sb.ws, "stop"), nil, 0o644) })
}

// repeatFor runs f until d has passed, and says how many times it ran.
func repeatFor(d time.Duration, f func()) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		f()
	}
	return n
}

// TestHostileWorkspaceCheckFix: `sandbox check --fix` never writes outside
// the workspace: not through a symlink at the file (link.py to a broken
// .py outside), nor through a symlinked folder (sub/ to outside), and not
// while a shell() loop of a live session swaps a.py between a fixable
// payload and a symlink to a file outside (the fix once landed in
// ~/.bashrc this way). Each such file is refused in one line, status 2;
// a plain file is still fixed.
func TestHostileWorkspaceCheckFix(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		outside, unchanged := outsideFiles(t)
		victim := filepath.Join(outside, "victim.py")
		if err := os.Symlink(victim, filepath.Join(sb.ws, "link.py")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(sb.ws, "sub")); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{"link.py", "sub/victim.py", filepath.Join(sb.ws, "sub", "victim.py")} {
			for _, fix := range []bool{false, true} {
				args := []string{"check", file}
				if fix {
					args = []string{"check", "--fix", file}
				}
				r := sb.run(args...)
				if r.code != 2 || !strings.Contains(r.stderr, "symbolic link") || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stdout, "victim") {
					t.Errorf("%v: status %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
				}
			}
		}
		unchanged("a symlink at the file or on its way")

		sb.writeFile("plain.py", broken)
		if r := sb.run("check", "--fix", "plain.py"); r.code != 0 || !strings.Contains(r.stdout, "fixed:") {
			t.Errorf("a plain file: status %d\n%s%s", r.code, r.stdout, r.stderr)
		}

		sb.writeFile("payload.py", broken)
		swapInLoop(sb, "swap", "a.py", "cp payload.py a.py.tmp", "ln -sfn "+filepath.Join(outside, "bashrc")+" a.py.tmp")
		fixed := 0
		tries := repeatFor(8*time.Second, func() {
			if r := sb.run("check", "--fix", "a.py"); strings.Contains(r.stdout, "fixed:") {
				fixed++
			}
		})
		t.Logf("%d runs of check --fix a.py, %d fixed a.py", tries, fixed)
		unchanged("check --fix while a.py was swapped")
	})
}

// TestHostileWorkspaceAttachmentGet: `attachment get` never writes outside
// the workspace through a symlink the session left at its destination:
// notes.pth pointing to a folder outside (a site-packages, where python
// would run it) or to a file outside, with --force too, -o naming such a
// link or a path through a symlinked folder, nor while a shell() loop
// swaps notes.pth between the link and a file. The refusal names the
// link; the "wrote" line of a write names the real destination.
func TestHostileWorkspaceAttachmentGet(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		outside, unchanged := outsideFiles(t)
		r := sb.block("g", `attach(b"import os; os.system('touch /tmp/pwned')\n", filename="notes.pth")
attach(b"new\n", filename="bashrc")
print("attached")`, 0)
		contains(t, "attach", r.stdout, "attached")
		link := func(name, target string) {
			os.Remove(filepath.Join(sb.ws, name))
			if err := os.Symlink(target, filepath.Join(sb.ws, name)); err != nil {
				t.Fatal(err)
			}
		}
		get := func(args ...string) result {
			return sb.run(append([]string{"attachment", "get", "--session", "g"}, args...)...)
		}
		refused := func(r result, args ...string) {
			t.Helper()
			if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("get %v: status %d\nstderr: %s", args, r.code, r.stderr)
			}
		}
		link("notes.pth", outside)
		for _, args := range [][]string{{"notes.pth"}, {"notes.pth", "--force"}, {"notes.pth", "-o", "notes.pth"}} {
			refused(get(args...), args...)
		}
		link("bashrc", filepath.Join(outside, "bashrc"))
		for _, args := range [][]string{{"bashrc", "--force"}, {"bashrc", "-o", "bashrc"}} {
			refused(get(args...), args...)
		}
		link("out", outside)
		for _, args := range [][]string{{"bashrc", "-o", "out/bashrc"}, {"bashrc", "-o", "out"}, {"bashrc", "-o", filepath.Join(sb.ws, "out")}} {
			refused(get(args...), args...)
		}
		unchanged("a symlink at the destination")

		// The real destination, through a symlinked working folder.
		os.Mkdir(filepath.Join(sb.ws, "real"), 0o755)
		os.Symlink(filepath.Join(sb.ws, "real"), filepath.Join(sb.ws, "alias"))
		cmd := sb.command("attachment", "get", "--session", "g", "--workspace", sb.ws, "bashrc")
		cmd.Dir = filepath.Join(sb.ws, "alias")
		cmd.Env = append(cmd.Env, "PWD="+cmd.Dir) // the working folder as a shell names it
		out, err := cmd.CombinedOutput()
		real, _ := filepath.EvalSymlinks(filepath.Join(sb.ws, "real", "bashrc"))
		if err != nil || !strings.Contains(string(out), "wrote "+real+" ") {
			t.Errorf("get from a symlinked folder: %v: %s (want the real path %s)", err, out, real)
		}

		os.Remove(filepath.Join(sb.ws, "notes.pth"))
		swapInLoop(sb, "swap", "notes.pth", "ln -sfn "+outside+" notes.pth.tmp", "echo x > notes.pth.tmp")
		tries := repeatFor(5*time.Second, func() { get("notes.pth", "--force") })
		t.Logf("%d runs of attachment get notes.pth --force", tries)
		unchanged("attachment get while notes.pth was swapped")
	})
}

// TestHostileWorkspaceExportImport: `export -o` does not write through a
// symlinked folder or a symlink at its file, and `import` does not read
// an archive through a symlink.
func TestHostileWorkspaceExportImport(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		outside, unchanged := outsideFiles(t)
		sb.block("e", "x = 1", 0)
		os.Symlink(outside, filepath.Join(sb.ws, "out"))
		os.Symlink(filepath.Join(outside, "bashrc"), filepath.Join(sb.ws, "e.vis-session.zip"))
		for _, args := range [][]string{{"-o", "out/e.zip"}, {"--force"}, {"-o", "e.vis-session.zip", "--force"}} {
			r := sb.run(append([]string{"export", "--session", "e"}, args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("export %v: status %d\nstderr: %s", args, r.code, r.stderr)
			}
		}
		unchanged("export")
		r := sb.run("export", "--session", "e", "-o", "good.zip")
		if r.code != 0 {
			t.Fatalf("export: %s", r.stderr)
		}
		os.Rename(filepath.Join(sb.ws, "good.zip"), filepath.Join(outside, "good.zip"))
		os.Symlink(filepath.Join(outside, "good.zip"), filepath.Join(sb.ws, "linked.zip"))
		if r := sb.run("import", "--session", "imported", "linked.zip"); r.code == 0 || !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("import through a symlink: status %d\nstderr: %s", r.code, r.stderr)
		}
	})
}

// TestHostileWorkspaceFIFO: `check`, `check --fix`, `repair`, `run FILE`
// and `import` given a FIFO the session made answer at once, in one line
// with a non-zero status, instead of waiting for a writer forever.
func TestHostileWorkspaceFIFO(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("f", `import os
os.mkfifo("pipe.py")
os.mkfifo("pipe.zip")
print("made")`, 0)
		contains(t, "mkfifo", r.stdout, "made")
		for _, args := range [][]string{{"check", "pipe.py"}, {"check", "--fix", "pipe.py"}, {"repair", "pipe.py"},
			{"run", "--session", "f", "pipe.py"}, {"import", "--session", "x", "pipe.zip"}} {
			cmd := sb.command(args...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Errorf("%v waited on the FIFO", args)
				continue
			}
			if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out.String(), "named pipe") || strings.Count(out.String(), "\n") != 1 {
				t.Errorf("%v: status %d: %q", args, cmd.ProcessState.ExitCode(), out.String())
			}
		}
	})
}
