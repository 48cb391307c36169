package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSandboxProjectDay (issue 33): a coding agent's loop on a small
// project (testdata/project) in a jailed session, offline: install(project=
// ".", extras=["tests"]) brings pytest and xdist; pytest runs in process
// twice with the standby started between (its temp folders intact); a
// test spawns sys.executable; `python -m pytest -n 2` runs two workers;
// ruff and black, installed with install(), run through shell() from the
// session's PATH, and pip there names install().
func TestSandboxProjectDay(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	var tools []string
	for _, pattern := range []string{"pytest-*", "pytest_xdist-*", "pluggy-*", "iniconfig-*", "packaging-*", "exceptiongroup-*",
		"tomli-*", "execnet-*", "ruff-*", "black-*", "click-*", "mypy_extensions-*", "pathspec-*", "platformdirs-*", "typing_extensions-*"} {
		m, _ := filepath.Glob(filepath.Join(wheels, pattern+".whl"))
		tools = append(tools, m...)
	}
	index := installIndex(t, tools...)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := installSandbox(t, py, "file://"+index)
			copyTree(t, filepath.Join("testdata", "project"), sb.ws)
			r := sb.block("day", `import sys
if sys.version_info < (3, 11):
    install("tomli")  # what the error says to do where tomllib is missing
print(install(project=".", extras=["tests"]))
import pytest
print("pytest", int(pytest.main(["-q", "-p", "no:cacheprovider"])))`, 0, "--timeout", "5m")
			contains(t, "the first run", r.stdout, "pytest 8.3.5", "4 passed", "pytest 0\n")
			sb.standby("day")
			r = sb.block("day", `print("pytest", int(pytest.main(["-q", "-p", "no:cacheprovider"])))`, 0, "--timeout", "5m")
			contains(t, "the run after the standby started", r.stdout, "4 passed", "pytest 0\n")
			r = sb.block("day", `import subprocess, sys
out = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider"], capture_output=True, text=True)
print(out.returncode, out.stdout[-600:], out.stderr[-400:])`, 0, "--timeout", "5m")
			contains(t, "pytest -n 2", r.stdout, "created: 2/2 workers", "4 passed")
			r = sb.block("day", `print(install("ruff", "black"))
for cmd in ("ruff check src tests", "black --check src tests", "pip install requests", "python -c 'import pytest; print(pytest.__version__)'",
            "f=/etc/ssl/certs/ca-certificates.crt; if [ -e $f ]; then head -c 27 $f; else echo -----BEGIN CERTIFICATE-----; fi"):
    h = shell(cmd, wait=120)
    print(cmd, "->", h.exit, h.out.strip()[-200:], h.err.strip()[-300:])`, 0, "--timeout", "5m")
			contains(t, "tools through shell()", r.stdout, "ruff check src tests -> 0", "black --check src tests -> 0",
				"pip install requests -> 1", "call install(", "import pytest; print(pytest.__version__)' -> 0 8.3.5",
				// the certificates a command's TLS reads (Landlock lets it)
				"; fi -> 0 -----BEGIN CERTIFICATE-----")
			if strings.Contains(r.stdout, "command not found") {
				t.Errorf("a tool was not found on the session's PATH:\n%s", r.stdout)
			}
		})
	}
}
