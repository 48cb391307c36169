package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// RunOptions are `sandbox run`'s flags and argument.
type RunOptions struct {
	Session cmdutil.SessionFlags
	Jail    cmdutil.JailFlags
	// Code is -c's block; CodeGiven says -c was given (an empty block is
	// one).
	Code      string
	CodeGiven bool
	// Files is FILE or - (at most one).
	Files   []string
	Timeout string
	JSON    bool
	Echo    bool
	NoEcho  bool
	Raw     bool
	// Given are the names of the flags given, which decide whether the
	// next identical command line may take the run path (runpath.go).
	Given []string
}

// NewCmdRun is `sandbox run`; runF (nil: runRun) runs it.
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{Session: cmdutil.SessionFlags{Streams: f.Streams}}
	cmd := &cobra.Command{
		Use:   "run [--session S] [--workspace D] [--timeout DUR] [flags] [-c CODE | FILE | -]",
		Short: "Run a Python block in a persistent sandbox session",
		Long: `Run one Python block in the session's persistent namespace: what earlier
blocks defined is still there, also after the session restarted (its
snapshot is restored, with a [Sandbox restarted] notice). The block is
-c CODE, FILE, or standard input (- or nothing, when it is not a terminal).
Output streams as the block prints; an error goes to stderr. When the
block's last statement is an expression whose value is not None, its repr
(cut to 4 KB) follows the output, as a notebook's Out; --no-echo (or
sandbox.echo = false) turns that off. Status 0, or 1 when the block raised,
was refused or timed out, 2 for a bad command line.

On a terminal, escape sequences the block prints other than colours
(the clipboard, the title, the screen) are shown escaped (\x1b]52;…);
--raw passes them through.

--timeout (default 300s, kept within 3s..35m) interrupts the block with
KeyboardInterrupt; a block that does not stop 5 s later has its Python
process retired (hang record under $VIS_HOME/logs).

The session's Python is jailed: files only in the workspace, the session's
folder and its temp folder (read-only: Python's own), no new processes, no
ctypes, no signals to other processes, at most sandbox.max_threads threads
and sandbox.memory_mb of address space, and the network only to the package
index (python.index_url, else PyPI) through a proxy; session.access says
what is in force. --no-jail lifts the jail (not the thread and memory caps),
--allow-host adds hosts, --network on opens the network, --no-network
refuses it, --root/--read-only-root add folders; a block asking for another
policy than the running one restarts the session's Python first, with the
notice.`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			opts.CodeGiven = cmd.Flags().Changed("code")
			opts.Given = nil
			cmd.Flags().Visit(func(f *pflag.Flag) { opts.Given = append(opts.Given, f.Name) })
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		}),
	}
	opts.Session.Add(cmd)
	opts.Jail.Add(cmd)
	cmd.Flags().StringVarP(&opts.Code, "code", "c", "", "the block to run")
	cmd.Flags().StringVar(&opts.Timeout, "timeout", "", "interrupt the block after DUR (e.g. 30s, 2m; default 300s)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object: session, workspace, stdout, error, repaired, repair_note, restarted, notice, timed_out, duration_ms, attachments, checks, git")
	cmd.Flags().BoolVar(&opts.Echo, "echo", false, "show the repr of a trailing expression even when sandbox.echo = false")
	cmd.Flags().BoolVar(&opts.NoEcho, "no-echo", false, "do not show the repr of a trailing expression")
	cmd.Flags().BoolVar(&opts.Raw, "raw", false, "on a terminal, pass the block's escape sequences through (by default only colours are; others are shown escaped)")
	return cmd
}

func runRun(opts *RunOptions) error {
	s := opts.Session.Streams
	d, err := parseTimeout(opts.Timeout, s.Err)
	if err != nil {
		return err
	}
	src, err := blockSource(s, opts.CodeGiven, opts.Code, opts.Files)
	if err != nil {
		return err
	}
	c, policy, err := opts.Session.Open(&opts.Jail)
	if err != nil {
		return err
	}
	c.Client = client.NewClient("run", "")
	if opts.Echo && opts.NoEcho {
		return cmdutil.UsageError{Err: errors.New("give --echo or --no-echo, not both")}
	}
	echo := opts.Echo
	if !echo {
		echo = !opts.NoEcho && config.Load(s.Layout().UserConfig()).SandboxEcho.Value
	}
	stdout, stderr := terminalSafe(s.Out, s.OutTerminal && !opts.Raw), terminalSafe(s.Err, s.ErrTerminal && !opts.Raw)
	defer stdout.Flush()
	defer stderr.Flush()
	err = runBlock(c, src, client.RunOptions{Timeout: d, Echo: echo, Policy: &policy}, opts.JSON, stdout, stderr)
	if errors.As(err, new(cmdutil.ExitError)) || err == nil {
		saveRunPlan(s, opts.Given, c, protocol.Request{Op: protocol.OpRun, Code: src, Echo: echo, Policy: &policy})
	}
	return err
}

