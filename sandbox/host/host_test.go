package host

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

func TestOnlyComments(t *testing.T) {
	for src, want := range map[string]bool{
		"": true, "# a\n\n   # b\n": true, "\ufeff# bom": true,
		"x = 1  # c": false, "# a\npass": false, "'''\n# in a string\n'''": false,
	} {
		if got := onlyComments(src); got != want {
			t.Errorf("onlyComments(%q) = %v", src, got)
		}
	}
}

func TestSyntaxResultPointsAtTheProblem(t *testing.T) {
	rep := repair.Result{Source: "x = 1\ny = f(é, ]\n", PythonError: &protocol.SyntaxError{Message: "closing parenthesis ']' does not match opening parenthesis '('", Line: 2, Column: 10}}
	res := syntaxResult(rep)
	e := res.Error
	if e.Type != "SyntaxError" || e.Line != 2 || e.Column != 10 {
		t.Fatalf("%+v", e)
	}
	lines := strings.Split(e.Excerpt, "\n")
	if lines[0] != "2: y = f(é, ]" || strings.Index(lines[1], "^") != len([]rune("2: y = f(é, ")) {
		t.Errorf("excerpt:\n%s", e.Excerpt)
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5 minutes", time.Minute: "1 minute", time.Second: "1 second",
		90 * time.Second: "90 seconds", 300 * time.Millisecond: "300 ms",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

// The idle timer firing while a client is connected (a REPL following the
// session, a client that has not sent its request yet) keeps the session
// and gives the turn back: a turn kept would hang every later block and
// stop.
func TestIdleWithAClientGivesTheTurnBack(t *testing.T) {
	h := &Host{turn: make(chan struct{}, 1), clients: 1, cfg: Config{IdleTTL: time.Minute}}
	h.onIdle()
	select {
	case h.turn <- struct{}{}:
	default:
		t.Fatal("the idle timer kept the session's turn")
	}
}

// resultWriter calls onResult when the result event is written to the
// client, before the writer returns.
type resultWriter func()

func (f resultWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"ev":"result"`) {
		f()
	}
	return len(p), nil
}

// An interrupt sent as soon as a block's result arrives finds nothing
// running: the block's ticket ends before its client hears of the end
// (an MCP client that interrupted right after a result stopped "the
// running block" that had ended).
func TestInterruptOnTheResultFindsNothingRunning(t *testing.T) {
	h := &Host{turn: make(chan struct{}, 1), cfg: Config{Folder: session.Folder{Dir: t.TempDir()}, Log: io.Discard},
		journal: blockLog{log: io.Discard}}
	var said string
	out := &sink{w: resultWriter(func() {
		var err error
		if said, err = h.interruptFor(protocol.Request{Op: protocol.OpInterrupt}); err != nil {
			said = err.Error()
		}
	})}
	h.run(protocol.Request{Op: protocol.OpRun, Code: "# nothing"}, out, &watch{h: h, withdrawn: make(chan struct{})})
	if said != "no block is running; nothing was interrupted" {
		t.Errorf("an interrupt on the result: %q", said)
	}
}
