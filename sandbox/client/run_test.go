package client

import (
	"context"
	"errors"
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// fakeHost is a session's host as its clients see it: it listens on the
// session's socket in a temp folder, lets in a client that shows the key,
// reads its request and hands the connection to serve.
type fakeHost struct {
	conns atomic.Int32 // the connections let in
}

// hostConn is one client's connection to a fake host.
type hostConn struct {
	net.Conn
	pc  *protocol.Conn
	req protocol.Request
}

func (c *hostConn) send(t *testing.T, ev protocol.Event) {
	t.Helper()
	if err := protocol.Write(c.Conn, ev); err != nil {
		t.Errorf("send %s: %v", ev.Ev, err)
	}
}

// newFakeHost serves every connection to a new session with serve, on
// the connection's own goroutine, and returns a client of the session.
func newFakeHost(t *testing.T, serve func(c *hostConn)) (*Session, *fakeHost) {
	t.Helper()
	s, err := Open(t.TempDir(), session.Meta{Name: "fake", Workspace: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.Folder.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Folder.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := &fakeHost{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r, err := session.Authenticate(conn, key)
				if err != nil {
					t.Errorf("the client's key: %v", err)
					return
				}
				h.conns.Add(1)
				c := &hostConn{Conn: conn, pc: protocol.NewConn(r, nil)}
				if c.req, err = c.pc.ReceiveRequest(); err != nil {
					t.Errorf("the client's request: %v", err)
					return
				}
				serve(c)
			}()
		}
	}()
	return s, h
}

// Run sends the block with its options, hands the client every event
// before the result as it comes, and returns the result.
func TestRunStreamsOutputThenTheResult(t *testing.T) {
	events := []protocol.Event{
		{Ev: protocol.EvStarted},
		{Ev: protocol.EvOut, Stream: protocol.StreamStdout, Data: "one\n"},
		{Ev: protocol.EvNote, Kind: protocol.NoteRepair, Data: "repaired"},
		{Ev: protocol.EvOut, Stream: protocol.StreamStderr, Data: "two\n"},
	}
	want := protocol.Result{Saved: 3, Repaired: true, RepairNote: "repaired", DurationMS: 12,
		Error: &protocol.BlockError{Type: "ValueError", Message: "bad", Traceback: "ValueError: bad\n"}}
	got := make(chan protocol.Request, 1)
	s, _ := newFakeHost(t, func(c *hostConn) {
		got <- c.req
		for _, ev := range events {
			c.send(t, ev)
		}
		res := want
		c.send(t, protocol.Event{Ev: protocol.EvResult, Result: &res})
	})
	s.Client = protocol.Client{Kind: "run", ID: "c1"}
	var seen []protocol.Event
	res, err := s.Run("x = 1", RunOptions{Timeout: 5 * time.Second, Echo: true}, func(ev protocol.Event) { seen = append(seen, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if !reflect.DeepEqual(seen, events) {
		t.Errorf("events %+v, want %+v", seen, events)
	}
	req := <-got
	if req.Op != protocol.OpRun || req.V != protocol.Version || req.Code != "x = 1" || req.TimeoutMS != 5000 || !req.Echo ||
		req.Client == nil || req.Client.ID != "c1" || req.Trust == nil {
		t.Errorf("request %+v", req)
	}
}

// A host that dies while the block runs (after it answered) is a clear
// error, and the block is not sent again: it may have run.
func TestRunHostDiesMidBlock(t *testing.T) {
	s, h := newFakeHost(t, func(c *hostConn) {
		c.send(t, protocol.Event{Ev: protocol.EvStarted})
		c.send(t, protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStdout, Data: "half"})
	})
	var out string
	_, err := s.Run("print('half'); crash()", RunOptions{}, func(ev protocol.Event) { out += ev.Data })
	if !errors.Is(err, errHostGone) || err.Error() != "the session's host stopped before it answered" {
		t.Errorf("error %v, want %v", err, errHostGone)
	}
	if out != "half" {
		t.Errorf("output %q before the host died", out)
	}
	if n := h.conns.Load(); n != 1 {
		t.Errorf("the block was sent %d times", n)
	}
}

// A host that dies before it answered anything (killed as the client
// connected) gets the block once more.
func TestRunHostDiesBeforeAnswering(t *testing.T) {
	var first atomic.Bool
	first.Store(true)
	s, h := newFakeHost(t, func(c *hostConn) {
		if first.Swap(false) {
			return // closed unanswered
		}
		c.send(t, protocol.Event{Ev: protocol.EvResult, Result: &protocol.Result{Saved: 1}})
	})
	res, err := s.Run("x = 1", RunOptions{}, nil)
	if err != nil || res.Saved != 1 {
		t.Errorf("result %+v, error %v", res, err)
	}
	if n := h.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// The host's error event is the run's error.
func TestRunHostError(t *testing.T) {
	s, _ := newFakeHost(t, func(c *hostConn) {
		c.send(t, protocol.Event{Ev: protocol.EvError, Message: "the session stopped before the block could run"})
	})
	if _, err := s.Run("x = 1", RunOptions{}, nil); err == nil || err.Error() != "the session stopped before the block could run" {
		t.Errorf("error %v", err)
	}
}

// A cancelled context is told to the host on the run's connection, and
// the result the host answers it with is the run's.
func TestRunContextCancelReachesTheHost(t *testing.T) {
	s, _ := newFakeHost(t, func(c *hostConn) {
		c.send(t, protocol.Event{Ev: protocol.EvStarted})
		req, err := c.pc.ReceiveRequest()
		if err != nil || req.Op != protocol.OpCancel {
			t.Errorf("after the run: %+v, %v", req, err)
			return
		}
		c.send(t, protocol.Event{Ev: protocol.EvResult, Result: &protocol.Result{Saved: -1,
			Error: &protocol.BlockError{Type: "KeyboardInterrupt", Message: "interrupted"}}})
	})
	ctx, cancel := context.WithCancel(context.Background())
	res, err := s.RunContext(ctx, "while True: pass", RunOptions{}, func(ev protocol.Event) {
		if ev.Ev == protocol.EvStarted {
			cancel()
		}
	})
	if err != nil || res.Error == nil || res.Error.Type != "KeyboardInterrupt" {
		t.Errorf("result %+v, error %v", res, err)
	}
}
