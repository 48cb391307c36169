package repair

import (
	"slices"
	"strings"
	"testing"
)

func TestLineStarts(t *testing.T) {
	type line struct {
		text   string
		indent int // -1: no logical line starts on it
	}
	lines := []line{
		{"import os\n", 0},
		{"x = (1,\n", 0}, {"2)\n", -1}, // inside brackets
		{"s = '''\n", 0}, {"y = 3\n", -1}, {"'''\n", -1}, // inside a string
		{"# a comment\n", -1}, {"\n", -1},
		{"def f():\n", 0}, {"    return 1\n", 4},
		{"z = 1 + \\\n", 0}, {"2\n", -1}, // continued
		{"t = f'''{x}\n", 0}, {"y = {x}\n", -1}, {"'''\n", -1},
		{"if z:\n", 0}, {"\tpass\n", 8},
	}
	var src strings.Builder
	var want []LineStart
	for _, l := range lines {
		if l.indent >= 0 {
			want = append(want, LineStart{Off: src.Len() + len(l.text) - len(strings.TrimLeft(l.text, " \t")), Indent: l.indent})
		}
		src.WriteString(l.text)
	}
	for _, minor := range []int{10, 13} {
		if got := LineStarts(src.String(), minor); !slices.Equal(got, want) {
			t.Errorf("3.%d: %v; want %v", minor, got, want)
		}
	}
}
