package sandbox

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/transfer"
)

func newSandboxForkCmd(f *cmdutil.Factory) *cobra.Command {
	s := f.Streams
	var (
		sf = cmdutil.SessionFlags{Streams: s, Local: true}
		at int
	)
	cmd := &cobra.Command{
		Use:   "fork NEW [--session S] [--workspace D] [--at BLOCK]",
		Short: "Make a new session that starts from a session's state, to try something in the copy",
		Long: `Make session NEW, in the same workspace, from a copy of the session's
state: its last snapshot, or with --at BLOCK the one its history keeps
after that block (sandbox defs names them). Its first block restores it,
with a notice saying where it came from; its blocks number on from the
source's. The two then go their own ways: what one does to its state the
other does not see. Files are shared: the workspace is the same. Not
copied: the journal, the history, the attachments. sandbox list says where
a fork came from.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if err := session.CheckName(args[0]); err != nil {
				return cmdutil.UsageError{Err: err}
			}
			if cmd.Flags().Changed("at") && at < 1 {
				return cmdutil.UsageError{Err: errors.New("--at is a block's number, 1 or more (see vis-agent sandbox defs)")}
			}
			c, err := sf.Settled()
			if err != nil {
				return err
			}
			lim := transferLimits(s)
			l := s.Layout()
			src := transfer.Source{Folder: c.Folder, Meta: c.Meta, Protocol: protocol.Version, MaxStateBytes: lim.StateBytes}
			target := transfer.Target{Sessions: l.Sessions(), Meta: session.Meta{Name: args[0], Workspace: c.Meta.Workspace}, Limits: lim}
			if err := transfer.Fork(src, at, target); err != nil {
				return err
			}
			where := "its last block"
			if at > 0 {
				where = fmt.Sprintf("block %d", at)
			}
			fmt.Fprintf(s.Out, "Forked session %s from %s after %s; its first block restores that state.\n",
				termtext.Line(args[0]), termtext.Line(c.Meta.Name), where)
			return nil
		}),
	}
	sf.Add(cmd)
	cmd.Flags().IntVar(&at, "at", 0, "the block whose state the fork starts from (default: the last)")
	return cmd
}
