package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestReplLiveView: with the REPL open in tmux, the blocks an MCP client
// runs at the same time show in its transcript as they run (the code
// under the client's name, output as it streams), its own blocks are not
// shown twice, and Ctrl+C there stops the agent's block after a y.
func TestReplLiveView(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	tm := newTerm(t, sb.env, sb.ws, 120, 40, "sh", "-c", sb.bin+" sandbox repl; sleep 600")
	tm.waitFor(">>>", "Python 3.")
	c := connectMCP(t, sb)

	done := make(chan string, 1)
	go func() {
		text, _, _, err := c.call(context.Background(), "python", map[string]any{
			"code": "import time\nprint('agent step 1', flush=True)\ntime.sleep(2)\nprint('agent step 2')"}, false)
		done <- fmt.Sprint(text, err)
	}()
	tm.waitFor("── mcp: vis-agent-test ──", ">>> import time", "agent step 1", "● mcp: vis-agent-test is running a block")
	if s := tm.screen(); hasLine(s, "agent step 2") {
		t.Errorf("the agent's block showed whole at its end, not as it ran:\n%s", s)
	}
	for deadline := time.Now().Add(30 * time.Second); !hasLine(tm.screen(), "agent step 2"); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's second line does not show:\n%s", tm.screen())
		}
	}
	tm.waitForGone("is running a block")
	if got := <-done; !strings.Contains(got, "agent step 2") {
		t.Errorf("the agent's call: %s", got)
	}

	tm.typed("print('typed here')")
	tm.waitFor("\ntyped here")
	tm.waitForIdle()
	if s := tm.screen(); strings.Contains(s, "── repl") {
		t.Errorf("the REPL showed its own block as another client's:\n%s", s)
	}

	go func() {
		text, _, isErr, err := c.call(context.Background(), "python", map[string]any{"code": "import time\nprint('long', flush=True)\ntime.sleep(60)"}, false)
		done <- fmt.Sprint(text, isErr, err)
	}()
	tm.waitFor("\nlong", "is running a block")
	tm.keys("C-c")
	tm.waitFor("Stop mcp: vis-agent-test's running block (KeyboardInterrupt)? y/n")
	tm.keys("y")
	select {
	case got := <-done:
		if !strings.Contains(got, "KeyboardInterrupt") || !strings.Contains(got, "true") {
			t.Errorf("the agent's interrupted call: %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Ctrl+C and y in the REPL did not stop the agent's block")
	}
	tm.waitFor("KeyboardInterrupt")
	tm.waitForGone("is running a block")
}

// BenchmarkReplLiveBlock measures, for BENCHMARKS.md, how long after an
// MCP client's python call starts its block's code shows on the terminal
// of a REPL open on the session: each iteration is one call printing a
// new marker. Reported: the median and the slowest, and the calls' own
// round trip (median).
func BenchmarkReplLiveBlock(b *testing.B) {
	sb := newSandbox(b, testenv.First(b))
	c := connectMCP(b, sb)
	c.python("x = 1", false) // the session is warm
	term := openTerminal(sb, sb.bin, "sandbox", "repl")
	term.until(0, "Python 3.", time.Now())
	time.Sleep(time.Second) // the REPL follows the session
	var ds, calls []time.Duration
	for i := 0; b.Loop(); i++ {
		// The terminal gets only the cells that change: each marker
		// differs from the last in every character.
		marker := strings.Repeat(string(rune('A'+i%26)), 12)
		off := term.mark()
		done := make(chan struct{})
		start := time.Now()
		go func() {
			c.python(fmt.Sprintf("print(%q)", marker), false)
			calls = append(calls, time.Since(start))
			close(done)
		}()
		ds = append(ds, term.until(off, marker, start))
		<-done
		time.Sleep(200 * time.Millisecond)
	}
	b.ReportMetric(msOf(medianOf(ds)), "median-ms")
	b.ReportMetric(msOf(slowest(ds)), "slowest-ms")
	b.ReportMetric(msOf(medianOf(calls)), "call-ms")
}

// hasLine is whether the screen has a line that is text (the transcript's
// column: a panel may follow it).
func hasLine(screen, text string) bool {
	for _, l := range strings.Split(screen, "\n") {
		l, _, _ = strings.Cut(l, "│")
		if strings.TrimSpace(l) == text {
			return true
		}
	}
	return false
}

func slowest(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// TestReplLiveViewIdle: a REPL left open (following the session) does not
// keep an idle session's host; when a block starts the session again, the
// REPL follows it again and shows the block.
func TestReplLiveViewIdle(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t), "VIS_ENV_IDLE_TTL_MS=2000")
	tm := newTerm(t, sb.env, sb.ws, 120, 40, "sh", "-c", sb.bin+" sandbox repl; sleep 600")
	tm.waitFor(">>>", "Python 3.")
	folder := sb.folder("default")
	host := sb.record(folder).HostPID
	for deadline := time.Now().Add(30 * time.Second); processAlive(host); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session's host did not stop when idle while a REPL followed it")
		}
	}
	sb.block("default", "import time; time.sleep(1); print('back again')", 0)
	tm.waitFor("── sandbox run ──", "import time; time.sleep(1)", "\nback again")
}
