package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK hands each tools/call to its own goroutine before any handler
// runs, so two calls a client sends without waiting (`zz = 5`, then
// `print(zz)`) could reach the session in either order. order puts them
// back in the order the transport read them: the transport counts the
// calls it reads and does not read past one until the handlers have
// numbered it (arrive), and a call that changes the session waits until
// every call numbered before it has ended.
type order struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	read    uint64        // tools/call requests read
	arrived uint64        // of them, the ones numbered by arrive
	done    map[uint64]bool
	next    uint64 // the lowest number not done yet
	// gone ends when the client has left: every call ends with it.
	gone context.Context
	// named is told the session of every call, before the call runs.
	named func(*mcp.ServerSession)
}

// errWithdrawn is the answer to a call cancelled while it waited for the
// client's earlier calls.
var errWithdrawn error = withdrawn{}

// withdrawn is errWithdrawn's type: a value, not errors.New, so that the
// package has no init work on vis-agent python's start.
type withdrawn struct{}

func (withdrawn) Error() string {
	return "the call was cancelled while it waited for this client's earlier calls, so it did not run"
}

// arriveWait bounds how long the transport waits for a call it read to
// reach the handlers (one the SDK refuses before them never does).
const arriveWait = time.Second

func newOrder() *order {
	return &order{changed: make(chan struct{}), done: map[uint64]bool{}, next: 1}
}

// changedLocked wakes the waiters; the caller holds o.mu.
func (o *order) changedLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// readCall counts a tools/call the transport read.
func (o *order) readCall() {
	o.mu.Lock()
	o.read++
	o.mu.Unlock()
}

// caughtUp waits until every call read has reached the handlers, up to
// arriveWait (then it stops waiting for the ones that did not).
func (o *order) caughtUp() {
	deadline := time.NewTimer(arriveWait)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		if o.arrived >= o.read {
			o.mu.Unlock()
			return
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			o.mu.Lock()
			for ; o.arrived < o.read; o.arrived++ {
				o.finishLocked(o.arrived + 1)
			}
			o.changedLocked()
			o.mu.Unlock()
			return
		}
	}
}

// arrive numbers a call reaching the handlers, in the order read.
func (o *order) arrive() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.arrived++
	o.changedLocked()
	return o.arrived
}

// turn waits until every call numbered before n has ended; false when
// ctx ends first (n is then over).
func (o *order) turn(ctx context.Context, n uint64) bool {
	for {
		o.mu.Lock()
		if o.next >= n {
			o.mu.Unlock()
			return true
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			o.finish(n)
			return false
		}
	}
}

// finish marks call n over.
func (o *order) finish(n uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finishLocked(n)
	o.changedLocked()
}

func (o *order) finishLocked(n uint64) {
	if n < o.next {
		return // over already
	}
	o.done[n] = true
	for o.done[o.next] {
		delete(o.done, o.next)
		o.next++
	}
}

// unordered are the tools that neither wait for earlier calls nor make
// later ones wait: interrupt must reach a running block, and reading
// attachments changes nothing.
func unordered(tool string) bool {
	switch tool {
	case "interrupt", "list_attachments", "read_attachment":
		return true
	}
	return false
}

// middleware runs the calls that change the session in the order read.
func (o *order) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		if o.named != nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				o.named(ss)
			}
		}
		if o.gone != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer context.AfterFunc(o.gone, cancel)()
			defer cancel()
		}
		n := o.arrive()
		arrived := time.Now()
		ctx = context.WithValue(ctx, arrivedKey{}, arrived)
		call, _ := req.(*mcp.CallToolRequest)
		if call != nil && unordered(call.Params.Name) {
			o.finish(n)
			return next(ctx, method, req)
		}
		defer o.finish(n)
		stop := func() {}
		if call != nil {
			stop = progress(ctx, call, func() string {
				return fmt.Sprintf("waiting for this client's earlier calls (%.0f s)", time.Since(arrived).Seconds())
			})
		}
		ok := o.turn(ctx, n)
		stop()
		if !ok {
			return errorResult(errWithdrawn), nil
		}
		return next(ctx, method, req)
	}
}

// orderedTransport is a transport whose connections count the calls they
// read for o.
type orderedTransport struct {
	mcp.Transport
	o *order
}

func (t orderedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &orderedConn{Connection: c, o: t.o}, nil
}

type orderedConn struct {
	mcp.Connection
	o *order
}

func (c *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.o.caughtUp()
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" && req.IsCall() {
		c.o.readCall()
	}
	return msg, err
}
