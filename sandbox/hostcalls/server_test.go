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
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// callPeer is the child's end of a call server's link, for tests.
type callPeer struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan error
	s    *Server
}

// newCallPeer serves ops and streams (with payloads up to max) on a real
// socketpair.
func newCallPeer(t *testing.T, ops map[protocol.Call]Op, streams map[protocol.Call]StreamOp, max int64) *callPeer {
	t.Helper()
	host, child, err := Link()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.FileConn(child)
	child.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(host, ops, streams, max)
	p := &callPeer{t: t, conn: conn, r: bufio.NewReader(conn), done: make(chan error, 1), s: s}
	go func() { p.done <- s.Serve() }()
	t.Cleanup(func() { conn.Close() })
	return p
}

func (p *callPeer) write(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.conn, s); err != nil {
		p.t.Fatal(err)
	}
}

// answer reads the next answer and its payload.
func (p *callPeer) answer() (protocol.CallAnswer, []byte) {
	p.t.Helper()
	p.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := p.r.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("read an answer: %v", err)
	}
	if !strings.HasPrefix(string(line), `{"id":`) {
		p.t.Fatalf("an answer that does not start with its id: %s", line)
	}
	var a protocol.CallAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		p.t.Fatalf("answer %s: %v", line, err)
	}
	data := make([]byte, a.Size)
	if _, err := io.ReadFull(p.r, data); err != nil {
		p.t.Fatal(err)
	}
	return a, data
}

func echoOps() (map[protocol.Call]Op, map[protocol.Call]StreamOp) {
	return map[protocol.Call]Op{
			"block": func(ctx context.Context, args json.RawMessage) (Reply, error) {
				<-ctx.Done()
				return Reply{}, ctx.Err()
			},
			"panic": func(ctx context.Context, args json.RawMessage) (Reply, error) {
				panic("a bug")
			},
			"missing": func(ctx context.Context, args json.RawMessage) (Reply, error) {
				_, err := os.Open("/nonexistent/file")
				return Reply{}, err
			},
		}, map[protocol.Call]StreamOp{
			// echo answers its say argument, and its payload as the
			// answer's.
			"echo": func(ctx context.Context, args json.RawMessage, payload io.Reader) (Reply, error) {
				var in struct{ Say string }
				if err := DecodeArgs(args, &in); err != nil {
					return Reply{}, err
				}
				var data []byte
				if payload != nil {
					var err error
					if data, err = io.ReadAll(payload); err != nil {
						return Reply{}, err
					}
				}
				return Reply{Result: in.Say, Body: io.NopCloser(bytes.NewReader(data)), Size: int64(len(data))}, nil
			},
		}
}

func TestCallsAnswerWithPayloads(t *testing.T) {
	ops, streams := echoOps()
	p := newCallPeer(t, ops, streams, 1<<20)
	p.write(`{"id":1,"size":5,"op":"echo","args":{"say":"hi"}}` + "\nhello")
	a, data := p.answer()
	if a.ID != 1 || !a.OK || a.Result != "hi" || string(data) != "hello" {
		t.Errorf("answer %+v, payload %q", a, data)
	}
	// Over the limit: refused, the payload read past, the link goes on.
	p.write(fmt.Sprintf(`{"id":2,"size":%d,"op":"echo"}`+"\n%s", 2<<20, strings.Repeat("x", 2<<20)))
	a, _ = p.answer()
	if a.ID != 2 || a.OK || a.Error.Type != "ValueError" || !strings.Contains(a.Error.Message, "over the limit of 1 MiB") {
		t.Errorf("over the limit: %+v %+v", a, a.Error)
	}
	p.write(`{"id":3,"size":0,"op":"echo","args":{"say":"still"}}` + "\n")
	if a, _ := p.answer(); a.ID != 3 || a.Result != "still" {
		t.Errorf("after an oversized payload: %+v", a)
	}
}

func TestCallsRefuseBadRequests(t *testing.T) {
	ops, streams := echoOps()
	p := newCallPeer(t, ops, streams, 1<<20)
	for _, c := range []struct{ send, typ, msg string }{
		{"not json\n", "ValueError", "not a JSON request"},
		{`{"id":4,"size":0}` + "\n", "ValueError", "without an op"},
		{`{"id":5,"size":0,"op":"nothing"}` + "\n", "ValueError", `unknown tool call "nothing"`},
		{`{"id":6,"size":0,"op":"echo","args":{"say":"x","session":"other"}}` + "\n", "TypeError", `unknown field "session"`},
		{`{"id":7,"size":0,"op":"echo","args":[1]}` + "\n", "TypeError", "bad arguments"},
		{`{"id":8,"size":0,"op":"panic"}` + "\n", "RuntimeError", "failed in panic: a bug"},
		{`{"id":9,"size":0,"op":"missing"}` + "\n", "FileNotFoundError", "no such file"},
	} {
		p.write(c.send)
		a, _ := p.answer()
		if a.OK || a.Error == nil || a.Error.Type != c.typ || !strings.Contains(a.Error.Message, c.msg) || strings.Contains(a.Error.Message, "\n") {
			t.Errorf("%q: %+v %+v", c.send, a, a.Error)
		}
	}
	// Garbage without a newline, then a real request: the request is
	// found at the end of the line.
	p.write("\xff\x00 half a line")
	p.write(`{"id":10,"size":0,"op":"echo","args":{"say":"found"}}` + "\n")
	if a, _ := p.answer(); a.ID != 10 || a.Result != "found" {
		t.Errorf("after garbage: %+v", a)
	}
}

