package cli

import (
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
)

// dataChunk is how many bytes of an attachment one "data" event carries
// (before base64).
const dataChunk = 48 << 10

func newSandboxConnectCmd(s Streams) *cobra.Command {
	var (
		sf      = sessionFlags{s: s, local: true}
		jf      jailFlags
		noStart bool
	)
	cmd := &cobra.Command{
		Use:   "connect [--session S] [--workspace D] [--no-start] [--no-jail] [--no-network] [--root DIR]... [--read-only-root DIR]... [--allow-host P]... [--deny-host P]...",
		Short: "Serve one request of a session on this machine over standard input and output (what --host runs here)",
		Long: `Read one request of the session protocol on standard input and serve it
as a client of this machine: the session's host is started as run starts it
(unless --no-start), its key presented, and the request and its answers
passed on unchanged. This is what --host ssh://, kubectl:// and docker://
run on the remote machine; the policy is this machine's user's settings and
the flags given here, whatever the request asks.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
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
			if err := serveConnect(pc, req, &sf, &jf, noStart); err != nil {
				kind := ""
				if errors.Is(err, client.ErrNotRunning) {
					kind = protocol.KindNotRunning
				}
				return answerError(pc, kind, err)
			}
			return nil
		}),
	}
	sf.add(cmd)
	jf.add(cmd)
	cmd.Flags().BoolVar(&noStart, "no-start", false, "do not start the session's host: a request finding none answers that it is not running")
	return cmd
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
	if err := c.Bridge(req, pc.Buffered(), sf.s.Out, !noStart); err != nil {
		return err
	}
	if req.Op == protocol.OpStop {
		// As a local client of stop returns: once the host has gone.
		c.Folder.WaitStopped(10 * time.Second)
	}
	return nil
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
