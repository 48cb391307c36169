package pyrun

import (
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"os"
	"path/filepath"
	"slices"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// A python run outside a project whose environment is the process's own,
// and a `vis-agent python uv SUB` other than uv pip, can be replayed by the
// next identical run before Go starts (pyembed.Plan, pyembed/fastpath.c),
// which saves the Go runtime's start-up and the package initializers: most
// of what vis-agent adds to python's or uv's start-up. The plan observes
// every path the decision read: the binary, how the runtime was found, the
// configuration files, the pyproject.toml and vis.toml that could appear at
// or above the working folder, and the environment, start-up module or uv
// the run uses.

// folderInputs are the files at or above cwd that decide a run: a
// pyproject.toml makes a project, the nearest vis.toml is configuration.
func folderInputs(cwd string) []string {
	var observed []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		observed = append(observed, filepath.Join(dir, "pyproject.toml"), filepath.Join(dir, "vis.toml"))
		if filepath.Dir(dir) == dir {
			return observed
		}
	}
}

// environmentInputs are what a run's choice of environment (a venv) read:
// its folder, pyvenv.cfg and python, and the folder above it (the shared
// packages root, whose entries an earlier layout's packages are moved from).
func environmentInputs(envDir, python string) []string {
	if envDir == "" {
		return nil
	}
	return []string{filepath.Dir(envDir), envDir, filepath.Join(envDir, "pyvenv.cfg"), python}
}

// runtimeInputs are the paths that decided which CPython a run uses
// (findpython.Find and Locate), the binary itself and the user's settings.
func runtimeInputs(s iostreams.Streams, libPath string, inst findpython.Install) []string {
	l := s.Layout()
	observed := []string{l.UserConfig(), l.RuntimeRecord(), libPath, filepath.Dir(inst.Executable), inst.Executable}
	if exe, err := os.Executable(); err == nil {
		bundle := filepath.Join(filepath.Dir(exe), findpython.BundleDir)
		observed = append(observed, exe, bundle, filepath.Join(bundle, "lib"))
	}
	if native := s.Getenv("VIS_PYTHON_NATIVE_PATH"); native != "" {
		observed = append(observed, native, filepath.Join(native, "lib"))
	}
	return observed
}

// replayable says whether a run that found its CPython this way and read
// these settings should save a plan: it may be replayed, and the
// constructor found none that holds.
func replayable(choice findpython.Choice, inst findpython.Install, settingsOK bool) bool {
	return settingsOK && pyembed.FastPathMissed() && choice.Source != findpython.SourceSystem && inst.Executable != ""
}

// replayArgs splits a parsed command line into what the decision depended
// on (prefix: the options and the program selector, a -c's code excluded)
// and what goes to the program unchanged, and gives CPython's arguments
// for the prefix. need is how many arguments must follow the prefix (the
// code of a separate -c); exact says none may (no program: the prompt or
// stdin). ok is false for a line whose plan cannot be replayed.
func replayArgs(args []string, pa Args) (prefix, head []string, need int, exact, ok bool) {
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

// saveReplay saves the plan of a python run about to start, when the next
// identical run may replay it: best effort, a plan not saved only costs
// the next run its start-up time.
func saveReplay(s iostreams.Streams, args []string, pa Args, choice findpython.Choice, lib *pyembed.Library, inst findpython.Install, plan Plan) {
	if !plan.replayable || pa.Vis.NoNetwork || len(pa.Vis.AllowHosts)+len(pa.Vis.DenyHosts) > 0 || !replayable(choice, inst, true) || !slices.Equal(plan.Env, s.Environ()) {
		return
	}
	prefix, head, need, exact, ok := replayArgs(args, pa)
	if !ok {
		return
	}
	_ = pyembed.SavePlan(s.Layout().Python(), pyembed.Plan{
		Cwd: s.Dir, Environ: s.Environ(), Args: prefix, Need: need, Exact: exact,
		Observed: slices.Concat(plan.observed, runtimeInputs(s, lib.Path, inst)),
		Library:  lib.Path, Minor: lib.Version.Minor, Home: inst.Home,
		Startup: plan.Startup, Argv0: plan.Argv0, ArgvHead: head,
	})
}

// saveUVReplay saves the plan of `vis-agent python uv SUB …` about to exec
// uv with env, SUB other than pip (which acts on the environment a run
// uses): the decision read the command line up to SUB, the runtime, the
// configuration and uv's pin record.
func saveUVReplay(s iostreams.Streams, args []string, pa Args, choice findpython.Choice, inst findpython.Install, uv string, env []string, settingsOK bool) {
	if !replayable(choice, inst, settingsOK) {
		return
	}
	plan := pyembed.Plan{Cwd: s.Dir, Environ: s.Environ(), Exec: uv, Argv0: "uv", DropEmpty: true}
	k := len(args) - len(pa.Program)
	if len(pa.Program) == 0 {
		plan.Exact = true
	} else {
		k++
		plan.ArgvHead = pa.Program[:1]
	}
	plan.Args = args[:k]
	kept := plan.ExecEnv(plan.Environ)
	if len(env) < len(kept) || !slices.Equal(env[:len(kept)], kept) {
		return // not the process's environment and additions: not replayable
	}
	plan.AddEnv = env[len(kept):]
	l := s.Layout()
	plan.Observed = slices.Concat(folderInputs(s.Dir), runtimeInputs(s, choice.Library, inst),
		[]string{filepath.Join(paths.ExeDir(), uvwrap.BundleDir, "uv"), filepath.Join(l.Python(), "uv"), l.UVVerified()})
	_ = pyembed.SavePlan(l.Python(), plan)
}
