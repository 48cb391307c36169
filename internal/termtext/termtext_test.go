package termtext

import (
	"bytes"
	"strings"
	"testing"
)

func filter(chunks ...string) string {
	var b bytes.Buffer
	w := &Writer{W: &b}
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
