package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/pyrun"
	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/compilecheck"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// maxCheckBytes is the largest file sandbox check reads.
const maxCheckBytes = 64 << 20

// CheckOptions are `sandbox check`'s flags and files.
type CheckOptions struct {
	Streams cmdutil.Streams
	Fix     bool
	Files   []string
}

// NewCmdCheck is `sandbox check`; runF (nil: runCheck) runs it.
func NewCmdCheck(f *cmdutil.Factory, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "check [--fix] FILE...",
		Short: "Check that Python, JSON, TOML and YAML files parse, as the sandbox does after a block",
		Long: `Check that each FILE parses, as a sandbox session checks patch() edits
and the files a block changed: Python (.py, .pyi) compiled by the embedded
CPython (its grammar), JSON, TOML and YAML (every document); other files are
skipped. For each file that does not parse, one line (FILE:LINE:COLUMN: the
parser's message) and the line with a caret go to stdout, and for Python
the repair engine's exact fix when it has one (the fixes of sandbox
repair: quotes, brackets, f-string braces, escapes). --fix writes those
fixes (atomically, keeping the file's mode).

A FILE is read only when it is a regular file reached through no symbolic
link (a session may have left one, or a FIFO, where a file was expected),
and --fix writes it back through the folder it was read in, never to where
a link points.

Status 0 when every file parses (after --fix), 1 when one does not, 2 for
a bad command line or a file that cannot be read. As a pre-commit hook:
entry "vis-agent sandbox check", with the files staged.`,
		Args: cobra.MinimumNArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if runF != nil {
				return runF(opts)
			}
			return runCheck(opts)
		}),
	}
	cmd.Flags().BoolVar(&opts.Fix, "fix", false, "write the repair engine's exact fix of a Python file that does not compile")
	return cmd
}

func runCheck(opts *CheckOptions) error {
	s := opts.Streams
	out := s.Out
	var checker check.Checker
	status := 0
	for _, name := range opts.Files {
		kind := check.KindOf(name)
		if kind == "" {
			continue
		}
		if kind == check.Python && checker.Compile == nil {
			c, err := pythonChecker(s)
			if err != nil {
				return err
			}
			checker = c
		}
		file, data, err := readNamed(s, name, maxCheckBytes)
		if err != nil {
			fmt.Fprintf(s.Err, "vis-agent: %s\n", termtext.Text(err.Error()))
			status = 2
			continue
		}
		v, _ := checker.Text(name, string(data), true)
		if v.Problem == nil {
			file.Close()
			continue
		}
		fixed := false
		if opts.Fix && v.Fixed != "" {
			if err := replaceChecked(file, v.Fixed); err != nil {
				fmt.Fprintf(s.Err, "vis-agent: fix %s: %s\n", termtext.Line(name), termtext.Text(err.Error()))
				status = 2
			} else {
				fixed = true
			}
		}
		file.Close()
		writeCheck(out, name, v, fixed)
		if !fixed && status == 0 {
			status = 1
		}
	}
	if status != 0 {
		return cmdutil.ExitError{Code: status}
	}
	return nil
}

// pythonChecker checks Python files with the embedded CPython.
func pythonChecker(s cmdutil.Streams) (check.Checker, error) {
	lib, _, inst, err := pyrun.LoadRuntime(s)
	if err != nil {
		return check.Checker{}, err
	}
	compile, err := compilecheck.NewFile(lib, inst)
	if err != nil {
		return check.Checker{}, err
	}
	return check.Checker{Minor: lib.Version.Minor, Version: fmt.Sprintf("%d.%d", lib.Version.Major, lib.Version.Minor),
		Compile: func(name, src string) (*protocol.SyntaxError, bool) { return compile(name, src), true }}, nil
}

// writeCheck prints a file that does not parse: where and why, the line
// with a caret, and the fix.
func writeCheck(w io.Writer, name string, v check.Verdict, fixed bool) {
	p := v.Problem
	where := name
	if p.Line > 0 {
		where += fmt.Sprintf(":%d", p.Line)
		if p.Column > 0 {
			where += fmt.Sprintf(":%d", p.Column)
		}
	}
	fmt.Fprintf(w, "%s: %s (%s)\n", termtext.Line(where), termtext.Line(strings.Join(strings.Fields(p.Message), " ")), v.Checked)
	// The caret view is the error's lines after its first: the file's
	// line, as text (a line of the file is the session's to write).
	if _, rest, ok := strings.Cut(v.Error, "\n"); ok {
		fmt.Fprintln(w, termtext.Text(rest))
	}
	switch {
	case fixed:
		fmt.Fprintf(w, "    fixed: %s\n", termtext.Line(strings.Join(v.Fixes, "; ")))
	case v.Fixed != "":
		fmt.Fprintf(w, "    exact fix (--fix writes it): %s\n", termtext.Line(strings.Join(v.Fixes, "; ")))
	}
}

// replaceChecked replaces the file check read with content, keeping its
// mode: a new file beside it in the folder held open, renamed over its
// name if that is still the file read (not a symlink or another file the
// session swapped in meanwhile; one swapped in after this look is itself
// replaced, never followed).
func replaceChecked(file namedFile, content string) error {
	read, err := file.f.Stat()
	if err != nil {
		return err
	}
	now, err := file.dir.Lstat(file.name)
	if err != nil || !os.SameFile(read, now) {
		return errors.New("the file changed while it was checked; nothing written")
	}
	_, err = atomicfile.WriteIn(file.dir, file.name, strings.NewReader(content), read.Mode().Perm(), true)
	return err
}
