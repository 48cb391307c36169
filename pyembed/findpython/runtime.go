package findpython

import (
	"path/filepath"

	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/internal/paths"
)

// OptionsFor says where a command with streams s looks for CPython:
// VIS_PYTHON_NATIVE_PATH, the bundle beside the running binary, the record
// in its vis-agent folder.
func OptionsFor(s iostreams.Streams) Options {
	return Options{
		NativePath: s.Getenv("VIS_PYTHON_NATIVE_PATH"),
		ExeDir:     paths.ExeDir(),
		StateDir:   s.Layout().Python(),
	}
}

// UnknownVersionError is a library whose file name does not tell its
// CPython version (LibraryVersion): only loading it does.
type UnknownVersionError struct{ Library string }

func (e *UnknownVersionError) Error() string {
	return "cannot tell the CPython version of " + e.Library
}

// LocateRuntime finds the library a command with streams s would load
// (Find), its version from the library's file name and its installation,
// without loading it: uv needs only its python. A name that does not tell
// the version is an *UnknownVersionError.
func LocateRuntime(s iostreams.Streams) (Choice, Version, Install, error) {
	choice, err := Find(OptionsFor(s))
	if err != nil {
		return choice, Version{}, Install{}, err
	}
	v, ok := LibraryVersion(filepath.Base(choice.Library))
	if !ok {
		return choice, Version{}, Install{}, &UnknownVersionError{Library: choice.Library}
	}
	inst, err := Locate(choice.Library, v, s.Getenv("VIS_PYTHON_HOME"))
	return choice, v, inst, err
}
