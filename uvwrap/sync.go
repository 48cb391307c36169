package uvwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SyncHelp is the help of `vis-agent python --shared uv sync`.
const SyncHelp = `usage: vis-agent python --shared uv sync [OPTIONS]

Install a uv project's locked dependencies, and the project itself (editable
unless --no-editable), into the shared environment of the embedded CPython's
version. The project's .venv and unrelated shared packages are left alone.
It runs uv export to a temporary requirements file, then uv pip install
--python <shared environment's python> --no-deps with it; the file is
removed afterwards, also when a step fails.

Project and selection (as uv sync):
  --project DIR        the project (default: found from the working folder)
  --directory DIR      run as if started in DIR
  --package NAME       a workspace member; --all-packages: all of them
  --extra NAME         include an extra; --all-extras: all; --no-extra NAME
  --group NAME         include a dependency group; --all-groups: all;
                       --no-group NAME, --no-default-groups, --only-group NAME
  --no-dev, --only-dev leave out, or take only, the dev group
  --no-editable        install the project and workspace members as wheels
  --locked             fail if the lock file is not up to date
  --frozen             use the lock file as it is, without checking it

Sources and output (passed to both uv steps):
  --offline            no network; the cache and --find-links only
  -f, --find-links LOC --index URL --default-index URL --index-url URL
  --extra-index-url URL --no-index
  --cache-dir DIR  --no-cache  -q, --quiet  -v, --verbose  --no-progress
  -h, --help           this help
`

// A syncFlag is an option --shared uv sync accepts and the uv step(s) it
// goes to.
type syncFlag struct {
	takesValue bool
	export     bool // uv export: project and selection
	install    bool // uv pip install: where packages come from
}

var syncFlags = map[string]syncFlag{
	"--project": {true, true, false}, "--package": {true, true, false}, "--all-packages": {false, true, false},
	"--extra": {true, true, false}, "--all-extras": {false, true, false}, "--no-extra": {true, true, false},
	"--group": {true, true, false}, "--all-groups": {false, true, false}, "--no-group": {true, true, false},
	"--no-default-groups": {false, true, false}, "--only-group": {true, true, false},
	"--no-dev": {false, true, false}, "--only-dev": {false, true, false},
	"--no-editable": {false, true, false}, "--locked": {false, true, false}, "--frozen": {false, true, false},
	"--offline": {false, true, true}, "--find-links": {true, true, true}, "--index": {true, true, true},
	"--default-index": {true, true, true}, "--index-url": {true, true, true}, "--extra-index-url": {true, true, true},
	"--no-index": {false, true, true}, "--cache-dir": {true, true, true}, "--no-cache": {false, true, true},
	"--quiet": {false, true, true}, "--verbose": {false, true, true}, "--no-progress": {false, true, true},
	"--directory": {true, false, false},
}

var syncShort = map[string]string{"-f": "--find-links", "-i": "--index-url", "-q": "--quiet", "-v": "--verbose", "-n": "--no-cache"}

// SyncArgs is a parsed `--shared uv sync` command line.
type SyncArgs struct {
	Help    bool
	Export  []string // options for uv export
	Install []string // options for uv pip install
	// Directory is --directory: where relative paths start.
	Directory string
	// Project is --project, relative to Directory.
	Project string
}

// Dirs are where the two uv steps run, from the working folder cwd: base,
// the working folder or --directory, and the project folder, --project
// (relative to base) or base. Absolute options are taken as they are.
func (sa SyncArgs) Dirs(cwd string) (base, project string) {
	base = joinAbs(cwd, sa.Directory)
	return base, joinAbs(base, sa.Project)
}

func joinAbs(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// ParseSyncArgs reads the options after `--shared uv sync`, as
// --flag VALUE or --flag=VALUE; anything else is refused by name.
func ParseSyncArgs(args []string) (SyncArgs, error) {
	var sa SyncArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			sa.Help = true
			return sa, nil
		}
		name, value, hasValue := strings.Cut(a, "=")
		if long, ok := syncShort[name]; ok && !hasValue {
			name = long
		}
		f, ok := syncFlags[name]
		if !ok || !strings.HasPrefix(a, "-") {
			return sa, fmt.Errorf("--shared uv sync does not take %s (see vis-agent python --shared uv sync --help)", a)
		}
		if f.takesValue && !hasValue {
			if i+1 >= len(args) {
				return sa, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		} else if !f.takesValue && hasValue {
			return sa, fmt.Errorf("%s takes no value", name)
		}
		opt := []string{name}
		if f.takesValue {
			opt = append(opt, value)
		}
		switch name {
		case "--directory":
			sa.Directory = value
		case "--project":
			sa.Project = value
		}
		if f.export {
			sa.Export = append(sa.Export, opt...)
		}
		if f.install {
			sa.Install = append(sa.Install, opt...)
		}
	}
	return sa, nil
}

// SharedSync installs the locked packages of a uv project into the
// environment of python, the shared one: uv export, run in base (the
// working folder, or --directory), to a temporary requirements file, then
// uv pip install --python python --no-deps from it, run in root, the workspace root uv writes the file's
// relative paths (the project's editable "-e .") against. It returns uv's
// exit status; the temporary folder is gone when it returns.
func SharedSync(uv, python, base, root string, sa SyncArgs, env []string) (int, error) {
	tmp, err := os.MkdirTemp("", "vis-agent-sync-")
	if err != nil {
		return 0, fmt.Errorf("make a temporary folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	reqs := filepath.Join(tmp, "requirements.txt")
	export := append([]string{"export", "--format", "requirements-txt", "--output-file", reqs}, sa.Export...)
	if !hasAny(sa.Export, "--quiet", "--verbose") {
		export = append(export, "--quiet")
	}
	if code, err := Run(uv, base, export, env); err != nil || code != 0 {
		return code, err
	}
	install := append([]string{"pip", "install", "--python", python, "--no-deps", "--requirements", reqs}, sa.Install...)
	return Run(uv, root, install, env)
}

func hasAny(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}
