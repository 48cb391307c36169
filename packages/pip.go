package packages

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// installPip installs pip into the environment whose site-packages is
// site, as venv does: from the wheel CPython ships for ensurepip, with its
// metadata, so pip lists, upgrades and uninstalls itself there, and its
// scripts in bin, started by python. Without such a wheel, the
// installation's own pip package is linked in (pip then runs but does not
// list itself). Nothing is written into the installation.
func installPip(site, bin, python string, inst findpython.Install, v findpython.Version) error {
	short := "python" + v.Short()
	if wheel := ensurepipWheel(inst.Prefix, short); wheel != "" {
		if err := unpackWheel(wheel, site); err != nil {
			return fmt.Errorf("install pip from %s: %w", wheel, err)
		}
		for _, name := range []string{"pip", "pip3", "pip" + v.Short()} {
			if err := writeScript(filepath.Join(bin, name), python, "pip._internal.cli.main", "main"); err != nil {
				return fmt.Errorf("install pip: %w", err)
			}
		}
		return nil
	}
	for _, dir := range []string{
		filepath.Join(inst.Prefix, "lib", short, "site-packages"),
		filepath.Join(inst.Prefix, "lib", "python3", "dist-packages"), // Debian
		filepath.Join(inst.Prefix, "local", "lib", short, "dist-packages"),
	} {
		if own := filepath.Join(dir, "pip"); fsutil.IsFile(filepath.Join(own, "__init__.py")) {
			return os.Symlink(own, filepath.Join(site, "pip"))
		}
	}
	return fmt.Errorf("CPython %s at %s has no pip, and no ensurepip wheel to provide one from; install pip for it, or use `vis-agent python uv pip …`", v, inst.Prefix)
}

// writeScript writes a console script as pip writes them.
func writeScript(file, python, module, function string) error {
	script := "#!" + python + "\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom " + module + " import " + function + "\n" +
		"if __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(" + function + "())\n"
	return os.WriteFile(file, []byte(script), 0o755)
}

// ensurepipWheel finds the newest pip wheel CPython ships for ensurepip:
// in the standard library, or where Debian keeps it.
func ensurepipWheel(prefix, short string) string {
	var wheels []string
	for _, dir := range []string{
		filepath.Join(prefix, "lib", short, "ensurepip", "_bundled"),
		filepath.Join(prefix, "share", "python-wheels"),
	} {
		m, _ := filepath.Glob(filepath.Join(dir, "pip-*-py3-none-any.whl"))
		wheels = append(wheels, m...)
	}
	if len(wheels) == 0 {
		return ""
	}
	sort.Slice(wheels, func(i, j int) bool { return versionLess(filepath.Base(wheels[i]), filepath.Base(wheels[j])) })
	return wheels[len(wheels)-1]
}

// versionLess orders pip wheel names (pip-24.2-py3-none-any.whl) by
// their version numbers.
func versionLess(a, b string) bool {
	va, vb := wheelVersion(a), wheelVersion(b)
	for i := range va {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return a < b
}

func wheelVersion(name string) [3]int {
	var v [3]int
	ver, _, _ := strings.Cut(strings.TrimPrefix(name, "pip-"), "-")
	for i, part := range strings.SplitN(ver, ".", 3) {
		v[i], _ = strconv.Atoi(part)
	}
	return v
}

// unpackWheel extracts every file of a pure-Python wheel into site, with
// an INSTALLER file as installers write.
func unpackWheel(wheel, site string) error {
	zr, err := zip.OpenReader(wheel)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		dst := filepath.Join(site, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(dst, site+string(filepath.Separator)) {
			return fmt.Errorf("unsafe path %q in the wheel", f.Name)
		}
		if err := extract(f, dst); err != nil {
			return err
		}
		if dir, ok := strings.CutSuffix(f.Name, ".dist-info/WHEEL"); ok {
			if err := os.WriteFile(filepath.Join(site, filepath.FromSlash(dir)+".dist-info", "INSTALLER"), []byte("vis-agent\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func extract(f *zip.File, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// UserChoseIndex reports whether the user already told pip which index to
// use, on its command line (pipArgs), in PIP_INDEX_URL, or in a pip
// configuration file, so python.index_url must not override it. getenv
// reads the run's environment.
func UserChoseIndex(pipArgs []string, getenv func(string) string) bool {
	for _, a := range pipArgs {
		if a == "-i" || a == "--index-url" || strings.HasPrefix(a, "--index-url=") || (strings.HasPrefix(a, "-i") && len(a) > 2) {
			return true
		}
		if a == "--" {
			break
		}
	}
	if getenv("PIP_INDEX_URL") != "" {
		return true
	}
	for _, file := range pipConfigFiles(getenv) {
		if data, err := os.ReadFile(file); err == nil && setsIndex(string(data)) {
			return true
		}
	}
	return false
}

// setsIndex reports whether a pip configuration file has an index-url line.
func setsIndex(conf string) bool {
	for _, line := range strings.Split(conf, "\n") {
		if i := strings.IndexAny(line, "=:"); i > 0 && strings.ReplaceAll(strings.TrimSpace(line[:i]), "_", "-") == "index-url" {
			return true
		}
	}
	return false
}

// pipConfigFiles are the configuration files pip reads on this system.
func pipConfigFiles(getenv func(string) string) []string {
	if f := getenv("PIP_CONFIG_FILE"); f != "" {
		if f == os.DevNull {
			return nil
		}
		return []string{f}
	}
	home := getenv("HOME")
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	files := []string{"/etc/pip.conf", filepath.Join(xdg, "pip", "pip.conf"), filepath.Join(home, ".pip", "pip.conf")}
	for _, dir := range filepath.SplitList(getenv("XDG_CONFIG_DIRS")) {
		files = append(files, filepath.Join(dir, "pip", "pip.conf"))
	}
	if len(filepath.SplitList(getenv("XDG_CONFIG_DIRS"))) == 0 {
		files = append(files, "/etc/xdg/pip/pip.conf")
	}
	return files
}
