package importpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/vis-agent/vis-agent"

// cgoSide are the packages allowed to import a cgo package of this module:
// the binary's command tree and the session's processes. Every other package
// is pure Go (see TestPureGo), and a new package must be put on one side.
var cgoSide = []string{
	"cmd/vis-agent", "cli", "cli/sandbox", "cli/proc",
	"pyrun", // the python-run planner: it loads CPython and applies --no-network
	"pyembed", "pyembed/early", "sandbox/compilecheck",
	"internal/earlyargv",     // the constructors' C matchers, for tests
	"internal/plan",          // the fast paths' plan reader, in C
	"sandbox/client/runpath", // the warm `sandbox run` carried before Go starts
	"sandbox/host", "sandbox/child", "sandbox/jail",
	"sandbox/jail/audit", // the jail's C audit hook, for the child and pyrun's --no-network
	"sandbox/tools",      // the host's shell(), confined by the jail's helper
	"sandbox/hostcalls",  // the host-call server: its tool calls run sandbox/tools
}

// foreignCgo are the cgo packages outside this module a pure-Go package may
// still reach: the standard library's (pure Go again with CGO_ENABLED=0)
// and the attachments store's SQLite driver (which, built without cgo,
// refuses to open a store: such a build loses attachments, nothing else).
var foreignCgo = []string{"runtime/cgo", "net", "os/user", "github.com/mattn/go-sqlite3"}

type pkg struct {
	ImportPath     string
	Imports        []string
	Deps           []string
	CgoFiles       []string
	GoFiles        []string
	IgnoredGoFiles []string
	Dir            string
	Standard       bool
}

// list is `go list -deps -json` of the whole module: its packages and
// everything they import.
func list(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

func sorted(pkgs map[string]*pkg) []string {
	return slices.Sorted(maps.Keys(pkgs))
}

func short(path string) string { return strings.TrimPrefix(path, module+"/") }

func ours(path string) bool { return strings.HasPrefix(path, module+"/") }

func TestPureGo(t *testing.T) {
	pkgs := list(t)
	var cgo []string
	for path, p := range pkgs {
		if ours(path) && len(p.CgoFiles) > 0 {
			cgo = append(cgo, path)
			if !slices.Contains(cgoSide, short(path)) {
				t.Errorf("%s has cgo files but is not on the cgo side of the policy (cgoSide)", short(path))
			}
		}
	}
	for _, path := range sorted(pkgs) {
		p := pkgs[path]
		if !ours(path) || slices.Contains(cgoSide, short(path)) {
			continue
		}
		for _, dep := range p.Deps {
			d := pkgs[dep]
			if d == nil || len(d.CgoFiles) == 0 || slices.Contains(foreignCgo, dep) {
				continue
			}
			t.Errorf("pure-Go package %s imports the cgo package %s (%s)", short(path), short(dep), via(pkgs, p, dep))
		}
	}
	if len(cgo) == 0 {
		t.Fatal("no cgo package found: go list did not report CgoFiles (is cgo enabled?)")
	}
}

// via says how p reaches dep: directly, or through the first of its
// imports that does.
func via(pkgs map[string]*pkg, p *pkg, dep string) string {
	if slices.Contains(p.Imports, dep) {
		return "directly"
	}
	for _, imp := range p.Imports {
		if q := pkgs[imp]; q != nil && slices.Contains(q.Deps, dep) {
			return "through " + short(imp)
		}
	}
	return "through ?"
}

// TestUnsafeFiles: code that uses unsafe (cgo, or pointers passed to raw
// system calls) lives in files named *_unsafe*.go (as gVisor names them),
// so a reviewer finds it by name. Files built on other systems count too.
func TestUnsafeFiles(t *testing.T) {
	pkgs := list(t)
	for _, path := range sorted(pkgs) {
		p := pkgs[path]
		if !ours(path) {
			continue
		}
		files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
		slices.Sort(files)
		for _, f := range slices.Compact(files) {
			name := filepath.Join(short(path), f)
			parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			var uses []string
			for _, imp := range parsed.Imports {
				// A system call given a pointer needs unsafe.Pointer too.
				if imp.Path.Value == `"unsafe"` || imp.Path.Value == `"C"` {
					uses = append(uses, imp.Path.Value)
				}
			}
			if len(uses) > 0 && !strings.Contains(f, "_unsafe") {
				t.Errorf("%s imports %s: name it *_unsafe*.go", name, strings.Join(uses, " and "))
			}
		}
	}
}

// cgoFree must build with CGO_ENABLED=0: the front ends and everything that
// only reasons about files and processes.
var cgoFree = []string{
	"tui", "sandbox/client", "sandbox/protocol", "sandbox/mcpserver",
	"packages", "uvwrap", "sandbox/repair", "pyembed/findpython",
}

func TestBuildsWithoutCgo(t *testing.T) {
	args := []string{"build"} // several packages: built and checked, nothing written
	for _, p := range cgoFree {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}
