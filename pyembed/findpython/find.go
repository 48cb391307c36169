package findpython

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// Where a library was found, in the order Find tries them.
const (
	SourceEnv    = "VIS_PYTHON_NATIVE_PATH"
	SourceBundle = "bundle"
	SourceRecord = "record"
	SourceSystem = "system"
)

// BundleDir is the runtime folder a release archive puts beside the binary.
const BundleDir = "vis-agent-python"

// Options say where Find looks.
type Options struct {
	// NativePath is VIS_PYTHON_NATIVE_PATH: a library file or a folder
	// holding one. It wins over everything else.
	NativePath string
	// ExeDir is the folder of the running binary, where a release bundle
	// keeps BundleDir.
	ExeDir string
	// StateDir (~/.vis/python) keeps RecordFile, which remembers the
	// machine's CPython once found so discovery does not cost a python3
	// process on every start, and the prefetch hint.
	StateDir string
}

// RecordFile is the file under StateDir that remembers the machine's CPython.
const RecordFile = "runtime.json"

func (o Options) recordFile() string {
	if o.StateDir == "" {
		return ""
	}
	return filepath.Join(o.StateDir, RecordFile)
}

// Choice is a library Find picked and why.
type Choice struct {
	Library string
	Source  string
}

// Record is what RecordFile holds.
type Record struct {
	Library string `json:"library"`
	Version string `json:"version,omitempty"`
	// FoundBy says how discovery found it, for `vis-agent runtime`.
	FoundBy string `json:"found_by,omitempty"`
}

// Find resolves which libpython to load: VIS_PYTHON_NATIVE_PATH, the bundle
// beside the binary, the recorded runtime, then the machine's CPython (which
// it records). It only looks at files; loading is Load's job.
func Find(opts Options) (Choice, error) {
	if opts.NativePath != "" {
		lib, err := libraryAt(opts.NativePath)
		if err != nil {
			return Choice{}, err
		}
		return Choice{lib, SourceEnv}, nil
	}
	if opts.ExeDir != "" {
		bundle := filepath.Join(opts.ExeDir, BundleDir)
		if lib := bestLibrary(bundle, filepath.Join(bundle, "lib")); lib != "" {
			return Choice{lib, SourceBundle}, nil
		}
	}
	record := opts.recordFile()
	if record != "" {
		if rec, err := ReadRecord(record); err == nil && fsutil.IsFile(rec.Library) {
			return Choice{rec.Library, SourceRecord}, nil
		}
	}
	rec, err := Discover()
	if err != nil {
		return Choice{}, err
	}
	if record != "" {
		// A record that cannot be written only costs the next start a
		// discovery; it is no reason to refuse this one.
		_ = WriteRecord(record, rec)
	}
	return Choice{rec.Library, SourceSystem}, nil
}

// libraryAt accepts a library file, or a folder holding one directly or in
// its lib/ folder.
func libraryAt(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		problem := fsutil.Cause(err).Error()
		if errors.Is(err, fs.ErrNotExist) {
			problem = "no such file or folder"
		}
		return "", &LoadError{Path: path, Problem: problem}
	}
	if !info.IsDir() {
		return path, nil
	}
	if lib := bestLibrary(path, filepath.Join(path, "lib")); lib != "" {
		return lib, nil
	}
	return "", &LoadError{Path: path, Problem: "the folder holds no CPython 3.10+ shared library (libpython3.X.so)"}
}

