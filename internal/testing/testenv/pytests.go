package testenv

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// PythonTests runs the Python tests of the embedded .py files beside a
// package, `python -B ARGS…` in folder dir, with every CPython found, in
// parallel: as the interpreter would import those files, without bytecode
// files and without the caller's PYTHONPATH. A failing run fails the
// subtest with its output; check, when given, reads a passing run's. The
// newest CPython's run gets VIS_TEST_FIGURES=1: tests that only measure a
// figure for the record run there alone.
func PythonTests(t *testing.T, dir string, args []string, check func(t *testing.T, out []byte)) {
	pys := Pythons(t)
	for i, py := range pys {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py.Executable, append([]string{"-B"}, args...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=", "VIS_TEST_FIGURES=")
			if i == len(pys)-1 {
				cmd.Env = append(cmd.Env, "VIS_TEST_FIGURES=1")
			}
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if check != nil {
				check(t, out)
			}
		})
	}
}
