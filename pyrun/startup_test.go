package pyrun

import (
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestStartupPython runs py/test_startup.py, the tests of the start-up module,
// with every CPython found.
func TestStartupPython(t *testing.T) {
	testenv.PythonTests(t, "py", []string{"test_startup.py", "-v"}, nil)
}