// flushWriter is a stream of `sandbox run`'s output.
type flushWriter interface {
	io.Writer
	Flush() error
}

// passThrough is a flushWriter with nothing to flush.
type passThrough struct{ io.Writer }

func (passThrough) Flush() error { return nil }

// terminalSafe is w, made to show a block's escape sequences other than
// colours escaped when safe is set (w is a terminal): the block must not
// drive the user's terminal (clipboard, title, screen).
func terminalSafe(w io.Writer, safe bool) flushWriter {
	if safe {
		return &termtext.Writer{W: w, KeepCR: true}
	}
	return passThrough{w}
}

// parseTimeout reads --timeout: a Go duration (30s, 2m) or seconds. A
// timeout outside the host's bounds is clamped, and a line on stderr says
// so.
func parseTimeout(s string, stderr io.Writer) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, cmdutil.UsageError{Err: fmt.Errorf("invalid --timeout %q: use a duration such as 30s or 5m", s)}
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return 0, cmdutil.UsageError{Err: fmt.Errorf("invalid --timeout %q: it must be positive", s)}
	}
	if c := protocol.ClampTimeout(d); c != d {
		fmt.Fprintf(stderr, "vis-agent: --timeout %s is outside %s..%s; the block gets %s\n", s, protocol.MinTimeout, protocol.MaxTimeout, c)
		d = c
	}
	return d, nil
}

// blockSource is the block: -c CODE, FILE, or standard input.
func blockSource(s cmdutil.Streams, codeGiven bool, code string, args []string) (string, error) {
	if codeGiven {
		if len(args) > 0 {
			return "", cmdutil.UsageError{Err: errors.New("give the block once: -c CODE, FILE or -")}
		}
		return code, nil
	}
	if len(args) == 0 && s.InTerminal {
		return "", cmdutil.UsageError{Err: errors.New("no block: give -c CODE, FILE, or pipe it on standard input")}
	}
	src, err := readBlock(s, args)
	if err != nil {
		return "", err
	}
	return src, nil
}

// forwardInterrupts makes Ctrl-C (SIGINT) cancel this run: its block is
// interrupted, as in python, or withdrawn while it still waits for the
// session; a second one leaves at once (the block goes on). It
// returns the function that stops forwarding.
func forwardInterrupts(cancel context.CancelFunc, stderr io.Writer) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		// This run's own block only: withdrawn while it waits behind
		// another client's, interrupted when it runs.
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "vis-agent: left the block running in the session")
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// runBlock runs src and reports it as people or programs (--json) read it.
func runBlock(s *client.Session, src string, opts client.RunOptions, asJSON bool, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer forwardInterrupts(cancel, stderr)()
	var printed strings.Builder
	res, err := s.RunContext(ctx, src, opts, func(ev protocol.Event) {
		switch {
		case ev.Ev == protocol.EvStarted:
		case ev.Ev == protocol.EvWait:
			fmt.Fprintf(stderr, "vis-agent: %s\n", termtext.Text(ev.Message))
		case asJSON:
			if ev.Ev == protocol.EvOut {
				printed.WriteString(ev.Data)
			}
		case ev.Ev == protocol.EvNote:
			fmt.Fprintln(stdout, ev.Data)
		case ev.Stream == protocol.StreamStderr:
			io.WriteString(stderr, ev.Data)
		default:
			io.WriteString(stdout, ev.Data)
		}
	})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s.Report(printed.String(), res)); err != nil {
			return err
		}
	} else {
		for _, a := range res.Attachments {
			fmt.Fprintf(stderr, "[attached %s version %d: %s, %s, id %s]\n", termtext.Line(a.Filename), a.Version, termtext.Line(a.MediaType), sizeText(a.Size), termtext.Line(a.ID))
		}
		if res.Error != nil {
			io.WriteString(stderr, res.Error.Traceback)
		}
	}
	if res.Error != nil {
		return cmdutil.ExitError{Code: 1}
	}
	return nil
}
