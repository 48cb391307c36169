// Package connect is the server side of --host: `vis-agent sandbox
// connect` on the session's machine serves one request of a remote
// client as a local client of that machine (sandbox/client), under this
// machine's policy whatever the request asks.
package connect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// dataChunk is how many bytes of an attachment one "data" event carries
// (before base64).
const dataChunk = 48 << 10

// ErrAnswered is Serve's error when the request failed: the error was
// the answer the client got.
var ErrAnswered = errors.New("the request failed; its error was answered")

// Options are what the command line of connect decided.
type Options struct {
	// Existing is the client of the session connect's flags name, which
	// must exist (its host is not started).
	Existing func() (*client.Session, error)
	// Open is the client of that session, starting its host under the
	// policy returned: this machine's user's settings and connect's
	// flags.
	Open func() (*client.Session, protocol.Policy, error)
	// NoStart: never start the session's host (Open is not called).
	NoStart bool
	// Sessions is this machine's sessions folder, listed for OpList.
	Sessions string
	// Version is vis-agent's, named when the client speaks another
	// protocol version.
	Version string
}

// Serve serves the one request on in, answering on out: the ops connect
// answers from this machine's store, or the host's, through the session's
// socket. A request that fails is answered with an "error" event, and
// Serve returns ErrAnswered.
func Serve(in io.Reader, out io.Writer, o Options) error {
	pc := protocol.NewConn(in, out)
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
			req.V, o.Version, host, protocol.Version))
	}
	if err := serve(pc, req, out, o); err != nil {
		kind := ""
		if errors.Is(err, client.ErrNotRunning) {
			kind = protocol.KindNotRunning
		}
		return answerError(pc, kind, err)
	}
	return nil
}

// answerError sends the final "error" event.
func answerError(pc *protocol.Conn, kind string, err error) error {
	pc.Send(protocol.Event{Ev: protocol.EvError, Kind: kind, Message: err.Error()})
	return ErrAnswered
}

// serve serves req, whose answer goes to out through pc.
func serve(pc *protocol.Conn, req protocol.Request, out io.Writer, o Options) error {
	answerJSON := func(op protocol.Op, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return pc.Send(protocol.Event{Ev: protocol.Ev(op), Data: string(data)})
	}
	if req.Op == protocol.OpList {
		rows, err := client.List(o.Sessions)
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
		c, err = o.Existing()
	default:
		if o.NoStart {
			c, err = o.Existing()
		} else {
			c, policy, err = o.Open()
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
		return c.Bridge(req, pc.Buffered(), out, !o.NoStart)
	}
	// Stop's answer is passed on once the host has gone, as a local
	// client of stop returns: the client's next request finds it gone.
	var answer bytes.Buffer
	err = c.Bridge(req, pc.Buffered(), &answer, !o.NoStart)
	c.Folder.WaitStopped(10 * time.Second)
	if _, werr := out.Write(answer.Bytes()); err == nil {
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
