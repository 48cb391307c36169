package packages

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/pyembed"
)

// Environment is the virtual environment a run uses.
type Environment struct {
	Dir string
	// Python is the environment's python: argv[0] of the run, so CPython
	// finds pyvenv.cfg beside it, and sys.executable.
	Python string
}

// EnvironmentError says why a project environment cannot be used with the
// embedded CPython, and the two ways out.
type EnvironmentError struct {
	Dir      string
	Embedded pyembed.Version
	Problem  string // "does not exist", "is for CPython 3.11", …
}

func (e *EnvironmentError) Error() string {
	return fmt.Sprintf("the project environment %s %s; vis-agent embeds CPython %s\n"+
		"  run `vis-agent python uv sync --python %s` to make it for the embedded CPython, "+
		"or `vis-agent python uv run --no-sync python …` to use the project's own interpreter",
		e.Dir, e.Problem, e.Embedded, e.Embedded.Short())
}

// ProjectEnvironment checks that dir is a virtual environment made for the
// embedded CPython's major.minor version and returns it.
func ProjectEnvironment(dir string, embedded pyembed.Version) (Environment, error) {
	fail := func(problem string) (Environment, error) {
		return Environment{}, &EnvironmentError{Dir: dir, Embedded: embedded, Problem: problem}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fail("does not exist")
	}
	cfg, err := readPyvenvCfg(filepath.Join(dir, "pyvenv.cfg"))
	if err != nil {
		return fail("is not a virtual environment (no pyvenv.cfg)")
	}
	v, err := pyembed.ParseVersion(firstOf(cfg, "version_info", "version"))
	if err != nil {
		return fail("does not say which CPython it is for (no version in pyvenv.cfg)")
	}
	if v.Major != embedded.Major || v.Minor != embedded.Minor {
		return fail("is for CPython " + v.Short())
	}
	python := filepath.Join(dir, "bin", "python")
	if _, err := os.Lstat(python); err != nil {
		return fail("has no bin/python")
	}
	return Environment{Dir: dir, Python: python}, nil
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
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			cfg[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return cfg, sc.Err()
}

// SharedEnvironment returns the shared environment of the CPython at inst
// for the packages folder pkgs, making or repairing it as needed under
// stateDir/envs. Its site-packages is a link to pkgs, so CPython's site
// module processes the folder and its .pth files; the installation's own
// site-packages follow, as they do for python.
func SharedEnvironment(stateDir, pkgs string, inst pyembed.Install, v pyembed.Version) (Environment, error) {
	if inst.Executable == "" {
		return Environment{}, fmt.Errorf("cannot make the shared environment: %s has no python%s executable", inst.Prefix, v.Short())
	}
	dir := filepath.Join(stateDir, "envs", v.Short()+"-"+shortHash(inst.Executable))
	short := "python" + v.Short()
	cfg := fmt.Sprintf("home = %s\ninclude-system-site-packages = true\nversion = %s\nexecutable = %s\n",
		filepath.Dir(inst.Executable), v, inst.Executable)
	links := []struct{ at, to string }{
		{filepath.Join("bin", short), inst.Executable},
		{filepath.Join("bin", "python3"), short},
		{filepath.Join("bin", "python"), short},
		{filepath.Join("lib", short, "site-packages"), pkgs},
	}
	if runtime.GOOS == "linux" {
		// As venv does: site looks in lib64 where sys.platlibdir says so.
		links = append(links, struct{ at, to string }{"lib64", "lib"})
	}
	env := Environment{Dir: dir, Python: filepath.Join(dir, "bin", short)}
	if current(dir, cfg, links) {
		return env, nil
	}
	for _, l := range links {
		if err := replaceSymlink(l.to, filepath.Join(dir, l.at)); err != nil {
			return Environment{}, fmt.Errorf("make the shared environment %s: %w", dir, err)
		}
	}
	if err := atomicfile.Write(filepath.Join(dir, "pyvenv.cfg"), []byte(cfg)); err != nil {
		return Environment{}, fmt.Errorf("make the shared environment %s: %w", dir, err)
	}
	return env, nil
}

// current reports whether the environment at dir already is what cfg and
// links describe; checking costs a few system calls per run.
func current(dir, cfg string, links []struct{ at, to string }) bool {
	data, err := os.ReadFile(filepath.Join(dir, "pyvenv.cfg"))
	if err != nil || string(data) != cfg {
		return false
	}
	for _, l := range links {
		if to, err := os.Readlink(filepath.Join(dir, l.at)); err != nil || to != l.to {
			return false
		}
	}
	return true
}

// shortHash names the environment of one installation: two installations
// of the same version (pyenv's and the system's) get environments of
// their own.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
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

// EnsureFolder makes the shared packages folder if needed and checks that
// files can be created in it, so an install fails with one clear line
// rather than halfway through pip.
func EnsureFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("the shared packages folder %s cannot be made: %w", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".vis-write-check-*")
	if err != nil {
		return fmt.Errorf("the shared packages folder %s is not writable: %w; set VIS_PYTHON_PACKAGES to a folder you can write", dir, unwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// unwrapPath drops the path a PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
