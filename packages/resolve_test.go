package packages

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// TestResolve: which environment a run uses, for each kind of folder and
// option, without running any python.
func TestResolve(t *testing.T) {
	v := findpython.Version{Major: 3, Minor: 12, Micro: 1}
	inst := fakeInstall(t, "3.12")
	venv := func(dir string) map[string]string {
		return map[string]string{
			dir + "/pyvenv.cfg": "home = " + filepath.Dir(inst.Executable) + "\nversion = 3.12.1\n",
			dir + "/bin/python": "",
		}
	}
	files := map[string]string{
		"uvlock/pyproject.toml":     simpleProject,
		"uvlock/uv.lock":            "",
		"pip-only/pyproject.toml":   simpleProject + "[tool.black]\nline-length = 100\n",
		"pip-only/src/demo/x.py":    "",
		"broken/pyproject.toml":     "[project\n",
		"ws/pyproject.toml":         "[tool.uv.workspace]\nmembers = [\"m\"]\n",
		"ws/uv.lock":                "",
		"ws/m/pyproject.toml":       simpleProject,
		"plain/README":              "",
		"oldvenv/pyproject.toml":    simpleProject,
		"oldvenv/.venv/pyvenv.cfg":  "home = /usr/bin\nversion = 3.11.2\n",
		"oldvenv/.venv/bin/python":  "",
		"customenv/pyproject.toml":  simpleProject,
		"active/pyvenv.cfg":         "home = " + filepath.Dir(inst.Executable) + "\nversion = 3.12.1\n",
		"active/bin/python":         "",
		"active311/pyvenv.cfg":      "home = /usr/bin\nversion = 3.11.2\n",
		"active311/bin/python":      "",
		"withvenv/pyproject.toml":   simpleProject,
		"customenv/envs/x/bin/ok":   "",
		"withvenv/.venv/bin/python": "",
	}
	for k, val := range venv("withvenv/.venv") {
		files[k] = val
	}
	for k, val := range venv("customenv/envs/x") {
		files[k] = val
	}
	root := tree(t, files)
	shared := filepath.Join(root, "shared", "3.12")
	at := func(p string) string { return filepath.Join(root, p) }
	for _, tt := range []struct {
		name           string
		cwd            string
		env            map[string]string
		shared, active bool
		kind           Kind
		dir            string // the environment; "" with an error
		err, warning   string
		project        string
	}{
		{name: "no project", cwd: "plain", kind: KindShared, dir: shared},
		{name: "pyproject.toml alone is not a uv project", cwd: "pip-only", kind: KindShared, dir: shared, project: "pip-only"},
		{name: "uv.lock without .venv", cwd: "uvlock", err: "the project environment " + at("uvlock/.venv") + " does not exist"},
		{name: "uv.lock, --shared", cwd: "uvlock", shared: true, kind: KindShared, dir: shared, project: "uvlock"},
		{name: "workspace member", cwd: "ws/m", err: "the project environment " + at("ws/.venv") + " does not exist"},
		{name: ".venv of this CPython", cwd: "withvenv", kind: KindProject, dir: at("withvenv/.venv"), project: "withvenv"},
		{name: ".venv of another version", cwd: "oldvenv", err: "is for CPython 3.11"},
		{name: "UV_PROJECT_ENVIRONMENT", cwd: "customenv", env: map[string]string{"UV_PROJECT_ENVIRONMENT": "envs/x"}, kind: KindProject, dir: at("customenv/envs/x")},
		{name: "broken pyproject.toml", cwd: "broken", err: at("broken/pyproject.toml") + ":2: not valid TOML: expected"},
		{name: "broken pyproject.toml, --shared", cwd: "broken", shared: true, kind: KindShared, dir: shared},
		{name: "active outside a project", cwd: "plain", env: map[string]string{"VIRTUAL_ENV": at("active")}, kind: KindActive, dir: at("active")},
		{name: "active of another version", cwd: "plain", env: map[string]string{"VIRTUAL_ENV": at("active311")}, err: "the active environment " + at("active311") + " is for CPython 3.11"},
		{name: "active in a project: warned, ignored", cwd: "withvenv", env: map[string]string{"VIRTUAL_ENV": at("active")}, kind: KindProject, dir: at("withvenv/.venv"),
			warning: "`VIRTUAL_ENV=" + at("active") + "` does not match the project environment path `.venv` and will be ignored; use `--active`"},
		{name: "active in a project, --active", cwd: "withvenv", active: true, env: map[string]string{"VIRTUAL_ENV": at("active")}, kind: KindActive, dir: at("active")},
		{name: "the project's own, activated", cwd: "withvenv", env: map[string]string{"VIRTUAL_ENV": at("withvenv/.venv")}, kind: KindProject, dir: at("withvenv/.venv")},
		{name: "--active without one", cwd: "plain", active: true, err: "--active needs an activated environment"},
		{name: "--shared beats the active one", cwd: "plain", shared: true, env: map[string]string{"VIRTUAL_ENV": at("active")}, kind: KindShared, dir: shared},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Resolve(Request{
				Cwd: at(tt.cwd), Getenv: func(k string) string { return tt.env[k] },
				Shared: tt.shared, Active: tt.active,
				SharedDir: shared, Install: inst, Version: v,
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
			if c.Kind != tt.kind || c.Env.Dir != tt.dir {
				t.Errorf("%s %s, want %s %s", c.Kind, c.Env.Dir, tt.kind, tt.dir)
			}
			if got := strings.Join(c.Warnings, "\n"); (tt.warning == "") != (got == "") || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings %q, want %q", got, tt.warning)
			}
			if tt.project != "" && (c.Project == nil || c.Project.Dir != at(tt.project)) {
				t.Errorf("project %+v, want %s", c.Project, tt.project)
			}
		})
	}
}
