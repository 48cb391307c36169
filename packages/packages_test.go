package packages

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
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
	// One line: the file, the line; each command adds its way out.
	_, err := FindProject(filepath.Join(root, "broken"))
	var pe *PyprojectError
	if err == nil || strings.Contains(err.Error(), "\n") || !errors.As(err, &pe) || pe.Line == 0 ||
		!strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: not valid TOML: ", filepath.Join(root, "broken", "pyproject.toml"), pe.Line)) {
		t.Errorf("a broken pyproject.toml: %v", err)
	}
	if got := WayOut(err, "fix it"); !strings.HasSuffix(got.Error(), "; fix it") {
		t.Errorf("WayOut = %v", got)
	}
	if other := errors.New("x"); !errors.Is(WayOut(other, "fix it"), other) || WayOut(other, "fix it").Error() != "x" {
		t.Errorf("WayOut changed another error")
	}
}

func TestEnvironmentDir(t *testing.T) {
	p := &Project{Dir: "/w/a", Root: "/w"}
	for _, tt := range []struct {
		uvEnv, want string
	}{
		{"", "/w/.venv"},
		{"/elsewhere/env", "/elsewhere/env"},
		{"envs/dev", "/w/envs/dev"},
	} {
		if got := EnvironmentDir(p, tt.uvEnv); got != tt.want {
			t.Errorf("EnvironmentDir(%q) = %s, want %s", tt.uvEnv, got, tt.want)
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

func TestCheckEnvironment(t *testing.T) {
	v := findpython.Version{Major: 3, Minor: 12, Micro: 1}
	inst := findpython.Install{Prefix: "/usr", Executable: "/usr/bin/python3.12"}
	root := tree(t, map[string]string{
		"ok/pyvenv.cfg":        "home = /usr/bin\nimplementation = CPython\nversion_info = 3.12.4\n",
		"ok/bin/python":        "",
		"stdlib/pyvenv.cfg":    "home = /usr/bin\nversion = 3.12.1\n",
		"stdlib/bin/python":    "",
		"nohome/pyvenv.cfg":    "version = 3.12.1\n",
		"nohome/bin/python":    "",
		"other/pyvenv.cfg":     "home = /usr/bin\nversion_info = 3.11.9\n",
		"otherinst/pyvenv.cfg": "home = /opt/py/bin\nversion_info = 3.12.1\n",
		"otherinst/bin/python": "",
		"nocfg/bin/python":     "",
		"noversion/pyvenv.cfg": "home = /usr/bin\n",
		"nopython/pyvenv.cfg":  "version = 3.12.0\n",
	})
	for _, ok := range []string{"ok", "stdlib", "nohome"} {
		env, err := checkEnvironment("the project environment", filepath.Join(root, ok), projectHint, inst, v)
		if err != nil || env.Python != filepath.Join(root, ok, "bin", "python") {
			t.Errorf("checkEnvironment(%s) = %+v, %v", ok, env, err)
		}
	}
	for dir, problem := range map[string]string{
		"missing":   "does not exist",
		"other":     "is for CPython 3.11",
		"otherinst": "was made from the CPython in /opt/py/bin, not the one vis-agent loads (/usr/bin/python3.12)",
		"nocfg":     "is not a virtual environment (no pyvenv.cfg)",
		"noversion": "does not say which CPython it is for",
		"nopython":  "has no bin/python",
	} {
		_, err := checkEnvironment("the project environment", filepath.Join(root, dir), projectHint, inst, v)
		if err == nil {
			t.Errorf("checkEnvironment(%s) accepted", dir)
			continue
		}
		msg := err.Error()
		lines := strings.Split(msg, "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "the project environment "+filepath.Join(root, dir)+" "+problem) ||
			!strings.Contains(lines[0], "vis-agent embeds CPython 3.12.1") ||
			!strings.Contains(lines[1], "`vis-agent python uv sync`") || !strings.Contains(lines[1], "--shared") {
			t.Errorf("checkEnvironment(%s) error:\n%s", dir, msg)
		}
	}
}

// fakeInstall is an installation with a python and a linkable pip, for
// tests that make environments without running them.
func fakeInstall(t *testing.T, short string) findpython.Install {
	prefix := tree(t, map[string]string{
		"bin/python" + short: "#!/bin/sh\n",
		"lib/python" + short + "/site-packages/pip/__init__.py": "",
	})
	return findpython.Install{Prefix: prefix, Executable: filepath.Join(prefix, "bin", "python"+short)}
}

func TestSharedEnvironment(t *testing.T) {
	py := testenv.First(t)
	root := filepath.Join(t.TempDir(), "packages")
	inst, err := findpython.Locate(py.Library, py.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	// What runs killed while making it left: an old temporary folder goes,
	// a fresh one (another run making it now) stays.
	old, fresh := filepath.Join(root, ".vis-new-"+py.Version.Short()+"-1"), filepath.Join(root, ".vis-new-"+py.Version.Short()+"-2")
	for _, d := range []string{old, fresh} {
		if err := os.MkdirAll(filepath.Join(d, "lib"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(old, hourAgo, hourAgo)
	env, notes, err := SharedEnvironment(filepath.Join(root, py.Version.Short()), inst, py.Version)
	if err != nil || len(notes) != 0 {
		t.Fatal(err, notes)
	}
	if _, err := os.Stat(old); err == nil {
		t.Errorf("an abandoned temporary environment stays: %s", old)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary environment was removed: %v", err)
	}
	if env.Dir != filepath.Join(root, py.Version.Short()) {
		t.Errorf("environment in %s", env.Dir)
	}
	cfg, _ := os.ReadFile(filepath.Join(env.Dir, "pyvenv.cfg"))
	if !strings.Contains(string(cfg), "include-system-site-packages = false") || !strings.Contains(string(cfg), "home = "+filepath.Dir(inst.Executable)) {
		t.Errorf("pyvenv.cfg:\n%s", cfg)
	}
	// A real virtual environment: its site-packages alone, pip in it, the
	// installation's site-packages nowhere.
	out, err := exec.Command(env.Python, "-c", `import sys, site, pip
print(site.getsitepackages() == [sys.argv[1]], pip.__file__.startswith(sys.argv[1]))
print(any(p.startswith(sys.base_prefix) and p.endswith("-packages") for p in sys.path))`,
		filepath.Join(env.Dir, "lib", "python"+py.Version.Short(), "site-packages")).CombinedOutput()
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != "True True False" {
		t.Errorf("the shared environment's python: %v\n%s", err, out)
	}
	again, _, err := SharedEnvironment(filepath.Join(root, py.Version.Short()), inst, py.Version)
	if err != nil || again != env {
		t.Errorf("second call = %+v, %v", again, err)
	}
	if _, _, err := SharedEnvironment(filepath.Join(root, py.Version.Short()), findpython.Install{Prefix: "/x"}, py.Version); err == nil {
		t.Error("an installation without python made an environment")
	}
}

func TestSharedEnvironmentFollowsInstallation(t *testing.T) {
	v := findpython.Version{Major: 3, Minor: 12, Micro: 1}
	root := t.TempDir()
	a, b := fakeInstall(t, "3.12"), fakeInstall(t, "3.12")
	env, _, err := SharedEnvironment(filepath.Join(root, "3.12"), a, v)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, filepath.Join(env.Dir, "lib/python3.12/site-packages"), map[string]string{"kept.py": ""})
	if _, _, err := SharedEnvironment(filepath.Join(root, "3.12"), b, v); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(env.Dir, "pyvenv.cfg"))
	if target, _ := os.Readlink(env.Python); target != b.Executable || !strings.Contains(string(cfg), "home = "+filepath.Dir(b.Executable)+"\n") {
		t.Errorf("not pointed at the other installation: %s, %s", target, cfg)
	}
	if _, err := os.Stat(filepath.Join(env.Dir, "lib/python3.12/site-packages/kept.py")); err != nil {
		t.Error("packages lost when the environment was pointed elsewhere")
	}
	// Versions never share an environment.
	env13, _, err := SharedEnvironment(filepath.Join(root, "3.13"), fakeInstall(t, "3.13"), findpython.Version{Major: 3, Minor: 13})
	if err != nil || env13.Dir == env.Dir {
		t.Errorf("3.13: %+v, %v", env13, err)
	}
}

func TestSharedEnvironmentMigrates(t *testing.T) {
	v := findpython.Version{Major: 3, Minor: 12, Micro: 1}
	inst := fakeInstall(t, "3.12")
	root := tree(t, map[string]string{
		"old_pkg/__init__.py":            "",
		"old_pkg-1.0.dist-info/METADATA": "",
		"hook.pth":                       "import x\n",
		"bin/tool":                       "#!/home/u/.vis/python/envs/3.12-abcd/bin/python3.12\nimport old_pkg\n",
		"bin/sh-tool":                    "#!/bin/sh\necho hi\n",
		"share/tool/README":              "data",
		"pip/__init__.py":                "user's pip",
	})
	if err := os.Chmod(filepath.Join(root, "bin/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	env, notes, err := SharedEnvironment(filepath.Join(root, "3.12"), inst, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "moved the shared packages") || !strings.Contains(notes[0], env.Dir) {
		t.Errorf("notes: %q", notes)
	}
	site := filepath.Join(env.Dir, "lib/python3.12/site-packages")
	for _, f := range []string{
		filepath.Join(site, "old_pkg/__init__.py"), filepath.Join(site, "old_pkg-1.0.dist-info/METADATA"),
		filepath.Join(site, "hook.pth"), filepath.Join(env.Dir, "share/tool/README"),
		filepath.Join(env.Dir, "vis-migration-conflicts/pip/__init__.py"),
	} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not migrated: %v", err)
		}
	}
	script, _ := os.ReadFile(filepath.Join(env.Dir, "bin/tool"))
	if string(script) != "#!"+env.Python+"\nimport old_pkg\n" {
		t.Errorf("script not pointed at the environment:\n%s", script)
	}
	if info, err := os.Stat(filepath.Join(env.Dir, "bin/tool")); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("script not executable: %v", err)
	}
	sh, _ := os.ReadFile(filepath.Join(env.Dir, "bin/sh-tool"))
	if string(sh) != "#!/bin/sh\necho hi\n" {
		t.Errorf("a shell script was changed:\n%s", sh)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "3.12" {
		t.Errorf("left in the root: %v", entries)
	}
	// Once only.
	if _, notes, err := SharedEnvironment(filepath.Join(root, "3.12"), inst, v); err != nil || len(notes) != 0 {
		t.Errorf("second call: %q, %v", notes, err)
	}
}

func TestInstallPip(t *testing.T) {
	py := testenv.First(t)
	inst, err := findpython.Locate(py.Library, py.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	wheel := ensurepipWheel(inst.Prefix, "python"+py.Version.Short())
	if wheel == "" {
		t.Skipf("%s ships no ensurepip wheel", inst.Prefix)
	}
	// From the ensurepip wheel: pip with its metadata and scripts.
	bare := tree(t, map[string]string{"lib/python3.99/ensurepip/_bundled/": ""})
	data, err := os.ReadFile(wheel)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "lib/python3.99/ensurepip/_bundled", filepath.Base(wheel)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	v := findpython.Version{Major: 3, Minor: 99}
	site, bin := t.TempDir(), t.TempDir()
	if err := installPip(site, bin, "/env/bin/python3.99", findpython.Install{Prefix: bare}, v); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(site, "pip", "__init__.py")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("no unpacked pip in %s: %v", site, err)
	}
	if m, _ := filepath.Glob(filepath.Join(site, "pip-*.dist-info", "INSTALLER")); len(m) != 1 {
		t.Errorf("no pip metadata in %s", site)
	}
	script, _ := os.ReadFile(filepath.Join(bin, "pip3.99"))
	if !strings.HasPrefix(string(script), "#!/env/bin/python3.99\n") {
		t.Errorf("pip script:\n%s", script)
	}
	// Without a wheel, the installation's own pip package is linked.
	fake := fakeInstall(t, "3.99")
	site = t.TempDir()
	if err := installPip(site, t.TempDir(), "/env/bin/python3.99", fake, v); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(site, "pip")); err != nil || !strings.HasPrefix(target, fake.Prefix) {
		t.Errorf("pip not linked: %s, %v", target, err)
	}
	if err := installPip(t.TempDir(), t.TempDir(), "/p", findpython.Install{Prefix: t.TempDir()}, v); err == nil || !strings.Contains(err.Error(), "has no pip, and no ensurepip wheel") {
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
