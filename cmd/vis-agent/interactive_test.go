package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// terminal is a command running on a pseudo-terminal, and all it printed.
type terminal struct {
	t    testing.TB
	tty  io.ReadWriteCloser
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen bytes.Buffer
	read int // where the next waitFor starts looking
	done chan struct{}
}

func startTerminal(t testing.TB, cmd *exec.Cmd) *terminal {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, tty: tty, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.seen.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tty.Close(); cmd.Process.Kill(); cmd.Wait() })
	return term
}

// waitFor polls the output printed since the last match for text, and moves
// past it, so that a prompt already seen is not taken for the next one. The
// bound is for hangs only.
func (term *terminal) waitFor(text string) {
	term.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		term.mu.Lock()
		i := strings.Index(term.seen.String()[term.read:], text)
		if i >= 0 {
			term.read += i + len(text)
		}
		term.mu.Unlock()
		if i >= 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	term.mu.Lock()
	defer term.mu.Unlock()
	term.t.Fatalf("no %q on the terminal; it shows:\n%s", text, term.seen.String())
}

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.tty.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

// TestInteractivePrompt: with a terminal on stdin and no program, vis-agent
// python opens CPython's own prompt: banner, evaluation, Ctrl-C, Ctrl-D.
func TestInteractivePrompt(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "python")
			cmd.Env = append(userEnv(py, t.TempDir(), nil), "TERM=xterm")
			term := startTerminal(t, cmd)
			term.waitFor("Python " + py.Version.Short())
			term.waitFor(">>> ")
			term.send("print(6 * 7)\r")
			term.waitFor("42")
			term.send("\x03") // Ctrl-C at the prompt
			term.waitFor("KeyboardInterrupt")
			term.send("import sys; print('tty', sys.stdin.isatty())\r")
			term.waitFor("tty True")
			// Ctrl-D typed before readline has put the terminal in raw mode
			// is the line discipline's EOF, which the switch to raw mode can
			// drop (python loses it too): type it at the prompt.
			term.waitFor(">>> ")
			term.send("\x04") // Ctrl-D
			select {
			case <-term.done:
			case <-ctx.Done():
				t.Fatal("the prompt did not end on Ctrl-D")
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit after Ctrl-D: %v", err)
			}
		})
	}
}
