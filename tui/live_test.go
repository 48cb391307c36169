package tui

import (
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Another client's block shows in the transcript as it runs, marked with
// the client; the line above the input says it runs, and Ctrl+C there
// asks before it stops it.
func TestLiveBlocks(t *testing.T) {
	m := newModel(t, 100, 30)
	m.live.follow() // its command, which dials, is not run
	gen := m.live.gen
	send := func(ev protocol.Event) { m.Update(liveMsg{gen, ev}) }
	send(protocol.Event{Ev: "block", Kind: "start", Client: &protocol.Client{Kind: "mcp", Name: "claude", ID: "c1"}, Data: "print('from the agent')\nprint('\x1b]0;title\x07')"})
	send(protocol.Event{Ev: "out", Stream: "stdout", Data: "from the agent\n"})
	f := frame(m)
	for _, want := range []string{"── mcp: claude ──", ">>> print('from the agent')", "\nfrom the agent", "● mcp: claude is running a block · Ctrl+C stops it"} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "\x1b]0;") {
		t.Errorf("another client's code reached the terminal with its escape sequence:\n%q", f)
	}
	if press(m, "ctrl+c") != nil || m.confirm != "interrupt mcp: claude" || !strings.Contains(frame(m), "Stop mcp: claude's running block") {
		t.Fatalf("Ctrl+C does not ask before it stops the agent's block: %q\n%s", m.confirm, frame(m))
	}
	if press(m, "n"); m.confirm != "" || !strings.Contains(frame(m), "(cancelled)") {
		t.Fatal("n does not cancel")
	}
	press(m, "ctrl+c")
	if cmd := press(m, "y"); cmd == nil {
		t.Fatal("y does not interrupt")
	}
	press(m, "ctrl+c")
	send(protocol.Event{Ev: "block", Kind: "end", Result: &protocol.Result{Error: &protocol.BlockError{Type: "KeyboardInterrupt", Traceback: "KeyboardInterrupt\n"}}})
	f = frame(m)
	if m.confirm != "" || strings.Contains(f, "is running a block") || !strings.Contains(f, "KeyboardInterrupt") {
		t.Fatalf("the end of the agent's block: confirm %q\n%s", m.confirm, f)
	}
	// A follow of an earlier session says nothing.
	m.Update(liveMsg{gen - 1, protocol.Event{Ev: "block", Kind: "start", Client: &protocol.Client{Kind: "run"}, Data: "stale()"}})
	if strings.Contains(frame(m), "stale()") {
		t.Error("an earlier follow's block shows")
	}
}
