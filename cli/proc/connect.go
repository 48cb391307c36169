package proc

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/connect"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
)

// NewCmdConnect is `sandbox connect`, the remote side of --host.
func NewCmdConnect(f *cmdutil.Factory) *cobra.Command { return connectCmd(f, false) }

// connectCmd is connect on f's streams: a process's command line, or
// (stream) the first line of a multiplexed request, parsed by the same
// flags.
func connectCmd(f *cmdutil.Factory, stream bool) *cobra.Command {
	s := f.Streams
	var (
		sf      = cmdutil.SessionFlags{Streams: s, Local: true}
		jf      cmdutil.JailFlags
		noStart bool
		mux     bool
	)
	cmd := &cobra.Command{
		Use:   "connect [--session S] [--workspace D] [--no-start] [--no-jail] [--no-network] [--network on|off|allow] [--root DIR]... [--read-only-root DIR]... [--allow-host P]... [--deny-host P]... | connect --mux",
		Short: "Serve one request of a session on this machine over standard input and output (what --host runs here)",
		Long: `Read one request of the session protocol on standard input and serve it
as a client of this machine: the session's host is started as run starts it
(unless --no-start), its key presented, and the request and its answers
passed on unchanged. This is what --host ssh://, kubectl:// and docker://
run on the remote machine; the policy is this machine's user's settings and
the flags given here, whatever the request asks.

With --mux, standard input and output carry many requests, each a stream
of their own (what the client's multiplexer runs): a stream's first line
gives the flags above for its request, served as connect serves one.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if mux {
				if stream {
					return cmdutil.UsageError{Err: errors.New("--mux is not a flag of a multiplexed request")}
				}
				return serveMux(f)
			}
			err := connect.Serve(s.In, s.Out, connect.Options{
				Existing: sf.Existing,
				Open:     func() (*client.Session, protocol.Policy, error) { return sf.Open(&jf) },
				NoStart:  noStart, Sessions: s.Layout().Sessions(), Version: f.Version})
			if errors.Is(err, connect.ErrAnswered) {
				return cmdutil.ExitError{Code: 1}
			}
			return err
		}),
	}
	sf.Add(cmd)
	jf.Add(cmd)
	cmd.Flags().BoolVar(&noStart, "no-start", false, "do not start the session's host: a request finding none answers that it is not running")
	cmd.Flags().BoolVar(&mux, "mux", false, "serve the multiplexed requests of a client's multiplexer")
	return cmd
}

// serveMux serves the requests of a multiplexed connection on s's
// standard input and output, each as connect serves one on its own: its
// stream's first line parsed by connect's flags, and this machine's
// policy. Their messages go to s's stderr (the engine's, which the
// multiplexer logs).
func serveMux(f *cmdutil.Factory) error {
	s := f.Streams
	return remotemux.Serve(s.In, s.Out, s.Err, func(args []string, in io.Reader, out io.Writer) {
		rf := *f
		rf.In, rf.Out = in, out
		rf.InTerminal, rf.OutTerminal = false, false
		cmd := connectCmd(&rf, true)
		// Never nil: cobra would read this process's own arguments.
		cmd.SetArgs(append([]string{}, args...))
		cmd.SetIn(in)
		cmd.SetOut(s.Err)
		cmd.SetErr(s.Err)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		var ee cmdutil.ExitError
		if err != nil && !errors.As(err, &ee) {
			// Refused before the request was read (its flags): the
			// answer a client finds, as connect's stderr without the
			// multiplexer.
			protocol.Write(out, protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		}
	})
}
