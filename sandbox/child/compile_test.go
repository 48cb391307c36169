package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
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

// TestCompileDiesWithTheChild: a child killed while its compile runs
// (stop --force) takes the compile with it; left behind, it wrote into
// $VIS_HOME after the session or the test had removed the folder.
func TestCompileDiesWithTheChild(t *testing.T) {
	if pidFile := os.Getenv("VIS_TEST_COMPILE_PIDFILE"); pidFile != "" {
		Compile(t.TempDir(), "3.0", func(args ...string) *exec.Cmd {
			return exec.Command("sh", "-c", "echo $$ > "+pidFile+"; exec sleep 60")
		})
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCompileDiesWithTheChild$")
	cmd.Env = append(os.Environ(), "VIS_TEST_COMPILE_PIDFILE="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the compile did not start")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the compile outlived the child")
		}
	}
}
