package importpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/vis-agent/vis-agent"

// frontEnds are the programs people and agents drive a session with. They
// reach sessions only through sandbox/client, so none of them may pull in
// the session's own processes (cli/sandbox links the loader for run's
// fast-path plan and the checks' compiler, so its commands are checked by
// review, not here; the host's and child's commands are cli/proc's).
var frontEnds = []string{"tui", "sandbox/mcpserver", "sandbox/client"}

// sessionInternals are the host, the child, their jail and the embedded
// interpreter: what runs a session, never what talks to one.
var sessionInternals = []string{"sandbox/host", "sandbox/child", "sandbox/jail", "sandbox/jail/audit", "pyembed", "pyembed/early"}

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
}

// foreignCgo are the cgo packages outside this module a pure-Go package may
// still reach: the standard library's (pure Go again with CGO_ENABLED=0)
// and the attachments store's SQLite driver (which, built without cgo,
// refuses to open a store: such a build loses attachments, nothing else).
var foreignCgo = []string{"runtime/cgo", "net", "os/user", "github.com/mattn/go-sqlite3"}

// policyPackages decide what a session may do; pyembed (the loader, with its
// start-up constructors and the pure discovery under it) knows none of them:
// the C that serves a policy (the audit hook, the child's modules) lives with
// its owner.
var (
	loader         = []string{"pyembed", "pyembed/early", "pyembed/findpython"}
	policyPackages = []string{"cli", "pyrun", "tui", "packages", "uvwrap", "internal/config", "sandbox/"}
)

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	CgoFiles   []string
	GoFiles    []string
	Dir        string
	Standard   bool
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

// ourDeps is the module's package at path (short) and the packages of the
// module it reaches.
func ourDeps(t *testing.T, pkgs map[string]*pkg, path string) (*pkg, []string) {
	t.Helper()
	p := pkgs[module+"/"+path]
	if p == nil {
		t.Fatalf("%s: not in go list's answer", path)
	}
	var deps []string
	for _, d := range p.Deps {
		if ours(d) {
			deps = append(deps, d)
		}
	}
	return p, deps
}

func TestFrontEndsUseTheClient(t *testing.T) {
	pkgs := list(t)
	for _, fe := range frontEnds {
		p, deps := ourDeps(t, pkgs, fe)
		for _, dep := range deps {
			if slices.Contains(sessionInternals, short(dep)) {
				t.Errorf("front end %s imports %s (%s); front ends reach a session through sandbox/client only",
					fe, short(dep), via(pkgs, p, dep))
			}
		}
	}
}

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

func TestLoaderKnowsNoPolicy(t *testing.T) {
	pkgs := list(t)
	for _, l := range loader {
		p, deps := ourDeps(t, pkgs, l)
		for _, dep := range deps {
			for _, pp := range policyPackages {
				if s := short(dep); s == pp || strings.HasSuffix(pp, "/") && strings.HasPrefix(s, pp) {
					t.Errorf("%s imports the policy package %s (%s)", l, s, via(pkgs, p, dep))
				}
			}
		}
	}
}

// planner is the python-run planner, which decides how `vis-agent python`
// starts; it is used by the command tree and by a session's child, and
// itself knows no command tree, front end or session process: a
// `vis-agent python` run links nothing of theirs into its decision.
var (
	planner             = "pyrun"
	plannerMayNotImport = []string{"cli", "tui", "sandbox/client", "sandbox/mcpserver", "sandbox/host", "sandbox/child", "sandbox/session"}
)

func TestPlannerStandsAlone(t *testing.T) {
	pkgs := list(t)
	p, deps := ourDeps(t, pkgs, planner)
	for _, dep := range deps {
		if slices.Contains(plannerMayNotImport, short(dep)) {
			t.Errorf("the planner %s imports %s (%s); it knows no command tree, front end or session process",
				planner, short(dep), via(pkgs, p, dep))
		}
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
// so a reviewer finds it by name.
func TestUnsafeFiles(t *testing.T) {
	pkgs := list(t)
	for _, path := range sorted(pkgs) {
		p := pkgs[path]
		if !ours(path) {
			continue
		}
		for _, f := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
			if strings.Contains(f, "_unsafe") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			// A system call given a pointer needs unsafe.Pointer too.
			if bytes.Contains(src, []byte(`"unsafe"`)) {
				t.Errorf("%s imports unsafe: name it *_unsafe.go", filepath.Join(short(path), f))
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
