// Package iostreams is what a command takes from the process it runs in:
// the standard streams, the environment and the working folder.
package iostreams

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/vis-agent/vis-agent/internal/paths"
)

// Streams is everything a command takes from the process it runs in: the
// standard streams and whether each is a terminal, the environment and
// the working folder. Main hands one to every command, so a command runs
// the same in a test, in the session host or under another front end as
// from a shell, and no command reads os.Stdin, os.Getenv or os.Getwd
// itself.
//
// `vis-agent python` is the exception by nature: CPython reads and writes
// file descriptors 0, 1 and 2 and the process environment directly; only
// vis-agent's own messages go through Streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// InTerminal, OutTerminal and ErrTerminal say which of the three is a
	// terminal.
	InTerminal, OutTerminal, ErrTerminal bool
	// Getenv reads the environment, Environ lists it (for the
	// environment of a program vis-agent starts).
	Getenv  func(string) string
	Environ func() []string
	// Dir is the working folder; "" when it could not be read (removed
	// under the process), which commands that need it report.
	Dir string
}

// System is the streams of this process.
func System() Streams {
	dir, _ := os.Getwd()
	return Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		InTerminal:  isTerminal(os.Stdin),
		OutTerminal: isTerminal(os.Stdout),
		ErrTerminal: isTerminal(os.Stderr),
		Getenv:      os.Getenv,
		Environ:     os.Environ,
		Dir:         dir,
	}
}

func isTerminal(f *os.File) bool {
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// Layout is vis-agent's folder layout as the streams' environment sees it.
func (s Streams) Layout() paths.Layout { return paths.New(s.Getenv) }
