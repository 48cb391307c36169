package testwheel

import (
	"os"
	"path/filepath"
	"testing"
)

// Wheelhouse is the folder of real wheels `make test-wheels` fetches
// (numpy, pandas, matplotlib with their dependencies, six, cffi, for
// CPython 3.10, 3.13 and the others found; scipy, scikit-learn,
// statsmodels, pyarrow, polars, lxml, pytest, ruff and black for 3.10 and
// 3.13 only), named by VIS_TEST_WHEELHOUSE, which `make test` sets. The
// test is skipped without it.
func Wheelhouse(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("VIS_TEST_WHEELHOUSE")
	if dir == "" {
		t.Skip("VIS_TEST_WHEELHOUSE is not set: `make test-wheels` fetches the wheels, `make test` sets it")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.whl")); len(m) == 0 {
		t.Fatalf("VIS_TEST_WHEELHOUSE=%s holds no wheel: run `make test-wheels`", dir)
	}
	return dir
}
