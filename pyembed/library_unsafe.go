package pyembed

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/..
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	_ "github.com/vis-agent/vis-agent/pyembed/early" // a python run's earliest start-up work
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

func init() {
	// Keep the main goroutine on the main OS thread: CPython must run there.
	runtime.LockOSThread()
}

// Library is a loaded CPython shared library. A process loads at most one.
type Library struct {
	Path    string
	Version findpython.Version
	// Build is the full Py_GetVersion text.
	Build string
}

var (
	loadOnce   sync.Once
	loaded     *Library
	loadErr    error
	loadedPath string
)

// Open finds the library opts select (see findpython.Find) and loads it. It keeps the
// prefetch hint up to date, so the next start loads the same library while
// the Go runtime starts.
func Open(opts findpython.Options) (*Library, findpython.Choice, error) {
	choice, err := findpython.Find(opts)
	if err != nil {
		return nil, choice, err
	}
	lib, err := Load(choice.Library)
	if err != nil {
		return nil, choice, err
	}
	if opts.NativePath == "" && opts.StateDir != "" && C.GoString(C.vis_py_prefetched()) != lib.Path {
		// Only start-up time is lost if the hint cannot be written.
		_ = atomicfile.Write(filepath.Join(opts.StateDir, C.VIS_HINT_FILE), []byte(lib.Path+"\n"))
	}
	return lib, choice, nil
}

// Load opens the library at path. Only the first call in a process loads;
// later calls must name the same path.
func Load(path string) (*Library, error) {
	loadOnce.Do(func() {
		loadedPath = path
		loaded, loadErr = load(path)
	})
	if path != loadedPath {
		return nil, &findpython.LoadError{Path: path, Problem: "another libpython (" + loadedPath + ") is already loaded in this process"}
	}
	return loaded, loadErr
}

func load(path string) (*Library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.vis_py_open(cpath); msg != nil {
		// dlerror names the path again: "/x/lib.so: invalid ELF header".
		problem := strings.TrimPrefix(oneLine(C.GoString(msg)), path+": ")
		return nil, &findpython.LoadError{Path: path, Problem: problem}
	}
	build := C.GoString(C.vis_py_version())
	v, err := findpython.ParseVersion(build)
	if err != nil {
		return nil, &findpython.LoadError{Path: path, Problem: "not a CPython library: " + err.Error()}
	}
	if v.Less(findpython.MinVersion) {
		return nil, &findpython.LoadError{Path: path, Problem: fmt.Sprintf("CPython %s is too old; vis-agent needs %s or newer", v, findpython.MinVersion.Short())}
	}
	if strings.Contains(build, "free-threading") {
		return nil, &findpython.LoadError{Path: path, Problem: fmt.Sprintf("CPython %s is a free-threaded build, which vis-agent does not support", v)}
	}
	if msg := C.vis_py_resolve(C.int(v.Minor)); msg != nil {
		return nil, &findpython.LoadError{Path: path, Problem: C.GoString(msg)}
	}
	return &Library{Path: path, Version: v, Build: build}, nil
}

// oneLine keeps the first line of a dlerror text, which is all the user needs.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// RestoreSignals gives every signal the disposition this process
// inherited, and the calling thread the inherited mask of blocked signals,
// as they were before the Go runtime installed its handlers. Call it right
// before syscall.Exec of another program, from the main goroutine: exec
// passes ignored signals and the mask on, so the program then starts with
// what it would have inherited had it been run directly (an ignored
// SIGTERM or SIGHUP reaches it ignored). Go's handlers are gone afterwards:
// only exec or exit may follow.
func RestoreSignals() error {
	if errno := C.vis_py_restore_signals(); errno != 0 {
		return fmt.Errorf("restore the signal mask: %w", syscall.Errno(errno))
	}
	return nil
}

// Main runs CPython's command line with args (args[0] is the program name
// CPython computes its paths from) and returns the exit status. It finalizes
// the interpreter, so it runs at most once per process. home, when not
// empty, overrides the interpreter's home (VIS_PYTHON_HOME). startup, when
// not empty, is Python source that site runs as sitecustomize, after it has
// set up sys.path and before the program; it shadows a sitecustomize module
// on sys.path, so it should run that one itself.
func (l *Library) Main(args []string, home, startup string) int {
	argv := make([]*C.char, len(args)+1)
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	var chome, cstartup *C.char
	if home != "" {
		chome = C.CString(home)
	}
	if startup != "" {
		cstartup = C.CString(startup)
	}
	// While CPython runs, Go only waits in this cgo call. With more than one
	// P, the runtime's monitor thread leaves the P of a cgo call alone for
	// 10 ms while another P is idle, and meanwhile wakes every 20 µs or so:
	// some 60 wake-ups beside a `-c pass`. With one P it takes the P back
	// at once and sleeps. (`vis-agent python` has run on one P since
	// package early's init; this is for the others, such as a sandbox
	// child.)
	runtime.GOMAXPROCS(1)
	// The strings live until the process exits: CPython keeps pointers into
	// argv and home.
	return int(C.vis_py_main(C.int(len(args)), &argv[0], chome, cstartup))
}
