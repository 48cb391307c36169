package pyrun

import (
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"io"

	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// runUV runs `vis-agent python [--shared|--active] uv ARGS`: the pinned uv,
// with the embedded CPython as its interpreter, and returns the exit
// status. `uv pip` acts on the environment a python run here would use
// (the project's, the activated one, or the shared one), never on the
// installation itself unless the user passes uv's own --system or
// --python.
func runUV(args []string, pa Args, s iostreams.Streams) int {
	stdout, stderr := s.Out, s.Err
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "vis-agent python: "+format+"\n", a...)
		return code
	}
	sub := ""
	if len(pa.Program) > 0 {
		sub = pa.Program[0]
	}
	sharedSync := pa.Vis.Shared && sub == "sync"
	switch {
	case len(pa.Vis.Env) > 0:
		return fail(2, "--env does not apply to uv; set the variable in uv's environment instead")
	case pa.Vis.NoEnv:
		return fail(2, "--no-env does not apply to uv")
	case pa.Vis.NoNetwork:
		return fail(2, "--no-network does not apply to uv; use uv's --offline")
	case len(pa.Vis.AllowHosts)+len(pa.Vis.DenyHosts) > 0:
		return fail(2, "--allow-host and --deny-host do not apply to uv")
	case pa.Vis.Shared && !sharedSync && sub != "pip":
		return fail(2, "--shared applies to uv sync and uv pip only (vis-agent python --shared uv sync)")
	case pa.Vis.Active && sub != "pip":
		return fail(2, "--active applies to uv pip only; uv's project commands take uv's own --active")
	}
	var sa uvwrap.SyncArgs
	if sharedSync {
		var err error
		if sa, err = uvwrap.ParseSyncArgs(pa.Program[1:]); err != nil {
			return fail(2, "%v", err)
		}
		if sa.Help {
			io.WriteString(stdout, uvwrap.SyncHelp)
			return 0
		}
	}
	uv, err := uvwrap.LocateFor(s)
	if err == nil {
		err = uvwrap.VerifyCached(uv, s.Layout().UVVerified())
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	cwd := s.Dir
	if cwd == "" {
		return fail(1, "the working folder cannot be read (was it removed?)")
	}
	var (
		python  string
		project *packages.Project
		found   findpython.Choice // how the runtime was found, for uv SUB
		inst    findpython.Install
	)
	if sharedSync || (sub == "pip" && !hasAnyArg(pa.Program[1:], "--system", "--python", "-p")) {
		choice, err := uvEnvironment(pa, s)
		if err != nil {
			return fail(1, "%v", err)
		}
		for _, w := range choice.Warnings {
			fmt.Fprintf(stderr, "vis-agent python: warning: %s\n", w)
		}
		for _, n := range choice.Notes {
			fmt.Fprintf(stderr, "vis-agent python: %s\n", n)
		}
		python, project = choice.Env.Python, choice.Project
	} else {
		var err error
		if found, inst, err = locateRuntime(s); err != nil {
			return fail(1, "%v", err)
		}
		if python = inst.Executable; python == "" {
			return fail(1, "the CPython at %s has no python executable for uv to use", inst.Prefix)
		}
		project, _ = packages.FindProject(cwd)
	}
	settings := RunSettings(s, project)
	env := uvwrap.Environ(s.Environ(), python, settings.IndexURL.Value)
	if sub != "pip" && !sharedSync {
		// The index URL may hold credentials: a plan does not keep it.
		saveUVReplay(s, args, pa, found, inst, uv, env, len(settings.Problems) == 0 && settings.IndexURL.Value == "")
	}
	if !sharedSync {
		// uv inherits the signals it would have run directly: ignored
		// stays ignored.
		if err := pyembed.RestoreSignals(); err != nil {
			return fail(1, "%v", err)
		}
		return fail(1, "%v", uvwrap.Exec(uv, pa.Program, env))
	}
	base, root := sa.Dirs(cwd)
	if p, err := packages.FindProject(root); err == nil && p != nil {
		root = p.Root
	}
	code, err := uvwrap.SharedSync(uv, python, base, root, sa, env)
	if err != nil {
		return fail(1, "%v", err)
	}
	return code
}

// uvEnvironment is the environment `uv pip` and `--shared uv sync` act on:
// the one a python run in the same folder would use.
func uvEnvironment(pa Args, s iostreams.Streams) (packages.Choice, error) {
	lib, _, inst, err := LoadRuntime(s)
	if err != nil {
		return packages.Choice{}, err
	}
	// uv pip may write the environment: never the installation's own.
	return packages.Resolve(packages.Request{
		Cwd: s.Dir, Getenv: s.Getenv, Shared: pa.Vis.Shared, Active: pa.Vis.Active, Installs: true,
		SharedDir: s.Layout().SharedEnvironment(lib.Version.Short()), Install: inst, Version: lib.Version,
	})
}

// locateRuntime is findpython.LocateRuntime, which loads the library when
// its file name does not tell its version.
func locateRuntime(s iostreams.Streams) (findpython.Choice, findpython.Install, error) {
	choice, _, inst, err := findpython.LocateRuntime(s)
	var unknown *findpython.UnknownVersionError
	if errors.As(err, &unknown) {
		_, choice, inst, err := LoadRuntime(s)
		return choice, inst, err
	}
	return choice, inst, err
}

// hasAnyArg reports whether args hold one of the options, alone or as
// --name=value.
func hasAnyArg(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n || (len(a) > len(n) && a[:len(n)+1] == n+"=") {
				return true
			}
		}
	}
	return false
}
