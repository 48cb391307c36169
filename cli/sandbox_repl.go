package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/tui"
)

// addReplCmd adds `vis-agent sandbox repl`, which `vis-agent sandbox` with
// no subcommand opens on a terminal.
func addReplCmd(sandbox *cobra.Command, s Streams) {
	sf := sessionFlags{s: s}
	var allow, deny []string
	var network string
	var noEcho bool
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
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if len(allow)+len(deny) == 0 && network == "" {
				return runRepl(sf, nil, noEcho)
			}
			return runRepl(sf, &jailFlags{network: network, allowHosts: allow, denyHosts: deny}, noEcho)
		}),
	}
	sf.add(cmd)
	addNetworkFlags(cmd, &network, &allow, &deny)
	cmd.Flags().BoolVar(&noEcho, "no-echo", false, "do not show the repr of a block's trailing expression")
	sandbox.AddCommand(cmd)
	sandbox.Args = subcommandArgs // a mistyped subcommand is an error, not the REPL
	sandbox.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if !s.InTerminal || !s.OutTerminal {
			return cmd.Help()
		}
		return runRepl(sessionFlags{s: s, name: sf.name}, nil, false)
	})
}

// jf (nil: none) are the network flags of a host the REPL starts; noEcho
// turns the trailing expression's repr off, as sandbox.echo = false does.
func runRepl(sf sessionFlags, jf *jailFlags, noEcho bool) error {
	s := sf.s
	if !s.InTerminal || !s.OutTerminal {
		return errors.New("the sandbox REPL needs a terminal; run blocks with vis-agent sandbox run")
	}
	// A host the REPL starts runs its child under the user's [sandbox]
	// settings and the flags; a running one keeps its own policy.
	c, _, err := sf.open(jf)
	if err != nil {
		return err
	}
	// One client to the hosts: Ctrl-C interrupts the REPL's own blocks.
	me := client.NewClient("repl", "")
	c.Client = me
	open := func(name string) (*client.Session, error) {
		other := sessionFlags{s: s, name: name, workspace: c.Meta.Workspace, host: sf.host}
		c, _, err := other.open(nil)
		if c != nil {
			c.Client = me
		}
		return c, err
	}
	noEcho = noEcho || !config.Load(s.Layout().UserConfig()).SandboxEcho.Value
	return tui.Run(tui.Config{Session: c, Open: open, HistoryDir: s.Layout().History(), NoEcho: noEcho}, s.In, s.Out)
}
