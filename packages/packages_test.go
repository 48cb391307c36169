package packages

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testenv"
	"github.com/vis-agent/vis-agent/pyembed"
)

// tree writes files under a new temporary folder and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	testenv.WriteTree(t, root, files)
	return root
}

const simpleProject = "[project]\nname = \"demo\"\nversion = \"0.1\"\n"

func TestFindProject(t *testing.T) {
	root := tree(t, map[string]string{
		"plain/pyproject.toml":            simpleProject,
		"plain/pkg/deep/":                 "",
		"ws/pyproject.toml":               "[tool.uv.workspace]\nmembers = [\"packages/*\"]\nexclude = [\"packages/skip\"]\n",
		"ws/packages/a/pyproject.toml":    simpleProject,
		"ws/packages/a/src/":              "",
		"ws/packages/skip/pyproject.toml": simpleProject,
		"ws/other/pyproject.toml":         simpleProject,
		"outer/pyproject.toml":            "[tool.black]\nline-length = 100\n",
		"outer/inner/pyproject.toml":      simpleProject,
		"none/x/":                         "",
		"broken/pyproject.toml":           "[project\n",
	})
	tests := []struct {
		from, dir, root string
	}{
		{"plain/pkg/deep", "plain", "plain"},
		{"ws/packages/a/src", "ws/packages/a", "ws"},
		{"ws/packages/skip", "ws/packages/skip", "ws/packages/skip"},
		{"ws/other", "ws/other", "ws/other"},
		{"ws", "ws", "ws"},
		// An ancestor pyproject.toml without a workspace is passed over.
		{"outer/inner", "outer/inner", "outer/inner"},
	}
	for _, tt := range tests {
		p, err := FindProject(filepath.Join(root, tt.from))
		if err != nil || p == nil {
			t.Errorf("FindProject(%s) = %v, %v", tt.from, p, err)
			continue
		}
		if p.Dir != filepath.Join(root, tt.dir) || p.Root != filepath.Join(root, tt.root) {
			t.Errorf("FindProject(%s) = dir %s root %s; want %s, %s", tt.from, p.Dir, p.Root, tt.dir, tt.root)
		}
	}
	if p, err := FindProject(filepath.Join(root, "none", "x")); err != nil || (p != nil && strings.HasPrefix(p.Dir, root)) {
		t.Errorf("FindProject(none) = %+v, %v", p, err)
	}
	if _, err := FindProject(filepath.Join(root, "broken")); err == nil || !strings.Contains(err.Error(), "pyproject.toml") {
		t.Errorf("a broken pyproject.toml: %v", err)
	}
}

func TestEnvironmentDir(t *testing.T) {
	p := &Project{Dir: "/w/a", Root: "/w"}
	for _, tt := range []struct {
		p          *Project
		uvEnv, cwd string
		want       string
	}{
		{p, "", "/w/a/x", "/w/.venv"},
		{p, "/elsewhere/env", "/w/a", "/elsewhere/env"},
		{p, "envs/dev", "/w/a", "/w/envs/dev"},
		{nil, "envs/dev", "/cwd", "/cwd/envs/dev"},
	} {
		if got := EnvironmentDir(tt.p, tt.uvEnv, tt.cwd); got != tt.want {
			t.Errorf("EnvironmentDir(%v, %q, %q) = %s, want %s", tt.p, tt.uvEnv, tt.cwd, got, tt.want)
		}
	}
}

