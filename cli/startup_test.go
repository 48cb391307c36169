package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// TestStartupPython runs py/test_startup.py, the tests of the start-up module,
// with every CPython found.
func TestStartupPython(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py.Executable, "-B", filepath.Join("py", "test_startup.py"), "-v").CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
