package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/pyrun"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/pyembed/compilecheck"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

func newSandboxCmd(s Streams) *cobra.Command {
	sandbox := &cobra.Command{
		Use:   "sandbox",
		Short: "Persistent, jailed Python sessions: the REPL, run, mcp and their tools",
		Long: `Persistent, jailed Python sessions and their tools.

On a terminal, vis-agent sandbox with no subcommand opens the REPL on the
session of the current folder (as vis-agent sandbox repl does); elsewhere it
prints this help. Programs run blocks with vis-agent sandbox run, agents
through vis-agent sandbox mcp.`,
	}
	sandbox.AddCommand(newRepairCmd(s), newCheckCmd(s), newSandboxMCPCmd(s))
	addSessionCmds(sandbox, s)
	addReplCmd(sandbox, s)
	return sandbox
}

func newRepairCmd(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "repair [--json] [FILE|-]",
		Short: "Repair a Python block's unbalanced quotes, brackets, f-string braces and escapes",
		Long: `Read a Python block (FILE, or standard input) and, if CPython refuses it
for an unbalanced quote or bracket, literal f-string braces or a bad escape,
repair it: the repaired source goes to stdout and the note saying what
changed to stderr, status 0. A block that parses is printed unchanged,
status 0. A block that cannot be repaired is not printed; the error (Python's
message, the first wrong quote, bracket or escape, the line with a caret)
goes to stderr, status 1. --json prints the whole result as JSON instead.

A block needing more than 4 bracket changes (or 3 on one line) is not
repaired, and neither is a closing quote or bracket that fits at two places
Python would both run, as in f(a + b: the error says why.`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			src, err := readBlock(s, args)
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
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				writeRepair(cmd.OutOrStdout(), cmd.ErrOrStderr(), res)
			}
			if res.PythonError != nil && !res.Repaired {
				return exitError{1}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON: changed, repaired, source, fixes, problems (a list), python_error")
	return cmd
}

// readBlock reads FILE, or standard input for "-" or no argument.
func readBlock(s Streams, args []string) (string, error) {
	var data []byte
	var err error
	name := "standard input"
	if len(args) == 1 && args[0] != "-" {
		name = args[0]
		file := name
		if !filepath.IsAbs(file) {
			file = filepath.Join(s.Dir, file)
		}
		data, err = os.ReadFile(file)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = name // as the user named it
		}
	} else {
		data, err = io.ReadAll(s.In)
	}
	if err != nil {
		return "", fmt.Errorf("read the block: %w", err)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("the block in %s is not UTF-8 text", name)
	}
	return string(data), nil
}

// writeRepair prints a result for people: the source to run on stdout, what
// was done on stderr.
func writeRepair(stdout, stderr io.Writer, res repair.Result) {
	switch {
	case res.Repaired:
		io.WriteString(stdout, res.Source)
		fmt.Fprintln(stderr, res.Note())
	case res.PythonError == nil:
		io.WriteString(stdout, res.Source)
		fmt.Fprintln(stderr, "The block parses; nothing to repair.")
	default:
		fmt.Fprintln(stderr, res.Error())
	}
}
