package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

func filter(chunks ...string) string {
	var b bytes.Buffer
	w := &Writer{W: &b, KeepCR: true}
	for _, c := range chunks {
		w.Write([]byte(c))
	}
	w.Flush()
	return b.String()
}

func TestWriter(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"plain text, ünïcode\ttab\r\n"}, "plain text, ünïcode\ttab\r\n"},
		{[]string{"\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m"}, "\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m"},
		{[]string{"\x1b]52;c;SGVsbG8=\x07"}, `\x1b]52;c;SGVsbG8=\x07`},
		{[]string{"\x1b]0;title\x1b\\"}, `\x1b]0;title\x1b\`},
		{[]string{"\x1b[2J\x1b[H\x1b[6n\x1b[?1049h"}, `\x1b[2J\x1b[H\x1b[6n\x1b[?1049h`},
		{[]string{"\x1bPq#0\x1b\\"}, `\x1bPq#0\x1b\`},
		{[]string{"bell\x07 back\x08 del\x7f nul\x00"}, `bell\x07 back\x08 del\x7f nul\x00`},
		{[]string{"c1 \u009b2J \u0085"}, `c1 \u009b2J \u0085`},
		// Cut across writes: held back, then judged whole.
		{[]string{"a\x1b", "[3", "2mgreen\x1b[0m"}, "a\x1b[32mgreen\x1b[0m"},
		{[]string{"a\x1b", "]52;c;x\x07"}, `a\x1b]52;c;x\x07`},
		{[]string{"x\xc2", "\x9b"}, `x\u009b`},
		{[]string{"ends in \x1b[3"}, `ends in \x1b[3`},
		{[]string{"\x1b[" + strings.Repeat("1;", 40)}, `\x1b[` + strings.Repeat("1;", 40)},
	} {
		if got := filter(c.in...); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestWriterConceal: conceal (SGR 8), alone or among other attributes,
// is shown escaped; the same digit as a colour's argument is a colour. A
// colour left set at the end is reset.
func TestWriterConceal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\x1b[8mhidden\x1b[0m", `\x1b[8mhidden` + "\x1b[0m"},
		{"\x1b[30;40mblack on black\n", "\x1b[30;40mblack on black\n" + reset},
		{"\x1b[1;08mhidden", `\x1b[1;08mhidden`},
		{"\x1b[8:1mhidden", `\x1b[8:1mhidden`},
		{"\x1b[38;5;8mgrey", "\x1b[38;5;8mgrey" + reset},
		{"\x1b[48;2;8;8;8mdark", "\x1b[48;2;8;8;8mdark" + reset},
		{"\x1b[38:2::8:8:8;1mdark", "\x1b[38:2::8:8:8;1mdark" + reset},
		{"\x1b[38;2;1;2;3;8mhidden", `\x1b[38;2;1;2;3;8mhidden`},
		{"\x1b[28mshown", "\x1b[28mshown" + reset},
	} {
		if got := filter(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestOutput: a record of a block's output shows its carriage returns.
func TestOutput(t *testing.T) {
	if got, want := Output("10%\r100%\r\n\x1b[32mok"), `10%\r100%\r`+"\n\x1b[32mok"+reset; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestText: Text keeps newlines and tabs and shows everything else a
// terminal would obey or hide escaped, colours included; Line shows
// newlines and tabs too.
func TestText(t *testing.T) {
	for _, c := range []struct{ in, text, line string }{
		{"plain, ünïcode 👍", "plain, ünïcode 👍", "plain, ünïcode 👍"},
		{"a\tb\nc", "a\tb\nc", `a\tb\nc`},
		{"x = 1\rprint('ok')  ", `x = 1\rprint('ok')  `, `x = 1\rprint('ok')  `},
		{"\x1b]0;title\x07\x1b[2J\x1b]52;c;SGVsbG8=\x07", `\x1b]0;title\x07\x1b[2J\x1b]52;c;SGVsbG8=\x07`, `\x1b]0;title\x07\x1b[2J\x1b]52;c;SGVsbG8=\x07`},
		{"\x1b[31mred\x1b[8mhidden", `\x1b[31mred\x1b[8mhidden`, `\x1b[31mred\x1b[8mhidden`},
		{"c1 \u009b2J \u0085 del\x7f", `c1 \u009b2J \u0085 del\x7f`, `c1 \u009b2J \u0085 del\x7f`},
		{"admin\u202e\u2066txt", `admin\u202e\u2066txt`, `admin\u202e\u2066txt`},
		{"bad \x9b\xff utf-8", `bad \x9b\xff utf-8`, `bad \x9b\xff utf-8`},
		{"sep\u2028", `sep\u2028`, `sep\u2028`},
	} {
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q):\n got %q\nwant %q", c.in, got, c.text)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q):\n got %q\nwant %q", c.in, got, c.line)
		}
	}
}

// TestJSON: JSON keeps the value (it decodes to the same) and leaves no
// raw control, C1 control or byte that is not UTF-8.
func TestJSON(t *testing.T) {
	v := map[string]string{"kind": "\x1b]0;t\x07 \u009b2J \x7f \r x\u202e", "ok": "plain ü"}
	raw, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	safe := JSON(raw)
	var back map[string]string
	if err := json.Unmarshal(safe, &back); err != nil || back["kind"] != v["kind"] || back["ok"] != v["ok"] {
		t.Errorf("JSON changed the value: %v %q", err, back)
	}
	for _, r := range string(safe) {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			t.Errorf("a raw %U left in %q", r, safe)
		}
	}
	if got := string(JSON([]byte("\"a\xffb\x1b\""))); got != `"a\ufffdb\u001b"` {
		t.Errorf("not UTF-8 / ESC: %q", got)
	}
}
