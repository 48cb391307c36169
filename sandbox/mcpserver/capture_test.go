package mcpserver

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCaptureWithinCap(t *testing.T) {
	c := newCapture(10)
	c.write("héllo")
	c.write(" wörl")
	if c.truncated() || c.text(notKept) != "héllo wörl" {
		t.Errorf("10 characters under a cap of 10: truncated=%v %q", c.truncated(), c.text(notKept))
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := newCapture(10)
	// Many small writes, then one large one: the tail is trimmed as it goes.
	for i := 0; i < 1000; i++ {
		c.write("ab")
	}
	c.write(strings.Repeat("é", 5000) + "XYZ")
	got := c.text(notKept)
	if !c.truncated() || c.total != 7003 {
		t.Fatalf("total %d, truncated %v", c.total, c.truncated())
	}
	if !strings.HasPrefix(got, "ababa\n[... 6993 characters omitted: the block printed 7003 characters") {
		t.Errorf("head and note: %q", got)
	}
	if !strings.HasSuffix(got, "]\nééXYZ") {
		t.Errorf("tail: %q", got)
	}
	if len(c.tail) > 8*c.tailMax+64 || !utf8.ValidString(got) {
		t.Errorf("tail holds %d bytes; valid UTF-8 %v", len(c.tail), utf8.ValidString(got))
	}
}

func TestCaptureCutsWithinAWrite(t *testing.T) {
	c := newCapture(4)
	c.write("line1\nline2\n")
	want := "li\n[... 8 characters omitted: the block printed 12 characters and results are capped at 4; this shows the first 2 and the last 2."
	if got := c.text(notKept); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "]\n2\n") {
		t.Errorf("got %q", got)
	}
}

// TestCaptureSpillsTheWholeOutput: once the output passes the cap, the
// spill holds all of it, from its first character, up to its own limit.
func TestCaptureSpillsTheWholeOutput(t *testing.T) {
	c := newCapture(10)
	c.spillMax = 1 << 20
	var want strings.Builder
	for i := 0; i < 1000; i++ {
		s := fmt.Sprintf("line %d é\n", i)
		c.write(s)
		want.WriteString(s)
	}
	defer c.spill.close()
	r, err := c.spill.reader()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	if string(got) != want.String() {
		t.Errorf("spilled %d bytes, want %d", len(got), want.Len())
	}

	small := newCapture(10)
	small.write("0123456789") // at the cap: nothing spilled
	if small.spill != nil {
		t.Error("an output within the cap was spilled")
	}
	small.spillMax = 13
	small.write("éé")
	r, _ = small.spill.reader()
	got, _ = io.ReadAll(r)
	if string(got) != "0123456789é" || small.spill.dropped != 2 {
		t.Errorf("a spill past its limit: %q, %d dropped", got, small.spill.dropped)
	}
	small.spill.close()
}
