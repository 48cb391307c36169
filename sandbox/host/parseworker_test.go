package host

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/check"
)

// TestParseTexts: the texts are parsed in worker processes, answered in
// order; one past a bound of size or depth is not sent; one whose parse
// passes the worker's CPU bound is unchecked, saying so, and those after
// it go to a new worker; a spare worker answers the next call.
func TestParseTexts(t *testing.T) {
	h := &Host{cfg: Config{Exe: testenv.Binary(t)}}
	// Inline tables 31 deep, within the bounds: 2.6 s of CPU on the
	// development machine, past the worker's 2 s (tables 30 deep with
	// longer keys took 1.5 s, and passed only when the machine was loaded
	// enough for the wall-clock deadline to end it).
	var bomb strings.Builder
	for i := 0; bomb.Len() < 1000000-200; i++ {
		fmt.Fprintf(&bomb, "%x = %s1%s\n", i, strings.Repeat("{b=", 31), strings.Repeat("}", 31))
	}
	got := h.parseTexts(time.Now().Add(30*time.Second), []dataText{
		{check.JSON, `{"a": 1}`}, {check.TOML, "a = \n"}, {check.TOML, strings.Repeat("x.", 40) + "x = 1"},
		{check.TOML, bomb.String()}, {check.YAML, "a: [1, 2]\n"},
	})
	if got[0].Problem != nil || got[0].Unchecked != "" || got[1].Problem == nil || got[1].Problem.Line != 1 ||
		!strings.Contains(got[2].Unchecked, "nested more than 32 deep") ||
		!strings.Contains(got[3].Unchecked, "its parse passed the checker's bound of 2 s of CPU") ||
		got[4].Problem != nil || got[4].Unchecked != "" {
		t.Fatalf("answers: %+v", got)
	}
	waitSpare(t, h)
	start := time.Now()
	p, unchecked := h.parseOne(check.JSON, "[1,")
	t.Logf("a parse by the spare worker: %s", time.Since(start))
	if p == nil || p.Column != 3 || unchecked != "" {
		t.Errorf("the spare's answer: %+v %q", p, unchecked)
	}
}

// waitSpare waits (10 s at most) until h's spare worker is ready.
func waitSpare(tb testing.TB, h *Host) {
	tb.Helper()
	for range 10000 {
		h.workers.mu.Lock()
		ready := h.workers.spare != nil
		h.workers.mu.Unlock()
		if ready {
			return
		}
		time.Sleep(time.Millisecond)
	}
	tb.Fatal("no spare worker")
}

// BenchmarkParseOne is a small JSON text's parse as a block's check or a
// patch() has it: by a spare worker (started, waiting; its start is not
// timed), by a worker started for it, and in the host's own process, as
// before the worker.
func BenchmarkParseOne(b *testing.B) {
	h := &Host{cfg: Config{Exe: testenv.Binary(b)}}
	const text = `{"name": "x", "list": [1, 2, 3], "nested": {"a": true}}`
	spare := func() { waitSpare(b, h) }
	h.parseOne(check.JSON, text) // a worker used: the next waits ready
	b.Run("spare", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			spare()
			b.StartTimer()
			h.parseOne(check.JSON, text)
		}
	})
	b.Run("started", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			spare()
			h.workers.mu.Lock()
			w := h.workers.spare
			h.workers.spare = nil
			h.workers.mu.Unlock()
			w.end()
			b.StartTimer()
			h.parseOne(check.JSON, text)
		}
	})
	b.Run("in-process", func(b *testing.B) {
		for range b.N {
			check.ParseData(check.JSON, text)
		}
	})
}

// TestParseTextsNoWorker: a worker that does not start leaves every text
// unchecked, saying why.
func TestParseTextsNoWorker(t *testing.T) {
	h := &Host{cfg: Config{Exe: "/nonexistent/vis-agent"}}
	got := h.parseTexts(time.Now().Add(2*time.Second), []dataText{{check.JSON, "{}"}, {check.YAML, "a: 1"}})
	for _, a := range got {
		if !strings.HasPrefix(a.Unchecked, "the checker did not start: ") {
			t.Errorf("answers: %+v", got)
		}
	}
}
