package packages

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// Request is what decides the environment of a run.
type Request struct {
	// Cwd is the working folder; Getenv reads the run's environment
	// (VIRTUAL_ENV, UV_PROJECT_ENVIRONMENT).
	Cwd    string
	Getenv func(string) string
	// Shared is --shared: the shared environment, also inside a project.
	Shared bool
	// Active is --active: the active environment (VIRTUAL_ENV), also inside
	// a project, as uv's --active.
	Active bool
	// Installs: the run writes the environment (-m pip), so it cannot do
	// without the shared one when that is the one it would use.
	Installs bool
	// SharedDir is the shared environment of this CPython version
	// (~/.vis/python/packages/3.11).
	SharedDir string
	// Install and Version are the CPython vis-agent loaded.
	Install findpython.Install
	Version findpython.Version
}

// Kind says which environment a run uses.
type Kind int

const (
	KindShared  Kind = iota // the shared environment of the CPython version
	KindProject             // a uv project's environment
	KindActive              // the activated environment, VIRTUAL_ENV
)

func (k Kind) String() string {
	return [...]string{"shared", "project", "active"}[k]
}

// Choice is the environment a run uses and what comes with it.
type Choice struct {
	Kind Kind
	Env  Environment
	// Project is the pyproject.toml found at or above the working folder,
	// managed by uv or not; nil without one (or with --shared and one that
	// cannot be read).
	Project *Project
	// Roots are the project's import roots (see Roots).
	Roots []string
	// Scratch: Env is a temporary environment of this run's alone
	// (ScratchEnvironment), which it removes when it ends.
	Scratch bool
	// Warnings and Notes are for the user, once each: Warnings about the
	// choice (an active environment passed over), Notes about what was done
	// (the earlier shared folder moved).
	Warnings, Notes []string
}

// Resolve decides the environment of a run, the way uv decides for its
// project commands: with --shared, the shared environment; in a folder uv
// manages (a pyproject.toml with a .venv or a uv.lock beside it, or with
// UV_PROJECT_ENVIRONMENT set), the project's environment, unless --active
// picks the activated one; else the activated environment (VIRTUAL_ENV),
// else the shared one. A project or active environment must be made from
// the loaded CPython; the shared one is made or updated as needed.
func Resolve(r Request) (Choice, error) {
	var c Choice
	project, err := FindProject(r.Cwd)
	if err != nil && !r.Shared {
		return c, err
	}
	c.Project = project
	c.Roots = Roots(project)
	uvEnv := r.Getenv("UV_PROJECT_ENVIRONMENT")
	venv := r.Getenv("VIRTUAL_ENV")
	if venv != "" && !filepath.IsAbs(venv) {
		venv = filepath.Join(r.Cwd, venv)
	}
	if r.Active && venv == "" {
		return c, errors.New("--active needs an activated environment, and VIRTUAL_ENV is not set")
	}
	managed := project != nil && project.managed(uvEnv)
	switch {
	case r.Shared:
	case managed && !r.Active:
		dir := EnvironmentDir(project, uvEnv)
		if venv != "" && filepath.Clean(venv) != dir {
			c.Warnings = append(c.Warnings, fmt.Sprintf("`VIRTUAL_ENV=%s` does not match the project environment path `%s` and will be ignored; use `--active` to target the active environment instead",
				r.Getenv("VIRTUAL_ENV"), displayRel(project.Root, dir)))
		}
		c.Kind = KindProject
		c.Env, err = checkEnvironment("the project environment", dir, projectHint, r.Install, r.Version)
		return c, err
	case venv != "":
		c.Kind = KindActive
		c.Env, err = checkEnvironment("the active environment", venv, activeHint(venv), r.Install, r.Version)
		return c, err
	}
	c.Kind = KindShared
	c.Env, c.Notes, err = SharedEnvironment(r.SharedDir, r.Install, r.Version)
	var ue *UnwritableError
	if errors.As(err, &ue) && !r.Shared && !r.Installs {
		// A read-only ~/.vis need not stop a run that only reads: it
		// runs in an empty environment of its own, and says so.
		if c.Env, err = ScratchEnvironment(r.Install, r.Version); err != nil {
			return c, fmt.Errorf("%w (and no temporary environment can be made: %w)", ue, err)
		}
		c.Scratch = true
		c.Warnings = append(c.Warnings, fmt.Sprintf("the shared packages folder %s %s (%v): running without the shared packages; %s",
			ue.Dir, ue.What, ue.Err, movePackages))
	}
	return c, err
}

// projectHint: uv sync remakes an environment that is missing, or made
// from another CPython than UV_PYTHON, which vis-agent sets to the embedded
// one.
const projectHint = "run `vis-agent python uv sync` to make it with the embedded CPython, or use `vis-agent python --shared …` to run with the shared packages"

func activeHint(dir string) string {
	return "run `deactivate`, or remake it with `vis-agent python uv venv --clear " + dir + "`"
}

// displayRel is dir relative to root when it is inside it, as uv shows
// the project environment.
func displayRel(root, dir string) string {
	if rel, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return dir
}

// managed reports whether uv manages the project: an environment or a
// lock file at its workspace root, or UV_PROJECT_ENVIRONMENT set. A
// pyproject.toml alone (a package developed with pip, tox or hatch, a tool
// configuration) is not a uv project for vis-agent.
func (p *Project) managed(uvProjectEnvironment string) bool {
	if uvProjectEnvironment != "" {
		return true
	}
	for _, f := range []string{".venv", "uv.lock"} {
		if _, err := os.Stat(filepath.Join(p.Root, f)); err == nil {
			return true
		}
	}
	return false
}

// PyprojectError is a pyproject.toml that cannot be read: one line naming
// the file and, for TOML that does not parse, the line. Each command adds
// the way out that it has (WayOut).
type PyprojectError struct {
	File string
	Line int   // 0: the error is not the TOML's syntax
	Err  error // the parser's error
}

func (e *PyprojectError) Error() string {
	var pe toml.ParseError
	if errors.As(e.Err, &pe) {
		return fmt.Sprintf("%s:%d: not valid TOML: %s", e.File, e.Line, pe.Message)
	}
	return e.Err.Error()
}

func (e *PyprojectError) Unwrap() error { return e.Err }

func pyprojectError(file string, err error) error {
	e := &PyprojectError{File: file, Err: err}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		e.Line = pe.Position.Line
	}
	return e
}

// WayOut is err with the way out of a project file that cannot be read,
// when err is one (a PyprojectError); other errors are returned as they
// are.
func WayOut(err error, way string) error {
	var pe *PyprojectError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w; %s", err, way)
	}
	return err
}