func TestRoots(t *testing.T) {
	tests := []struct {
		name      string
		pyproject string
		dirs      []string
		want      []string
	}{
		{"setuptools package-dir", "[tool.setuptools]\npackage-dir = {\"\" = \"lib\"}\n", []string{"lib"}, []string{"lib"}},
		{"setuptools find where", "[tool.setuptools.packages.find]\nwhere = [\"src\", \"more\"]\n", []string{"src", "more"}, []string{"src", "more"}},
		{"setuptools auto src", "[build-system]\nbuild-backend = \"setuptools.build_meta\"\n", []string{"src"}, []string{"src"}},
		{"hatch packages", "[tool.hatch.build.targets.wheel]\npackages = [\"code/demo\"]\n", []string{"code/demo"}, []string{"code"}},
		{"hatch default src", "[build-system]\nbuild-backend = \"hatchling.build\"\n", []string{"src"}, []string{"src"}},
		{"poetry from", "[tool.poetry]\npackages = [{include = \"demo\", from = \"source\"}]\n", []string{"source"}, []string{"source"}},
		{"pdm package-dir", "[tool.pdm.build]\npackage-dir = \"pysrc\"\n", []string{"pysrc"}, []string{"pysrc"}},
		{"uv_build module-root", "[build-system]\nbuild-backend = \"uv_build\"\n[tool.uv.build-backend]\nmodule-root = \"python\"\n", []string{"python", "src"}, []string{"python"}},
		{"uv_build default", "[build-system]\nbuild-backend = \"uv_build\"\n", []string{"src"}, []string{"src"}},
		{"pytest pythonpath list", "[tool.pytest.ini_options]\npythonpath = [\"src\", \".\"]\n", []string{"src"}, []string{"src", "."}},
		{"pytest pythonpath string", "[tool.pytest.ini_options]\npythonpath = \"a b\"\n", []string{"a", "b"}, []string{"a", "b"}},
		{"backend then pytest, no repeats", "[build-system]\nbuild-backend = \"hatchling.build\"\n[tool.pytest.ini_options]\npythonpath = [\"src\", \"tests\"]\n", []string{"src", "tests"}, []string{"src", "tests"}},
		{"missing folders are left out", "[tool.setuptools.packages.find]\nwhere = [\"src\"]\n", nil, nil},
		{"flat layout", simpleProject, []string{"src"}, nil},
	}
	for _, tt := range tests {
		files := map[string]string{"pyproject.toml": simpleProject + tt.pyproject}
		if strings.Contains(tt.pyproject, "[project]") {
			files["pyproject.toml"] = tt.pyproject
		}
		for _, d := range tt.dirs {
			files[d+"/"] = ""
		}
		root := tree(t, files)
		p, err := FindProject(root)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var want []string
		for _, w := range tt.want {
			want = append(want, filepath.Clean(filepath.Join(root, w)))
		}
		if got := Roots(p); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Roots = %q, want %q", tt.name, got, want)
		}
	}
	if Roots(nil) != nil {
		t.Error("Roots(nil) is not empty")
	}
}

func TestProjectEnvironment(t *testing.T) {
	v := pyembed.Version{Major: 3, Minor: 12, Micro: 1}
	root := tree(t, map[string]string{
		"ok/pyvenv.cfg":        "home = /usr/bin\nimplementation = CPython\nversion_info = 3.12.4\n",
		"ok/bin/python":        "",
		"stdlib/pyvenv.cfg":    "home = /usr/bin\nversion = 3.12.1\n",
		"stdlib/bin/python":    "",
		"other/pyvenv.cfg":     "home = /usr/bin\nversion_info = 3.11.9\n",
		"nocfg/bin/python":     "",
		"noversion/pyvenv.cfg": "home = /usr/bin\n",
		"nopython/pyvenv.cfg":  "version = 3.12.0\n",
	})
	for _, ok := range []string{"ok", "stdlib"} {
		env, err := ProjectEnvironment(filepath.Join(root, ok), v)
		if err != nil || env.Python != filepath.Join(root, ok, "bin", "python") {
			t.Errorf("ProjectEnvironment(%s) = %+v, %v", ok, env, err)
		}
	}
	for dir, problem := range map[string]string{
		"missing":   "does not exist",
		"other":     "is for CPython 3.11",
		"nocfg":     "is not a virtual environment (no pyvenv.cfg)",
		"noversion": "does not say which CPython it is for",
		"nopython":  "has no bin/python",
	} {
		_, err := ProjectEnvironment(filepath.Join(root, dir), v)
		if err == nil {
			t.Errorf("ProjectEnvironment(%s) accepted", dir)
			continue
		}
		msg := err.Error()
		lines := strings.Split(msg, "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], filepath.Join(root, dir)+" "+problem) ||
			!strings.Contains(lines[0], "vis-agent embeds CPython 3.12.1") ||
			!strings.Contains(lines[1], "vis-agent python uv sync --python 3.12") ||
			!strings.Contains(lines[1], "vis-agent python uv run --no-sync python") {
			t.Errorf("ProjectEnvironment(%s) error:\n%s", dir, msg)
		}
	}
}

func TestSharedEnvironment(t *testing.T) {
	py := testenv.First(t)
	state, pkgs, pkgs2 := t.TempDir(), t.TempDir(), t.TempDir()
	inst, err := pyembed.Locate(py.Library, py.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, pkgs, map[string]string{"hook.pth": "import sys; sys.HOOKED = getattr(sys, 'HOOKED', 0) + 1\n"})
	env, err := SharedEnvironment(state, pkgs, inst, py.Version)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(env.Dir, "pyvenv.cfg"))
	if !strings.Contains(string(cfg), "include-system-site-packages = false") || !strings.Contains(string(cfg), "home = "+filepath.Dir(inst.Executable)) {
		t.Errorf("pyvenv.cfg:\n%s", cfg)
	}
	// The environment's python sees the folder, its .pth files run once,
	// and the installation's own site-packages come after it.
	out, err := exec.Command(env.Python, "-c", `import sys, site
print(sys.HOOKED)
print(sys.path.index(sys.argv[1]) < sys.path.index(site.getsitepackages([sys.base_prefix])[0]))`, pkgs).CombinedOutput()
	if err != nil || strings.Fields(string(out))[0] != "1" || strings.Fields(string(out))[1] != "True" {
		t.Errorf("the shared environment's python: %v\n%s", err, out)
	}
	// Asking again changes nothing; another packages folder is followed.
	again, err := SharedEnvironment(state, pkgs, inst, py.Version)
	if err != nil || again != env {
		t.Errorf("second call = %+v, %v", again, err)
	}
	if _, err := SharedEnvironment(state, pkgs2, inst, py.Version); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(env.Python, "-c", "import sys; print(sys.argv[1] in sys.path)", pkgs2).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Errorf("after the folder moved: %v\n%s", err, out)
	}
	if _, err := SharedEnvironment(state, pkgs, pyembed.Install{Prefix: "/x"}, py.Version); err == nil {
		t.Error("an installation without python made an environment")
	}
}

