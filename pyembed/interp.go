package pyembed

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Interp is an interpreter running inside this process, for vis-agent's own
// work in Python (such as asking CPython whether code compiles). It runs
// without site, environment variables or signal handlers, and like all of
// CPython it must be used from the main thread only.
type Interp struct{ lib *Library }

var (
	initOnce sync.Once
	initErr  error
)

// Interp starts the in-process interpreter for the installation inst, once.
func (l *Library) Interp(inst Install) (*Interp, error) {
	initOnce.Do(func() {
		program := inst.Executable
		if program == "" {
			// No python beside the library: the home leads CPython to its
			// standard library (Locate set it).
			program = "python3"
		}
		cprogram := C.CString(program)
		var chome *C.char
		if inst.Home != "" {
			chome = C.CString(inst.Home)
		}
		// CPython keeps both strings for the life of the interpreter.
		if msg := C.vis_py_initialize(cprogram, chome); msg != nil {
			initErr = fmt.Errorf("start CPython %s: %s", l.Version, C.GoString(msg))
		}
	})
	if initErr != nil {
		return nil, initErr
	}
	return &Interp{lib: l}, nil
}

// Func is Python code compiled once and run many times: it reads the str
// INPUT and leaves a str in OUTPUT.
type Func struct{ code unsafe.Pointer }

// ErrPython is returned when Python code raised; CPython has printed the
// traceback on stderr.
var ErrPython = errors.New("the Python code raised an exception (traceback above)")

// Compile compiles source, which must set OUTPUT from INPUT.
func (in *Interp) Compile(source, filename string) (*Func, error) {
	csrc := C.CString(source)
	defer C.free(unsafe.Pointer(csrc))
	cname := C.CString(filename)
	defer C.free(unsafe.Pointer(cname))
	code := C.vis_py_compile(csrc, cname)
	if code == nil {
		return nil, ErrPython
	}
	return &Func{code: code}, nil
}

// Call runs f with INPUT = input and returns OUTPUT.
func (in *Interp) Call(f *Func, input string) (string, error) {
	cin := C.CString(input)
	defer C.free(unsafe.Pointer(cin))
	var out *C.char
	var n C.size_t
	if C.vis_py_run(f.code, cin, C.size_t(len(input)), &out, &n) != 0 {
		return "", ErrPython
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoStringN(out, C.int(n)), nil
}
