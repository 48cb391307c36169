package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// term is a private tmux server showing one command at a fixed size, for
// driving the REPL as a person does: keys in, the screen read back.
type term struct {
	t    *testing.T
	sock string
}

var termCount atomic.Int32

// newTerm starts argv in a tmux window w×h in dir, with env as the
// environment; the server is killed when the test ends.
func newTerm(t *testing.T, env []string, dir string, w, h int, argv ...string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is missing (make test installs it)")
	}
	tm := &term{t: t, sock: fmt.Sprintf("vis-repl-test-%d-%d", os.Getpid(), termCount.Add(1))}
	args := append([]string{"-L", tm.sock, "-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir, "--"}, argv...)
	cmd := exec.Command("tmux", args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends tmux key names (Enter, C-c, Up, ...).
func (tm *term) keys(keys ...string) { tm.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...) }

// typed sends text as typed, then Enter.
func (tm *term) typed(text string) {
	tm.tmux("send-keys", "-t", "0", "-l", text)
	tm.keys("Enter")
}

func (tm *term) screen() string { return tm.tmux("capture-pane", "-p", "-t", "0") }

// waitFor polls the screen until it shows every one of want.
func (tm *term) waitFor(want ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := tm.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen does not show %q:\n%s", missing, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitForGone polls the screen until it no longer shows text.
func (tm *term) waitForGone(text string) {
	tm.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); strings.Contains(tm.screen(), text); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen still shows %q:\n%s", text, tm.screen())
		}
	}
}

// replPythons are the CPythons the REPL is driven on: the oldest and the
// newest found.
func replPythons(t *testing.T) []testenv.Python {
	all := testenv.Pythons(t)
	if len(all) == 1 {
		return all
	}
	return []testenv.Python{all[0], all[len(all)-1]}
}

// TestReplInTmux drives `vis-agent sandbox repl` in a real terminal: a
// function and a call with the defs panel, a repaired block, an
// interrupted endless loop, a restart, a narrow terminal, and quitting and
// reopening with history and state kept.
func TestReplInTmux(t *testing.T) {
	for _, py := range replPythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			sb := newSandbox(t, py)
			// The pane runs the REPL twice: quitting the first opens the second.
			script := fmt.Sprintf("%[1]s sandbox repl; echo repl-exit=$?; read line; printf '\\033[2J\\033[H'; %[1]s sandbox repl; echo repl-exit=$?; sleep 600", sb.bin)
			tm := newTerm(t, sb.env, sb.ws, 120, 32, "sh", "-c", script)
			tm.waitFor(">>>", "Python 3.", "nothing defined yet")

			tm.typed("def greet(name):")
			tm.typed(`"""Say hello."""`)
			tm.typed(`return "hi " + name`)
			tm.keys("Enter")
			tm.typed(`print(greet("bob"))`)
			tm.waitFor("hi bob", "greet(name)", "Say hello.")
			tm.typed("greet('ann')")
			tm.waitFor("'hi ann'") // a trailing expression's repr

			tm.typed(`print("hello)`)
			tm.waitFor("Repaired this block", "\nhello ")

			// Alt+Enter continues the input; the print shows the loop runs
			tm.tmux("send-keys", "-t", "0", "-l", `print("spinning")`)
			tm.keys("M-Enter")
			tm.typed("while True: pass")
			tm.keys("Enter")
			tm.waitFor("\nspinning ", "running")
			tm.keys("C-c")
			tm.waitFor("KeyboardInterrupt")
			tm.typed("print(6 * 7)")
			tm.waitFor("42")

			tm.typed("/restart")
			tm.waitFor("Restarted:")
			tm.typed(`print("after")`)
			tm.waitFor("[Sandbox restarted]", "after")

			tm.tmux("resize-window", "-t", "0", "-x", "60", "-y", "24")
			s := tm.waitFor(strings.Repeat("─", 60))
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(l, "defs ") {
					goto narrow
				}
			}
			t.Fatalf("at 60 columns the panel is not under the transcript:\n%s", s)
		narrow:
			tm.keys("C-d")
			tm.waitFor("repl-exit=0")
			tm.keys("Enter")
			tm.waitForGone("repl-exit=0")
			tm.waitFor(">>>", "greet(name)")
			tm.keys("Up")
			tm.waitFor(`>>> print("after")`)
			tm.keys("C-c")
			tm.typed(`print(greet("again"))`)
			tm.waitFor("hi again")
			tm.typed("/quit")
			tm.waitFor("repl-exit=0\n")
		})
	}
}

// TestReplNeedsTerminal: without a terminal the REPL refuses in one line
// that points to `sandbox run`.
func TestReplNeedsTerminal(t *testing.T) {
	sb := newSandbox(t, testenv.First(t))
	r := sb.run("repl")
	if r.code != 1 || !strings.Contains(r.stderr, "vis-agent sandbox run") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("repl without a terminal: status %d, stderr %q", r.code, r.stderr)
	}
}
