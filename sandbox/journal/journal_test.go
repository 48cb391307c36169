package journal

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

func TestAddAndLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	if _, err := OpenRead(path); !errors.Is(err, ErrNone) {
		t.Fatalf("OpenRead of no journal: %v", err)
	}
	j, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	start := time.UnixMilli(time.Now().UnixMilli())
	for i, c := range []string{"x = 1", "print(x)", "1/0"} {
		e := Entry{Client: "mcp", ClientID: "claude", Code: c, Output: "out\n", Status: "ok", Started: start, DurationMS: int64(i)}
		if i == 2 {
			e.Status, e.Error = "error", &Error{Type: "ZeroDivisionError", Message: "division by zero"}
			e.Attachments = []protocol.Attached{{ID: "a1", Filename: "f.png", Version: 1}}
		}
		if _, err := j.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := j.Last(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Code != "print(x)" || got[1].Code != "1/0" || got[1].Error.Type != "ZeroDivisionError" ||
		len(got[1].Attachments) != 1 || !got[1].Started.Equal(start) || got[1].Label() != "mcp: claude" {
		t.Fatalf("Last(2) = %+v", got)
	}
	r, err := OpenRead(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	after, err := r.Last(0, got[0].ID)
	if err != nil || len(after) != 1 || after[0].ID != got[1].ID {
		t.Fatalf("Last after %d = %+v, %v", got[0].ID, after, err)
	}
}

// The journal stays within its bound: the oldest blocks go first.
func TestBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Create(path, 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("y", 10<<10)
	for i := 0; i < 50; i++ {
		if _, err := j.Add(Entry{Client: "run", Code: "print(1)", Output: big, Status: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := j.Last(0, 0)
	if len(all) == 0 || len(all) > 10 || all[len(all)-1].ID != 50 {
		t.Fatalf("%d blocks kept, newest %d", len(all), all[len(all)-1].ID)
	}
	j.Close()
	// A host opening it again counts what is there.
	j, err = Create(path, 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.total > 100<<10 || j.total == 0 {
		t.Fatalf("total %d", j.total)
	}
}

func TestOutputCut(t *testing.T) {
	var o Output
	o.Write("small\n")
	if s, cut := o.Text(); s != "small\n" || cut != 0 {
		t.Fatalf("%q %d", s, cut)
	}
	o = Output{}
	line := strings.Repeat("é", 50) + "\n"
	n := 0
	for n < 10*MaxOutput {
		o.Write(line)
		n += len(line)
	}
	s, cut := o.Text()
	if cut == 0 || len(s) > MaxOutput+200 || !utf8.ValidString(s) || !strings.Contains(s, "bytes of output not kept") {
		t.Fatalf("cut %d len %d", cut, len(s))
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l != line[:len(line)-1] && !strings.HasPrefix(l, "[…") {
			t.Fatalf("a line cut in the middle: %q", l)
		}
	}
}

func TestCodeCut(t *testing.T) {
	c, cut := cutHead(strings.Repeat("é", MaxCode), MaxCode)
	if !utf8.ValidString(c) || cut != int64(MaxCode) {
		t.Fatalf("len %d cut %d", len(c), cut)
	}
}

// BenchmarkAdd is what the journal adds to a block: one block's record
// (the host writes it before the block's result), with a small output and
// with one at the cap.
func BenchmarkAdd(b *testing.B) {
	b.Run("small", func(b *testing.B) { benchAdd(b, strings.Repeat("a line of output\n", 20)) })
	b.Run("capped", func(b *testing.B) { benchAdd(b, strings.Repeat("a line of output\n", MaxOutput/17)) })
}

func benchAdd(b *testing.B, output string) {
	j, err := Create(filepath.Join(b.TempDir(), "journal.db"), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	e := Entry{Client: "mcp", ClientID: "claude", Code: "x = 1\nprint(x)", Output: output, Status: "ok",
		Started: time.Now(), DurationMS: 3}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := j.Add(e); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRewoundBlocks: a journal of schema 1 gains the block and rewound
// columns; a rewind marks the blocks off its line, and an undo unmarks
// them.
func TestRewoundBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := open(path, "rwc")
	if err != nil {
		t.Fatal(err)
	}
	v1 := strings.Replace(strings.Replace(schema, ",\n\tblock       INTEGER NOT NULL DEFAULT 0,\n\trewound     INTEGER NOT NULL DEFAULT 0", "", 1),
		"user_version = 2", "user_version = 1", 1)
	if _, err := db.Exec(v1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO blocks (client, client_id, code, code_cut, output, output_cut, status, error, repair_note, notice,
		started, duration_ms, attachments, size) VALUES ('run', '', 'old = 1', 0, '', 0, 'ok', '', '', '', 0, 0, '[]', 300)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for b := 1; b <= 5; b++ {
		if _, err := j.Add(Entry{Code: "x = " + strconv.Itoa(b), Status: "ok", Block: int64(b)}); err != nil {
			t.Fatal(err)
		}
	}
	rewound := func() string {
		t.Helper()
		es, err := j.Last(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if e.Rewound {
				out = append(out, strconv.FormatInt(e.Block, 10))
			}
		}
		return strings.Join(out, " ")
	}
	// back to block 2, then block 6 runs on it; then the undo: to block 5
	if err := j.MarkRewound([]int{2, 1}); err != nil || rewound() != "3 4 5" {
		t.Fatalf("rewound after a rewind to 2: %q %v", rewound(), err)
	}
	j.Add(Entry{Code: "y = 6", Status: "ok", Block: 6})
	if err := j.MarkRewound([]int{5, 4, 3, 2, 1}); err != nil || rewound() != "6" {
		t.Fatalf("rewound after the undo: %q %v", rewound(), err)
	}
	es, _ := j.Last(0, 0)
	if es[0].Code != "old = 1" || es[0].Block != 0 || !strings.Contains(es[6].Text(), "· block 6 · rewound\n") {
		t.Errorf("entries: %+v", es)
	}
}
