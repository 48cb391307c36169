package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/cli/proc"
	"github.com/vis-agent/vis-agent/cli/sandbox"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/pyrun"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// Streams is what every command takes from the process it runs in
// (iostreams.Streams): commands never read os.Stdin, os.Getenv or
// os.Getwd themselves.
type Streams = cmdutil.Streams

// System is the streams of this process.
func System() Streams { return iostreams.System() }

// Version is vis-agent's version; release builds set it with -ldflags
// "-X github.com/vis-agent/vis-agent/cli.Version=…".
var Version = ""

func newRoot(s Streams) *cobra.Command {
	f := &cmdutil.Factory{Streams: s, Version: buildVersion()}
	var showVersion bool
	root := &cobra.Command{
		Use:           "vis-agent",
		Short:         "An embedded-CPython python for agent sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cmdutil.SubcommandArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				printVersion(s)
				return nil
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVar(&showVersion, "version", false, "print the versions of vis-agent, the CPython it loads and the pinned uv")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(usage)
	sb := sandbox.NewCmdSandbox(f)
	sb.AddCommand(proc.NewCmds(f)...)
	root.AddCommand(NewCmdPython(f, nil), NewCmdRuntime(f, nil), NewCmdConfig(f, nil), sb)
	fixCompletionCmd(root)
	return root
}

// flagError is every command's answer to a command line pflag refuses: a
// flag that belongs to some of its subcommands (sandbox --session) names
// them.
func flagError(cmd *cobra.Command, err error) error {
	// A mistyped command's flags (pyhton -c) are the parent's to parse:
	// the command is what to correct.
	if args := cmd.Flags().Args(); cmd.HasSubCommands() && len(args) > 0 {
		return cmdutil.SubcommandArgs(cmd, args)
	}
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name := ne.GetSpecifiedName()
	var takers []string
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		f := sub.Flags().Lookup(name)
		if f == nil && ne.GetSpecifiedShortnames() != "" {
			f = sub.Flags().ShorthandLookup(name)
		}
		if f != nil {
			takers = append(takers, sub.Name())
		}
	}
	if len(takers) == 0 {
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	}
	return fmt.Errorf("%w: it goes after a subcommand of %s that takes it: %s", err, cmd.CommandPath(), strings.Join(takers, ", "))
}

// fixCompletionCmd makes `vis-agent completion SHELL` refuse a shell it
// does not know (cobra's own command prints its help and succeeds).
func fixCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("completion: unknown shell %q (choose bash, zsh, fish or powershell)", args[0])
		}
	}
}

// buildVersion is vis-agent's version: the one a release sets with -X
// (Version), else the module version of a released build, else the
// commit it was built from. --version, MCP's server info, connect's
// version mismatch and export's manifest all name this one.
func buildVersion() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, kv := range info.Settings {
		if kv.Key == "vcs.revision" && len(kv.Value) >= 12 {
			return "devel-" + kv.Value[:12]
		}
	}
	return "devel"
}

// Main runs the vis-agent command line args (without the program name) on
// the streams s and returns the exit status: 0, 1 when a command could not
// do its work, 2 for a command line it refuses.
func Main(ctx context.Context, args []string, s Streams) int {
	if len(args) > 0 && args[0] == "python" {
		// The hot path: start-up is most of what a short python run costs,
		// and python's command line is not a cobra command line anyway
		// (runPython, without building the command tree).
		return pyrun.Main(args[1:], s)
	}
	root := newRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ee cmdutil.ExitError
	var f cmdutil.Failure
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	// An error may quote what a session set (a filename, a line of its
	// code), a remote peer's answer or an archive's manifest: as text.
	fmt.Fprintf(s.Err, "vis-agent: %s\n", termtext.Text(err.Error()))
	if errors.As(err, &f) {
		return 1
	}
	return 2
}

// printVersion prints vis-agent's version, the CPython a run would load
// (or why none loads) and the pinned uv.
func printVersion(s Streams) {
	fmt.Fprintf(s.Out, "vis-agent %s\n", buildVersion())
	if lib, _, inst, err := pyrun.LoadRuntime(s); err != nil {
		fmt.Fprintf(s.Out, "CPython:   none (%v)\n", err)
	} else {
		fmt.Fprintf(s.Out, "CPython:   %s (%s)\n", lib.Version, inst.Prefix)
	}
	io.WriteString(s.Out, "uv:        "+pinnedUV(s)+"\n")
}

// pinnedUV says which uv is pinned and where it was found, for --version.
func pinnedUV(s Streams) string {
	v := uvwrap.Pinned().Version
	uv, err := uvwrap.LocateFor(s)
	if err != nil {
		return v + " (pinned; not found: " + err.Error() + ")"
	}
	return v + " (" + uv + ")"
}
