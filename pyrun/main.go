package pyrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// Usage is the synopsis of `vis-agent python`.
const Usage = "vis-agent python [OPTIONS] [-c CODE | -m MODULE | FILE | -] [ARG…]"

// Help is `vis-agent python --help`: python's options and vis-agent's.
const Help = `usage: ` + Usage + `

Run a Python program with the embedded CPython, exactly as python does.

Program (the first one ends the options; all that follows goes to the program):
  -c CODE       run CODE as __main__
  -m MODULE     run library module MODULE as __main__
  FILE          run a script, or a folder or zip file holding __main__.py
  -             read the program from standard input; with no program, a
                non-terminal stdin is read too, a terminal gets the prompt
  uv ARG…       run the bundled uv with the embedded CPython (right after
                python, or after --shared for uv sync and uv pip, or
                --active for uv pip); uv pip acts on the environment a
                run here uses

vis-agent options (before the program only):
  --shared      use the shared packages of this CPython version
                (~/.vis/python/packages/3.X, a virtual environment), also
                inside a project; --shared -m pip installs into them, and
                --shared uv sync installs a uv project's locked packages
  --active      use the activated environment (VIRTUAL_ENV), also inside
                a uv project
  --env K=V     set an environment variable for the program (repeatable;
                K alone sets it empty)
  --no-env      start the program with an empty environment but --env's
  --no-network  no network for the program and every process it starts:
                the kernel refuses TCP connect and bind and every socket
                but AF_UNIX (so UDP, raw sockets and DNS lookups), also
                through ctypes and C extensions; Python code gets a
                PermissionError naming --no-network first. Files, AF_UNIX
                sockets and local services stay reachable; ptrace and
                setuid programs do not work (docs/jail.md)
  --allow-host PATTERN
                reach only these hosts (repeatable: NAME, *.DOMAIN,
                NAME:PORT, IP, CIDR, @pypi, @github), through a proxy of
                vis-agent's: the program and every process it starts run
                in a network namespace whose only way out is that proxy
                (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at it);
                loopback and private addresses only when listed
  --deny-host PATTERN
                never reach these hosts, even when allowed (repeatable)

Interpreter options, as python's:
  -b, -bb       warn (error) about str(bytes) and bytes/str comparison
  -B            don't write .pyc files
  -d            parser debug output (debug builds)
  -E            ignore PYTHON* environment variables
  -i            inspect interactively after running the program
  -I            isolate from the environment and user site (implies -E -P -s)
  -O, -OO       remove asserts (and docstrings)
  -P            don't prepend a potentially unsafe path to sys.path (3.11+)
  -q            don't print the version banner on interactive startup
  -R            ignored, hash randomization is always on
  -s            don't add the user site folder to sys.path
  -S            don't import site on startup
  -u            unbuffered binary stdout and stderr
  -v            trace imports (-vv: more)
  -W ARG        warning control, as python -W
  -x            skip the first line of the source
  -X OPT        implementation-specific option, as python -X
  --check-hash-based-pycs always|default|never
  -V, --version print the CPython version (-VV: with build details)
  --help-env, --help-xoptions, --help-all
                CPython's own help on environment variables and -X options
  -h, --help    this help

Inside a uv project (a pyproject.toml here or above with a .venv or
uv.lock beside it, or UV_PROJECT_ENVIRONMENT set), the project's .venv is
used, made from this CPython; elsewhere the activated environment
(VIRTUAL_ENV), else the shared packages.

Environment:
  VIS_PYTHON_NATIVE_PATH  libpython file (or folder holding one) to load
  VIS_PYTHON_HOME         installation folder the interpreter runs from
  VIS_PYTHON_PACKAGES     holds the shared packages, one environment per
                          CPython version (3.11/, 3.12/, …)
  VIRTUAL_ENV             the activated environment, as for python
  VIS_HOME                vis-agent's own folder (default ~/.vis)
  VIS_PYTHON_FASTPATH     0: never replay an earlier identical run's plan
                          (docs/python.md: Start-up)
  UV_PROJECT_ENVIRONMENT  the project environment, as for uv
`

