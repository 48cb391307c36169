package cli

import (
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/pyrun"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/pyembed/compilecheck"
	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// maxCheckBytes is the largest file sandbox check reads.
const maxCheckBytes = 64 << 20

func newCheckCmd(s Streams) *cobra.Command {
	var fix bool
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

Status 0 when every file parses (after --fix), 1 when one does not, 2 for
a bad command line or a file that cannot be read. As a pre-commit hook:
entry "vis-agent sandbox check", with the files staged.`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			var checker check.Checker
			status := 0
			for _, name := range args {
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
				data, err := readChecked(s, name)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent: %v\n", err)
					status = 2
					continue
				}
				v, _ := checker.Text(name, data, true)
				if v.Problem == nil {
					continue
				}
				fixed := false
				if fix && v.Fixed != "" {
					if err := replaceKeepingMode(filepath.Join(s.Dir, name), v.Fixed); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent: fix %s: %v\n", name, err)
						status = 2
					} else {
						fixed = true
					}
				}
				writeCheck(out, name, v, fixed)
				if !fixed && status == 0 {
					status = 1
				}
			}
			if status != 0 {
				return exitError{status}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&fix, "fix", false, "write the repair engine's exact fix of a Python file that does not compile")
	return cmd
}

// pythonChecker checks Python files with the embedded CPython.
func pythonChecker(s Streams) (check.Checker, error) {
	lib, _, inst, err := pyrun.LoadRuntime(s)
	if err != nil {
		return check.Checker{}, err
	}
	compile, err := compilecheck.NewFile(lib, inst)
	if err != nil {
		return check.Checker{}, err
	}
	return check.Checker{Minor: lib.Version.Minor, Version: fmt.Sprintf("%d.%d", lib.Version.Major, lib.Version.Minor),
		Compile: func(name, src string) (*repair.SyntaxError, bool) { return compile(name, src), true }}, nil
}

// readChecked reads the file name (relative to the working folder), of
// at most maxCheckBytes.
func readChecked(s Streams, name string) (string, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.Dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", name, unwrapPath(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("cannot read %s: not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCheckBytes+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", name, err)
	}
	if len(data) > maxCheckBytes {
		return "", fmt.Errorf("cannot check %s: over %d MiB", name, maxCheckBytes>>20)
	}
	return string(data), nil
}

// unwrapPath drops an *os.PathError's path, which the message names
// already as the user wrote it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
	fmt.Fprintf(w, "%s: %s (%s)\n", where, strings.Join(strings.Fields(p.Message), " "), v.Checked)
	// The caret view is the error's lines after its first.
	if _, rest, ok := strings.Cut(v.Error, "\n"); ok {
		fmt.Fprintln(w, rest)
	}
	switch {
	case fixed:
		fmt.Fprintf(w, "    fixed: %s\n", strings.Join(v.Fixes, "; "))
	case v.Fixed != "":
		fmt.Fprintf(w, "    exact fix (--fix writes it): %s\n", strings.Join(v.Fixes, "; "))
	}
}

// replaceKeepingMode replaces the file at path (through a symlink, its
// target) with content: a new file beside it with its mode, renamed over
// it.
func replaceKeepingMode(path, content string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".vis-check-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.WriteString(tmp, content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), real)
}
