package pyembed_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// TestFormatErrorPython runs test_format_error.py, the tests of the module
// that turns exceptions into PyError fields, with every CPython found.
func TestFormatErrorPython(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py.Executable, "-B", "test_format_error.py", "-v").CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
