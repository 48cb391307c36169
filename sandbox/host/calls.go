package host

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

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// maxCallPayload is the most a host call's payload may claim: past it the
// link is closed rather than read (the attachments' own limit is checked
// first, and is smaller).
const maxCallPayload = 1 << 30

// callLink makes the socketpair of a child's host calls: the host's end,
// and the child's, to pass as its file descriptor 5.
func callLink() (net.Conn, *os.File, error) {
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

// callError is a host call's failure as the child raises it.
type callError struct {
	typ, msg string
}

func (e *callError) Error() string { return e.msg }

func errorf(typ, format string, args ...any) error {
	return &callError{typ: typ, msg: fmt.Sprintf(format, args...)}
}

// reply is what an op answers: a result (JSON) and a payload.
type reply struct {
	result  any
	payload []byte
}

// op is one host call's work, for the session this host serves.
type op func(ctx context.Context, args json.RawMessage, payload []byte) (reply, error)

// callServer serves the host calls of one child.
type callServer struct {
	conn net.Conn
	ops  map[string]op
	// maxPayload is the largest payload a request may carry (the
	// attachments' limit).
	maxPayload int64

	wmu sync.Mutex // one answer at a time on the link
}

// serve reads requests until the child's end closes. Each runs on its own
// goroutine; a new request cancels the one before it (the child makes one
// call at a time, so an earlier call still running was abandoned). It
// returns an error when it closed the link because of what the child
// wrote.
func (s *callServer) serve() error {
	defer s.conn.Close()
	r := bufio.NewReaderSize(s.conn, 64<<10)
	prev := context.CancelFunc(func() {})
	defer func() { prev() }()
	for {
		line, err := readBounded(r, protocol.MaxCallHeader)
		if errors.Is(err, errLongHeader) {
			s.answer(0, reply{}, errorf("ValueError", "tool call: %v; the tool link is closed", err))
			return fmt.Errorf("the session's code wrote %w to the tool link", err)
		}
		if err != nil {
			return nil
		}
		req, err := parseCall(line)
		if err != nil {
			s.answer(0, reply{}, errorf("ValueError", "tool call: %v", err))
			continue
		}
		if req.Size < 0 || req.Size > maxCallPayload {
			s.answer(req.ID, reply{}, errorf("ValueError", "tool call: a payload of %d bytes; the tool link is closed", req.Size))
			return fmt.Errorf("the session's code wrote a request for a payload of %d bytes to the tool link", req.Size)
		}
		var payload []byte
		if req.Size > s.maxPayload {
			if _, err := io.CopyN(io.Discard, r, req.Size); err != nil {
				return nil
			}
			s.answer(req.ID, reply{}, errorf("ValueError", "%s is over the limit of %s per attachment (sandbox.max_attachment_mb in config.toml); nothing was stored",
				sizeText(req.Size), sizeText(s.maxPayload)))
			continue
		}
		if req.Size > 0 {
			payload = make([]byte, req.Size)
			if _, err := io.ReadFull(r, payload); err != nil {
				return nil
			}
		}
		prev()
		ctx, cancel := context.WithCancel(context.Background())
		prev = cancel
		go s.run(ctx, req, payload)
	}
}

func (s *callServer) run(ctx context.Context, req protocol.CallRequest, payload []byte) {
	f := s.ops[req.Op]
	if f == nil {
		s.answer(req.ID, reply{}, errorf("ValueError", "unknown tool call %q", req.Op))
		return
	}
	var rep reply
	err := func() (err error) {
		// A bug in one op must not take the session's host down.
		defer func() {
			if p := recover(); p != nil {
				err = errorf("RuntimeError", "the sandbox host failed in %s: %v", req.Op, p)
			}
		}()
		rep, err = f(ctx, req.Args, payload)
		return err
	}()
	s.answer(req.ID, rep, err)
}

// answer writes one answer; a write that fails means the child is gone.
func (s *callServer) answer(id uint64, rep reply, err error) {
	a := protocol.CallAnswer{ID: id, OK: err == nil, Result: rep.result}
	if err != nil {
		a.Result, rep.payload = nil, nil
		a.Error = pyError(err)
	}
	a.Size = int64(len(rep.payload))
	head, merr := json.Marshal(a)
	if merr != nil {
		head, _ = json.Marshal(protocol.CallAnswer{ID: id, Error: &protocol.CallError{Type: "RuntimeError", Message: "encode the answer: " + merr.Error()}})
		rep.payload = nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.conn.Write(append(head, '\n')); err == nil && len(rep.payload) > 0 {
		s.conn.Write(rep.payload)
	}
}

// pyError is err as the exception the child raises: the type an op chose,
// else one that fits the Go error (RuntimeError when none does), with a
// one-line message.
func pyError(err error) *protocol.CallError {
	typ := errorType(err)
	if typ == "" {
		typ = "RuntimeError"
	}
	msg := err.Error()
	if i := bytes.IndexByte([]byte(msg), '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &protocol.CallError{Type: typ, Message: msg}
}

// errorType is the Python exception an op chose for err (a callError), or
// the one of err's kind, or "" when it has none.
func errorType(err error) string {
	var ce *callError
	switch {
	case errors.As(err, &ce):
		return ce.typ
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
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			return line[:len(line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(line) > max {
			return nil, fmt.Errorf("%w (%d bytes)", errLongHeader, max)
		}
	}
}

// parseCall reads a request header. A line that does not parse is read
// again from its last `{"id":`: garbage written to the link without a
// newline ends up in front of the next real request.
func parseCall(line []byte) (protocol.CallRequest, error) {
	var req protocol.CallRequest
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

// decodeArgs reads an op's arguments into v, refusing unknown fields.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return errorf("TypeError", "bad arguments: %v", err)
	}
	return nil
}

// sizeText is "64 MiB", "1.5 KiB", "12 bytes".
func sizeText(n int64) string {
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
