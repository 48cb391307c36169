package sandbox

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
)

// The attachments commands read the store directly: they work with the
// session stopped, and never start its host.

// AttachmentsOptions are `sandbox attachments`'s flags.
type AttachmentsOptions struct {
	Session cmdutil.SessionFlags
	JSON    bool
}

// NewCmdAttachments is `sandbox attachments`; runF (nil: runAttachments)
// runs it.
func NewCmdAttachments(f *cmdutil.Factory, runF func(*AttachmentsOptions) error) *cobra.Command {
	opts := &AttachmentsOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "attachments [--session S] [--workspace D] [--json]",
		Short: "List a session's attachments, every version, newest first",
		Long: `List what the session attached with attach(): every version of every
filename, newest first, with its id, size, creation time and whether it
takes comments. --json prints the descriptors list_attachments() returns.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runAttachments(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the descriptors as JSON")
	return cmd
}

func runAttachments(opts *AttachmentsOptions) error {
	s := opts.Session.Streams
	c, err := opts.Session.Existing()
	if err != nil {
		return err
	}
	list, err := c.Attachments()
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(s.Out, list, "  ")
	}
	if len(list) == 0 {
		fmt.Fprintf(s.Out, "session %q has no attachments\n", c.Meta.Name)
		return nil
	}
	// Every cell but the numbers is the session's (a remote
	// peer's with --host): one line of text each.
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFILENAME\tVERSION\tKIND\tSIZE\tCREATED\tCOMMENTABLE")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", termtext.Line(d.ID), termtext.Line(d.Filename), d.Version, termtext.Line(d.Kind), sizeText(d.Size),
			d.Created.Local().Format("2006-01-02 15:04:05"), yesNo(d.Commentable))
	}
	return tw.Flush()
}

// exactArgs is cobra.ExactArgs with a message saying what to give.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return cmdutil.UsageError{Err: errors.New(what)}
		}
		return nil
	}
}

// sizeText is a size as people read it: 512 B, 1.5 KiB, 3.0 MiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
