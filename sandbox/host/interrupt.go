package host

import (
	"fmt"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// ticket is one run request, from its arrival to its result. An interrupt
// goes to the ticket that holds the session's turn, else to the oldest one
// waiting for it, and is kept on the ticket: a block interrupted before
// its child started it does not run, and one interrupted while its child
// starts it gets the SIGINT as soon as the child says it runs ("running").
type ticket struct {
	interrupted bool
	child       *proc // the child running its block, from "running" on
	// client sent the block; began is when it got the turn.
	client protocol.Client
	began  time.Time
}

// enqueue registers a run request of client waiting for its turn.
func (h *Host) enqueue(client protocol.Client) *ticket {
	t := &ticket{client: client}
	h.mu.Lock()
	h.queue.waiting = append(h.queue.waiting, t)
	h.mu.Unlock()
	return t
}

// begin makes t the ticket that holds the turn.
func (h *Host) begin(t *ticket) {
	h.mu.Lock()
	h.dequeue(t)
	h.queue.current = t
	t.began = time.Now()
	h.mu.Unlock()
}

// finish forgets t, whether it ran or not.
func (h *Host) finish(t *ticket) {
	h.mu.Lock()
	h.dequeue(t)
	if h.queue.current == t {
		h.queue.current = nil
	}
	t.child = nil
	h.mu.Unlock()
}

func (h *Host) dequeue(t *ticket) {
	for i, w := range h.queue.waiting {
		if w == t {
			h.queue.waiting = append(h.queue.waiting[:i], h.queue.waiting[i+1:]...)
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

// interruptFor interrupts the block of req's client holding the session,
// else its oldest one waiting (any client's with req.Any or without
// req.Client), and says whose block it stopped; an error when another
// client's block runs and none of the caller's.
func (h *Host) interruptFor(req protocol.Request) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	owns := func(t *ticket) bool { return req.Any || req.Client == nil || req.Client.Owns(t.client) }
	if t := h.queue.current; t != nil && owns(t) {
		h.interruptTicket(t)
		return fmt.Sprintf("interrupted the running block of %s (it had run for %s)", t.client, roundDuration(time.Since(t.began))), nil
	}
	for _, t := range h.queue.waiting {
		if owns(t) {
			h.interruptTicket(t)
			return fmt.Sprintf("withdrew the waiting block of %s: it will not run", t.client), nil
		}
	}
	if t := h.queue.current; t != nil {
		return "", fmt.Errorf("the running block belongs to %s, not to you, so nothing was interrupted (--any, or any: true, stops it)", t.client)
	}
	return "no block is running; nothing was interrupted", nil
}

// holder names the client whose block holds the session, "" when none.
func (h *Host) holder() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queue.current == nil {
		return ""
	}
	return h.queue.current.client.String()
}

// roundDuration is d in whole seconds, or ms under a second: "3 s", "250 ms".
func roundDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%d s", int(d.Seconds()+0.5))
}
