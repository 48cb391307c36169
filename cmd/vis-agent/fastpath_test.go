package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// runIn runs name with args in dir with the environment env.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	return runToEnd(t, ctx, cmd, false)
}

// replayWait outlasts the window in which a changed path keeps a plan from
// being saved (pyembed's racyWindow).
const replayWait = 2100 * time.Millisecond

// pastRacy waits until path (the binary, which a plan observes) is older
// than replayWait: a binary built a moment ago, as make's test targets
// do, keeps the first run from saving its plan.
func pastRacy(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(st.ModTime().Add(replayWait)))
}

// planFiles lists the saved plans of a Vis home: name and inode, which a
// plan saved again replaces.
func planFiles(t *testing.T, home string) map[string]uint64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(home, "python", "fastpath"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	plans := map[string]uint64{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		plans[e.Name()] = info.Sys().(*syscall.Stat_t).Ino
	}
	return plans
}

// TestPythonMatchesReferenceReplayed runs the reference cases, and the
// signal ones, again with vis-agent replaying the plan a first run saved
// (pyembed/fastpath.c starts CPython before Go): each must still match
// python, and the plan must have been replayed, not saved again.
func TestPythonMatchesReferenceReplayed(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the exec helper sets dispositions with Linux's system calls")
	}
	bin := testenv.Binary(t)
	cases := append(slices.Clone(pythonCases), signalCases()...)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			home, reference := referenceHome(t, bin, py)
			time.Sleep(replayWait)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.minMinor > py.Version.Minor {
						t.Skipf("needs CPython 3.%d+", c.minMinor)
					}
					work := filepath.Join(t.TempDir(), "work")
					// The first run saves the plan: for -c, any code does.
					prime := pyCase{args: c.args, stdin: c.stdin, files: c.files, env: c.env, inherit: c.inherit}
					if len(c.args) > 1 && c.args[0] == "-c" {
						prime.args = []string{"-c", "pass"}
					}
					execIn(t, work, prime, py, home, append([]string{bin, "python"}, prime.args...))
					saved := planFiles(t, home)
					ref := execIn(t, work, c, py, home, append([]string{reference}, c.args...))
					got := execIn(t, work, c, py, home, append([]string{bin, "python"}, c.args...))
					sameRuns(t, c, reference, ref, got)
					for name, ino := range planFiles(t, home) {
						if old, ok := saved[name]; !ok || old != ino {
							t.Errorf("vis-agent python %q saved a plan (%s) instead of replaying the first run's", c.args, name)
						}
					}
				})
			}
		})
	}
}

// replayProbe prints which start a run took (one thread: the replay, which
// starts no Go runtime; more: Go's) and what it runs with.
const replayProbe = `import os, sys
print("threads", 1 if len(os.listdir("/proc/self/task")) == 1 else "many")
print("argv", sys.argv)
print("path", [p for p in sys.path if "lib" not in p])
print("exe", sys.executable)
`

// TestPythonReplay: a run replays the plan of the identical run before it,
// and every change the plan depends on sends it back to Go, which decides
// afresh.
func TestPythonReplay(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			home, work := filepath.Join(dir, "vishome"), filepath.Join(dir, "a", "work")
			env := userEnv(py, home, nil)
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			python := func(env []string, args ...string) (string, string) {
				t.Helper()
				got := runIn(t, work, env, bin, append([]string{"python"}, args...)...)
				return got.stdout, got.stderr + got.status
			}
			threads := func(out string) string {
				t.Helper()
				if strings.Contains(out, "threads 1\n") {
					return "replay"
				}
				if strings.Contains(out, "threads many\n") {
					return "go"
				}
				t.Fatalf("no thread count in %q", out)
				return ""
			}
			want := func(what, out, path string) {
				t.Helper()
				if got := threads(out); got != path {
					t.Errorf("%s: started by %s, want %s; it printed:\n%s", what, got, path, out)
				}
			}
			python(env, "-c", "pass") // makes the shared environment
			time.Sleep(replayWait)
			first, _ := python(env, "-c", replayProbe, "x")
			want("the first run", first, "go")
			again, _ := python(env, "-c", replayProbe, "x")
			want("the same run again", again, "replay")
			if first[len("threads many\n"):] != again[len("threads 1\n"):] {
				t.Errorf("the replay differs from the run it replays:\n%s\n%s", first, again)
			}
			if out, _ := python(env, "-c", replayProbe+"print('other code')", "y", "-B"); threads(out) != "replay" ||
				!strings.Contains(out, "argv ['-c', 'y', '-B']") || !strings.Contains(out, "other code") {
				t.Errorf("other code and arguments after -c CODE: want a replay of them, got\n%s", out)
			}
			if out, status := python(env, "-c"); out != "" || !strings.Contains(status, "vis-agent python: option -c needs an argument") || !strings.HasSuffix(status, "exit 2") {
				t.Errorf("-c without code: want vis-agent's usage error, got %q %q", out, status)
			}
			// A variable vis-agent sets for the program: no plan is saved.
			before := planFiles(t, home)
			for range 2 {
				if out, _ := python(env, "--env", "A=1", "-c", replayProbe); threads(out) != "go" {
					t.Errorf("--env A=1: want a start through Go, got\n%s", out)
				}
			}
			if after := planFiles(t, home); len(after) != len(before) {
				t.Errorf("--env A=1 saved a plan: %d plans before, %d after", len(before), len(after))
			}
			// Another environment is another plan, saved by its first run.
			env2 := append(env[:len(env):len(env)], "EXTRA=1")
			out, _ := python(env2, "-c", replayProbe)
			want("another environment", out, "go")
			out, _ = python(env2, "-c", replayProbe)
			want("another environment again", out, "replay")
			// A damaged or foreign plan is not replayed, and the run works.
			plans := planFiles(t, home)
			for name := range plans {
				file := filepath.Join(home, "python", "fastpath", name)
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, data[:len(data)/2], 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, _ = python(env, "-c", replayProbe, "x")
			want("a truncated plan", out, "go")
			for name := range planFiles(t, home) {
				if err := os.Chmod(filepath.Join(home, "python", "fastpath", name), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			out, _ = python(env, "-c", replayProbe, "x")
			want("a plan others may write", out, "go")
			out, _ = python(env, "-c", replayProbe, "x")
			want("the plan saved again", out, "replay")
			// Configuration found at or above the folder changes the run.
			testenv.WriteTree(t, work, map[string]string{"src/": "", "vis.toml": "[python]\nsource_paths = [\"src\"]\n"})
			out, _ = python(env, "-c", replayProbe, "x")
			want("a new vis.toml", out, "go")
			if !strings.Contains(out, filepath.Join(work, "src")) {
				t.Errorf("the new vis.toml's source_paths are not on sys.path:\n%s", out)
			}
			testenv.WriteTree(t, filepath.Dir(work), map[string]string{"pyproject.toml": "[project]\nname = \"p\"\n[tool.setuptools]\npackage-dir = {\"\" = \"work\"}\n"})
			out, _ = python(env, "-c", replayProbe, "x")
			want("a new pyproject.toml above", out, "go")
			if !strings.Contains(out, "'"+work+"'") {
				t.Errorf("the project's import root is not on sys.path:\n%s", out)
			}
			out, _ = python(env, "-c", replayProbe, "x")
			want("inside a project", out, "go")
		})
	}
}

