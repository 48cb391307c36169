// Package compilecheck asks the embedded CPython whether a Python block
// compiles: the bridge sandbox/repair needs to that version's parser.
package compilecheck

import (
	_ "embed"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

//go:embed compile_check.py
var source string

// New starts the in-process interpreter of lib (installation inst) and
// returns a Compiler of blocks backed by it. Like the interpreter, the
// Compiler must be called from the main thread.
func New(lib *pyembed.Library, inst findpython.Install) (repair.Compiler, error) {
	ask, err := start(lib, inst)
	if err != nil {
		return nil, err
	}
	return func(src string) *protocol.SyntaxError { return ask(src) }, nil
}

// NewFile is New for files: its function compiles a file's text as the
// module file name, as Python reads files (a byte order mark and a coding
// declaration; no top-level await).
func NewFile(lib *pyembed.Library, inst findpython.Install) (func(name, src string) *protocol.SyntaxError, error) {
	ask, err := start(lib, inst)
	if err != nil {
		return nil, err
	}
	return func(name, src string) *protocol.SyntaxError {
		return ask(fileMark + name + "\x00" + protocol.FileCode(src))
	}, nil
}

// fileMark starts compile_check.py's input for a file (its FILE_MARK).
const fileMark = "\x00file\x00"

// start compiles compile_check.py in the interpreter and returns the
// function asking it about an input.
func start(lib *pyembed.Library, inst findpython.Install) (func(string) *protocol.SyntaxError, error) {
	in, err := lib.Interp(inst)
	if err != nil {
		return nil, err
	}
	check, err := in.Compile(source, "compile_check.py")
	if err != nil {
		return nil, err
	}
	return func(input string) *protocol.SyntaxError {
		out, err := in.Call(check, input)
		if err != nil {
			return &protocol.SyntaxError{Message: "vis-agent could not ask CPython: " + err.Error()}
		}
		return parse(out)
	}, nil
}

// parse reads compile_check.py's answer: "ok", or the SyntaxError's
// message, line, column and text separated by NUL characters.
func parse(out string) *protocol.SyntaxError {
	if out == "ok" {
		return nil
	}
	f := strings.SplitN(out, "\x00", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	line, _ := strconv.Atoi(f[1])
	col, _ := strconv.Atoi(f[2])
	return &protocol.SyntaxError{Message: f[0], Line: line, Column: col, Text: f[3]}
}