func TestPipHome(t *testing.T) {
	py := testenv.First(t)
	inst, err := pyembed.Locate(py.Library, py.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	home, err := PipHome(t.TempDir(), inst, py.Version)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 || entries[0].Name() != "pip" {
		t.Errorf("pip home holds %v, want pip alone", entries)
	}
	// An installation without pip gets the ensurepip wheel's, unpacked.
	wheel := ensurepipWheel(inst.Prefix, "python"+py.Version.Short())
	if wheel == "" {
		t.Skipf("%s ships no ensurepip wheel", inst.Prefix)
	}
	bare := tree(t, map[string]string{"lib/python3.99/ensurepip/_bundled/": ""})
	data, err := os.ReadFile(wheel)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "lib/python3.99/ensurepip/_bundled", filepath.Base(wheel)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	v := pyembed.Version{Major: 3, Minor: 99}
	home, err = PipHome(t.TempDir(), pyembed.Install{Prefix: bare}, v)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(home, "pip", "__init__.py")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("no unpacked pip in %s: %v", home, err)
	}
	if _, err := PipHome(t.TempDir(), pyembed.Install{Prefix: t.TempDir()}, v); err == nil || !strings.Contains(err.Error(), "has no pip, and no ensurepip wheel") {
		t.Errorf("no pip at all: %v", err)
	}
}

func TestVersionLess(t *testing.T) {
	names := []string{"pip-24.2-py3-none-any.whl", "pip-9.0.1-py3-none-any.whl", "pip-23.10-py3-none-any.whl", "pip-23.2.1-py3-none-any.whl"}
	if !versionLess(names[1], names[3]) || !versionLess(names[3], names[2]) || !versionLess(names[2], names[0]) || versionLess(names[0], names[2]) {
		t.Error("pip wheels not ordered by version")
	}
}

func TestUserChoseIndex(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "pip.conf")
	env := func(kv ...string) func(string) string {
		m := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "xdg"), "PIP_CONFIG_FILE": filepath.Join(dir, "none.conf")}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, args := range [][]string{{"install", "-i", "u", "x"}, {"install", "--index-url=u", "x"}, {"install", "-iu", "x"}, {"install", "--index-url", "u"}} {
		if !UserChoseIndex(args, env()) {
			t.Errorf("%q not seen as choosing an index", args)
		}
	}
	if UserChoseIndex([]string{"install", "--extra-index-url", "u", "x", "--", "-i"}, env()) {
		t.Error("--extra-index-url or an argument after -- seen as choosing the index")
	}
	if !UserChoseIndex(nil, env("PIP_INDEX_URL", "http://x")) {
		t.Error("PIP_INDEX_URL not seen")
	}
	os.WriteFile(conf, []byte("[global]\ntimeout = 60\n"), 0o644)
	if UserChoseIndex(nil, env("PIP_CONFIG_FILE", conf)) {
		t.Error("a pip.conf without index-url seen as choosing it")
	}
	os.WriteFile(conf, []byte("[global]\nindex_url: http://mirror/simple\n"), 0o644)
	if !UserChoseIndex(nil, env("PIP_CONFIG_FILE", conf)) {
		t.Error("pip.conf index_url not seen")
	}
	xdg := filepath.Join(dir, "xdg", "pip", "pip.conf")
	os.MkdirAll(filepath.Dir(xdg), 0o755)
	os.WriteFile(xdg, []byte("[install]\n  index-url = http://m/simple?x=1\n"), 0o644)
	if !UserChoseIndex(nil, func(k string) string {
		return map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "xdg")}[k]
	}) {
		t.Error("the user's pip.conf not read")
	}
	if UserChoseIndex(nil, env("PIP_CONFIG_FILE", os.DevNull)) {
		t.Error("PIP_CONFIG_FILE=/dev/null still reads configuration")
	}
}
