package packages

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
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
// stateDir/envs. Its site-packages holds one .pth file that adds pkgs with
// site.addsitedir, so pkgs and its .pth files come first, then the
// installation's own site-packages, as they do for python, each processed
// once. (The venv's include-system-site-packages is not used: site would
// process the installation's .pth files twice.)
func SharedEnvironment(stateDir, pkgs string, inst pyembed.Install, v pyembed.Version) (Environment, error) {
	if inst.Executable == "" {
		return Environment{}, fmt.Errorf("cannot make the shared environment: %s has no python%s executable", inst.Prefix, v.Short())
	}
	dir := filepath.Join(stateDir, "envs", v.Short()+"-"+shortHash(inst.Executable))
	short := "python" + v.Short()
	cfg := fmt.Sprintf("home = %s\ninclude-system-site-packages = false\nversion = %s\nexecutable = %s\n",
		filepath.Dir(inst.Executable), v, inst.Executable)
	// site runs a venv's .pth files twice (CPython 3.10–3.13 process its
	// site-packages in venv() and again in main()), so the line does its
	// work once, when the folder is not on sys.path yet. map, not a list
	// comprehension: before 3.12 one cannot see names exec'd beside it.
	pth := "import os, site, sys; p = os.fsdecode(" + pyembed.BytesLiteral(pkgs) + "); " +
		"p in sys.path or list(map(site.addsitedir, [p] + site.getsitepackages([sys.base_prefix])))\n"
	sitePackages := filepath.Join(dir, "lib", short, "site-packages")
	files := map[string]string{
		filepath.Join(dir, "pyvenv.cfg"):           cfg,
		filepath.Join(sitePackages, sharedPthName): pth,
	}
	links := map[string]string{
		filepath.Join(dir, "bin", short):     inst.Executable,
		filepath.Join(dir, "bin", "python3"): short,
		filepath.Join(dir, "bin", "python"):  short,
	}
	env := Environment{Dir: dir, Python: filepath.Join(dir, "bin", short)}
	if current(files, links) {
		return env, nil
	}
	if info, err := os.Lstat(sitePackages); err == nil && !info.IsDir() {
		// An earlier layout linked site-packages to the folder itself.
		os.Remove(sitePackages)
	}
	for at, to := range links {
		if err := replaceSymlink(to, at); err != nil {
			return Environment{}, fmt.Errorf("make the shared environment %s: %w", dir, err)
		}
	}
	for file, content := range files {
		if err := atomicfile.Write(file, []byte(content)); err != nil {
			return Environment{}, fmt.Errorf("make the shared environment %s: %w", dir, err)
		}
	}
	return env, nil
}

// sharedPthName is the .pth file in the shared environment's
// site-packages.
const sharedPthName = "_vis_shared_packages.pth"

// current reports whether the environment already has these files and
// links; checking costs a few system calls per run.
func current(files, links map[string]string) bool {
	for file, content := range files {
		if data, err := os.ReadFile(file); err != nil || string(data) != content {
			return false
		}
	}
	for at, to := range links {
		if got, err := os.Readlink(at); err != nil || got != to {
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
		return fmt.Errorf("the shared packages folder %s cannot be made: %w", dir, fsutil.Cause(err))
	}
	f, err := os.CreateTemp(dir, ".vis-write-check-*")
	if err != nil {
		return fmt.Errorf("the shared packages folder %s is not writable: %w; set VIS_PYTHON_PACKAGES to a folder you can write", dir, fsutil.Cause(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
