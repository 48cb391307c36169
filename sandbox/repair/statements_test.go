package repair

import (
	"slices"
	"strings"
	"testing"
)

func TestTopLevelStarts(t *testing.T) {
	lines := []string{
		"import os\n",
		"x = (1,\n2)\n",         // the second line is inside brackets
		"s = '''\ny = 3\n'''\n", // the second line is inside a string
		"# a comment\n\n",
		"def f():\n    return 1\n",
		"z = 1 + \\\n2\n", // continued
		"t = f'''{x}\ny = {x}\n'''\n",
	}
	src := strings.Join(lines, "")
	var want []int
	at := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			want = append(want, at)
		}
		at += len(l)
	}
	for _, minor := range []int{10, 13} {
		if got := TopLevelStarts(src, minor); !slices.Equal(got, want) {
			t.Errorf("3.%d: %v; want %v", minor, got, want)
		}
	}
}
