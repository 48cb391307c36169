package packages

import (
	"os"
	"path/filepath"
	"strings"
)

// Roots are the import roots p declares: the source folders of its build
// backend's configuration (setuptools, hatch, poetry, pdm, uv_build, flit,
// including their src-layout defaults) and then pytest's pythonpath, as
// absolute folders that exist, without repeats. They let `vis-agent python
// -m pytest` import a src-layout project that is not installed.
func Roots(p *Project) []string {
	if p == nil {
		return nil
	}
	var roots []string
	seen := map[string]bool{}
	add := func(rel string) {
		if rel == "" {
			return
		}
		dir := filepath.Clean(filepath.Join(p.Dir, filepath.FromSlash(rel)))
		if seen[dir] {
			return
		}
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			seen[dir] = true
			roots = append(roots, dir)
		}
	}
	m := &p.Meta
	// Explicit configuration of the build backends.
	add(m.Tool.Setuptools.PackageDir[""])
	for _, where := range m.Tool.Setuptools.Packages.Find.Where {
		add(where)
	}
	for _, pkg := range m.Tool.Hatch.Build.Targets.Wheel.Packages {
		// "src/foo" is the package foo under the root src.
		add(filepath.ToSlash(filepath.Dir(filepath.FromSlash(strings.TrimSuffix(pkg, "/")))))
	}
	for _, pkg := range m.Tool.Poetry.Packages {
		add(pkg.From)
	}
	if dir := m.Tool.PDM.Build.PackageDir; dir != nil {
		add(*dir)
	}
	if root := m.Tool.UV.BuildBackend.ModuleRoot; root != nil {
		add(*root)
	}
	// Without explicit configuration, the backends that discover a src
	// layout by themselves use src/ when it is there.
	if len(roots) == 0 && discoversSrcLayout(m.BuildSystem.Backend) {
		add("src")
	}
	for _, rel := range pytestPythonPath(m) {
		add(rel)
	}
	return roots
}

// discoversSrcLayout: setuptools' automatic discovery, hatchling,
// pdm-backend, uv_build (module-root defaults to src) and flit_core all
// take src/<package> without being told.
func discoversSrcLayout(backend string) bool {
	switch strings.TrimSpace(backend) {
	case "setuptools.build_meta", "setuptools.build_meta:__legacy__", "hatchling.build",
		"pdm.backend", "uv_build", "flit_core.buildapi":
		return true
	}
	return false
}

// pytestPythonPath is [tool.pytest.ini_options] pythonpath: a list, or a
// string of space-separated paths as in an ini file.
func pytestPythonPath(m *Pyproject) []string {
	prim := m.Tool.Pytest.IniOptions.PythonPath
	if !m.md.IsDefined("tool", "pytest", "ini_options", "pythonpath") {
		return nil
	}
	var list []string
	if err := m.md.PrimitiveDecode(prim, &list); err == nil {
		return list
	}
	var s string
	if err := m.md.PrimitiveDecode(prim, &s); err == nil {
		return strings.Fields(s)
	}
	return nil
}
