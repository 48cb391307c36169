package findpython

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// Install is where a loaded library's CPython lives.
type Install struct {
	// Prefix holds lib/pythonX.Y, the standard library.
	Prefix string
	// Executable is the python of the same installation. It is argv[0] of
	// every run, so CPython computes its paths from it and it becomes
	// sys.executable; empty when the installation has none.
	Executable string
	// Home is the VIS_PYTHON_HOME override, passed to CPython as its home.
	Home string
}

// Locate finds the installation of the library at libPath, CPython v.
// home, when not empty, is VIS_PYTHON_HOME and replaces the prefix found
// from the library's folder.
func Locate(libPath string, v Version, home string) (Install, error) {
	short := v.Short()
	var in Install
	if home != "" {
		if !hasStdlib(home, short) {
			return in, fmt.Errorf("VIS_PYTHON_HOME=%s holds no lib/python%s standard library", home, short)
		}
		in.Prefix, in.Home = home, home
	} else {
		// pyenv and python.org builds keep the library in <prefix>/lib,
		// Debian in <prefix>/lib/<multiarch>.
		dir := filepath.Dir(libPath)
		for i := 0; i < 3 && in.Prefix == ""; i++ {
			if hasStdlib(dir, short) {
				in.Prefix = dir
			}
			dir = filepath.Dir(dir)
		}
		if in.Prefix == "" {
			return in, &LoadError{Path: libPath, Problem: fmt.Sprintf("no python%s standard library found near it; set VIS_PYTHON_HOME to the installation folder", short)}
		}
	}
	for _, name := range []string{"python" + short, "python3"} {
		exe := filepath.Join(in.Prefix, "bin", name)
		if info, err := os.Stat(exe); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			in.Executable = exe
			break
		}
	}
	if in.Executable == "" {
		// Without a python beside the library, argv[0] cannot lead CPython
		// to the standard library; the home must.
		in.Home = in.Prefix
	}
	return in, nil
}

func hasStdlib(prefix, short string) bool {
	for _, lib := range []string{"lib", "lib64"} {
		if fsutil.IsFile(filepath.Join(prefix, lib, "python"+short, "os.py")) {
			return true
		}
	}
	return false
}
