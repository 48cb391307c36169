// Package compilecheck asks the embedded CPython whether a Python block
// compiles: the bridge sandbox/repair needs to that version's parser.
package compilecheck

import (
	_ "embed"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

//go:embed compile_check.py
var source string

// New starts the in-process interpreter of lib (installation inst) and
// returns a Compiler backed by it. Like the interpreter, the Compiler must
// be called from the main thread.
func New(lib *pyembed.Library, inst pyembed.Install) (repair.Compiler, error) {
	in, err := lib.Interp(inst)
	if err != nil {
		return nil, err
	}
	check, err := in.Compile(source, "compile_check.py")
	if err != nil {
		return nil, err
	}
	return func(src string) *repair.SyntaxError {
		out, err := in.Call(check, src)
		if err != nil {
			return &repair.SyntaxError{Message: "vis-agent could not ask CPython: " + err.Error()}
		}
		return parse(out)
	}, nil
}

// parse reads compile_check.py's answer: "ok", or the SyntaxError's
// message, line, column and text separated by NUL characters.
func parse(out string) *repair.SyntaxError {
	if out == "ok" {
		return nil
	}
	f := strings.SplitN(out, "\x00", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	line, _ := strconv.Atoi(f[1])
	col, _ := strconv.Atoi(f[2])
	return &repair.SyntaxError{Message: f[0], Line: line, Column: col, Text: f[3]}
}
