package host

import "github.com/vis-agent/vis-agent/sandbox/protocol"

// ticket is one run request, from its arrival to its result. An interrupt
// goes to the ticket that holds the session's turn, else to the oldest one
// waiting for it, and is kept on the ticket: a block interrupted before
// its child started it does not run, and one interrupted while its child
// starts it gets the SIGINT as soon as the child says it runs ("running").
type ticket struct {
	interrupted bool
	child       *proc // the child running its block, from "running" on
}

// enqueue registers a run request waiting for its turn.
func (h *Host) enqueue() *ticket {
	t := &ticket{}
	h.mu.Lock()
	h.waiting = append(h.waiting, t)
	h.mu.Unlock()
	return t
}

// begin makes t the ticket that holds the turn.
func (h *Host) begin(t *ticket) {
	h.mu.Lock()
	h.dequeue(t)
	h.current = t
	h.mu.Unlock()
}

// finish forgets t, whether it ran or not.
func (h *Host) finish(t *ticket) {
	h.mu.Lock()
	h.dequeue(t)
	if h.current == t {
		h.current = nil
	}
	t.child = nil
	h.mu.Unlock()
}

func (h *Host) dequeue(t *ticket) {
	for i, w := range h.waiting {
		if w == t {
			h.waiting = append(h.waiting[:i], h.waiting[i+1:]...)
			return
		}
	}
}

// running records that c started t's block, and delivers an interrupt
// that came before.
func (h *Host) running(t *ticket, c *proc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.child = c
	if t.interrupted {
		c.interrupt()
	}
}

// interruptTicket interrupts t's block: at once when it runs, else when it
// starts (or it does not run). The caller holds h.mu.
func (h *Host) interruptTicket(t *ticket) {
	t.interrupted = true
	if t.child != nil {
		t.child.interrupt()
	}
}

// cancelled reports whether t was interrupted before its block started.
func (h *Host) cancelled(t *ticket) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return t.interrupted && t.child == nil
}

// notStarted is the result of a block interrupted (or cancelled by its
// client) before it started.
func notStarted() protocol.Result {
	return blockError("KeyboardInterrupt", "the block was interrupted before it started, so it did not run")
}
