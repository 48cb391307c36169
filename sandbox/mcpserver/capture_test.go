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
	if !strings.HasPrefix(got, "[output was cut: 0 lines / 6,993 characters missing of 0 / 7,003 (results keep 10 characters); the missing part is not kept") {
		t.Errorf("the note first: %q", got)
	}
	if !strings.HasSuffix(got, "]\nababa\n[... 0 lines / 6,993 characters cut here ...]\nééXYZ") {
		t.Errorf("head and tail: %q", got)
	}
	if len(c.tail) > 8*c.tailMax+64 || !utf8.ValidString(got) {
		t.Errorf("tail holds %d bytes; valid UTF-8 %v", len(c.tail), utf8.ValidString(got))
	}
}

func TestCaptureCutsWithinAWrite(t *testing.T) {
	c := newCapture(4)
	c.write("line1\nline2\n")
	want := "[output was cut: 1 lines / 8 characters missing of 2 / 12 (results keep 4 characters); x]\nli\n[... 1 lines / 8 characters cut here ...]\n2\n"
	if got := c.text("x"); got != want {
		t.Errorf("got %q", got)
	}
}

// TestCaptureCutsAtLines: the parts kept end and start at a line's end
// when one is in their second half.
func TestCaptureCutsAtLines(t *testing.T) {
	c := newCapture(40)
	for i := range 100 {
		c.write(fmt.Sprintf("row %02d\n", i))
	}
	got := c.text("x")
	want := "[output was cut: 96 lines / 672 characters missing of 100 / 700 (results keep 40 characters); x]\n" +
		"row 00\nrow 01\n[... 96 lines / 672 characters cut here ...]\nrow 98\nrow 99\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestScreen(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		want   string
	}{
		{[]string{"a\rb\n"}, "b\n"},
		{[]string{"abc\rX"}, "Xbc"},
		{[]string{"10%\r", "20%\r", "100%\n", "done\n"}, "100%\ndone\n"},
		{[]string{"\x1b[31mred\x1b[0m plain\n"}, "red plain\n"},
		{[]string{"\x1b]0;title\x07x\x1b]8;;http://a\x1b\\link\n"}, "xlink\n"},
		{[]string{"\x1b[3", "1mred\n"}, "red\n"},
		{[]string{"h\xc3", "\xa9\n"}, "hé\n"},
		{[]string{"ab\bc\n"}, "ac\n"},
		{[]string{"win\r\n"}, "win\n"},
	} {
		var s screen
		var got strings.Builder
		for _, w := range tc.writes {
			got.WriteString(s.write(w))
		}
		got.WriteString(s.flush())
		if got.String() != tc.want {
			t.Errorf("%q: %q, want %q", tc.writes, got.String(), tc.want)
		}
	}
	// A progress bar of 2,000 updates is one line.
	var s screen
	var got strings.Builder
	for i := range 2000 {
		got.WriteString(s.write(fmt.Sprintf("\r[%-50s] %4d/2000", strings.Repeat("#", i*50/2000), i+1)))
	}
	got.WriteString(s.write("\n") + s.flush())
	if got.String() != "["+strings.Repeat("#", 49)+" ] 2000/2000\n" {
		t.Errorf("progress bar: %q", got.String())
	}
}

func TestLineSlice(t *testing.T) {
	text := "a\nb\nc\nd\n"
	if got := lineSlice(text, 1, 2, 100); got != "[lines 2 to 3 of 4; read on with offset_lines 3]\nb\nc\n" {
		t.Errorf("lines 2-3: %q", got)
	}
	if got := lineSlice(text, 3, 0, 100); got != "[lines 4 to 4 of 4]\nd\n" {
		t.Errorf("the last line: %q", got)
	}
	if got := lineSlice(text, 0, 0, 4); got != "[lines 1 to 2 of 4; read on with offset_lines 2]\na\nb\n" {
		t.Errorf("within the cap: %q", got)
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
