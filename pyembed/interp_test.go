package pyembed_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// interpLibraryEnv makes TestInterp check the in-process interpreter of one
// library in this process: a process loads one libpython only.
const interpLibraryEnv = "VIS_TEST_INTERP_LIBRARY"

// TestInterp runs the in-process interpreter of every CPython, each in a
// process of its own, and checks what Compile and Call return, Python's
// failures above all.
func TestInterp(t *testing.T) {
	if lib := os.Getenv(interpLibraryEnv); lib != "" {
		checkInterp(t, lib)
		return
	}
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestInterp$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), interpLibraryEnv+"="+py.Library)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func checkInterp(t *testing.T, libPath string) {
	// CPython stays on the thread that started it.
	runtime.LockOSThread()
	lib, err := pyembed.Load(libPath)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := findpython.Locate(lib.Path, lib.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	in, err := lib.Interp(inst)
	if err != nil {
		t.Fatal(err)
	}
	call := func(src, input string) (string, error) {
		t.Helper()
		f, err := in.Compile(src, "check.py")
		if err != nil {
			t.Fatalf("compile %q: %v", src, err)
		}
		return in.Call(f, input)
	}

	if out, err := call("OUTPUT = INPUT.upper() + str(len(INPUT))", "héllo\x00x"); err != nil || out != "HÉLLO\x00X7" {
		t.Errorf("Call = %q, %v", out, err)
	}

	_, err = in.Compile("x = 1\ndef f(:\n    pass\n", "bad.py")
	pe := pyError(t, err)
	if pe.Type != "SyntaxError" || !strings.Contains(pe.Message, "invalid syntax") || !strings.Contains(pe.Message, "bad.py, line 2") ||
		!strings.Contains(pe.Traceback, `File "bad.py", line 2`) || !strings.HasSuffix(pe.Traceback, "SyntaxError: invalid syntax\n") {
		t.Errorf("syntax error: %#v", pe)
	}

	_, err = call("def g(s):\n    raise ValueError('bad ' + s)\ndef h():\n    g(INPUT)\nh()\n", "input")
	pe = pyError(t, err)
	if pe.Type != "ValueError" || pe.Message != "bad input" || err.Error() != "ValueError: bad input" ||
		!strings.HasPrefix(pe.Traceback, "Traceback (most recent call last):\n") ||
		!strings.Contains(pe.Traceback, `File "check.py", line 4, in h`) || !strings.Contains(pe.Traceback, `File "check.py", line 2, in g`) ||
		!strings.HasSuffix(pe.Traceback, "ValueError: bad input\n") {
		t.Errorf("ValueError: %#v", pe)
	}

	for _, c := range []struct{ src, typ, msg, tb string }{
		{"import json\njson.loads(INPUT)", "json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)", "json.decoder.JSONDecodeError: Expecting value"},
		{"try:\n    1/0\nexcept Exception as e:\n    raise KeyError('k') from e", "KeyError", "'k'", "The above exception was the direct cause"},
		{"class E(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise E", "E", "<str() failed: RuntimeError>", "E"},
		{"raise SystemExit(3)", "SystemExit", "3", "SystemExit: 3"},
		{"raise KeyboardInterrupt", "KeyboardInterrupt", "", "KeyboardInterrupt\n"},
		{"OUTPUT = 3", "TypeError", "bad argument type for built-in operation", "TypeError"},
		{"raise ValueError('nul\\0inside')", "ValueError", "nul\\x00inside", "nul\\x00inside"},
	} {
		_, err := call(c.src, "not json")
		pe := pyError(t, err)
		if pe.Type != c.typ || pe.Message != c.msg || !strings.Contains(pe.Traceback, c.tb) {
			t.Errorf("%q raised %#v; want %s: %s, traceback with %q", c.src, pe, c.typ, c.msg, c.tb)
		}
	}

	if _, err := call("x = 1", ""); err == nil || !strings.Contains(err.Error(), "set no OUTPUT") {
		t.Errorf("code without OUTPUT: %v", err)
	}
	// The interpreter survives all of the above.
	if out, err := call("import sys\nOUTPUT = '%d.%d' % sys.version_info[:2]", ""); err != nil || out != lib.Version.Short() {
		t.Errorf("after the errors: %q, %v", out, err)
	}
}

func pyError(t *testing.T, err error) *pyembed.PyError {
	t.Helper()
	var pe *pyembed.PyError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *pyembed.PyError, got %T %v", err, err)
	}
	return pe
}
