package testwheel

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// These tests install the wheels with the real pip of every CPython that
// testenv finds, and with the bundled uv when `make uv` has put it in
// bin/vis-agent-python/uv (or $VIS_TEST_UV names one; without either the uv
// parts skip). pip takes about a second to start, so only the
// first python runs the whole matrix (find-links and index, pip and uv); the
// others build, install and import the C extension only.

const fastC = `#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b))
        return NULL;
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, "Return a + b."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "vis_fast", "testwheel's C extension", -1, methods,
};

PyMODINIT_FUNC PyInit_vis_fast(void) { return PyModule_Create(&module); }
`

var fastSpec = Spec{
	Name:    "vis-fast",
	Version: "1.0.0",
	Files:   map[string]string{"vis_fast.pyi": "def add(a: int, b: int) -> int: ...\n"},
}

// pureSpecs are the pure wheels: vis-demo needs vis-dep, and
// vis-extra-dep with its extra "fast"; vis-hook has a .pth hook.
func pureSpecs() []Spec {
	return []Spec{
		{
			Name:    "vis-demo",
			Version: "1.0.0",
			Files: map[string]string{
				"vis_demo/__init__.py": "from vis_dep import BASE\n\ndef value():\n    return BASE + 2\n",
				"vis_demo/cli.py":      "import vis_demo\n\ndef main():\n    print('vis-demo cli', vis_demo.value())\n    return 0\n",
			},
			Requires:       []string{"vis-dep>=1.0", `vis-extra-dep; extra == "fast"`},
			Extras:         []string{"fast"},
			ConsoleScripts: map[string]string{"vis-demo": "vis_demo.cli:main"},
			Scripts:        map[string]string{"vis-plain": "#!/bin/sh\necho vis-plain\n"},
			Data:           map[string]string{"share/vis-demo/README": "vis-demo data\n"},
			RequiresPython: ">=3.10",
		},
		{Name: "vis-dep", Version: "1.2", Files: map[string]string{"vis_dep/__init__.py": "BASE = 40\n"}},
		{Name: "vis-extra-dep", Version: "1.0", Files: map[string]string{"vis_extra_dep.py": "FAST = True\n"}},
		{
			Name:    "vis-hook",
			Version: "0.1",
			Files: map[string]string{
				"vis_hook.pth":    "import vis_hook_mod\n",
				"vis_hook_mod.py": "import os\nos.environ['VIS_HOOK_RAN'] = os.environ.get('VIS_HOOK_RAN', '') + 'x'\n",
			},
		},
	}
}

// checkAll runs in the installed target (argv[1]): the .pth hook runs once,
// from site.addsitedir only; the packages, the dependency, the extra (when
// argv[2] is 1) and the extension (when argv[3] is 1) import from the
// target.
const checkAll = `
import os, site, sys
target, want_extra, want_fast = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
assert "VIS_HOOK_RAN" not in os.environ, "hook ran before addsitedir"
site.addsitedir(target)
assert os.environ.get("VIS_HOOK_RAN") == "x", "the .pth hook did not run once: %r" % os.environ.get("VIS_HOOK_RAN")
import vis_demo, vis_dep, vis_hook_mod
from importlib import metadata
for m in (vis_demo, vis_dep, vis_hook_mod):
    assert os.path.realpath(m.__file__).startswith(os.path.realpath(target) + os.sep), m.__file__
assert vis_demo.value() == 42, vis_demo.value()
assert metadata.version("vis-demo") == "1.0.0"
assert metadata.version("vis-dep") == "1.2"
assert metadata.metadata("vis-demo")["Requires-Python"] == ">=3.10"
try:
    import vis_extra_dep
    has_extra = True
except ImportError:
    has_extra = False
assert has_extra == want_extra, "extra installed: %s, wanted %s" % (has_extra, want_extra)
if want_fast:
    import vis_fast
    assert os.path.realpath(vis_fast.__file__).startswith(os.path.realpath(target) + os.sep), vis_fast.__file__
    assert vis_fast.add(2, 3) == 5, vis_fast.add(2, 3)
    assert metadata.version("vis-fast") == "1.0.0"
    assert os.path.isfile(os.path.join(target, "vis_fast.pyi"))
print("ok")
`

const checkFast = `
import os, sys
target = sys.argv[1]
import vis_fast
assert os.path.realpath(vis_fast.__file__).startswith(os.path.realpath(target) + os.sep), vis_fast.__file__
assert vis_fast.add(2, 3) == 5, vis_fast.add(2, 3)
assert vis_fast.add(-7, 1000000) == 999993
print("ok")
`

func TestInstall(t *testing.T) {
	pys := testenv.Pythons(t)
	uv := uvPath(t)
	for i, py := range pys {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			if i == 0 {
				installAll(t, py, uv)
			} else {
				installFast(t, py, uv)
			}
		})
	}
}

