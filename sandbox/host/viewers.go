package host

import (
	"fmt"
	"io"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Bounds of the live view: how many clients may follow a session at
// once, and how much output one may fall behind before it loses some.
const (
	maxViewers   = 16
	viewerBehind = 1 << 20
)

// viewers are the clients following the session's blocks (the follow
// request). A block never waits for them: each has its own queue and
// writer, and a queue past viewerBehind drops output, which the viewer is
// then told.
type viewers struct {
	mu   sync.Mutex
	list []*viewer
	// running is the start event of the block that runs (nil between
	// blocks): a viewer that comes in the middle of it sees it start.
	running *protocol.Event
}

type viewer struct {
	who *protocol.Client // the follower

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []protocol.Event
	bytes   int
	dropped int
	closed  bool
}

// add registers a viewer; nil when there are too many.
func (vs *viewers) add(who *protocol.Client) *viewer {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if len(vs.list) >= maxViewers {
		return nil
	}
	v := &viewer{who: who}
	v.cond = sync.NewCond(&v.mu)
	vs.list = append(vs.list, v)
	if r := vs.running; r != nil && !v.own(r.Client) {
		v.push(*r)
	}
	return v
}

// own says whether a block of client b is the viewer's own: the same
// client process.
func (v *viewer) own(b *protocol.Client) bool {
	return v.who != nil && b != nil && v.who.ID != "" && v.who.ID == b.ID
}

func (vs *viewers) remove(v *viewer) {
	vs.mu.Lock()
	for i, x := range vs.list {
		if x == v {
			vs.list = append(vs.list[:i], vs.list[i+1:]...)
			break
		}
	}
	vs.mu.Unlock()
	v.close()
}

// send queues ev for every viewer but the block's own client.
func (vs *viewers) send(ev protocol.Event, b *protocol.Client) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if ev.Ev == protocol.EvBlock {
		if ev.Kind == protocol.BlockStart {
			vs.running = &ev
		} else {
			vs.running = nil
		}
	}
	for _, v := range vs.list {
		if !v.own(b) {
			v.push(ev)
		}
	}
}

// closeAll ends every follow, when the host stops.
func (vs *viewers) closeAll() {
	vs.mu.Lock()
	list := vs.list
	vs.list = nil
	vs.mu.Unlock()
	for _, v := range list {
		v.close()
	}
}

func (v *viewer) push(ev protocol.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	if ev.Ev == protocol.EvOut && v.bytes+len(ev.Data) > viewerBehind {
		v.dropped += len(ev.Data)
		return
	}
	if v.dropped > 0 {
		v.queue = append(v.queue, protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStderr,
			Data: fmt.Sprintf("[live view: %d bytes of output skipped, this view fell behind]\n", v.dropped)})
		v.dropped = 0
	}
	v.queue = append(v.queue, ev)
	v.bytes += len(ev.Data)
	v.cond.Signal()
}

func (v *viewer) close() {
	v.mu.Lock()
	v.closed = true
	v.cond.Signal()
	v.mu.Unlock()
}

// serve writes the viewer's events to w until it is closed or a write
// fails.
func (v *viewer) serve(w io.Writer) {
	for {
		v.mu.Lock()
		for len(v.queue) == 0 && !v.closed {
			v.cond.Wait()
		}
		if v.closed {
			v.mu.Unlock()
			return
		}
		batch := v.queue
		v.queue, v.bytes = nil, 0
		v.mu.Unlock()
		for _, ev := range batch {
			if err := protocol.Write(w, ev); err != nil {
				return
			}
		}
	}
}

// follow serves a follow request: "ok", then the live view until the
// client closes the connection or the host stops.
func (h *Host) follow(req protocol.Request, out *sink, pc *protocol.Conn) {
	v := h.viewers.add(req.Client)
	if v == nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: fmt.Sprintf("%d clients already follow this session", maxViewers)})
		return
	}
	defer h.viewers.remove(v)
	out.Send(protocol.Event{Ev: protocol.EvOK})
	go func() {
		// The client sends nothing more: a read ends when it leaves.
		var r protocol.Request
		pc.Receive(&r)
		v.close()
	}()
	v.serve(sinkWriter{out})
}

// sinkWriter writes whole lines through a client's sink (one writer per
// connection).
type sinkWriter struct{ s *sink }

func (w sinkWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.gone {
		return 0, io.ErrClosedPipe
	}
	n, err := w.s.w.Write(p)
	if err != nil {
		w.s.gone = true
	}
	return n, err
}
