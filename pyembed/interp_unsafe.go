package pyembed

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/vis-agent/vis-agent/pyembed/findpython"
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

//go:embed format_error.py
var formatErrorSource string

// Interp starts the in-process interpreter for the installation inst, once.
// CPython 3.14 and later start through PEP 741's PyInitConfig, older ones
// through the global settings it replaces.
func (l *Library) Interp(inst findpython.Install) (*Interp, error) {
	initOnce.Do(func() {
		program := inst.Executable
		if program == "" {
			// No python beside the library: the home leads CPython to its
			// standard library (Locate set it).
			program = "python3"
		}
		cprogram := C.CString(program)
		defer C.free(unsafe.Pointer(cprogram))
		var chome *C.char
		if inst.Home != "" {
			chome = C.CString(inst.Home)
			defer C.free(unsafe.Pointer(chome))
		}
		cformat := C.CString(formatErrorSource)
		defer C.free(unsafe.Pointer(cformat))
		// The shim hands CPython copies of the strings it keeps.
		if msg := C.vis_py_initialize(cprogram, chome, cformat); msg != nil {
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

// PyError is an exception raised by Python code the in-process interpreter
// compiled or ran: the traceback as data rather than text on a stderr that
// may be a socket.
type PyError struct {
	// Type is the exception's type as a traceback names it: "ValueError",
	// "json.decoder.JSONDecodeError".
	Type string
	// Message is str() of the exception.
	Message string
	// Traceback is what python prints for it, ending in "Type: Message\n".
	Traceback string
}

func (e *PyError) Error() string {
	if e.Message == "" {
		return "Python raised " + e.Type
	}
	return e.Type + ": " + e.Message
}

// errNoMemory is returned when the C side could not allocate.
var errNoMemory = errors.New("out of memory in the CPython bridge")

// result turns what a shim call returned into text or an error, and frees
// the shim's buffer.
func result(status C.int, text *C.char, n C.size_t) (string, error) {
	if text != nil {
		defer C.free(unsafe.Pointer(text))
	}
	switch status {
	case C.VIS_PY_OK:
		return C.GoStringN(text, C.int(n)), nil
	case C.VIS_PY_RAISED:
		f := strings.SplitN(C.GoStringN(text, C.int(n)), "\x00", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		return "", &PyError{Type: f[0], Message: f[1], Traceback: f[2]}
	case C.VIS_PY_NO_OUTPUT:
		return "", errors.New("the Python code set no OUTPUT")
	default:
		return "", errNoMemory
	}
}

// Compile compiles source, which must set OUTPUT from INPUT. A SyntaxError
// is a *PyError.
func (in *Interp) Compile(source, filename string) (*Func, error) {
	csrc := C.CString(source)
	defer C.free(unsafe.Pointer(csrc))
	cname := C.CString(filename)
	defer C.free(unsafe.Pointer(cname))
	var code unsafe.Pointer
	var text *C.char
	var n C.size_t
	if _, err := result(C.vis_py_compile(csrc, cname, &code, &text, &n), text, n); err != nil {
		return nil, err
	}
	return &Func{code: code}, nil
}

// Call runs f with INPUT = input and returns OUTPUT. An exception f raised
// is a *PyError.
func (in *Interp) Call(f *Func, input string) (string, error) {
	cin := C.CString(input)
	defer C.free(unsafe.Pointer(cin))
	var out *C.char
	var n C.size_t
	return result(C.vis_py_run(f.code, cin, C.size_t(len(input)), &out, &n), out, n)
}
