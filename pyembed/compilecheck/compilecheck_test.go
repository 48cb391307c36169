package compilecheck

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// TestCompileCheckPython runs test_compile_check.py with every CPython
// found.
func TestCompileCheckPython(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py.Executable, "-B", "test_compile_check.py", "-v").CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for out, want := range map[string]*repair.SyntaxError{
		"ok": nil,
		"'(' was never closed\x002\x005\x00y = (2,\n": {Message: "'(' was never closed", Line: 2, Column: 5, Text: "y = (2,\n"},
		"text\x001\x001\x00a\x00b":                    {Message: "text", Line: 1, Column: 1, Text: "a\x00b"},
		"short":                                       {Message: "short"},
	} {
		got := parse(out)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("parse(%q) = %+v; want %+v", out, got, want)
		}
	}
}
