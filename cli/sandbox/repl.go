package sandbox

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/tui"
)

// ReplOptions are `sandbox repl`'s flags: its network flags are those of
// a host it starts.
type ReplOptions struct {
	Session cmdutil.SessionFlags
	Network string
	Allow   []string
	Deny    []string
	NoEcho  bool
}

// NewCmdRepl is `sandbox repl`; runF (nil: the REPL) runs it.
func NewCmdRepl(f *cmdutil.Factory, runF func(*ReplOptions) error) *cobra.Command {
	opts := &ReplOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "repl [--session S] [--workspace D] [--network on|off|allow] [flags]",
		Short: "Work in a persistent sandbox session interactively",
		Long: `Open the sandbox REPL on a session (started when none runs): type blocks,
see their output, repair notes and restart notices, and the session's helpers
and variables beside them. Ctrl+D on an empty input or /quit leaves; the
session keeps running until its idle time. F1 or /help lists keys and
commands. A trailing expression's repr follows a block's output unless
--no-echo (or sandbox.echo = false) turns it off. It needs a terminal;
programs use vis-agent sandbox run.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			if len(opts.Allow)+len(opts.Deny) == 0 && opts.Network == "" {
				return runRepl(opts.Session, nil, opts.NoEcho)
			}
			return runRepl(opts.Session, &cmdutil.JailFlags{Network: opts.Network, AllowHosts: opts.Allow, DenyHosts: opts.Deny}, opts.NoEcho)
		}),
	}
	opts.Session.Add(cmd)
	cmdutil.AddNetworkFlags(cmd, &opts.Network, &opts.Allow, &opts.Deny)
	cmd.Flags().BoolVar(&opts.NoEcho, "no-echo", false, "do not show the repr of a block's trailing expression")
	return cmd
}

// addReplCmd adds `vis-agent sandbox repl`, which `vis-agent sandbox` with
// no subcommand opens on a terminal (on the session --session names).
func addReplCmd(sandbox *cobra.Command, f *cmdutil.Factory) {
	s := f.Streams
	repl := NewCmdRepl(f, nil)
	name := repl.Flags().Lookup("session").Value
	sandbox.AddCommand(repl)
	sandbox.Args = cmdutil.SubcommandArgs // a mistyped subcommand is an error, not the REPL
	sandbox.RunE = cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
		if !s.InTerminal || !s.OutTerminal {
			return cmd.Help()
		}
		return runRepl(cmdutil.SessionFlags{Streams: s, Name: name.String()}, nil, false)
	})
}

// jf (nil: none) are the network flags of a host the REPL starts; noEcho
// turns the trailing expression's repr off, as sandbox.echo = false does.
func runRepl(sf cmdutil.SessionFlags, jf *cmdutil.JailFlags, noEcho bool) error {
	s := sf.Streams
	if !s.InTerminal || !s.OutTerminal {
		return errors.New("the sandbox REPL needs a terminal; run blocks with vis-agent sandbox run")
	}
	// A host the REPL starts runs its child under the user's [sandbox]
	// settings and the flags; a running one keeps its own policy.
	c, _, err := sf.Open(jf)
	if err != nil {
		return err
	}
	// One client to the hosts: Ctrl-C interrupts the REPL's own blocks.
	me := client.NewClient("repl", "")
	c.Client = me
	open := func(name string) (*client.Session, error) {
		other := cmdutil.SessionFlags{Streams: s, Name: name, Workspace: c.Meta.Workspace, Host: sf.Host}
		c, _, err := other.Open(nil)
		if c != nil {
			c.Client = me
		}
		return c, err
	}
	noEcho = noEcho || !config.Load(s.Layout().UserConfig()).SandboxEcho.Value
	return tui.Run(tui.Config{Session: c, Open: open, HistoryDir: s.Layout().History(), NoEcho: noEcho}, s.In, s.Out)
}