// TestPythonReplayLibraryGone: a plan whose library has gone is not
// replayed; Go explains.
func TestPythonReplayLibraryGone(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	py := testenv.First(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib", filepath.Base(py.Library))
	data, err := os.ReadFile(py.Library)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, dir, map[string]string{"lib/" + filepath.Base(py.Library): string(data)})
	env := append(userEnv(py, filepath.Join(dir, "vishome"), nil), "VIS_PYTHON_NATIVE_PATH="+lib, "VIS_PYTHON_HOME="+py.Prefix)
	runIn(t, dir, env, bin, "python", "-c", "pass")
	time.Sleep(replayWait)
	for range 2 {
		if got := runIn(t, dir, env, bin, "python", "-c", "print('ok')"); got.stdout != "ok\n" {
			t.Fatalf("with the library: %s", got)
		}
	}
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	got := runIn(t, dir, env, bin, "python", "-c", "print('ok')")
	if got.stdout != "" || got.status != "exit 1" || !strings.Contains(got.stderr, "vis-agent python: ") || strings.Count(got.stderr, "\n") != 1 {
		t.Errorf("without the library: want one line from vis-agent and exit 1, got %s", got)
	}
}

// TestUVReplay: `vis-agent python uv SUB` replays the plan of the identical
// run before it (exec of the pinned uv with vis-agent's variables), while
// uv pip, which acts on the environment a run uses, is decided by Go every
// time.
func TestUVReplay(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	py := testenv.First(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "vishome")
	env := userEnv(py, home, nil)
	uv := func(args ...string) run {
		t.Helper()
		got := runIn(t, dir, env, bin, append([]string{"python", "uv"}, args...)...)
		if got.status != "exit 0" {
			t.Fatalf("uv %q: %s", args, got)
		}
		return got
	}
	uv("--version") // checks the pin once and remembers it
	time.Sleep(replayWait)
	// uv runs the python vis-agent names in UV_PYTHON.
	probe := []string{"run", "--no-project", "python", "-c", "import sys; print(sys.executable)"}
	first := uv(probe...)
	saved := planFiles(t, home)
	if len(saved) != 1 {
		t.Fatalf("uv run saved %d plans, want 1", len(saved))
	}
	again := uv(probe...)
	if again != first || !strings.HasPrefix(again.stdout, py.Prefix) {
		t.Errorf("the replay ran %q, Go ran %q (want the embedded CPython, under %s)", again.stdout, first.stdout, py.Prefix)
	}
	uv("pip", "list")
	uv("--version")
	for name, ino := range planFiles(t, home) {
		if old, ok := saved[name]; ok && old != ino {
			t.Errorf("the plan of uv run was replaced (by uv pip or uv --version), not replayed")
		}
	}
	if got := len(planFiles(t, home)); got != 2 {
		t.Errorf("%d plans after uv run, uv pip list and uv --version; want 2 (uv pip is never replayed)", got)
	}
}
