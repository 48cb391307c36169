// Package sandbox is `vis-agent sandbox` and its user commands, one per
// file (gh's pkg/cmd/<topic>/<cmd>): each an XxxOptions struct holding its
// flags and streams, and a NewCmdXxx(f, runF) whose runF (nil: the
// command's own run) receives them, so a test builds the command, parses
// a command line and checks the options without the binary. The hidden
// process commands are cli/proc's.
package sandbox

import (
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
)

// NewCmdSandbox is `vis-agent sandbox` with its user commands; on a
// terminal with no subcommand it opens the REPL.
func NewCmdSandbox(f *cmdutil.Factory) *cobra.Command {
	sandbox := &cobra.Command{
		Use:   "sandbox",
		Short: "Persistent, jailed Python sessions: the REPL, run, mcp and their tools",
		Long: `Persistent, jailed Python sessions and their tools.

On a terminal, vis-agent sandbox with no subcommand opens the REPL on the
session of the current folder (as vis-agent sandbox repl does); elsewhere it
prints this help. Programs run blocks with vis-agent sandbox run, agents
through vis-agent sandbox mcp.`,
	}
	sandbox.AddCommand(NewCmdRepair(f, nil), NewCmdCheck(f, nil), NewCmdMCP(f, nil),
		NewCmdRun(f, nil), NewCmdDefs(f, nil), NewCmdList(f, nil),
		NewCmdControl(f, "stop", "Snapshot and stop a session (its Python process and host)", nil),
		NewCmdControl(f, "restart", "Replace a session's Python process with a new one restored from the snapshot", nil),
		NewCmdControl(f, "interrupt", "Raise KeyboardInterrupt in a session's running block", nil),
		NewCmdRm(f, nil), NewCmdAttachments(f, nil), NewCmdAttachment(f),
		NewCmdExport(f, nil), NewCmdImport(f, nil), NewCmdLog(f, nil), NewCmdRewind(f, nil), NewCmdFork(f, nil))
	addReplCmd(sandbox, f)
	return sandbox
}
