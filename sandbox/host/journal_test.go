package host

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

func journalHost(t testing.TB) *Host {
	return &Host{cfg: Config{Log: io.Discard}, journal: blockLog{path: filepath.Join(t.TempDir(), "journal.db"), log: io.Discard}}
}

// runRecorded is what the journal and the live view do around a block:
// its record collects the events sent to its client, and is queued.
func runRecorded(h *Host, req protocol.Request, events []protocol.Event) {
	rec := h.newRecord(req, time.Now())
	rec.begin()
	out := &sink{w: io.Discard, tap: rec.tap}
	for _, ev := range events {
		out.Send(ev)
	}
	rec.finish(protocol.Result{DurationMS: 1})
}

func TestRecordAndFollow(t *testing.T) {
	h := journalHost(t)
	mine := h.viewers.add(&protocol.Client{Kind: "repl", ID: "7"})
	other := h.viewers.add(&protocol.Client{Kind: "repl", ID: "8"})
	runRecorded(h, protocol.Request{Code: "print(1)", Client: &protocol.Client{Kind: "repl", Name: "7", ID: "7"}},
		[]protocol.Event{{Ev: "out", Stream: "stdout", Data: "1\n"}})
	runRecorded(h, protocol.Request{Code: "print(2)", Client: &protocol.Client{Kind: "mcp", Name: "claude", ID: "claude"}},
		[]protocol.Event{{Ev: "out", Stream: "stdout", Data: "2\n"}})
	j, err := h.journal.flush()
	if err != nil {
		t.Fatal(err)
	}
	all, err := j.Last(0, 0)
	if err != nil || len(all) != 2 || all[0].Output != "1\n" || all[1].Label() != "mcp: claude" {
		t.Fatalf("journal: %+v %v", all, err)
	}
	// Each viewer sees the other clients' blocks only.
	kinds := func(v *viewer) string {
		var b strings.Builder
		for _, ev := range v.queue {
			b.WriteString(string(ev.Ev) + ":" + ev.Kind + ev.Data + " ")
		}
		return b.String()
	}
	if got := kinds(mine); got != "block:startprint(2) out:2\n block:end " {
		t.Errorf("viewer 7 saw %q", got)
	}
	if got := kinds(other); !strings.HasPrefix(got, "block:startprint(1) out:1\n block:end block:startprint(2)") {
		t.Errorf("viewer 8 saw %q", got)
	}
	// A viewer that comes while a block runs sees it start.
	rec := h.newRecord(protocol.Request{Code: "slow()", Client: &protocol.Client{Kind: "mcp", Name: "claude", ID: "claude"}}, time.Now())
	rec.begin()
	late := h.viewers.add(&protocol.Client{Kind: "repl", ID: "9"})
	if got := kinds(late); got != "block:startslow() " {
		t.Errorf("a viewer coming in the middle of a block saw %q", got)
	}
	rec.finish(protocol.Result{})
	if h.viewers.running != nil {
		t.Error("the block's start outlived it")
	}
	h.journal.close()
}

// A viewer that does not read loses output, and is told, while the block
// goes on at full speed.
func TestSlowViewer(t *testing.T) {
	var vs viewers
	v := vs.add(&protocol.Client{Kind: "repl", ID: "1"})
	chunk := strings.Repeat("x", protocol.OutChunk)
	for i := 0; i < 2*viewerBehind/protocol.OutChunk; i++ {
		vs.send(protocol.Event{Ev: "out", Data: chunk}, &protocol.Client{Kind: "mcp", ID: "a"})
	}
	vs.send(protocol.Event{Ev: "block", Kind: "end"}, &protocol.Client{Kind: "mcp", ID: "a"})
	if v.bytes > viewerBehind {
		t.Errorf("queued %d bytes", v.bytes)
	}
	last := v.queue[len(v.queue)-2]
	if !strings.Contains(last.Data, "bytes of output skipped") {
		t.Errorf("no note of the skipped output: %+v", last)
	}
	for i := 0; i < maxViewers; i++ {
		vs.add(&protocol.Client{Kind: "x"})
	}
	if vs.add(&protocol.Client{Kind: "x"}) != nil {
		t.Error("more viewers than the bound")
	}
}

// BenchmarkRecord is what the journal and the live view add to a block
// (the record's write is off the block's path, on the journal's writer).
func BenchmarkRecord(b *testing.B) {
	h := journalHost(b)
	v := h.viewers.add(&protocol.Client{Kind: "repl", ID: "1"})
	go func() { // a viewer that reads
		for {
			time.Sleep(time.Millisecond)
			v.mu.Lock()
			v.queue, v.bytes = nil, 0
			v.mu.Unlock()
		}
	}()
	events := []protocol.Event{{Ev: "out", Stream: "stdout", Data: strings.Repeat("a line of output\n", 20)}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runRecorded(h, protocol.Request{Code: "x = 1\nprint(x)", Client: &protocol.Client{Kind: "mcp", Name: "claude", ID: "claude"}}, events)
		// Blocks do not come faster than the writer: the record of each
		// is written before the next (not timed).
		b.StopTimer()
		h.journal.flush()
		b.StartTimer()
	}
	b.StopTimer()
	h.journal.close()
}
