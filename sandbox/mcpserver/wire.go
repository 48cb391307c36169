package mcpserver

import (
	"bufio"
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
//   - when in ends, the requests already read are answered before the
//     connection closes (`printf '…' | vis-agent sandbox mcp` gets its
//     answers); a client that will not wait sends SIGTERM.
func Stdio(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
	w := &lockedWriter{w: out, pending: map[jsonrpc.ID]bool{}}
	w.idle = sync.NewCond(&w.mu)
	pr, pw := io.Pipe()
	go filter(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter writes whole messages from the SDK and from filter without
// mixing them, and keeps the requests not answered yet.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.WriteCloser
	pending map[jsonrpc.ID]bool
	idle    *sync.Cond // signalled when pending empties
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, err := jsonrpc.DecodeMessage(p); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok {
			l.settle(r.ID)
		}
	}
	return l.w.Write(p)
}

// track notes a message read from the client: a request to answer, or the
// cancellation of one (which may get no answer).
func (l *lockedWriter) track(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Request)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.IsCall() {
		l.pending[r.ID] = true
		return
	}
	if r.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				l.settle(id)
			}
		}
	}
}

func (l *lockedWriter) settle(id jsonrpc.ID) {
	delete(l.pending, id)
	if len(l.pending) == 0 {
		l.idle.Broadcast()
	}
}

// drain waits until every request read has been answered.
func (l *lockedWriter) drain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pending) > 0 {
		l.idle.Wait()
	}
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// filter passes in's JSON-RPC messages to the SDK through pw, answers the
// rest itself, and closes pw when in ends (the SDK then ends the session).
// It stops when the SDK stops reading.
func filter(in io.ReadCloser, pw *io.PipeWriter, out *lockedWriter) {
	defer in.Close()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if len(line) > 0 || tooLong {
			msg := line
			if tooLong {
				msg = nil
			}
			m, reply := check(msg, tooLong)
			if reply != nil {
				if _, err := out.Write(reply); err != nil {
					pw.CloseWithError(err)
					return
				}
			} else {
				out.track(m)
				if _, err := pw.Write(append(line, '\n')); err != nil {
					return // the SDK closed the connection
				}
			}
		}
		if err != nil {
			out.drain()
			pw.Close()
			return
		}
	}
}

// readLine reads one line without its end; a line longer than maxMessage is
// read to its end and dropped, with tooLong set.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, frag...)
			if len(line) > maxMessage {
				line, tooLong = nil, true
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1]
		}
		return trimSpace(line), tooLong, err
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
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
