package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxMessage bounds one incoming message (the SDK's own line limit).
const maxMessage = mcp.DefaultMaxLineLength

// Stdio is the server's transport over in and out: newline-delimited
// JSON-RPC, as the SDK's own, except that
//   - a line that is not a JSON-RPC message (bad JSON, a wrong shape, a
//     batch, an oversized line) is answered with a JSON-RPC error and
//     skipped: the SDK would end the connection instead, and one bad line
//     from a client would cost the agent its server;
//   - when in ends, the client has gone: the server is told (gone), which
//     interrupts the client's running block and withdraws its queued
//     ones, and their answers are written before the connection closes.
func Stdio(in io.Reader, out io.Writer) mcp.Transport {
	return stdio{in: in, out: out}
}

type stdio struct {
	in   io.Reader
	out  io.Writer
	gone func() // called once in ends (nil: nothing to tell)
}

func (s stdio) Connect(context.Context) (mcp.Connection, error) {
	c := &conn{in: s.in, out: s.out, gone: s.gone, msgs: make(chan jsonrpc.Message, 16), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}}
	c.idle = sync.NewCond(&c.mu)
	go c.read()
	return c, nil
}

// conn is one connection: a goroutine reads lines (a blocked read of
// standard input cannot be interrupted, so Close does not wait for it),
// writes are whole messages under a lock.
type conn struct {
	in        io.Reader
	out       io.Writer
	gone      func()
	msgs      chan jsonrpc.Message // closed when in ends
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex // guards out, pending and shut
	pending map[jsonrpc.ID]bool
	idle    *sync.Cond // signalled when pending empties or the conn closes
	shut    bool
}

func (c *conn) SessionID() string { return "" }

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m, ok := <-c.msgs:
		if ok {
			c.track(m)
			return m, nil
		}
		if c.gone != nil {
			c.gone()
		}
		c.drain()
		return nil, io.EOF
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Write(ctx context.Context, m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return fmt.Errorf("encode a message: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := m.(*jsonrpc.Response); ok {
		c.settle(r.ID)
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.mu.Lock()
		c.shut = true
		c.idle.Broadcast()
		c.mu.Unlock()
		if rc, ok := c.in.(io.Closer); ok {
			rc.Close()
		}
	})
	return nil
}

// read hands in's JSON-RPC messages to Read and answers the other lines
// itself, until in ends or the connection closes.
func (c *conn) read() {
	defer close(c.msgs)
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if len(line) > 0 || tooLong {
			m, reply := check(line, tooLong)
			if reply != nil {
				c.mu.Lock()
				_, werr := c.out.Write(reply)
				c.mu.Unlock()
				if werr != nil {
					return
				}
			} else {
				select {
				case c.msgs <- m:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// track notes a message read from the client: a request to answer, or the
// cancellation of one (which may get no answer).
func (c *conn) track(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.IsCall() {
		c.pending[r.ID] = true
		return
	}
	if r.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.settle(id)
			}
		}
	}
}

func (c *conn) settle(id jsonrpc.ID) {
	delete(c.pending, id)
	if len(c.pending) == 0 {
		c.idle.Broadcast()
	}
}

// drain waits until every request read has been answered, or the
// connection closes.
func (c *conn) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 && !c.shut {
		c.idle.Wait()
	}
}

// readLine reads one line without its end and surrounding blanks; a line
// longer than maxMessage is read to its end and dropped, with tooLong set.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, frag...)
			if len(line) > maxMessage {
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return trimBlanks(line), tooLong, err
	}
}

func trimBlanks(b []byte) []byte {
	blank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	for len(b) > 0 && blank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && blank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// check decodes a message the SDK can take, or is the error to answer.
func check(line []byte, tooLong bool) (jsonrpc.Message, []byte) {
	switch {
	case tooLong:
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes: ignored", maxMessage))
	case !json.Valid(line):
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON; send one JSON-RPC 2.0 message per line")
	case line[0] == '[':
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		json.Unmarshal(line, &probe)
		id := probe.ID
		if _, bad := jsonrpc.MakeID(id); bad != nil {
			id = nil
		}
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: "+describe(err))
	}
	return m, nil
}

func describe(err error) string {
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return err.Error() + ` (a JSON-RPC 2.0 message has "jsonrpc": "2.0", and a string "method" or, for a response, an "id")`
}

func errorReply(id any, code int64, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return append(b, '\n')
}
