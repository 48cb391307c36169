package sandbox

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
)

// RewindOptions are `sandbox rewind`'s flags.
type RewindOptions struct {
	Session cmdutil.SessionFlags
	To      int // the block whose state comes back (0: not given)
	Back    int // how many blocks back from the current state (0: not given)
}

// NewCmdRewind is `sandbox rewind`; runF (nil: runRewind) runs it.
func NewCmdRewind(f *cmdutil.Factory, runF func(*RewindOptions) error) *cobra.Command {
	opts := &RewindOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
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
			case cmd.Flags().Changed("to") && opts.To < 1:
				return cmdutil.UsageError{Err: errors.New("--to is a block's number, 1 or more (see vis-agent sandbox log)")}
			case cmd.Flags().Changed("back") && opts.Back < 1:
				return cmdutil.UsageError{Err: errors.New("--back is how many blocks to go back, 1 or more")}
			}
			if runF != nil {
				return runF(opts)
			}
			return runRewind(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().IntVar(&opts.To, "to", 0, "the block whose state comes back")
	cmd.Flags().IntVar(&opts.Back, "back", 0, "how many blocks back from the current state (default 1)")
	return cmd
}

func runRewind(opts *RewindOptions) error {
	c, _, err := opts.Session.Open(nil)
	if err != nil {
		return err
	}
	notice, _, err := c.Rewind(opts.To, opts.Back)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.Session.Streams.Out, termtext.Text(notice))
	return nil
}
