package sandbox

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
)

// RmOptions are `sandbox rm`'s flags.
type RmOptions struct {
	Session cmdutil.SessionFlags
	Force   bool
}

// NewCmdRm is `sandbox rm`; runF (nil: runRm) runs it.
func NewCmdRm(f *cmdutil.Factory, runF func(*RmOptions) error) *cobra.Command {
	opts := &RmOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "rm --session S [--workspace D] [--force]",
		Short: "Delete a session: its snapshot, spill files and attachments (stopping it first)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("session") {
				return cmdutil.UsageError{Err: errors.New("rm needs --session NAME")}
			}
			if runF != nil {
				return runF(opts)
			}
			return runRm(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().BoolVar(&opts.Force, "force", false, "also while a block runs (it is killed)")
	return cmd
}

func runRm(opts *RmOptions) error {
	c, err := opts.Session.Existing()
	if err != nil {
		return err
	}
	if err := c.Remove(opts.Force); err != nil {
		return err
	}
	of := ""
	if c.Meta.Workspace != "" { // known here; a remote one is the other machine's
		of = " of " + termtext.Line(c.Meta.Workspace)
	}
	fmt.Fprintf(opts.Session.Streams.Out, "Removed session %s%s: its snapshot, spill files and attachments.\n", termtext.Line(strconv.Quote(c.Meta.Name)), of)
	return nil
}
