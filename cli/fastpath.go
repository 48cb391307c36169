package cli

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/pyembed"
)

// A python run outside a project whose environment is the process's own can
// be replayed by the next identical run before Go starts (pyembed.Plan,
// pyembed/fastpath.c), which saves the Go runtime's start-up and the package
// initializers: most of what vis-agent adds to python's start-up. The plan
// observes every path the decision read: the binary, how the runtime was
// found, the configuration files, the pyproject.toml and vis.toml that could
// appear at or above the working folder, the environment and the start-up
// module.

// decisionInputs are the paths a run outside a project decided from, besides
// the runtime and the configuration: a pyproject.toml or vis.toml at or above
// cwd would change it, and so would a change to the environment dir or its
// python.
func decisionInputs(cwd, envDir, python string) []string {
	var observed []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		observed = append(observed, filepath.Join(dir, "pyproject.toml"), filepath.Join(dir, "vis.toml"))
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if envDir != "" {
		// The folder above it: the shared packages root, whose entries an
		// earlier layout's packages are moved from.
		observed = append(observed, filepath.Dir(envDir), envDir, filepath.Join(envDir, "pyvenv.cfg"), python)
	}
	return observed
}

// replayArgs splits a parsed command line into what the decision depended
// on (prefix: the options and the program selector, a -c's code excluded)
// and what goes to the program unchanged, and gives CPython's arguments
// for the prefix. need is how many arguments must follow the prefix (the
// code of a separate -c); exact says none may (no program: the prompt or
// stdin). ok is false for a line whose plan cannot be replayed.
func replayArgs(args []string, pa PythonArgs) (prefix, head []string, need int, exact, ok bool) {
	k := len(args) - len(pa.Program)
	switch pa.Mode {
	case ModeDefault:
		k, exact = len(args), true
	case ModeCode:
		if k > 0 && args[k-1] == pa.Target {
			// `-c CODE`: the code itself is the program's, not the key's.
			k, need = k-1, 1
		}
	case ModeModule, ModeFile, ModeStdin:
	default:
		return nil, nil, 0, false, false
	}
	if k < 0 || k > len(args) {
		return nil, nil, 0, false, false
	}
	tail := args[k:]
	if len(tail) > len(pa.Argv) || !slices.Equal(pa.Argv[len(pa.Argv)-len(tail):], tail) {
		return nil, nil, 0, false, false
	}
	return args[:k], pa.Argv[:len(pa.Argv)-len(tail)], need, exact, true
}

// saveReplay saves the plan of a run about to start, when the next
// identical run may replay it: best effort, a plan not saved only costs
// the next run its start-up time.
func saveReplay(s Streams, args []string, pa PythonArgs, choice pyembed.Choice, lib *pyembed.Library, inst pyembed.Install, plan runPlan) {
	if !plan.replayable || pa.Vis.NoNetwork || choice.Source == pyembed.SourceSystem || inst.Executable == "" ||
		!slices.Equal(plan.env, s.Environ()) {
		return
	}
	prefix, head, need, exact, ok := replayArgs(args, pa)
	if !ok {
		return
	}
	l := s.layout()
	observed := append(slices.Clone(plan.observed), config.Files(l, "", s.Dir)...)
	if exe, err := os.Executable(); err == nil {
		bundle := filepath.Join(filepath.Dir(exe), pyembed.BundleDir)
		observed = append(observed, exe, bundle, filepath.Join(bundle, "lib"))
	}
	if native := s.Getenv("VIS_PYTHON_NATIVE_PATH"); native != "" {
		observed = append(observed, native, filepath.Join(native, "lib"))
	}
	observed = append(observed, l.RuntimeRecord(), lib.Path, filepath.Dir(inst.Executable), inst.Executable)
	_ = pyembed.SavePlan(l.Python(), pyembed.Plan{
		Cwd: s.Dir, Environ: s.Environ(), Args: prefix, Need: need, Exact: exact,
		Observed: observed, Library: lib.Path, Minor: lib.Version.Minor, Home: inst.Home,
		Startup: plan.startup, Argv0: plan.argv0, ArgvHead: head,
	})
}
