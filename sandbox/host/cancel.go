package host

import (
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// A block's life as its cancel sees it.
const (
	blockWaiting = iota
	blockRunning
	blockWithdrawn
	blockDone
)

// watch follows a run request's connection after the request: a "cancel"
// line, or the client leaving, while the block waits for the session
// withdraws it (it never runs); a "cancel" while it runs interrupts it,
// and only it, never a block another client started.
type watch struct {
	h         *Host
	mu        sync.Mutex
	state     int
	withdrawn chan struct{} // closed when the block is withdrawn
}

// watchRun reads what the client sends after its run request.
func (h *Host) watchRun(pc *protocol.Conn) *watch {
	w := &watch{h: h, withdrawn: make(chan struct{})}
	go func() {
		for {
			req, err := pc.ReceiveRequest()
			if err != nil { // the client left (or broke the protocol)
				w.cancel(false)
				return
			}
			if req.Op == protocol.OpCancel {
				w.cancel(true)
			}
		}
	}()
	return w
}

// cancel withdraws a waiting block; with interrupt, it also interrupts
// the block when it runs.
func (w *watch) cancel(interrupt bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case blockWaiting:
		w.state = blockWithdrawn
		close(w.withdrawn)
	case blockRunning:
		// The block cannot end while w.mu is held (finish waits for it),
		// so the running block is this one.
		if interrupt {
			w.h.interrupt()
		}
	}
}

// start marks the block running; false when it was withdrawn first.
func (w *watch) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != blockWaiting {
		return false
	}
	w.state = blockRunning
	return true
}

// finish marks the block over: a later cancel does nothing.
func (w *watch) finish() {
	w.mu.Lock()
	w.state = blockDone
	w.mu.Unlock()
}
