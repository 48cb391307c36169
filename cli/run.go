package cli

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
)

//go:embed startup.py
var startupSource string

// runPlan is how a python run starts: which python CPython takes its paths
// from, the start-up hook, and the environment changes.
type runPlan struct {
	argv0   string
	startup string
	// setenv is applied after --no-env and --env: settings vis-agent passes
	// to the program (pip's index).
	setenv map[string]string
}

// runContext is what a plan is made from.
type runContext struct {
	args     PythonArgs
	cwd      string
	project  *packages.Project
	settings config.Settings
	lib      *pyembed.Library
	inst     pyembed.Install
	layout   paths.Layout
	getenv   func(string) string
}

// planRun decides the environment a run uses: a project's environment, or
// the shared packages (always with --shared, and outside a project), and
// pip routed to the shared packages.
func planRun(rc runContext) (runPlan, error) {
	plan := runPlan{argv0: rc.inst.Executable, setenv: map[string]string{}}
	if plan.argv0 == "" {
		plan.argv0, _ = os.Executable()
	}
	sa := startupArgs{tlsStrict: rc.settings.TLSStrict.Value, noNetwork: rc.args.Vis.NoNetwork}
	uvEnv := rc.getenv("UV_PROJECT_ENVIRONMENT")
	if rc.args.Vis.Shared || (rc.project == nil && uvEnv == "") {
		pkgs := rc.layout.SharedPackages()
		if isPip(rc.args) {
			if err := preparePip(rc, pkgs); err != nil {
				return plan, err
			}
			env, err := packages.SharedEnvironment(rc.layout.Python(), pkgs, rc.inst, rc.lib.Version)
			if err != nil {
				return plan, err
			}
			pipHome, err := packages.PipHome(rc.layout.Python(), rc.inst, rc.lib.Version)
			if err != nil {
				return plan, err
			}
			// pip runs outside the environment (see pip_on_shared in
			// startup.py); scripts it writes start the environment's python.
			sa.pip = &pipArgs{shared: pkgs, home: pipHome, python: env.Python}
			if rc.settings.IndexURL.Value != "" && !packages.UserChoseIndex(rc.args.Program, rc.getenv) {
				plan.setenv["PIP_INDEX_URL"] = rc.settings.IndexURL.Value
			}
		} else if info, err := os.Stat(pkgs); err == nil && info.IsDir() {
			env, err := packages.SharedEnvironment(rc.layout.Python(), pkgs, rc.inst, rc.lib.Version)
			if err != nil {
				return plan, err
			}
			plan.argv0 = env.Python
		}
	} else {
		env, err := packages.ProjectEnvironment(packages.EnvironmentDir(rc.project, uvEnv, rc.cwd), rc.lib.Version)
		if err != nil {
			return plan, err
		}
		plan.argv0 = env.Python
	}
	sa.roots = append(append([]string(nil), rc.settings.SourcePaths.Value...), packages.Roots(rc.project)...)
	var err error
	plan.startup, err = startupCode(rc.layout, sa)
	return plan, err
}

// isPip: `-m pip` runs pip on the active environment's packages.
func isPip(pa PythonArgs) bool { return pa.Mode == ModeModule && pa.Target == "pip" }

// preparePip makes the shared packages folder when pip is about to change
// it, and refuses in one line when it cannot be written.
func preparePip(rc runContext, pkgs string) error {
	if len(rc.args.Program) > 0 && (rc.args.Program[0] == "install" || rc.args.Program[0] == "uninstall") {
		return packages.EnsureFolder(pkgs)
	}
	// Reading commands (list, show, freeze) only need the folder to exist.
	os.MkdirAll(pkgs, 0o755)
	return nil
}

// startupArgs are the settings startup.py's main takes.
type startupArgs struct {
	roots     []string
	pip       *pipArgs
	tlsStrict bool
	noNetwork bool
}

// pipArgs route pip to the shared packages folder.
type pipArgs struct {
	shared string // the folder
	home   string // holds the pip package
	python string // the shared environment's python, for scripts
}

// startupCode is the sitecustomize hook for a run, or "" when the run
// needs none and CPython starts exactly as python does. The hook imports
// startup.py from a vis-owned folder rather than carrying it: compiling
// it on every start would cost milliseconds, importing it uses CPython's
// bytecode cache.
func startupCode(l paths.Layout, sa startupArgs) (string, error) {
	var args []string
	if len(sa.roots) > 0 {
		quoted := make([]string, len(sa.roots))
		for i, r := range sa.roots {
			quoted[i] = pyembed.BytesLiteral(r)
		}
		args = append(args, "roots=["+strings.Join(quoted, ", ")+"]")
	}
	if sa.pip != nil {
		args = append(args, "pip_shared="+pyembed.BytesLiteral(sa.pip.shared), "pip_home="+pyembed.BytesLiteral(sa.pip.home), "pip_python="+pyembed.BytesLiteral(sa.pip.python))
	}
	if !sa.tlsStrict {
		args = append(args, "tls_strict=False")
	}
	if sa.noNetwork {
		args = append(args, "no_network=True")
	}
	if len(args) == 0 {
		return "", nil
	}
	dir, err := startupModuleDir(l)
	if err != nil {
		return "", err
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
		"_vis_startup.main(" + strings.Join(args, ", ") + ")\n", nil
}

// startupModuleDir holds startup.py as _vis_startup.py, in a folder named
// by its content, written once.
func startupModuleDir(l paths.Layout) (string, error) {
	sum := sha256.Sum256([]byte(startupSource))
	dir := filepath.Join(l.Startup(), hex.EncodeToString(sum[:6]))
	file := filepath.Join(dir, "_vis_startup.py")
	if _, err := os.Stat(file); err == nil {
		return dir, nil
	}
	if err := atomicfile.Write(file, []byte(startupSource)); err != nil {
		return "", fmt.Errorf("write the start-up module: %w", err)
	}
	return dir, nil
}

// applyEnv gives the program its environment: --no-env empties it, --env
// sets values (NAME alone sets an empty one), then vis-agent's own
// settings, which --no-env leaves out.
func applyEnv(vis VisOptions, setenv map[string]string) {
	if vis.NoEnv {
		os.Clearenv()
	}
	for _, kv := range vis.Env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	if vis.NoEnv {
		return
	}
	for k, v := range setenv {
		os.Setenv(k, v)
	}
}
