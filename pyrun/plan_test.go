package pyrun

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// TestPlanRun: the decisions of a run (which python it starts as, its
// environment, its start-up hook) without running any python.
func TestPlanRun(t *testing.T) {
	root := t.TempDir()
	prefix := filepath.Join(root, "cpython")
	inst := findpython.Install{Prefix: prefix, Executable: filepath.Join(prefix, "bin", "python3.12")}
	v := findpython.Version{Major: 3, Minor: 12, Micro: 4}
	venv := "home = " + filepath.Join(prefix, "bin") + "\nversion = 3.12.4\n"
	testenv.WriteTree(t, root, map[string]string{
		"cpython/bin/python3.12":                               "",
		"cpython/lib/python3.12/site-packages/pip/__init__.py": "",
		"proj/pyproject.toml":                                  "[project]\nname = \"p\"\nversion = \"1\"\n[build-system]\nbuild-backend = \"hatchling.build\"\n",
		"proj/uv.lock":                                         "",
		"proj/.venv/pyvenv.cfg":                                venv,
		"proj/.venv/bin/python":                                "",
		"proj/src/p/__init__.py":                               "",
		"active/pyvenv.cfg":                                    venv,
		"active/bin/python":                                    "",
		"plain/README":                                         "",
	})
	shared := filepath.Join(root, "shared")
	sharedPython := filepath.Join(shared, "3.12", "bin", "python3.12")
	// The project's src layout goes to startup.py as an import root.
	projRoots := []string{`"roots":["` + filepath.Join(root, "proj/src") + `"]`}
	base := []string{"HOME=/home/u", "PATH=/bin", "PIP_INDEX_URL="}
	for _, tt := range []struct {
		name     string
		argv     []string
		cwd      string
		environ  []string
		settings func(*config.Settings)
		argv0    string
		env      []string // wanted exactly, when not nil
		has      []string // wanted among the environment
		lacks    []string // names not in the environment
		startup  []string // in the start-up code; nil: no hook
		message  string
		err      string
	}{
		{name: "shared outside a project", argv: []string{"-c", "pass"}, cwd: "plain", argv0: sharedPython, env: base},
		{name: "project", argv: []string{"-c", "pass"}, cwd: "proj", argv0: filepath.Join(root, "proj/.venv/bin/python"), startup: projRoots},
		{name: "--shared in a project", argv: []string{"--shared", "-c", "pass"}, cwd: "proj", argv0: sharedPython, startup: projRoots},
		{name: "active outside a project", argv: []string{"-c", "pass"}, cwd: "plain", environ: []string{"VIRTUAL_ENV=" + filepath.Join(root, "active")},
			argv0: filepath.Join(root, "active/bin/python")},
		{name: "active in a project is warned about", argv: []string{"-c", "pass"}, cwd: "proj", environ: []string{"VIRTUAL_ENV=" + filepath.Join(root, "active")},
			argv0: filepath.Join(root, "proj/.venv/bin/python"), message: "warning: `VIRTUAL_ENV=" + filepath.Join(root, "active") + "` does not match", startup: projRoots},
		{name: "--active in a project", argv: []string{"--active", "-c", "pass"}, cwd: "proj", environ: []string{"VIRTUAL_ENV=" + filepath.Join(root, "active")},
			argv0: filepath.Join(root, "active/bin/python"), startup: projRoots},
		{name: "--version needs no environment", argv: []string{"-V"}, cwd: "proj", environ: []string{"UV_PROJECT_ENVIRONMENT=nowhere"}, argv0: inst.Executable},
		{name: "missing project environment", argv: []string{"-c", "pass"}, cwd: "proj", environ: []string{"UV_PROJECT_ENVIRONMENT=nowhere"}, err: "does not exist"},
		{name: "--no-env", argv: []string{"--no-env", "-c", "pass"}, cwd: "plain", argv0: sharedPython, env: []string{}},
		{name: "--no-env with --env", argv: []string{"--no-env", "--env", "A=1", "--env", "B", "-c", "pass"}, cwd: "plain", argv0: sharedPython, env: []string{"A=1", "B="}},
		{name: "--env replaces", argv: []string{"--env", "HOME=/x", "-c", "pass"}, cwd: "plain", argv0: sharedPython, env: []string{"HOME=/x", "PATH=/bin", "PIP_INDEX_URL="}},
		{name: "index_url", argv: []string{"-m", "pip", "install", "x"}, cwd: "plain", argv0: sharedPython,
			settings: func(s *config.Settings) { s.IndexURL.Value = "http://mirror/simple" },
			has:      []string{"PIP_INDEX_URL=http://mirror/simple"}},
		{name: "index_url, pip given its own", argv: []string{"-m", "pip", "install", "-i", "http://own", "x"}, cwd: "plain", argv0: sharedPython,
			settings: func(s *config.Settings) { s.IndexURL.Value = "http://mirror/simple" },
			env:      base},
		{name: "index_url left out by --no-env", argv: []string{"--no-env", "-c", "pass"}, cwd: "plain", argv0: sharedPython,
			settings: func(s *config.Settings) { s.IndexURL.Value = "http://mirror/simple" },
			env:      []string{}},
		{name: "config: source paths and tls_strict", argv: []string{"-c", "pass"}, cwd: "plain", argv0: sharedPython,
			settings: func(s *config.Settings) { s.SourcePaths.Value, s.TLSStrict.Value = []string{"/src/a\xff"}, false },
			startup:  []string{`"roots":["/src/a\\udcff"]`, `"tls_strict":false`}},
		// --no-network is the C audit hook and the kernel layer
		// (nonetwork.go), not the start-up hook.
		{name: "--no-network", argv: []string{"--no-network", "-c", "pass"}, cwd: "plain", argv0: sharedPython},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pa, err := Parse(tt.argv)
			if err != nil {
				t.Fatal(err)
			}
			settings := config.Load() // the defaults
			if tt.settings != nil {
				tt.settings(&settings)
			}
			plan, err := NewPlan(Context{
				Args: pa, Cwd: filepath.Join(root, tt.cwd), Environ: append(slices.Clone(base), tt.environ...),
				Inst: inst, Version: v, SharedDir: filepath.Join(shared, "3.12"), StartupDir: filepath.Join(root, "startup"),
				Settings: func(*packages.Project) config.Settings { return settings },
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if plan.Argv0 != tt.argv0 {
				t.Errorf("argv0 %s, want %s", plan.Argv0, tt.argv0)
			}
			want := tt.env
			if want != nil && tt.environ != nil {
				want = append(slices.Clone(want), tt.environ...)
			}
			if want != nil && !slices.Equal(plan.Env, want) && !(len(plan.Env) == 0 && len(want) == 0) {
				t.Errorf("environment %q, want %q", plan.Env, want)
			}
			for _, kv := range tt.has {
				if !slices.Contains(plan.Env, kv) {
					t.Errorf("environment %q lacks %s", plan.Env, kv)
				}
			}
			if (tt.startup == nil) != (plan.Startup == "") {
				t.Errorf("start-up hook %q, want one holding %q", plan.Startup, tt.startup)
			}
			for _, s := range tt.startup {
				if !strings.Contains(plan.Startup, s) {
					t.Errorf("start-up hook lacks %s:\n%s", s, plan.Startup)
				}
			}
			if got := strings.Join(plan.Messages, "\n"); (tt.message == "") != (got == "") || !strings.Contains(got, tt.message) {
				t.Errorf("messages %q, want %q", got, tt.message)
			}
		})
	}
}
