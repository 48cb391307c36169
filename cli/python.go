package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/pyrun"
)

// PythonOptions are `vis-agent python`'s command line: python's own,
// which pyrun parses as python does (after the program, the program's).
type PythonOptions struct {
	Streams Streams
	Args    []string
}

// NewCmdPython is `vis-agent python` for help and completion; runF (nil:
// runPython) runs it. A command line that starts with python does not
// reach cobra: Main takes the hot path straight to runPython.
func NewCmdPython(f *cmdutil.Factory, runF func(*PythonOptions) error) *cobra.Command {
	opts := &PythonOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "python " + pyrun.Usage[len("vis-agent python "):],
		Short: "Run Python programs with the embedded CPython, as python does",
		// python's command line is not a cobra command line: options after
		// the program belong to the program.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return runPython(opts)
		},
		ValidArgsFunction: completePython,
	}
	// `vis-agent help python` shows the same help as `vis-agent python -h`.
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { io.WriteString(c.OutOrStdout(), pyrun.Help) })
	return cmd
}

// runPython runs the program; its exit status is python's.
func runPython(opts *PythonOptions) error {
	if code := pyrun.Main(opts.Args, opts.Streams); code != 0 {
		return cmdutil.ExitError{Code: code}
	}
	return nil
}

// pythonOptions are what a shell completes after `vis-agent python -`.
var pythonOptions = []string{
	"-c\trun code", "-m\trun a library module", "-\tread the program from stdin",
	"-B\tdon't write .pyc files", "-E\tignore PYTHON* variables", "-I\tisolate from the environment",
	"-O\tremove asserts", "-OO\tremove asserts and docstrings", "-P\tdon't prepend an unsafe path",
	"-q\tno banner", "-s\tno user site", "-S\tdon't import site", "-u\tunbuffered output",
	"-v\ttrace imports", "-W\twarning control", "-X\timplementation option", "-b\tbytes warnings",
	"-d\tparser debug", "-i\tinspect after running", "-x\tskip the first line",
	"--version\tprint the CPython version", "-V\tprint the CPython version", "--help\tshow help", "-h\tshow help",
	"--help-env\tCPython's environment variables", "--help-xoptions\tCPython's -X options", "--help-all\tall of CPython's help",
	"--check-hash-based-pycs\tpyc validation",
	"--shared\tuse the shared packages", "--active\tuse the activated environment", "--env\tset a variable for the program", "--no-env\tempty environment",
	"--no-network\tno sockets or name lookups",
	"--allow-host\treach only these hosts, through a proxy", "--deny-host\tnever reach these hosts",
}

// completePython completes options while the program selector has not come
// yet, and files (the default) otherwise.
func completePython(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if pa, err := pyrun.Parse(args); err == nil && pa.Mode == pyrun.ModeDefault && strings.HasPrefix(toComplete, "-") {
		return pythonOptions, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

// oneLine keeps the first line of an error from a library (a TOML parser
// quotes the offending line after it).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
