package packages

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// SharedEnvironment returns the shared environment of the CPython at inst
// in dir: a virtual environment of its own per major.minor version
// (internal/paths names it, ~/.vis/python/packages/3.11),
// without the installation's site-packages, with pip installed in it, so
// that `python -m pip`, sys.executable -m pip, console scripts and
// site.getsitepackages() all mean its site-packages. It is made when
// missing, and pointed at inst when it was made for another installation
// of the same version (its packages are built for the version's ABI, which
// both share), so a run and the children it starts with sys.executable run
// one CPython. notes are what the user should read once: a single folder
// of the earlier layout moved into the environment.
func SharedEnvironment(dir string, inst findpython.Install, v findpython.Version) (env Environment, notes []string, err error) {
	if inst.Executable == "" {
		return Environment{}, nil, fmt.Errorf("cannot make the shared environment: %s has no python%s executable", inst.Prefix, v.Short())
	}
	// The folder holding the environments; the earlier layout kept the
	// packages themselves there.
	root := filepath.Dir(dir)
	short := "python" + v.Short()
	env = Environment{Dir: dir, Python: filepath.Join(dir, "bin", short)}
	cfg := venvConfig(inst, v)
	if data, err := os.ReadFile(filepath.Join(dir, "pyvenv.cfg")); err == nil {
		if string(data) != cfg || !linksTo(env.Python, inst.Executable) {
			if err := pointAt(dir, short, cfg, inst.Executable); err != nil {
				return Environment{}, nil, fmt.Errorf("update the shared environment %s: %w", dir, err)
			}
		}
	} else {
		if err := EnsureFolder(root); err != nil {
			return Environment{}, nil, err
		}
		if err := makeShared(root, dir, short, cfg, inst, v); err != nil {
			return Environment{}, nil, fmt.Errorf("make the shared environment %s: %w", dir, err)
		}
	}
	moved, err := migrate(root, dir, filepath.Join(dir, "lib", short, "site-packages"), env.Python)
	if err != nil {
		return Environment{}, nil, fmt.Errorf("move the shared packages of %s into %s: %w", root, dir, err)
	}
	if moved > 0 {
		notes = append(notes, fmt.Sprintf("moved the shared packages of the single folder %s (%d entries) into %s, "+
			"the shared environment of CPython %s; each CPython version now has its own", root, moved, dir, v.Short()))
	}
	return env, notes, nil
}

func linksTo(link, target string) bool {
	got, err := os.Readlink(link)
	return err == nil && got == target
}

// pointAt rewrites pyvenv.cfg and the python link of the environment dir
// for another installation, each replaced atomically.
func pointAt(dir, short, cfg, executable string) error {
	if err := replaceSymlink(executable, filepath.Join(dir, "bin", short)); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "pyvenv.cfg"), []byte(cfg))
}

// makeShared builds the environment in a temporary folder beside dir and
// renames it into place, so a run killed halfway leaves no half
// environment, and of two runs making it at once one wins whole.
func makeShared(root, dir, short, cfg string, inst findpython.Install, v findpython.Version) error {
	removeAbandoned(root, ".vis-new-"+v.Short()+"-")
	tmp, err := os.MkdirTemp(root, ".vis-new-"+v.Short()+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	site, err := layOut(tmp, short, cfg, inst.Executable)
	if err != nil {
		return err
	}
	// The scripts pip writes name the final path of the environment.
	python := filepath.Join(dir, "bin", short)
	if err := installPip(site, filepath.Join(tmp, "bin"), python, inst, v); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "pyvenv.cfg")); serr == nil {
			return nil // made by another run meanwhile
		}
		return err
	}
	return nil
}

// venvConfig is the pyvenv.cfg of an environment of the CPython at inst,
// without the installation's site-packages.
func venvConfig(inst findpython.Install, v findpython.Version) string {
	return fmt.Sprintf("home = %s\ninclude-system-site-packages = false\nversion = %s\nexecutable = %s\n",
		filepath.Dir(inst.Executable), v, inst.Executable)
}

// layOut makes the folders, links and pyvenv.cfg of a virtual environment
// in dir, as venv does on 64-bit Linux, and returns its site-packages.
func layOut(dir, short, cfg, executable string) (site string, err error) {
	site = filepath.Join(dir, "lib", short, "site-packages")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return "", err
	}
	if err := os.Symlink("lib", filepath.Join(dir, "lib64")); err != nil {
		return "", err
	}
	if err := pointAt(dir, short, cfg, executable); err != nil {
		return "", err
	}
	for _, name := range []string{"python", "python3"} {
		if err := os.Symlink(short, filepath.Join(dir, "bin", name)); err != nil {
			return "", err
		}
	}
	return site, nil
}

