package sandbox

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// DefsOptions are `sandbox defs`'s flags and argument: Defs is what the
// session is asked (its Name is the argument NAME).
type DefsOptions struct {
	Session cmdutil.SessionFlags
	Defs    client.DefsOptions
}

// NewCmdDefs is `sandbox defs`; runF (nil: runDefs) runs it.
func NewCmdDefs(f *cmdutil.Factory, runF func(*DefsOptions) error) *cobra.Command {
	opts := &DefsOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "defs [--session S] [NAME] [--pattern RE] [--details] [--json]",
		Short: "List a session's helpers and variables, as defs() does",
		Args:  cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Defs.Name = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runDefs(opts)
		}),
	}
	opts.Session.Add(cmd)
	o := &opts.Defs
	cmd.Flags().StringVar(&o.Pattern, "pattern", "", "only names matching this regular expression")
	cmd.Flags().IntVar(&o.Limit, "limit", 20, "rows per page")
	cmd.Flags().IntVar(&o.Offset, "offset", 0, "rows to skip")
	cmd.Flags().BoolVar(&o.Details, "details", false, "with NAME: its dependencies too")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the helpers and variables as JSON")
	return cmd
}

func runDefs(opts *DefsOptions) error {
	out := opts.Session.Streams.Out
	c, _, err := opts.Session.Open(nil)
	if err != nil {
		return err
	}
	text, err := c.Defs(opts.Defs)
	if err != nil {
		return err
	}
	// Names and docstrings are the session's; JSON as JSON.
	text = strings.TrimRight(text, "\n") + "\n"
	if opts.Defs.JSON {
		_, err = out.Write(termtext.JSON([]byte(text)))
		return err
	}
	_, err = io.WriteString(out, termtext.Text(text))
	return err
}
