package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// LogOptions are `sandbox log`'s flags.
type LogOptions struct {
	Session cmdutil.SessionFlags
	JSON    bool
	Follow  bool
	// Lines is how many of the latest blocks to show (0: all).
	Lines int
}

// NewCmdLog is `sandbox log`; runF (nil: runLog) runs it.
func NewCmdLog(f *cmdutil.Factory, runF func(*LogOptions) error) *cobra.Command {
	opts := &LogOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "log [--session S] [--workspace D] [--follow] [--json] [-n N]",
		Short: "Show a session's journal: the blocks every client ran",
		Long: `Show the latest blocks of a session's journal, oldest first: which
client ran each (run, repl, or mcp with the client's name), when, how long it
took, how it ended, its code and its output (the journal keeps the first and
last lines of a long output, sandbox.journal_mb bounds it). --follow then
shows each block as it finishes, until Ctrl-C; --json prints one JSON
object per block. The journal is read directly: the session need not run.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if opts.Lines < 0 {
				return cmdutil.UsageError{Err: fmt.Errorf("-n must be 0 (all) or more, not %d", opts.Lines)}
			}
			if runF != nil {
				return runF(opts)
			}
			return runLog(opts)
		}),
	}
	opts.Session.Add(cmd)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per block")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "go on showing blocks as they finish, until Ctrl-C")
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 20, "show the `N` latest blocks (0: all)")
	return cmd
}

func runLog(opts *LogOptions) error {
	out := opts.Session.Streams.Out
	c, err := opts.Session.Settled()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if opts.Follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	shown, err := c.Log(ctx, opts.Lines, opts.Follow, func(e client.LogEntry) error { return printEntry(out, e, opts.JSON) })
	if err == nil && shown == 0 && !opts.Follow {
		fmt.Fprintf(out, "session %q has run no block yet\n", c.Meta.Name)
	}
	return err
}

// printEntry shows one block: a header line, the code with python's
// prompts, its output and how it ended, all of it the session's. The code
// and the lines around it are shown as text (termtext.Text: no colour, a
// carriage return or conceal shown, not obeyed, so nothing a person
// reviews is drawn over or hidden), the output as run shows it on a
// terminal (colours kept).
func printEntry(out io.Writer, e client.LogEntry, asJSON bool) error {
	if asJSON {
		return printJSON(out, e, "")
	}
	_, err := io.WriteString(out, e.Render(termtext.Text, termtext.Output))
	return err
}