// installAll installs every kind of wheel with pip and uv, from find-links
// and from an index.
func installAll(t *testing.T, py testenv.Python, uv string) {
	wheels := t.TempDir()
	for _, s := range pureSpecs() {
		Build(t, wheels, s)
	}
	// Without a compiler or headers the extension's subtest skips and the
	// rest runs without it.
	fast := ""
	t.Run("build-extension", func(t *testing.T) {
		fast = BuildExtension(t, wheels, py, fastSpec, "vis_fast", fastC)
	})
	pkgs := func(demo string) []string {
		if fast == "" {
			return []string{demo, "vis-hook"}
		}
		return []string{demo, "vis-hook", "vis-fast"}
	}
	index := Index(t, wheels, filepath.Join(t.TempDir(), "simple"))

	t.Run("pip-find-links", func(t *testing.T) {
		target := t.TempDir()
		pip(t, py, append([]string{"--no-index", "--find-links", wheels, "--target", target}, pkgs("vis-demo[fast]")...)...)
		checkTarget(t, py, target, true, fast != "")
	})
	t.Run("pip-index", func(t *testing.T) {
		target := t.TempDir()
		u := url.URL{Scheme: "file", Path: index}
		pip(t, py, append([]string{"--index-url", u.String(), "--target", target}, pkgs("vis-demo")...)...)
		checkTarget(t, py, target, false, fast != "")
	})
	t.Run("uv-find-links", func(t *testing.T) {
		if uv == "" {
			t.Skip(noUV)
		}
		target := t.TempDir()
		uvInstall(t, uv, py, append([]string{"--no-index", "--find-links", wheels, "--target", target}, pkgs("vis-demo[fast]")...)...)
		checkTarget(t, py, target, true, fast != "")
	})
	t.Run("uv-index", func(t *testing.T) {
		if uv == "" {
			t.Skip(noUV)
		}
		target := t.TempDir()
		uvInstall(t, uv, py, append([]string{"--index-url", Serve(t, index), "--target", target}, pkgs("vis-demo")...)...)
		checkTarget(t, py, target, false, fast != "")
	})
}

// installFast builds the C extension for py and installs it with pip (and
// uv).
func installFast(t *testing.T, py testenv.Python, uv string) {
	wheels := t.TempDir()
	w := BuildExtension(t, wheels, py, fastSpec, "vis_fast", fastC)
	v := fmt.Sprintf("%d%d", py.Version.Major, py.Version.Minor)
	wantName := "vis_fast-1.0.0-cp" + v + "-cp" + v + "-"
	if !strings.HasPrefix(filepath.Base(w), wantName) {
		t.Errorf("extension wheel %s, want %s...", filepath.Base(w), wantName)
	}
	target := t.TempDir()
	pip(t, py, "--no-index", "--find-links", wheels, "--target", target, "vis-fast")
	runPython(t, py, target, checkFast, target)
	if uv != "" {
		target := t.TempDir()
		uvInstall(t, uv, py, "--no-index", "--find-links", wheels, "--target", target, "vis-fast")
		runPython(t, py, target, checkFast, target)
	}
}

// checkTarget checks what installAll's installs put in target.
func checkTarget(t *testing.T, py testenv.Python, target string, wantExtra, wantFast bool) {
	t.Helper()
	runPython(t, py, target, checkAll, target, flag(wantExtra), flag(wantFast))
	for _, s := range []string{"vis-demo", "vis-plain"} {
		st, err := os.Stat(filepath.Join(target, "bin", s))
		if err != nil {
			t.Errorf("script: %v", err)
		} else if st.Mode()&0o111 == 0 {
			t.Errorf("script %s is not executable: %v", s, st.Mode())
		}
	}
	out := run(t, env(target), filepath.Join(target, "bin", "vis-demo"))
	if strings.TrimSpace(out) != "vis-demo cli 42" {
		t.Errorf("console script printed %q, want %q", out, "vis-demo cli 42")
	}
	if b, err := os.ReadFile(filepath.Join(target, "share", "vis-demo", "README")); err != nil || string(b) != "vis-demo data\n" {
		t.Errorf("data file: %q %v", b, err)
	}
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// runPython runs code with py, target on PYTHONPATH, and wants "ok".
func runPython(t *testing.T, py testenv.Python, target, code string, args ...string) {
	t.Helper()
	out := run(t, env(target), py.Executable, append([]string{"-s", "-c", code}, args...)...)
	if strings.TrimSpace(out) != "ok" {
		t.Errorf("%s check printed %q, want ok", py.Name, out)
	}
}

func pip(t *testing.T, py testenv.Python, args ...string) {
	t.Helper()
	base := []string{"-m", "pip", "install", "--isolated", "--disable-pip-version-check", "--no-cache-dir", "--no-input", "--quiet"}
	run(t, env(""), py.Executable, append(base, args...)...)
}

const noUV = "no uv at bin/vis-agent-python/uv (run `make uv`) and VIS_TEST_UV is unset: uv install not tested"

func uvInstall(t *testing.T, uv string, py testenv.Python, args ...string) {
	t.Helper()
	e := append(env(""), "UV_CACHE_DIR="+t.TempDir(), "UV_PYTHON_DOWNLOADS=never", "UV_NO_PROGRESS=1")
	base := []string{"pip", "install", "--no-config", "--quiet", "--python", py.Executable}
	run(t, e, uv, append(base, args...)...)
}

// uvPath is $VIS_TEST_UV, else the repository's bin/vis-agent-python/uv,
// else "".
func uvPath(t *testing.T) string {
	if p := os.Getenv("VIS_TEST_UV"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	p := filepath.Join(dir, "bin", "vis-agent-python", "uv")
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

// env is this process's environment without anything that steers python,
// pip or uv, plus PYTHONPATH=pythonPath when that is not "".
func env(pythonPath string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "PIP_") || strings.HasPrefix(k, "UV_") ||
			k == "VIRTUAL_ENV" || k == "CONDA_PREFIX" || k == "VIS_HOOK_RAN" {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "PYTHONDONTWRITEBYTECODE=1")
	if pythonPath != "" {
		out = append(out, "PYTHONPATH="+pythonPath)
	}
	return out
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
