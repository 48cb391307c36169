package pyrun

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

//go:embed py/startup.py
var startupSource string

// Plan is how a python run starts: which python CPython takes its paths
// from (Argv0), the start-up hook (Startup, CPython's sitecustomize code;
// "" for none), the program's whole environment (Env, NAME=VALUE), and
// what to tell the user first (Messages, one line each).
type Plan struct {
	Argv0    string
	Startup  string
	Env      []string
	Messages []string
	// EnvDir is the environment the run uses (a venv), ImportRoots the
	// folders put on its sys.path: a jail lets the program read them.
	EnvDir      string
	ImportRoots []string
	// Kind is which environment EnvDir is (the shared one when the run
	// needs none); Scratch: EnvDir is this run's own temporary one
	// (packages.ScratchEnvironment), to remove when it ends.
	Kind    packages.Kind
	Scratch bool
	// replayable says the next identical run may replay this plan before
	// Go starts (see fastpath.go), observed what the decision read.
	replayable bool
	observed   []string
}

// Context is what a plan is made from: the command line, the process's
// environment and working folder, the loaded CPython, and where vis-agent
// keeps its files: the shared environment of this CPython version and the
// start-up module. Settings reads the configuration for the project the
// run found (nil: none).
type Context struct {
	Args       Args
	Cwd        string
	Environ    []string
	Inst       findpython.Install
	Version    findpython.Version
	SharedDir  string
	StartupDir string
	Settings   func(*packages.Project) config.Settings
	// ImportRoots, when set, decides which import roots a file names go
	// on sys.path (a jailed sandbox session's child keeps those its jail
	// may open); from is the file.
	ImportRoots func(paths []string, from string) []string
}

func (rc Context) getenv(name string) string { return lookup(rc.Environ, name) }

