package child

import (
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestPythonUnittests runs the unittest files of py/tests (the driver,
// state and defs modules) with every CPython found, as the child would
// import them: from py/, without bytecode files.
func TestPythonUnittests(t *testing.T) {
	testenv.PythonTests(t, "py", []string{"-m", "unittest", "discover", "-s", "tests", "-v"}, func(t *testing.T, out []byte) {
		// the measured figures the tests print, for the record
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "figure: ") {
				t.Log(line)
			}
		}
	})
}