func TestCallsCancelAnAbandonedCall(t *testing.T) {
	ops, streams := echoOps()
	p := newCallPeer(t, ops, streams, 1<<20)
	p.write(`{"id":1,"size":0,"op":"block"}` + "\n")
	p.write(`{"id":2,"size":0,"op":"echo","args":{"say":"next"}}` + "\n")
	got := map[uint64]protocol.CallAnswer{}
	for range 2 {
		a, _ := p.answer()
		got[a.ID] = a
	}
	if a := got[1]; a.OK || a.Error.Type != "InterruptedError" {
		t.Errorf("the abandoned call: %+v %+v", a, a.Error)
	}
	if a := got[2]; !a.OK || a.Result != "next" {
		t.Errorf("the next call: %+v", a)
	}
}

// TestCallsBounded: calls written past the shim, each ignoring its
// cancellation for a while, are refused past MaxCalls; the ones that run
// are cancelled by the next and by CancelAll (the block's end).
func TestCallsBounded(t *testing.T) {
	ops, streams := echoOps()
	ops["stubborn"] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		time.Sleep(500 * time.Millisecond)
		return Reply{}, ctx.Err()
	}
	p := newCallPeer(t, ops, streams, 1<<20)
	for i := 1; i <= 10; i++ {
		p.write(fmt.Sprintf(`{"id":%d,"size":0,"op":"stubborn"}`+"\n", i))
	}
	refused, cancelled := 0, 0
	for range 10 {
		a, _ := p.answer()
		switch {
		case a.Error != nil && strings.Contains(a.Error.Message, "too many host calls at once"):
			refused++
		case a.Error != nil && a.Error.Type == "InterruptedError":
			cancelled++
		default:
			t.Errorf("answer %+v %+v", a, a.Error)
		}
	}
	if refused != 10-MaxCalls || cancelled != MaxCalls {
		t.Errorf("%d refused, %d cancelled; want %d and %d", refused, cancelled, 10-MaxCalls, MaxCalls)
	}
	// The block's end: a call under way is cancelled at once.
	p.write(`{"id":11,"size":0,"op":"block"}` + "\n")
	time.Sleep(50 * time.Millisecond)
	p.s.CancelAll()
	if a, _ := p.answer(); a.ID != 11 || a.Error == nil || a.Error.Type != "InterruptedError" {
		t.Errorf("after CancelAll: %+v", a)
	}
	// An interrupt's late cancel ends the calls of its time, not the
	// next block's.
	p.s.CancelAfter(100 * time.Millisecond)
	p.write(`{"id":12,"size":0,"op":"stubborn"}` + "\n")
	if a, _ := p.answer(); a.ID != 12 || a.Error != nil {
		t.Errorf("a call after an interrupt: %+v %+v", a, a.Error)
	}
}

func TestCallsCloseOnAHugePayloadOrHeader(t *testing.T) {
	ops, streams := echoOps()
	p := newCallPeer(t, ops, streams, 1<<20)
	p.write(`{"id":1,"size":99999999999,"op":"echo"}` + "\n")
	if a, _ := p.answer(); a.OK || !strings.Contains(a.Error.Message, "the tool link is closed") {
		t.Errorf("a huge payload: %+v", a)
	}
	if err := <-p.done; err == nil || !strings.Contains(err.Error(), "payload of 99999999999 bytes") {
		t.Errorf("serve: %v", err)
	}

	p = newCallPeer(t, ops, streams, 1<<20)
	go io.WriteString(p.conn, strings.Repeat("x", protocol.MaxCallHeader+(64<<10)))
	if a, _ := p.answer(); a.OK || a.ID != 0 {
		t.Errorf("a huge header: %+v", a)
	}
	if err := <-p.done; !errors.Is(err, errLongHeader) {
		t.Errorf("serve: %v", err)
	}
}

func TestCallsEndWithTheChild(t *testing.T) {
	ops, streams := echoOps()
	p := newCallPeer(t, ops, streams, 1<<20)
	p.write(`{"id":1,"size":10,"op":"echo"}` + "\nabc")
	p.conn.Close()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve after the child closed its end: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end with the child's end")
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB"} {
		if got := SizeText(n); got != want {
			t.Errorf("SizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

// slowClose is an answer's body whose Close takes a while, as a file on a
// busy disk can.
type slowClose struct{ io.Reader }

func (slowClose) Close() error {
	time.Sleep(300 * time.Millisecond)
	return nil
}

// TestCallsFreeTheirSlotBeforeTheyAnswer: a call no longer counts against
// MaxCalls once its answer can be read, so the shim's next call (made on
// that answer) never meets its predecessors. It failed when the slot was
// freed after the answer's write and its body's close: CI's
// TestSandboxToolsEdges was refused 'too many host calls at once' on a
// loaded machine, with two forged calls and stragglers still counted.
func TestCallsFreeTheirSlotBeforeTheyAnswer(t *testing.T) {
	ops, streams := echoOps()
	ops["file"] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		return Reply{Result: "f", Body: slowClose{strings.NewReader("data")}, Size: 4}, nil
	}
	p := newCallPeer(t, ops, streams, 1<<20)
	for i := 1; i <= MaxCalls+2; i++ {
		p.write(fmt.Sprintf(`{"id":%d,"size":0,"op":"file"}`+"\n", i))
		a, data := p.answer()
		if a.ID != uint64(i) || !a.OK || string(data) != "data" {
			t.Fatalf("call %d: %+v %+v %q", i, a, a.Error, data)
		}
		p.s.mu.Lock()
		n := len(p.s.running)
		p.s.mu.Unlock()
		if n != 0 {
			t.Fatalf("after the answer to call %d, %d calls still count as under way", i, n)
		}
	}
}