// ScratchEnvironment is an empty environment in a new temporary folder,
// for a run whose shared environment cannot be made: like the shared one
// it leaves the installation's packages out, and it has no pip, so
// nothing the run starts installs into the machine's Python. The caller
// removes env.Dir.
func ScratchEnvironment(inst findpython.Install, v findpython.Version) (env Environment, err error) {
	dir, err := os.MkdirTemp("", "vis-scratch-env-")
	if err != nil {
		return Environment{}, err
	}
	short := "python" + v.Short()
	if _, err := layOut(dir, short, venvConfig(inst, v), inst.Executable); err != nil {
		os.RemoveAll(dir)
		return Environment{}, err
	}
	return Environment{Dir: dir, Python: filepath.Join(dir, "bin", short)}, nil
}

// isVersionDir reports whether name is an environment's name under the
// root: 3.11, 3.12, ….
// abandonedAfter is how old a temporary environment folder must be to be
// another run's leftover: making one takes about a second.
const abandonedAfter = 10 * time.Minute

// removeAbandoned deletes the temporary folders (prefix*) that runs killed
// while making an environment left in root.
func removeAbandoned(root, prefix string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > abandonedAfter {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

func isVersionDir(name string) bool {
	major, minor, ok := strings.Cut(name, ".")
	return ok && isDigits(major) && isDigits(minor)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// migrate moves what the earlier layout kept directly in root (one folder
// for every CPython, laid out as pip --target does: packages, bin/,
// share/, include/) into the environment dir, entry by entry with rename,
// so nothing is copied and a run killed halfway finishes on the next. The
// first line of each moved script that starts a python is pointed at
// python. An entry whose name is taken in the environment is kept under
// dir/vis-migration-conflicts. It returns how many entries it moved.
func migrate(root, dir, site, python string) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, e := range entries {
		name := e.Name()
		if isVersionDir(name) || strings.HasPrefix(name, ".vis-") {
			continue
		}
		from := filepath.Join(root, name)
		switch {
		case name == "bin" && e.IsDir():
			scripts, err := os.ReadDir(from)
			if err != nil {
				return moved, err
			}
			for _, s := range scripts {
				to := filepath.Join(dir, "bin", s.Name())
				if err := moveEntry(filepath.Join(from, s.Name()), to, dir); err != nil {
					return moved, err
				}
				repointScript(to, python)
			}
			if err := os.Remove(from); err != nil {
				return moved, err
			}
		case (name == "share" || name == "include") && e.IsDir():
			// pip --target put data files where a venv keeps them at its
			// root.
			if err := moveEntry(from, filepath.Join(dir, name), dir); err != nil {
				return moved, err
			}
		default:
			if err := moveEntry(from, filepath.Join(site, name), dir); err != nil {
				return moved, err
			}
		}
		moved++
	}
	return moved, nil
}

// moveEntry renames from to to, or, when to exists, into
// dir/vis-migration-conflicts.
func moveEntry(from, to, dir string) error {
	if _, err := os.Lstat(to); err == nil {
		to = filepath.Join(dir, "vis-migration-conflicts", filepath.Base(from))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
	}
	return os.Rename(from, to)
}

// repointScript replaces a "#!…/pythonX.Y" first line with python's.
func repointScript(file, python string) {
	data, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(data, []byte("#!")) {
		return
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !strings.HasPrefix(filepath.Base(strings.TrimSpace(string(first[2:]))), "python") {
		return
	}
	info, err := os.Stat(file)
	if err != nil {
		return
	}
	out := append([]byte("#!"+python+"\n"), rest...)
	if atomicfile.Write(file, out) == nil {
		os.Chmod(file, info.Mode().Perm())
	}
}

// EnsureFolder makes the shared packages folder if needed and checks that
// files can be created in it, so an install fails with one clear line
// rather than halfway through pip. Its error is an *UnwritableError.
func EnsureFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &UnwritableError{Dir: dir, What: "cannot be made", Err: fsutil.Cause(err)}
	}
	f, err := os.CreateTemp(dir, ".vis-write-check-*")
	if err != nil {
		return &UnwritableError{Dir: dir, What: "is not writable", Err: fsutil.Cause(err)}
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// UnwritableError is a shared packages folder that cannot be made or
// written; the variables that move it are the way out.
type UnwritableError struct {
	Dir, What string
	Err       error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the shared packages folder %s %s: %v; %s", e.Dir, e.What, e.Err, movePackages)
}

func (e *UnwritableError) Unwrap() error { return e.Err }

// movePackages is the way out of a shared packages folder that cannot be
// written.
const movePackages = "set VIS_PYTHON_PACKAGES (the shared packages) or VIS_HOME (all of vis-agent's files) to a folder you can write"
