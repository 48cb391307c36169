package pyrun

import (
	"slices"
	"testing"
)

// TestReplayArgs: the prefix a plan is keyed on holds every argument the
// decision read and none of the program's own, and CPython's arguments for
// it are what Parse gave.
func TestReplayArgs(t *testing.T) {
	for _, c := range []struct {
		args         []string
		prefix, head []string
		need         int
		exact, ok    bool
	}{
		{args: []string{"-c", "pass", "a"}, prefix: []string{"-c"}, head: []string{"-c"}, need: 1, ok: true},
		{args: []string{"-B", "--shared", "-Ic", "x"}, prefix: []string{"-B", "--shared", "-Ic"}, head: []string{"-B", "-Ic"}, need: 1, ok: true},
		{args: []string{"-cprint(1)", "a"}, prefix: []string{"-cprint(1)"}, head: []string{"-cprint(1)"}, ok: true},
		{args: []string{"-c", "-c"}, prefix: []string{"-c"}, head: []string{"-c"}, need: 1, ok: true},
		{args: []string{"--env", "A=1", "-m", "json.tool", "f"}, prefix: []string{"--env", "A=1", "-m", "json.tool"}, head: []string{"-m", "json.tool"}, ok: true},
		{args: []string{"-u", "script.py", "-c", "x"}, prefix: []string{"-u", "script.py"}, head: []string{"-u", "script.py"}, ok: true},
		{args: []string{"--", "-odd.py"}, prefix: []string{"--", "-odd.py"}, head: []string{"--", "-odd.py"}, ok: true},
		{args: []string{"-", "a"}, prefix: []string{"-"}, head: []string{"-"}, ok: true},
		{args: []string{"-q", "-i"}, prefix: []string{"-q", "-i"}, head: []string{"-q", "-i"}, exact: true, ok: true},
		{args: nil, exact: true, ok: true},
		{args: []string{"uv", "sync"}},
	} {
		pa, err := Parse(c.args)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		prefix, head, need, exact, ok := replayArgs(c.args, pa)
		if ok != c.ok || !slices.Equal(prefix, c.prefix) || !slices.Equal(head, c.head) || need != c.need || exact != c.exact {
			t.Errorf("replayArgs(%q) = %q, %q, %d, %v, %v; want %q, %q, %d, %v, %v",
				c.args, prefix, head, need, exact, ok, c.prefix, c.head, c.need, c.exact, c.ok)
		}
	}
}
