package compilecheck

import (
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestCompileCheckPython runs test_compile_check.py with every CPython
// found.
func TestCompileCheckPython(t *testing.T) {
	testenv.PythonTests(t, ".", []string{"test_compile_check.py", "-v"}, nil)
}

func TestParse(t *testing.T) {
	for out, want := range map[string]*protocol.SyntaxError{
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
