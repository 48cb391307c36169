package child

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// TestPythonUnittests runs the unittest files of py/tests (the driver,
// state and defs modules) with every CPython found, as the child would
// import them: from py/, without bytecode files.
func TestPythonUnittests(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py.Executable, "-B", "-m", "unittest", "discover", "-s", "tests", "-v")
			cmd.Dir = "py"
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=")
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// the measured figures the tests print, for the record
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "figure: ") {
					t.Log(line)
				}
			}
		})
	}
}
