package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// ControlOptions are the flags of `sandbox stop`, `restart` and
// `interrupt` (Op), one command each.
type ControlOptions struct {
	Session cmdutil.SessionFlags
	Op      string
	// Force: stop or restart also while a block runs.
	Force bool
	// Fresh and Drop: restart without the snapshot, or without names.
	Fresh bool
	Drop  []string
	// Any: interrupt another client's block too.
	Any bool
}

// NewCmdControl is `sandbox stop`, `restart` or `interrupt` (op, with its
// short help); runF (nil: runControl) runs it.
func NewCmdControl(f *cmdutil.Factory, op, short string, runF func(*ControlOptions) error) *cobra.Command {
	opts := &ControlOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}, Op: op}
	cmd := &cobra.Command{
		Use:   op + " [--session S] [--workspace D]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if err := checkDrop(opts.Fresh, opts.Drop); err != nil {
				return cmdutil.UsageError{Err: err}
			}
			if runF != nil {
				return runF(opts)
			}
			return runControl(opts)
		}),
	}
	opts.Session.Add(cmd)
	if op != "interrupt" {
		cmd.Flags().BoolVar(&opts.Force, "force", false, "also while a block runs (it is killed)")
	} else {
		cmd.Use = "interrupt [--session S] [--workspace D] [--any]"
		cmd.Long = `Raise KeyboardInterrupt in the session's running block when a
` + "`sandbox run`" + ` started it, or withdraw the oldest such block waiting for the
session; --any also stops a block of the REPL or of an MCP client. The
answer says whose block was stopped.`
		cmd.Flags().BoolVar(&opts.Any, "any", false, "also another client's block (the REPL's, an MCP client's)")
	}
	if op == "restart" {
		cmd.Use = "restart [--session S] [--workspace D] [--fresh | --drop NAME...] [flags]"
		cmd.Long = `Replace a session's Python process with a new one restored from the
snapshot; the next block's output starts with the [Sandbox restarted] notice.

--fresh discards the snapshot (its helpers, variables and imports): the
session starts empty. --drop NAME (repeatable) leaves one name out of the
restore and so out of the snapshot, for a value or helper that should not
come back. Either starts the new process at once (a stopped session too).`
		cmd.Flags().BoolVar(&opts.Fresh, "fresh", false, "discard the snapshot: the session starts empty")
		cmd.Flags().StringArrayVar(&opts.Drop, "drop", nil, "leave NAME out of the restored session and its snapshot (repeatable)")
	}
	return cmd
}

func runControl(opts *ControlOptions) error {
	sf, op := &opts.Session, opts.Op
	out := sf.Streams.Out
	c, err := sf.Existing()
	if err != nil {
		return err
	}
	name := termtext.Line(strconv.Quote(c.Meta.Name))
	var did string
	switch {
	case op == "stop":
		err, did = c.Stop(opts.Force), "Stopped session "+name+"; its next block restores the snapshot."
	case op == "restart" && (opts.Fresh || len(opts.Drop) > 0):
		// with a host command: a stopped session is started for it
		if c, _, err = sf.Open(nil); err == nil {
			err = c.Restart(client.RestartOptions{Force: opts.Force, Fresh: opts.Fresh, Drop: opts.Drop})
		}
		did = "Restarted session " + name + " empty: its snapshot is discarded."
		if !opts.Fresh {
			did = "Restarted session " + name + " without " + strings.Join(opts.Drop, ", ") + "."
		}
	case op == "restart":
		err = c.Restart(client.RestartOptions{Force: opts.Force})
		did = "Restarted session " + name + "; its next block restores the snapshot."
	default:
		// A command-line interrupt owns the blocks of `sandbox run`.
		c.Client = protocol.Client{Kind: "run"}
		var msg string
		if msg, err = c.Interrupt(opts.Any); err == nil {
			fmt.Fprintln(out, termtext.Line(capitalize(msg))+".")
		}
	}
	if errors.Is(err, client.ErrNotRunning) {
		if op == "stop" {
			fmt.Fprintf(out, "Session %s was not running.\n", name)
			return nil
		}
		return fmt.Errorf("session %q is not running", c.Meta.Name)
	}
	if err == nil && did != "" {
		fmt.Fprintln(out, did)
	}
	return err
}

// capitalize is s with its first letter upper case, for a host's answer
// printed as a sentence.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// checkDrop refuses --fresh with --drop, and a --drop that names no
// Python name.
func checkDrop(fresh bool, drop []string) error {
	if fresh && len(drop) > 0 {
		return errors.New("give --fresh or --drop, not both: --fresh discards every name")
	}
	for _, name := range drop {
		if !isIdentifier(name) {
			return fmt.Errorf("--drop %q: not a Python name", name)
		}
	}
	return nil
}

// isIdentifier reports whether s is a Python identifier (ASCII letters,
// digits and _, or any letter of another script).
func isIdentifier(s string) bool {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}
