package sandbox

import (
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/pyrun"
	"github.com/vis-agent/vis-agent/sandbox/compilecheck"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// RepairOptions are `sandbox repair`'s flags and argument.
type RepairOptions struct {
	Streams cmdutil.Streams
	JSON    bool
	// Files is FILE (at most one); none or "-" is standard input.
	Files []string
}

// NewCmdRepair is `sandbox repair`; runF (nil: runRepair) runs it.
func NewCmdRepair(f *cmdutil.Factory, runF func(*RepairOptions) error) *cobra.Command {
	opts := &RepairOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "repair [--json] [FILE|-]",
		Short: "Repair a block's unbalanced quotes, brackets, f-string braces, escapes, indentation",
		Long: `Read a Python block (FILE, or standard input) and, if CPython refuses it
for an unbalanced quote or bracket, literal f-string braces, a bad escape or
its indentation (a pasted block's common indent, tabs among spaces, a dedent
to no level), repair it: the repaired source goes to stdout and the note saying what
changed to stderr, status 0. A block that parses is printed unchanged,
status 0. A block that cannot be repaired is not printed; the error (Python's
message, the first wrong quote, bracket or escape, the line with a caret)
goes to stderr, status 1. --json prints the whole result as JSON instead.

A block needing more than 4 bracket changes (or 3 on one line) is not
repaired, and neither is a closing quote or bracket that fits at two places
Python would both run, as in (a + b * c, unless one is where the statement
ends and the other reads as an accident, nor an indentation two levels fit
equally: the error says why.`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if runF != nil {
				return runF(opts)
			}
			return runRepair(opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON: changed, repaired, source, fixes, problems (a list), python_error")
	return cmd
}

func runRepair(opts *RepairOptions) error {
	s := opts.Streams
	src, err := readBlock(s, opts.Files)
	if err != nil {
		return err
	}
	lib, _, inst, err := pyrun.LoadRuntime(s)
	if err != nil {
		return err
	}
	compile, err := compilecheck.New(lib, inst)
	if err != nil {
		return err
	}
	res := repair.Repair(src, repair.Options{Minor: lib.Version.Minor, Compile: compile})
	if opts.JSON {
		if err := printJSON(s.Out, res, "  "); err != nil {
			return err
		}
	} else {
		writeRepair(s.Out, s.Err, res, s.OutTerminal)
	}
	if res.PythonError != nil && !res.Repaired {
		return cmdutil.ExitError{Code: 1}
	}
	return nil
}

// readBlock reads FILE, or standard input for "-" or no argument.
func readBlock(s cmdutil.Streams, args []string) (string, error) {
	var data []byte
	var err error
	name := "standard input"
	if len(args) == 1 && args[0] != "-" {
		name = args[0]
		var file namedFile
		file, data, err = readNamed(s, name, maxCheckBytes)
		if err != nil {
			return "", fmt.Errorf("read the block: %w", err)
		}
		file.Close()
	} else if data, err = io.ReadAll(s.In); err != nil {
		return "", fmt.Errorf("read the block: %w", err)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("the block in %s is not UTF-8 text", name)
	}
	return string(data), nil
}

// writeRepair prints a result for people: the source to run on stdout (as
// it is for a program, as text on a terminal), what was done on stderr
// (as text: it quotes the source).
func writeRepair(stdout, stderr io.Writer, res repair.Result, terminal bool) {
	source := res.Source
	if terminal {
		source = termtext.Text(source)
	}
	switch {
	case res.Repaired:
		io.WriteString(stdout, source)
		fmt.Fprintln(stderr, termtext.Text(res.Note()))
	case res.PythonError == nil:
		io.WriteString(stdout, source)
		fmt.Fprintln(stderr, "The block parses; nothing to repair.")
	default:
		fmt.Fprintln(stderr, termtext.Text(res.Error()))
	}
}
