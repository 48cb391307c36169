package main

import (
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// buildWheelhouse writes the wheels the package scripts install, for py,
// into dir:
//   - vis-demo 1.0 and 2.0 (pure; need vis-dep; extra "fast" adds vis-fast)
//   - vis-dep 1.0
//   - vis-hook 1.0: a .pth file with an import line and a path line
//   - vis-tool 1.0: a console script, a -m entry and a data file
//   - vis-fast 1.0: a C extension built for py
//   - vis-badpth 1.0: a .pth file whose import line raises
func buildWheelhouse(t *testing.T, dir string, py testenv.Python) {
	t.Helper()
	demo := func(version string) testwheel.Spec {
		return testwheel.Spec{
			Name: "vis-demo", Version: version,
			Files: map[string]string{
				"vis_demo/__init__.py": "from vis_dep import DEP\nVERSION = '" + version + "'\n",
			},
			Requires: []string{"vis-dep>=1.0", `vis-fast; extra == "fast"`},
			Extras:   []string{"fast"},
		}
	}
	for _, s := range []testwheel.Spec{
		demo("1.0"),
		demo("2.0"),
		{Name: "vis-dep", Version: "1.0", Files: map[string]string{"vis_dep.py": "DEP = 'dep 1.0'\n"}},
		{Name: "vis-hook", Version: "1.0", Files: map[string]string{
			"vis_hook.pth":                  "import vis_hook_mod\nvis_hook_extra\n",
			"vis_hook_mod.py":               "import os\nos.environ['VIS_HOOK'] = os.environ.get('VIS_HOOK', '') + 'loaded'\n",
			"vis_hook_extra/hooked_path.py": "WHERE = 'pth path line'\n",
		}},
		{Name: "vis-tool", Version: "1.0",
			Files: map[string]string{
				"vis_tool/__init__.py": "import sys\ndef main():\n    print('vis-tool ran', sys.argv[1:])\n",
				"vis_tool/__main__.py": "from vis_tool import main\nmain()\n",
			},
			ConsoleScripts: map[string]string{"vis-tool": "vis_tool:main"},
			Data:           map[string]string{"share/vis-tool/README": "vis-tool data\n"},
		},
		{Name: "vis-badpth", Version: "1.0", Files: map[string]string{
			"vis_badpth.pth": "import vis_no_such_module_xyz\n",
		}},
	} {
		testwheel.Build(t, dir, s)
	}
	testwheel.BuildExtension(t, dir, py, testwheel.Spec{Name: "vis-fast", Version: "1.0"}, "vis_fast", visFastSource)
}

// visFastSource is the C source of the extension module vis_fast, whose
// add(a, b) returns a + b.
const visFastSource = `
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "vis_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit_vis_fast(void) { return PyModule_Create(&def); }
`
