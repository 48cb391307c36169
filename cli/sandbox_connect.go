package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
)

// dataChunk is how many bytes of an attachment one "data" event carries
// (before base64).
const dataChunk = 48 << 10

func newSandboxConnectCmd(s Streams) *cobra.Command { return connectCmd(s, false) }

// connectCmd is connect on s: a process's command line, or (stream) the
// first line of a multiplexed request, parsed by the same flags.
func connectCmd(s Streams, stream bool) *cobra.Command {
	var (
		sf      = sessionFlags{s: s, local: true}
		jf      jailFlags
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
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if mux {
				if stream {
					return usageError{errors.New("--mux is not a flag of a multiplexed request")}
				}
				return serveMux(s)
			}
			return serveRequest(s, &sf, &jf, noStart)
		}),
	}
	sf.add(cmd)
	jf.add(cmd)
	cmd.Flags().BoolVar(&noStart, "no-start", false, "do not start the session's host: a request finding none answers that it is not running")
	cmd.Flags().BoolVar(&mux, "mux", false, "serve the multiplexed requests of a client's multiplexer")
	return cmd
}

// serveRequest serves the one request on s's standard input.
func serveRequest(s Streams, sf *sessionFlags, jf *jailFlags, noStart bool) error {
	pc := protocol.NewConn(s.In, s.Out)
	var req protocol.Request
	if err := pc.Receive(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // the client left before it asked anything
		}
		return answerError(pc, "", fmt.Errorf("read the request: %w", err))
	}
	if req.V != protocol.Version {
		host, _ := os.Hostname()
		return answerError(pc, "", fmt.Errorf("the client speaks session protocol version %d, vis-agent %s on %s speaks %d: use the same vis-agent release on both machines",
			req.V, buildVersion(), host, protocol.Version))
	}
	if err := serveConnect(pc, req, sf, jf, noStart); err != nil {
		kind := ""
		if errors.Is(err, client.ErrNotRunning) {
			kind = protocol.KindNotRunning
		}
		return answerError(pc, kind, err)
	}
	return nil
}

// serveMux serves the requests of a multiplexed connection on s's
// standard input and output, each as connect serves one on its own: its
// stream's first line parsed by connect's flags, and this machine's
// policy. Their messages go to s's stderr (the engine's, which the
// multiplexer logs).
func serveMux(s Streams) error {
	return remotemux.Serve(s.In, s.Out, s.Err, func(args []string, in io.Reader, out io.Writer) {
		rs := s
		rs.In, rs.Out = in, out
		rs.InTerminal, rs.OutTerminal = false, false
		cmd := connectCmd(rs, true)
		// Never nil: cobra would read this process's own arguments.
		cmd.SetArgs(append([]string{}, args...))
		cmd.SetIn(in)
		cmd.SetOut(s.Err)
		cmd.SetErr(s.Err)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		var ee exitError
		if err != nil && !errors.As(err, &ee) {
			// Refused before the request was read (its flags): the
			// answer a client finds, as connect's stderr without the
			// multiplexer.
			protocol.Write(out, protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		}
	})
}

// answerError sends the final "error" event, and makes the exit status 1.
func answerError(pc *protocol.Conn, kind string, err error) error {
	pc.Send(protocol.Event{Ev: protocol.EvError, Kind: kind, Message: err.Error()})
	return exitError{1}
}

// serveConnect serves req: the ops connect answers from this machine's
// store, or the host's, through the session's socket.
func serveConnect(pc *protocol.Conn, req protocol.Request, sf *sessionFlags, jf *jailFlags, noStart bool) error {
	answerJSON := func(op protocol.Op, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return pc.Send(protocol.Event{Ev: protocol.Ev(op), Data: string(data)})
	}
	if req.Op == protocol.OpList {
		rows, err := listRows(sf.s)
		if err != nil {
			return err
		}
		return answerJSON(req.Op, rows)
	}
	var (
		c      *client.Session
		policy protocol.Policy
		err    error
	)
	switch req.Op {
	case protocol.OpAttachments, protocol.OpAttachment, protocol.OpAttachmentRead, protocol.OpComment, protocol.OpRemove:
		c, err = sf.existing()
	default:
		if noStart {
			c, err = sf.existing()
		} else {
			c, policy, err = sf.open(jf)
		}
	}
	if err != nil {
		return err
	}
	switch req.Op {
	case protocol.OpAttachments:
		list, err := c.AttachmentsCommented(req.Limit)
		if err != nil {
			return err
		}
		return answerJSON(req.Op, list)
	case protocol.OpAttachment:
		d, err := c.Attachment(req.Name, req.AttachmentVersion)
		if err != nil {
			return err
		}
		return answerJSON(req.Op, d)
	case protocol.OpComment:
		cm, err := c.CommentAttachment(req.Name, req.AttachmentVersion, req.Code)
		if err != nil {
			return err
		}
		return answerJSON(req.Op, cm)
	case protocol.OpAttachmentRead:
		return sendAttachment(pc, c, req.Name)
	case protocol.OpRemove:
		if err := c.Remove(req.Force); err != nil {
			return err
		}
		return pc.Send(protocol.Event{Ev: protocol.EvOK})
	}
	// The policy is this side's: the user's settings here and connect's
	// flags, never what the request says (a request proves nothing).
	if req.Op == protocol.OpRun && req.Policy != nil {
		req.Policy = &policy
	}
	if req.Op != protocol.OpStop {
		return c.Bridge(req, pc.Buffered(), sf.s.Out, !noStart)
	}
	// Stop's answer is passed on once the host has gone, as a local
	// client of stop returns: the client's next request finds it gone.
	var answer bytes.Buffer
	err = c.Bridge(req, pc.Buffered(), &answer, !noStart)
	c.Folder.WaitStopped(10 * time.Second)
	if _, werr := sf.s.Out.Write(answer.Bytes()); err == nil {
		err = werr
	}
	return err
}

// sendAttachment streams the bytes of attachment id as "data" events,
// then "ok".
func sendAttachment(pc *protocol.Conn, c *client.Session, id string) error {
	d, err := c.Attachment(id, 0)
	if err != nil {
		return err
	}
	r, err := c.ReadAttachment(d)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, dataChunk)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if err := pc.Send(protocol.Event{Ev: protocol.EvData, Data: base64.StdEncoding.EncodeToString(buf[:n])}); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return pc.Send(protocol.Event{Ev: protocol.EvOK})
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", d.Filename, err)
		}
	}
}

func newSandboxMuxCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "mux URL",
		Short: "Carry the requests of this machine's clients to the --host URL over one engine connection (started by the clients)",
		Long: `Run the engine's command to URL once, with connect --mux there, and pass
each connection of this user's clients on its socket (under
$VIS_HOME/sandbox/remote) on as a stream of its own. The clients start it
when none answers; it exits after $VIS_SANDBOX_MUX_IDLE (default 10m)
without a request, when the engine ends, or when its socket is removed.`,
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			t, err := client.ParseTarget(args[0])
			if err != nil {
				return usageError{err}
			}
			var idle time.Duration
			if v := s.Getenv(remotemux.EnvIdle); v != "" {
				if idle, err = time.ParseDuration(v); err != nil || idle <= 0 {
					return usageError{fmt.Errorf("$%s=%q: give a duration such as 10m", remotemux.EnvIdle, v)}
				}
			}
			return remotemux.Run(remotemux.Options{URL: t.URL, Engine: t.Command([]string{"--mux"}), Dir: s.Layout().RemoteMux(), Idle: idle, Log: s.Err})
		}),
	}
}
