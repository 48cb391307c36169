package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// nextMinor turns "0.13" into "0.14".
func nextMinor(v string) string {
	major, minor, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(minor)
	return major + "." + strconv.Itoa(n+1)
}

// TestScripts runs testdata/script/*.txtar, the user-visible behaviour of
// vis-agent that has no python to compare with, once per CPython found.
// Scripts see the binary as vis-agent on PATH and, for the CPython under
// test: $PYLIB (its library) in $PYLIBDIR, $PYEXE (its python), $PYVER (major.minor)
// and $PYPREFIX; VIS_PYTHON_NATIVE_PATH selects it unless a script
// unsets it. $WHEELS is a wheelhouse built for it (see buildWheelhouse),
// served as an index at $INDEXURL.
func TestScripts(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			wheels := t.TempDir()
			buildWheelhouse(t, wheels, py)
			index := testwheel.Serve(t, testwheel.Index(t, wheels, t.TempDir()))
			testscript.Run(t, testscript.Params{
				Dir: filepath.Join("testdata", "script"),
				Setup: func(env *testscript.Env) error {
					binDir := filepath.Join(env.WorkDir, ".bin")
					if err := os.MkdirAll(binDir, 0o755); err != nil {
						return err
					}
					if err := os.Symlink(bin, filepath.Join(binDir, "vis-agent")); err != nil {
						return err
					}
					env.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
					env.Setenv("HOME", filepath.Join(env.WorkDir, ".home"))
					// How this machine reaches registries (certificates,
					// proxies), for the tests that may.
					for _, name := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"} {
						if v, ok := os.LookupEnv(name); ok {
							env.Setenv(name, v)
						}
					}
					env.Setenv("VIS_HOME", filepath.Join(env.WorkDir, ".vis"))
					env.Setenv("VIS_PYTHON_NATIVE_PATH", py.Library)
					env.Setenv("PYLIB", py.Library)
					env.Setenv("PYLIBDIR", filepath.Dir(py.Library))
					env.Setenv("PYEXE", py.Executable)
					env.Setenv("PYVER", py.Version.Short())
					env.Setenv("PYPREFIX", py.Prefix)
					env.Setenv("WHEELS", wheels)
					env.Setenv("VISBIN", bin)
					pin := uvwrap.Pinned().Version
					minor := pin[:strings.LastIndexByte(pin, '.')]
					env.Setenv("UVVERSION", pin)
					// The uv_build requirement uv builds with itself, offline.
					env.Setenv("UVBUILD", "uv_build>="+minor+",<"+nextMinor(minor))
					env.Setenv("INDEXURL", index)
					// $OTHERLIB and $OTHEREXE are another CPython's, or
					// this one's when the machine has one only.
					env.Setenv("OTHERLIB", py.Library)
					env.Setenv("OTHEREXE", py.Executable)
					for _, other := range testenv.Pythons(t) {
						if other.Version != py.Version {
							env.Setenv("OTHERLIB", other.Library)
							env.Setenv("OTHEREXE", other.Executable)
						}
					}
					return nil
				},
				Condition: func(cond string) (bool, error) {
					// [py3.12] holds when the CPython under test is 3.12.
					if v, ok := strings.CutPrefix(cond, "py"); ok {
						return v == py.Version.Short(), nil
					}
					// [registry]: tests may download from PyPI
					// (VIS_TEST_REGISTRY=1, make test-registry).
					if cond == "registry" {
						return os.Getenv("VIS_TEST_REGISTRY") == "1", nil
					}
					// [syslib]: the system library folders hold a CPython
					// discovery can find without python3 on PATH.
					if cond == "syslib" {
						_, ok := findpython.FromLibraryFolders()
						return ok, nil
					}
					return false, fmt.Errorf("unknown condition %q", cond)
				},
			})
		})
	}
}
