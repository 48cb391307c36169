package pyembed_test

import (
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestFormatErrorPython runs test_format_error.py, the tests of the module
// that turns exceptions into PyError fields, with every CPython found.
func TestFormatErrorPython(t *testing.T) {
	testenv.PythonTests(t, ".", []string{"test_format_error.py", "-v"}, nil)
}
