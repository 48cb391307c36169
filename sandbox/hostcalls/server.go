// Package hostcalls is the host's server of a child's host calls (the
// link of fd 5: shell, install, attach, cat, grep, patch…): the framing
// of requests and answers and their payloads, the bounds of the calls
// under way, their cancellation when their block ends, and the Python
// exception each failure becomes; and the attachment calls (attach.go),
// for the session whose store the host hands them; cat and grep
// (tools.go), under the access the host works out; patch with its
// checks (patch.go), on what the host knows of the session's files
// (PatchFiles); the shell calls (shell.go), on the commands the host
// keeps (ShellHost); install's arguments and answer (install.go), around
// the host's own install (Installer); and session() and read_session()
// (session.go), on what the host knows and the journal it writes. The host
// hands each what it keeps; what its calls hold in common with its blocks
// (the file checks, the commands, the installs) stays with it.
package hostcalls

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// maxCallPayload is the most a host call's payload may claim: past it the
// link is closed rather than read (the attachments' own limit is checked
// first, and is smaller).
const maxCallPayload = 1 << 30

// Link makes the socketpair of a child's host calls: the host's end,
// and the child's, to pass as its file descriptor 5.
func Link() (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("make the tool link: %w", err)
	}
	hostEnd := os.NewFile(uintptr(fds[0]), "calls")
	conn, err := net.FileConn(hostEnd)
	hostEnd.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("make the tool link: %w", err)
	}
	return conn, os.NewFile(uintptr(fds[1]), "calls"), nil
}

