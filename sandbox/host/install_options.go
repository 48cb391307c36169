package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/sandbox/install"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/tools"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// installOptions says how the session host in folder f runs install():
// the pinned uv, the python of the CPython the session loads (its
// installation's, never an environment's the session can rewrite), the
// session's package folder for that version, and the user's settings:
// python.index_url and sandbox.allow_builds of ~/.vis/config.toml (never
// a project's vis.toml), the user's own uv.toml, the host's environment
// (certificates, proxies).
func installOptions(s iostreams.Streams, f session.Folder) func() (install.Options, error) {
	return func() (install.Options, error) {
		uv, err := uvwrap.LocateFor(s)
		if err == nil {
			err = uvwrap.VerifyCached(uv, s.Layout().UVVerified())
		}
		if err != nil {
			return install.Options{}, err
		}
		_, v, inst, err := findpython.LocateRuntime(s)
		if err != nil {
			return install.Options{}, err
		}
		if inst.Executable == "" {
			return install.Options{}, fmt.Errorf("the CPython at %s has no python executable for uv to use", inst.Prefix)
		}
		target, err := f.PackageLayer(v.Short())
		if err != nil {
			return install.Options{}, err
		}
		st := config.Load(s.Layout().UserConfig())
		return install.Options{
			UV: uv, Python: inst.Executable, Target: target,
			IndexURL: st.IndexURL.Value, AllowBuilds: st.SandboxAllowBuilds.Value, UVConfig: userUVConfig(s),
			Environ: s.Environ(), Keep: keptForUV,
		}, nil
	}
}

// keptForUV are the host's variables uv runs with: who the user is (HOME
// finds uv's cache and ~/.netrc), the fixed PATH and LANG, and the trust
// and proxy variables.
func keptForUV(k string) bool {
	switch k {
	case "HOME", "USER", "LOGNAME", "PATH", "LANG":
		return true
	}
	return session.Trust(k)
}

// userUVConfig is the user's uv.toml, "" when there is none. Only this one
// is given to uv (--config-file): uv would otherwise also look for a
// project's uv.toml or pyproject.toml above the folder it runs in.
func userUVConfig(s iostreams.Streams) string {
	dir := s.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := s.Getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	p := filepath.Join(dir, "uv", "uv.toml")
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(s.Err, "vis-agent sandbox host: %s: %v\n", p, err)
		}
		return ""
	}
	return p
}

// pipStandIn is the pip a session's shell() commands find first on PATH:
// packages go into the session through install(), which the host runs.
const pipStandIn = `#!/bin/sh
echo "pip does not install from a session's shell(): call install(\"NAME\") in a block, or install(requirements=\"requirements.txt\"); the host puts packages into the session's own folder" >&2
exit 1
`

// commandPython says what the shell() commands of the session in folder
// f get of its python: PATH starts with a pip that names install(), the
// shared environment's python (the environment a session uses outside a
// project) and the scripts of the session's package folder; PYTHONPATH is
// the package folder. The folders are the user's and the host's, never
// one a block named; nothing when the CPython is not found.
func commandPython(s iostreams.Streams, f session.Folder) func() (tools.CommandPython, []string) {
	return func() (tools.CommandPython, []string) {
		_, v, inst, err := findpython.LocateRuntime(s)
		if err != nil || inst.Executable == "" {
			return tools.CommandPython{}, nil
		}
		layer, err := f.PackageLayer(v.Short())
		if err != nil {
			return tools.CommandPython{}, nil
		}
		stand := filepath.Join(f.Dir, "bin")
		if err := os.MkdirAll(stand, 0o755); err == nil {
			for _, name := range []string{"pip", "pip3"} {
				os.WriteFile(filepath.Join(stand, name), []byte(pipStandIn), 0o755)
			}
		}
		env := s.Layout().SharedEnvironment(v.Short())
		// The stand-in first: the environment has a pip of its own.
		py := tools.CommandPython{Bin: []string{stand, filepath.Join(env, "bin"), filepath.Join(layer, "bin")}, PythonPath: layer}
		return py, []string{inst.Prefix, filepath.Dir(inst.Executable), env, layer, stand}
	}
}
