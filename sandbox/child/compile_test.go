package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

// refuseCompile imports the whole package from sys.argv[1] with CPython's
// compiler refused to the import system: it passes only when every module
// loads from a valid bytecode file.
const refuseCompile = `import importlib.machinery, sys
def refuse(self, data, path, **kw):
    raise AssertionError("compiled from source: " + str(path))
importlib.machinery.SourceFileLoader.source_to_code = refuse
sys.path.insert(0, sys.argv[1])
import vis_sandbox.driver, vis_sandbox.state, vis_sandbox.defs, vis_sandbox.tools, vis_sandbox.wire, vis_sandbox.sources, vis_sandbox.lazy
print("ok")
`

// TestCompile writes the package's bytecode with each CPython, which then
// imports the package without compiling anything; a second call does
// nothing.
func TestCompile(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			dir, err := Install(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			python := func(args ...string) *exec.Cmd { return exec.Command(py.Executable, args...) }
			// Before: the import compiles (the check itself can fail).
			if out, err := exec.Command(py.Executable, "-B", "-c", refuseCompile, dir).CombinedOutput(); err == nil {
				t.Fatalf("the import found bytecode before Compile:\n%s", out)
			}
			if err := Compile(dir, py.Version.Short(), python); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py.Executable, "-B", "-c", refuseCompile, dir).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Fatalf("import after Compile: %v\n%s", err, out)
			}
			again := func(args ...string) *exec.Cmd {
				t.Errorf("Compile ran python again: %v", args)
				return exec.Command("true")
			}
			if err := Compile(dir, py.Version.Short(), again); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCompileFailure: a compile that fails is reported once, and a later
// start neither retries it nor fails.
func TestCompileFailure(t *testing.T) {
	dir, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	failing := func(args ...string) *exec.Cmd { return exec.Command("sh", "-c", "echo no python here >&2; exit 3") }
	err = Compile(dir, "3.99", failing)
	if err == nil || !strings.Contains(err.Error(), "no python here") {
		t.Fatalf("error %v, want the failure's output", err)
	}
	if err := Compile(dir, "3.99", func(args ...string) *exec.Cmd {
		t.Errorf("Compile retried after a failure: %v", args)
		return exec.Command("true")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vis_sandbox", "__pycache__")); err == nil {
		t.Error("a failed compile left bytecode")
	}
}
