package cli

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/tui"
)

// addReplCmd adds `vis-agent sandbox repl`, which `vis-agent sandbox` with
// no subcommand opens on a terminal.
func addReplCmd(sandbox *cobra.Command) {
	var sf sessionFlags
	cmd := &cobra.Command{
		Use:   "repl [--session S] [--workspace D]",
		Short: "Work in a persistent sandbox session interactively",
		Long: `Open the sandbox REPL on a session (started when none runs): type blocks,
see their output, repair notes and restart notices, and the session's helpers
and variables beside them. Ctrl+D on an empty input or /quit leaves; the
session keeps running until its idle time. F1 or /help lists keys and
commands. It needs a terminal; programs use vis-agent sandbox run.`,
		Args: cobra.NoArgs,
		RunE: sessionE(func(cmd *cobra.Command, args []string) error { return runRepl(cmd, sf) }),
	}
	sf.add(cmd)
	sandbox.AddCommand(cmd)
	sandbox.RunE = sessionE(func(cmd *cobra.Command, args []string) error {
		if !onTerminal(cmd) {
			return cmd.Help()
		}
		return runRepl(cmd, sessionFlags{name: sf.name})
	})
}

// onTerminal is whether standard input and output are both terminals.
func onTerminal(cmd *cobra.Command) bool {
	in, ok1 := cmd.InOrStdin().(*os.File)
	out, ok2 := cmd.OutOrStdout().(*os.File)
	return ok1 && ok2 && isatty.IsTerminal(in.Fd()) && isatty.IsTerminal(out.Fd())
}

func runRepl(cmd *cobra.Command, sf sessionFlags) error {
	if !onTerminal(cmd) {
		return errors.New("the sandbox REPL needs a terminal; run blocks with vis-agent sandbox run")
	}
	s, err := sf.open()
	if err != nil {
		return err
	}
	open := func(name string) (*client.Session, error) {
		other := sessionFlags{name: name, workspace: s.Meta.Workspace}
		return other.open()
	}
	return tui.Run(tui.Config{Session: s, Open: open, HistoryDir: filepath.Join(visHome(), "sandbox", "history")},
		cmd.InOrStdin(), cmd.OutOrStdout())
}