// LibraryVersion reads major and minor from the file name of a full CPython
// library (libpython3.12.so, libpython3.12.so.1.0, libpython3.12.dylib); ok
// is false for other names, for the libpython3.so stable-ABI stub, and for
// free-threaded builds (libpython3.13t.so).
func LibraryVersion(name string) (v Version, ok bool) {
	rest, found := strings.CutPrefix(name, "libpython")
	if !found {
		return Version{}, false
	}
	major, rest, _ := strings.Cut(rest, ".")
	minor, suffix, _ := strings.Cut(rest, ".")
	soVersion, versioned := strings.CutPrefix(suffix, "so.")
	if suffix != "dylib" && suffix != "so" && !(versioned && allDigits(strings.ReplaceAll(soVersion, ".", ""))) {
		return Version{}, false
	}
	var err1, err2 error
	v.Major, err1 = strconv.Atoi(major)
	v.Minor, err2 = strconv.Atoi(minor)
	if err1 != nil || err2 != nil || !allDigits(major) || !allDigits(minor) {
		return Version{}, false
	}
	return v, true
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// bestLibrary returns the newest supported library in dirs, or "".
func bestLibrary(dirs ...string) string {
	type cand struct {
		path string
		v    Version
	}
	var cands []cand
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			v, ok := LibraryVersion(e.Name())
			if !ok || v.Less(MinVersion) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if fsutil.IsFile(p) {
				cands = append(cands, cand{p, v})
			}
		}
	}
	if len(cands) == 0 {
		return ""
	}
	// Newest version first; for one version the shortest name, which is the
	// development symlink or the SONAME rather than a fully versioned file.
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].v != cands[j].v {
			return cands[j].v.Less(cands[i].v)
		}
		return len(cands[i].path) < len(cands[j].path)
	})
	return cands[0].path
}

// ReadRecord reads a record file.
func ReadRecord(path string) (Record, error) {
	var rec Record
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("read %s: %w", path, err)
	}
	return rec, nil
}

// WriteRecord writes a record file atomically.
func WriteRecord(path string, rec Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'))
}

// probe asks a python executable where its shared library is. -I -S keep
// the answer independent of the user's environment and site-packages.
const probe = `import sys, sysconfig
v = sysconfig.get_config_var
print(v("LIBDIR") or "")
print(v("INSTSONAME") or "")
print(v("LDLIBRARY") or "")
print("%d.%d.%d" % sys.version_info[:3])
`

// ErrNoPython is returned when the machine has no usable CPython.
var ErrNoPython = errors.New("no CPython 3.10+ shared library found; install one (python3 built with --enable-shared, or the libpython3.X package) or set VIS_PYTHON_NATIVE_PATH to a libpython3.X file")

// Discover finds the machine's CPython: the one python3 on PATH belongs to,
// else the newest libpython3.X in the standard library folders.
func Discover() (Record, error) {
	if rec, ok := fromPathPython(); ok {
		return rec, nil
	}
	if rec, ok := FromLibraryFolders(); ok {
		return rec, nil
	}
	return Record{}, ErrNoPython
}

// FromLibraryFolders finds the newest CPython 3.10+ library in the
// platform's standard library folders.
func FromLibraryFolders() (Record, bool) {
	var dirs []string
	switch runtime.GOOS {
	case "darwin":
		dirs = []string{"/opt/homebrew/lib", "/usr/local/lib", "/Library/Frameworks/Python.framework/Versions/Current/lib"}
	default:
		multiarch, _ := filepath.Glob("/usr/lib/*-linux-gnu")
		dirs = append([]string{"/usr/local/lib"}, multiarch...)
		dirs = append(dirs, "/usr/lib64", "/usr/lib")
	}
	lib := bestLibrary(dirs...)
	if lib == "" {
		return Record{}, false
	}
	v, _ := LibraryVersion(filepath.Base(lib))
	return Record{Library: lib, Version: v.Short(), FoundBy: "standard library folders"}, true
}

func fromPathPython() (Record, bool) {
	exe, err := exec.LookPath("python3")
	if err != nil {
		return Record{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "-I", "-S", "-c", probe).Output()
	if err != nil {
		return Record{}, false
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 4 {
		return Record{}, false
	}
	libdir, version := lines[0], lines[3]
	for _, name := range []string{lines[1], lines[2]} {
		if _, ok := LibraryVersion(name); !ok || libdir == "" {
			continue
		}
		lib := filepath.Join(libdir, name)
		if v, err := ParseVersion(version); err == nil && !v.Less(MinVersion) && fsutil.IsFile(lib) {
			return Record{Library: lib, Version: version, FoundBy: exe}, true
		}
	}
	return Record{}, false
}