// Main runs `vis-agent python ARGS` and returns the exit status: the
// command line parsed as python parses it, the runtime found and loaded,
// the plan decided (and saved for the fast path), the network refused or
// proxied, then CPython.
func Main(args []string, s iostreams.Streams) int {
	stdout, stderr := s.Out, s.Err
	pa, err := Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "vis-agent python: %v (see vis-agent python --help)\n", err)
		return 2
	}
	if pa.Help {
		io.WriteString(stdout, Help)
		return 0
	}
	if pa.Mode == ModeUV {
		return runUV(args, pa, s)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "vis-agent python: %v\n", err)
		return 1
	}
	proxied := len(pa.Vis.AllowHosts) > 0 || len(pa.Vis.DenyHosts) > 0
	if proxied && pa.Vis.NoNetwork {
		fmt.Fprintln(stderr, "vis-agent python: --no-network and --allow-host contradict each other: choose one (see vis-agent python --help)")
		return 2
	}
	if proxied && s.Getenv(proxyFDEnv) == "" {
		return runProxied(args, pa, s)
	}
	cwd := s.Dir
	if cwd == "" {
		return fail(errors.New("the working folder cannot be read (was it removed?)"))
	}
	lib, choice, inst, err := LoadRuntime(s)
	if err != nil {
		return fail(err)
	}
	l := s.Layout()
	plan, err := NewPlan(Context{
		Args: pa, Cwd: cwd, Environ: s.Environ(), Inst: inst, Version: lib.Version,
		SharedDir: l.SharedEnvironment(lib.Version.Short()), StartupDir: l.Startup(),
		Settings: func(p *packages.Project) config.Settings { return RunSettings(s, p) },
	})
	if plan.Scratch {
		defer os.RemoveAll(plan.EnvDir)
	}
	if err != nil {
		return fail(packages.WayOut(err, "fix it, or use --shared"))
	}
	for _, m := range plan.Messages {
		fmt.Fprintf(stderr, "vis-agent python: %s\n", m)
	}
	// Before SetEnviron: a plan compares the program's environment with
	// the one this process started with.
	saveReplay(s, args, pa, choice, lib, inst, plan)
	if err := SetEnviron(plan.Env); err != nil {
		return fail(err)
	}
	if pa.Vis.NoNetwork {
		if err := refuseNetwork(stderr); err != nil {
			return fail(err)
		}
	}
	if proxied {
		if err := proxiedNetwork(stderr); err != nil {
			return fail(err)
		}
	}
	code := lib.Main(append([]string{plan.Argv0}, pa.Argv...), inst.Home, plan.Startup)
	if code != 0 {
		if hint := pipHint(pa, plan); hint != "" {
			fmt.Fprintf(stderr, "vis-agent python: %s\n", hint)
		}
	}
	return code
}

// pipHint is the way out of a failed -m pip in a uv project's environment
// that has no pip (uv makes them without): CPython's "No module named
// pip" names none.
func pipHint(pa Args, plan Plan) string {
	if pa.Mode != ModeModule || pa.Target != "pip" || plan.Kind != packages.KindProject {
		return ""
	}
	if found, _ := filepath.Glob(filepath.Join(plan.EnvDir, "lib", "python3*", "site-packages", "pip")); len(found) > 0 {
		return ""
	}
	what := "PACKAGE"
	if len(pa.Program) > 1 && pa.Program[0] == "install" {
		what = strings.Join(pa.Program[1:], " ")
	}
	return fmt.Sprintf("this uv project's environment %s has no pip: `vis-agent python uv add %s` adds a dependency, "+
		"`vis-agent python uv pip install %s` installs into the environment, `vis-agent python --shared -m pip install %s` into the shared packages",
		plan.EnvDir, what, what, what)
}

// LoadRuntime finds, loads and locates the CPython this run uses.
func LoadRuntime(s iostreams.Streams) (*pyembed.Library, findpython.Choice, findpython.Install, error) {
	lib, choice, err := pyembed.Open(findpython.OptionsFor(s))
	if err != nil {
		var le *findpython.LoadError
		switch {
		case !errors.As(err, &le):
		case choice.Source == findpython.SourceRecord:
			err = fmt.Errorf("%w (recorded in %s; `vis-agent runtime --forget` finds the machine's CPython again)", err, s.Layout().RuntimeRecord())
		case s.Getenv("VIS_PYTHON_NATIVE_PATH") != "":
			// The variable chose it, and is what to change.
			err = fmt.Errorf("%w (named by VIS_PYTHON_NATIVE_PATH: set it to a libpython3.X.so or the folder holding one, or unset it to use the machine's CPython)", err)
		}
		return nil, choice, findpython.Install{}, err
	}
	inst, err := findpython.Locate(lib.Path, lib.Version, s.Getenv("VIS_PYTHON_HOME"))
	return lib, choice, inst, err
}