// Error is a host call's failure as the child raises it: a Python
// exception's type and its message.
type Error struct {
	Type, Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf is an Error of type typ.
func Errorf(typ, format string, args ...any) error {
	return &Error{Type: typ, Message: fmt.Sprintf(format, args...)}
}

// Reply is what an op answers: a result (JSON), and a payload of Size
// bytes streamed from Body (nil: none).
type Reply struct {
	Result any
	Body   io.ReadCloser
	Size   int64
}

// Op is one host call's work, for the session this host serves; ctx ends
// when the call is abandoned (its block ended or was interrupted).
type Op func(ctx context.Context, args json.RawMessage) (Reply, error)

// StreamOp is an op that takes a payload: it reads it from the link
// (payload holds exactly the request's size bytes) before the next
// request is read, so a payload is never held whole in memory.
type StreamOp func(ctx context.Context, args json.RawMessage, payload io.Reader) (Reply, error)

// Bounds of one child's host calls.
const (
	// MaxCalls is how many may run at once. The child's shim makes one at
	// a time (an earlier one still running was abandoned): more means the
	// session's code wrote requests to the link itself, and the rest are
	// refused.
	MaxCalls = 4
	// maxCallBytes bounds the request headers the running calls hold.
	maxCallBytes = 32 << 20
	// answerTimeout bounds the write of one answer: a child that does not
	// read its link loses it.
	answerTimeout = 30 * time.Second
)

// Server serves the host calls of one child.
type Server struct {
	conn    net.Conn
	ops     map[protocol.Call]Op
	streams map[protocol.Call]StreamOp
	// maxPayload is the largest payload a request may carry (the
	// attachments' limit).
	maxPayload int64

	wmu sync.Mutex // one answer at a time on the link

	mu      sync.Mutex
	running map[*callSlot]struct{} // the calls under way
	broken  string                 // why the host closed the link
}

// NewServer is the server of the calls on conn (serve it to start):
// ops and streams (the ops taking a payload, of at most maxPayload bytes)
// by the call they do.
func NewServer(conn net.Conn, ops map[protocol.Call]Op, streams map[protocol.Call]StreamOp, maxPayload int64) *Server {
	return &Server{conn: conn, ops: ops, streams: streams, maxPayload: maxPayload}
}

// callSlot is one call under way.
type callSlot struct {
	cancel context.CancelFunc
	bytes  int
}

// begin registers a call whose header took n bytes: the calls under way
// before it were abandoned, and are cancelled; past the bounds it is
// refused (nil).
func (s *Server) begin(n int) (context.Context, *callSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := n
	for c := range s.running {
		c.cancel()
		held += c.bytes
	}
	if len(s.running) >= MaxCalls || held > maxCallBytes {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &callSlot{cancel: cancel, bytes: n}
	if s.running == nil {
		s.running = map[*callSlot]struct{}{}
	}
	s.running[c] = struct{}{}
	return ctx, c
}

// end forgets a call that answered.
func (s *Server) end(c *callSlot) {
	c.cancel()
	s.mu.Lock()
	delete(s.running, c)
	s.mu.Unlock()
}

// CancelAll abandons every call under way: their block ended, was
// interrupted, or the child is gone.
func (s *Server) CancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.running {
		c.cancel()
	}
}

// CancelAfter abandons the calls under way now, after d: not one a later
// block makes meanwhile.
func (s *Server) CancelAfter(d time.Duration) {
	s.mu.Lock()
	now := make([]*callSlot, 0, len(s.running))
	for c := range s.running {
		now = append(now, c)
	}
	s.mu.Unlock()
	time.AfterFunc(d, func() {
		for _, c := range now {
			c.cancel()
		}
	})
}

// refusal is the answer to a call past the bounds.
func refusal() error {
	return Errorf("RuntimeError", "too many host calls at once (at most %d, holding %d MiB of arguments): the session's functions make one at a time, so these were written to the host-call link directly", MaxCalls, maxCallBytes>>20)
}

// serve reads requests until the child's end closes. Each runs on its own
// goroutine, but for those with a payload, which read it first; a new
// request cancels the ones before it (the child makes one call at a time,
// so an earlier call still running was abandoned). It returns an error
// when it closed the link because of what the child wrote or did not
// read.
func (s *Server) Serve() error {
	defer s.CancelAll()
	defer s.conn.Close()
	r := bufio.NewReaderSize(s.conn, 64<<10)
	for {
		line, err := readBounded(r, protocol.MaxCallHeader)
		if errors.Is(err, errLongHeader) {
			s.answer(0, Reply{}, Errorf("ValueError", "tool call: %v; the tool link is closed", err))
			return fmt.Errorf("the session's code wrote %w to the tool link", err)
		}
		if err != nil {
			return s.brokenErr()
		}
		req, err := parseCall(line)
		if err != nil {
			s.answer(0, Reply{}, Errorf("ValueError", "tool call: %v", err))
			continue
		}
		if req.Size < 0 || req.Size > maxCallPayload {
			s.answer(req.ID, Reply{}, Errorf("ValueError", "tool call: a payload of %d bytes; the tool link is closed", req.Size))
			return fmt.Errorf("the session's code wrote a request for a payload of %d bytes to the tool link", req.Size)
		}
		if req.Size > 0 {
			if err := s.stream(req, len(line), &exactly{r: r, left: req.Size}); err != nil {
				return s.brokenErr()
			}
			continue
		}
		ctx, slot := s.begin(len(line))
		if slot == nil {
			s.answer(req.ID, Reply{}, refusal())
			continue
		}
		go s.run(ctx, req, nil, slot)
	}
}

// stream serves a request with a payload, here, before the next request
// is read; what its op leaves of the payload is read past. An error means
// the link failed.
func (s *Server) stream(req protocol.CallRequest, n int, payload io.Reader) error {
	switch {
	case s.streams[req.Op] == nil:
		s.answer(req.ID, Reply{}, Errorf("ValueError", "tool call %q takes no payload", req.Op))
	case req.Size > s.maxPayload:
		s.answer(req.ID, Reply{}, Errorf("ValueError", "%s is over the limit of %s per attachment (sandbox.max_attachment_mb in config.toml); nothing was stored",
			SizeText(req.Size), SizeText(s.maxPayload)))
	default:
		ctx, slot := s.begin(n)
		if slot == nil {
			s.answer(req.ID, Reply{}, refusal())
			break
		}
		s.run(ctx, req, payload, slot)
	}
	_, err := io.Copy(io.Discard, payload)
	return err
}

// exactly reads the next left bytes of r; fewer (the child's end closed
// in the middle) is io.ErrUnexpectedEOF, so that an op never takes a cut
// payload for a whole one.
type exactly struct {
	r    io.Reader
	left int64
}

func (e *exactly) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (s *Server) run(ctx context.Context, req protocol.CallRequest, payload io.Reader, slot *callSlot) {
	f, sf := s.ops[req.Op], s.streams[req.Op]
	if f == nil && sf == nil {
		s.answerFor(slot, req.ID, Reply{}, Errorf("ValueError", "unknown tool call %q", req.Op))
		return
	}
	var rep Reply
	err := func() (err error) {
		// A bug in one op must not take the session's host down.
		defer func() {
			if p := recover(); p != nil {
				err = Errorf("RuntimeError", "the sandbox host failed in %s: %v", req.Op, p)
			}
		}()
		if sf != nil {
			rep, err = sf(ctx, req.Args, payload)
		} else {
			rep, err = f(ctx, req.Args)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = Errorf("InterruptedError", "%s was abandoned: its block ended or was interrupted", req.Op)
		}
		return err
	}()
	s.answerFor(slot, req.ID, rep, err)
}

// answer writes the answer to a request that never ran (no slot).
func (s *Server) answer(id uint64, rep Reply, err error) {
	s.answerFor(nil, id, rep, err)
}

// answerFor writes one answer, within answerTimeout; a write that fails
// means the child is gone or does not read, and the link is closed. The
// call's slot is freed once the answer holds the link, before a byte of
// it is written: the shim makes its next call on this answer, which must
// not find this one still counted against MaxCalls, while the answers
// waiting for the link stay bounded by it.
func (s *Server) answerFor(slot *callSlot, id uint64, rep Reply, err error) {
	if rep.Body != nil {
		defer rep.Body.Close()
	}
	a := protocol.CallAnswer{ID: id, OK: err == nil, Result: rep.Result, Size: rep.Size}
	if err != nil {
		a.Result, a.Size = nil, 0
		a.Error = pyError(err)
	}
	head, merr := json.Marshal(a)
	if merr != nil {
		head, _ = json.Marshal(protocol.CallAnswer{ID: id, Error: &protocol.CallError{Type: "RuntimeError", Message: "encode the answer: " + merr.Error()}})
		a.Size = 0
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if slot != nil {
		s.end(slot)
	}
	s.conn.SetWriteDeadline(time.Now().Add(answerTimeout))
	_, werr := s.conn.Write(append(head, '\n'))
	if werr == nil && a.Size > 0 {
		_, werr = io.CopyN(s.conn, rep.Body, a.Size)
	}
	if errors.Is(werr, os.ErrDeadlineExceeded) {
		s.mu.Lock()
		if s.broken == "" {
			s.broken = fmt.Sprintf("the session's code did not read an answer on the tool link for %s", answerTimeout)
		}
		s.mu.Unlock()
	}
	if werr != nil {
		s.conn.Close() // the child is gone, or will not read
	}
}

// brokenErr is why the host closed the link, nil when it did not.
func (s *Server) brokenErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == "" {
		return nil
	}
	return errors.New(s.broken)
}

// pyError is err as the exception the child raises: the type an op chose,
// else one that fits the Go error (RuntimeError when none does), with a
// one-line message.
func pyError(err error) *protocol.CallError {
	typ := ErrorType(err)
	if typ == "" {
		typ = "RuntimeError"
	}
	msg := err.Error()
	if i := bytes.IndexByte([]byte(msg), '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &protocol.CallError{Type: typ, Message: msg}
}

// ErrorType is the Python exception an op chose for err (an Error), or
// the one of err's kind, or "" when it has none.
func ErrorType(err error) string {
	var ce *Error
	switch {
	case errors.As(err, &ce):
		return ce.Type
	case errors.Is(err, os.ErrNotExist):
		return "FileNotFoundError"
	case errors.Is(err, os.ErrPermission):
		return "PermissionError"
	case errors.Is(err, syscall.EISDIR):
		return "IsADirectoryError"
	case errors.Is(err, context.Canceled):
		return "InterruptedError"
	case errors.Is(err, context.DeadlineExceeded):
		return "TimeoutError"
	}
	return ""
}

var errLongHeader = errors.New("a header longer than the limit")

// readBounded reads one line (without its newline) of at most max bytes.
func readBounded(r *bufio.Reader, max int) ([]byte, error) {
	line, err := protocol.ReadLine(r, max)
	var be *protocol.BoundsError
	if errors.As(err, &be) {
		return nil, fmt.Errorf("%w (%d bytes)", errLongHeader, max)
	}
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

// parseCall reads a request header. A line that does not parse is read
// again from its last `{"id":`: garbage written to the link without a
// newline ends up in front of the next real request.
func parseCall(line []byte) (protocol.CallRequest, error) {
	var req protocol.CallRequest
	// Counted first: an op's arguments decode into lists (see
	// protocol.Bounds).
	if err := protocol.CallBounds.Check(line); err != nil {
		return req, err
	}
	err := json.Unmarshal(line, &req)
	if err != nil {
		if i := bytes.LastIndex(line, []byte(`{"id":`)); i > 0 {
			if json.Unmarshal(line[i:], &req) == nil {
				err = nil
			}
		}
	}
	if err != nil {
		return req, errors.New("a header that is not a JSON request")
	}
	if req.Op == "" {
		return req, errors.New("a request without an op")
	}
	return req, nil
}

// DecodeArgs reads an op's arguments into v, refusing unknown fields.
func DecodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return Errorf("TypeError", "bad arguments: %v", err)
	}
	return nil
}

// SizeText is "64 MiB", "1.5 KiB", "12 bytes".
func SizeText(n int64) string {
	units := []string{"KiB", "MiB", "GiB"}
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
