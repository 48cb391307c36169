package sandbox

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
)

func newSandboxRewindCmd(f *cmdutil.Factory) *cobra.Command {
	s := f.Streams
	var (
		sf       = cmdutil.SessionFlags{Streams: s}
		to, back int
	)
	cmd := &cobra.Command{
		Use:   "rewind [--session S] [--workspace D] [--to BLOCK | --back N]",
		Short: "Bring a session's state back to what it was after an earlier block",
		Long: `Bring the session's interpreter state (variables, helpers, imports,
sys.path entries) back to what it was after an earlier block, from the
snapshots its history keeps of its last blocks (sandbox.history_blocks,
default 50, within sandbox.max_snapshot_mb). --to BLOCK names the block (its
number in tracebacks, "<block 12>", and in sandbox log and defs()); --back N
goes N blocks back from the current state; neither goes to before the last
block. The notice says what came back and what did not. Files are not
rewound. The blocks after it stay in the journal, marked rewound, and their
snapshots stay in the history: a rewind --to a later block undoes it.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			switch {
			case cmd.Flags().Changed("to") && cmd.Flags().Changed("back"):
				return cmdutil.UsageError{Err: errors.New("give --to BLOCK or --back N, not both")}
			case cmd.Flags().Changed("to") && to < 1:
				return cmdutil.UsageError{Err: errors.New("--to is a block's number, 1 or more (see vis-agent sandbox log)")}
			case cmd.Flags().Changed("back") && back < 1:
				return cmdutil.UsageError{Err: errors.New("--back is how many blocks to go back, 1 or more")}
			}
			c, _, err := sf.Open(nil)
			if err != nil {
				return err
			}
			notice, _, err := c.Rewind(to, back)
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, termtext.Text(notice))
			return nil
		}),
	}
	sf.Add(cmd)
	cmd.Flags().IntVar(&to, "to", 0, "the block whose state comes back")
	cmd.Flags().IntVar(&back, "back", 0, "how many blocks back from the current state (default 1)")
	return cmd
}
