package packages

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// Environment is the virtual environment a run uses.
type Environment struct {
	Dir string
	// Python is the environment's python: argv[0] of the run, so CPython
	// finds pyvenv.cfg beside it, and sys.executable.
	Python string
}

// EnvironmentError says why an environment cannot be used with the
// embedded CPython, and the ways out.
type EnvironmentError struct {
	// What is "the project environment" or "the active environment".
	What     string
	Dir      string
	Embedded findpython.Version
	Problem  string // "does not exist", "is for CPython 3.11", …
	Hint     string
}

func (e *EnvironmentError) Error() string {
	return fmt.Sprintf("%s %s %s; vis-agent embeds CPython %s\n  %s", e.What, e.Dir, e.Problem, e.Embedded, e.Hint)
}

// checkEnvironment checks that dir is a virtual environment made from the
// installation vis-agent loaded (inst, version embedded) and returns it:
// the same major.minor version, and the same installation (pyvenv.cfg's
// home), so that children started with sys.executable run the CPython
// their parent runs. what and hint go into the error.
func checkEnvironment(what, dir, hint string, inst findpython.Install, embedded findpython.Version) (Environment, error) {
	fail := func(problem string) (Environment, error) {
		return Environment{}, &EnvironmentError{What: what, Dir: dir, Embedded: embedded, Problem: problem, Hint: hint}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fail("does not exist")
	}
	cfg, err := readPyvenvCfg(filepath.Join(dir, "pyvenv.cfg"))
	if err != nil {
		return fail("is not a virtual environment (no pyvenv.cfg)")
	}
	v, err := findpython.ParseVersion(firstOf(cfg, "version_info", "version"))
	if err != nil {
		return fail("does not say which CPython it is for (no version in pyvenv.cfg)")
	}
	if v.Major != embedded.Major || v.Minor != embedded.Minor {
		return fail("is for CPython " + v.Short())
	}
	if home := cfg["home"]; inst.Executable != "" && home != "" && !sameInstallation(home, inst.Executable, embedded) {
		return fail(fmt.Sprintf("was made from the CPython in %s, not the one vis-agent loads (%s)", home, inst.Executable))
	}
	python := filepath.Join(dir, "bin", "python")
	if _, err := os.Lstat(python); err != nil {
		return fail("has no bin/python")
	}
	return Environment{Dir: dir, Python: python}, nil
}

// sameInstallation reports whether home, a pyvenv.cfg's folder of the
// base python, holds the python executable, resolving links on both
// sides (/usr/bin and /bin may be one folder).
func sameInstallation(home, executable string, v findpython.Version) bool {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	if resolve(home) == resolve(filepath.Dir(executable)) {
		return true
	}
	for _, name := range []string{filepath.Base(executable), "python" + v.Short(), "python3", "python"} {
		if resolve(filepath.Join(home, name)) == resolve(executable) {
			return true
		}
	}
	return false
}

func firstOf(cfg map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := cfg[k]; ok {
			return v
		}
	}
	return ""
}

// readPyvenvCfg reads the "key = value" lines of a pyvenv.cfg.
func readPyvenvCfg(file string) (map[string]string, error) {
	f, err := fsutil.OpenRegular(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, fsutil.MaxConfigBytes))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return cfg, sc.Err()
}

// replaceSymlink points link at target, atomically when it exists.
func replaceSymlink(target, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp%d", link, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
