package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// runUV runs `vis-agent python [--shared] uv ARGS`: the pinned uv, with the
// embedded CPython as its interpreter, and returns the exit status.
func runUV(pa PythonArgs, s Streams) int {
	stdout, stderr := s.Out, s.Err
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "vis-agent python: "+format+"\n", a...)
		return code
	}
	switch {
	case len(pa.Vis.Env) > 0:
		return fail(2, "--env does not apply to uv; set the variable in uv's environment instead")
	case pa.Vis.NoEnv:
		return fail(2, "--no-env does not apply to uv")
	case pa.Vis.NoNetwork:
		return fail(2, "--no-network does not apply to uv; use uv's --offline")
	}
	sharedSync := pa.Vis.Shared && len(pa.Program) > 0 && pa.Program[0] == "sync"
	if pa.Vis.Shared && !sharedSync {
		return fail(2, "--shared applies to uv sync only (vis-agent python --shared uv sync)")
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
	uv, err := locateUV(s)
	if err == nil {
		err = uvwrap.Verify(uv)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	lib, _, inst, err := loadRuntime(s)
	if err != nil {
		return fail(1, "%v", err)
	}
	cwd := s.Dir
	if cwd == "" {
		return fail(1, "the working folder cannot be read (was it removed?)")
	}
	project, _ := packages.FindProject(cwd)
	settings := runSettings(s, project)
	python := inst.Executable
	if python == "" {
		return fail(1, "CPython %s at %s has no python executable for uv to use", lib.Version, inst.Prefix)
	}
	env := uvwrap.Environ(os.Environ(), python, settings.IndexURL.Value)
	if !sharedSync {
		return fail(1, "%v", uvwrap.Exec(uv, pa.Program, env))
	}
	shared := s.layout().SharedPackages()
	if err := packages.EnsureFolder(shared); err != nil {
		return fail(1, "%v", err)
	}
	base := cwd
	if sa.Directory != "" {
		base = filepath.Join(cwd, sa.Directory)
	}
	root := filepath.Join(base, sa.Project)
	if p, err := packages.FindProject(root); err == nil && p != nil {
		root = p.Root
	}
	code, err := uvwrap.SharedSync(uv, python, shared, base, root, sa, env)
	if err != nil {
		return fail(1, "%v", err)
	}
	return code
}
