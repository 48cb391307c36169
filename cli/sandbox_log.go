package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/journal"
)

// followEvery is how often `sandbox log --follow` looks for new blocks.
const followEvery = 200 * time.Millisecond

func newSandboxLogCmd(s Streams) *cobra.Command {
	var (
		sf     = sessionFlags{s: s}
		asJSON bool
		follow bool
		n      int
	)
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
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageError{fmt.Errorf("-n must be 0 (all) or more, not %d", n)}
			}
			c, err := sf.settled()
			if err != nil {
				return err
			}
			ctx := context.Background()
			if follow {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
			}
			return showLog(ctx, c.Folder.JournalFile(), c.Meta.Name, n, follow, asJSON, s.Out)
		}),
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per block")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on showing blocks as they finish, until Ctrl-C")
	cmd.Flags().IntVarP(&n, "lines", "n", 20, "show the `N` latest blocks (0: all)")
	return cmd
}

// showLog prints the journal at path: its latest n blocks, then (follow)
// the new ones until ctx ends.
func showLog(ctx context.Context, path, name string, n int, follow, asJSON bool, out io.Writer) error {
	j, err := journal.OpenRead(path)
	for errors.Is(err, journal.ErrNone) && follow {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
		j, err = journal.OpenRead(path)
	}
	if errors.Is(err, journal.ErrNone) {
		fmt.Fprintf(out, "session %q has run no block yet\n", name)
		return nil
	}
	if err != nil {
		return err
	}
	defer j.Close()
	var last int64
	for first := true; ; first = false {
		want := 0
		if first {
			want = n
		}
		entries, err := j.Last(want, last)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := printEntry(out, e, asJSON); err != nil {
				return err
			}
			last = e.ID
		}
		if first && len(entries) == 0 && !follow {
			fmt.Fprintf(out, "session %q has run no block yet\n", name)
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
	}
}

// printEntry shows one block: a header line, the code with python's
// prompts, its output and how it ended, all of it the session's. The code
// and the lines around it are shown as text (termtext.Text: no colour, a
// carriage return or conceal shown, not obeyed, so nothing a person
// reviews is drawn over or hidden), the output as run shows it on a
// terminal (colours kept).
func printEntry(out io.Writer, e journal.Entry, asJSON bool) error {
	if asJSON {
		return printJSON(out, e, "")
	}
	_, err := io.WriteString(out, e.Render(termtext.Text, termtext.Output))
	return err
}