// lookup is the last value of name in environ, as getenv finds it.
func lookup(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// NewPlan decides how a run starts. Which environment it uses is
// packages.Resolve's answer; a run that only prints CPython's version or
// help needs none and works anywhere.
func NewPlan(rc Context) (Plan, error) {
	plan := Plan{Argv0: rc.Inst.Executable}
	if plan.Argv0 == "" {
		plan.Argv0, _ = os.Executable()
	}
	var (
		project *packages.Project
		roots   []string
	)
	if !informational(rc.Args) {
		choice, err := packages.Resolve(packages.Request{
			Cwd: rc.Cwd, Getenv: rc.getenv, Shared: rc.Args.Vis.Shared, Active: rc.Args.Vis.Active,
			SharedDir: rc.SharedDir, Install: rc.Inst, Version: rc.Version, Installs: installs(rc.Args),
		})
		if err != nil {
			return plan, err
		}
		for _, w := range choice.Warnings {
			plan.Messages = append(plan.Messages, "warning: "+w)
		}
		plan.Messages = append(plan.Messages, choice.Notes...)
		plan.Argv0, plan.EnvDir, plan.Kind, plan.Scratch = choice.Env.Python, choice.Env.Dir, choice.Kind, choice.Scratch
		project, roots = choice.Project, choice.Roots
	}
	settings := rc.Settings(project)
	plan.Env = childEnv(rc, settings)
	plan.replayable = project == nil && len(plan.Messages) == 0 && len(settings.Problems) == 0 &&
		!informational(rc.Args) && !installs(rc.Args)
	if plan.replayable {
		plan.observed = slices.Concat(folderInputs(rc.Cwd), environmentInputs(plan.EnvDir, plan.Argv0))
	}
	var ss startupSettings
	if !settings.TLSStrict.Value {
		ss.TLSStrict = new(bool)
	}
	sourcePaths := settings.SourcePaths.Value
	if rc.ImportRoots != nil {
		sourcePaths = rc.ImportRoots(sourcePaths, settings.SourcePaths.File())
		if project != nil {
			roots = rc.ImportRoots(roots, filepath.Join(project.Dir, "pyproject.toml"))
		}
	}
	plan.ImportRoots = append(append([]string(nil), sourcePaths...), roots...)
	for _, r := range plan.ImportRoots {
		ss.Roots = append(ss.Roots, fsString(r))
	}
	if len(ss.Roots) == 0 && ss.TLSStrict == nil {
		return plan, nil
	}
	var err error
	var module string
	plan.Startup, module, err = startupCode(ss, rc.StartupDir)
	if plan.replayable {
		plan.observed = append(plan.observed, module)
	}
	return plan, err
}

// installs: the run is pip's, which writes the environment it runs in.
func installs(pa Args) bool { return pa.Mode == ModeModule && pa.Target == "pip" }

// informational: -V, --version and --help-* print and exit before any
// program runs.
func informational(pa Args) bool {
	for _, o := range pa.Interp {
		switch o.Name {
		case "-V", "--version", "--help-env", "--help-xoptions", "--help-all":
			return true
		}
	}
	return false
}

// childEnv is the program's environment: the process's, or none with
// --no-env; then --env's values (NAME alone sets an empty one); then, unless
// --no-env, vis-agent's own settings: python.index_url as pip's index when
// the user did not choose one.
func childEnv(rc Context, s config.Settings) []string {
	var env []string
	if !rc.Args.Vis.NoEnv {
		env = append(env, rc.Environ...)
	}
	set := func(k, v string) {
		env = append(env, k+"="+v)
	}
	for _, kv := range rc.Args.Vis.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	if !rc.Args.Vis.NoEnv && s.IndexURL.Value != "" {
		var pipArgs []string
		if rc.Args.Mode == ModeModule && rc.Args.Target == "pip" {
			pipArgs = rc.Args.Program
		}
		if !packages.UserChoseIndex(pipArgs, func(k string) string { return lookup(env, k) }) {
			set("PIP_INDEX_URL", s.IndexURL.Value)
		}
	}
	return dedupEnv(env)
}

// dedupEnv keeps the last value of each name, in the order names first
// came.
func dedupEnv(env []string) []string {
	at := map[string]int{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// SetEnviron makes env the process's environment, which the embedded
// CPython reads as its own.
func SetEnviron(env []string) error {
	if slices.Equal(env, os.Environ()) {
		// Most runs change nothing, and each change below is a call into C
		// (the C library's environment is the one CPython reads).
		return nil
	}
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	return nil
}

// startupSettings is the JSON value startup.py's main takes.
type startupSettings struct {
	Roots     []fsString `json:"roots,omitempty"`
	TLSStrict *bool      `json:"tls_strict,omitempty"`
}

// fsString is a path as JSON gives it to Python: bytes that are not UTF-8
// become lone surrogates (\udc80–\udcff), as os.fsdecode decodes them, so
// undecodable file names survive.
type fsString string

func (s fsString) MarshalJSON() ([]byte, error) {
	b := []byte{'"'}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(string(s[i:]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = fmt.Appendf(b, `\udc%02x`, s[i])
		case r < 0x20 || r == '"' || r == '\\':
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"'), nil
}

// startupCode is the sitecustomize hook for a run: it imports startup.py
// (the file module, in a folder under dir) rather than carrying it
// (compiling it on every start would cost milliseconds, importing it uses
// CPython's bytecode cache) and hands it the settings.
func startupCode(ss startupSettings, dir string) (code, module string, err error) {
	settings, err := json.Marshal(ss)
	if err != nil {
		return "", "", err
	}
	dir, err = startupModuleDir(dir)
	if err != nil {
		return "", "", err
	}
	// The bytecode cache is written even under -B or
	// PYTHONDONTWRITEBYTECODE: it lives in vis-agent's folder, not the
	// user's.
	return "import os, sys\n" +
		"sys.path.insert(0, os.fsdecode(" + pyembed.BytesLiteral(dir) + "))\n" +
		"dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, False\n" +
		"try:\n    import _vis_startup\n" +
		"finally:\n    del sys.path[0]\n    sys.dont_write_bytecode = dont_write\n" +
		"del dont_write\n" +
		"_vis_startup.main(" + pyembed.BytesLiteral(string(settings)) + ")\n", filepath.Join(dir, "_vis_startup.py"), nil
}

// startupModuleDir holds startup.py as _vis_startup.py, in a folder under
// parent named by its content, written once.
func startupModuleDir(parent string) (string, error) {
	sum := sha256.Sum256([]byte(startupSource))
	dir := filepath.Join(parent, hex.EncodeToString(sum[:6]))
	file := filepath.Join(dir, "_vis_startup.py")
	if _, err := os.Stat(file); err == nil {
		return dir, nil
	}
	if err := atomicfile.Write(file, []byte(startupSource)); err != nil {
		return "", fmt.Errorf("write the start-up module: %w", err)
	}
	return dir, nil
}
