package host

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Answer first, save after: a block's result goes out before the child
// saves the snapshot after it (its Snapshot is "saving"), and the host
// asks for that save at once, holding the turn: the next block waits for
// it, so a block that hangs or crashes never costs the ones before it.
// With a save delay (VIS_ENV_SAVE_DELAY_MS, 0 by default) the host asks
// that much later instead: a block that comes meanwhile (a script's next
// command) runs first, in the same process, and one save after it covers
// both — faster for a script, at the price of those blocks' changes when
// it crashes. The child's marker names what a kill before the save would
// lose, for the next notice.

// pendingSave is a save the child owes.
type pendingSave struct {
	c     *proc
	limit time.Duration // how long the save may take
	done  chan struct{} // closed once it is done, given up, or taken over
}

// notePending records that c owes the save after a block whose result is
// going out (a save owed before is now part of it) and returns it.
func (h *Host) notePending(c *proc, limit time.Duration) *pendingSave {
	ps := &pendingSave{c: c, limit: limit, done: make(chan struct{})}
	h.mu.Lock()
	old := h.pending
	h.pending = ps
	h.mu.Unlock()
	if old != nil {
		close(old.done)
	}
	return ps
}

// saveLater asks for ps's save after the delay, with the turn, unless a
// later block took it over (or the host stops).
func (h *Host) saveLater(ps *pendingSave) {
	select {
	case <-time.After(h.cfg.SaveDelay):
	case <-h.done:
	}
	if !h.takeTurn() {
		return
	}
	defer h.release()
	h.mu.Lock()
	current := h.pending == ps
	h.mu.Unlock()
	if current {
		h.saveAfter(ps)
	}
}

// awaitSaves returns once no save is owed or under way (or the host
// stops).
func (h *Host) awaitSaves() {
	for {
		h.mu.Lock()
		ps := h.pending
		h.mu.Unlock()
		if ps == nil {
			return
		}
		select {
		case <-ps.done:
		case <-h.done:
			return
		}
	}
}

// noteSave takes what the save after a block did: the names the snapshot
// holds, and the modules a standby imports ahead.
func (h *Host) noteSave(res protocol.Result) {
	if res.Saved >= 0 {
		h.mu.Lock()
		h.saved = res.Saved
		h.mu.Unlock()
	}
	if res.Snapshot != "" && res.Snapshot != "saving" {
		h.noteSnapshot(res.Preload)
	}
	h.writeRecord()
}

// saveAfter has the child save what ps owes; the caller holds the turn,
// so the next block, and anything else that asks the child, waits for
// the save. A save that does not end within its limit (a value whose
// pickling never ends) retires the child; the next one's notice names
// the blocks whose changes were lost.
func (h *Host) saveAfter(ps *pendingSave) {
	c := ps.c
	defer func() {
		h.mu.Lock()
		if h.pending == ps {
			h.pending = nil
			close(ps.done)
		}
		h.mu.Unlock()
	}()
	if !c.alive() {
		return
	}
	if err := c.conn.Send(protocol.Request{V: protocol.Version, Op: protocol.OpSave}); err != nil {
		return
	}
	c.link.SetReadDeadline(time.Now().Add(ps.limit))
	ev, err := c.answer()
	c.link.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		c.mu.Lock()
		c.retired = fmt.Sprintf("saving the session's state after a block took longer than %s, so its Python process was stopped", humanDuration(ps.limit))
		c.mu.Unlock()
		c.kill()
	case err != nil:
		// it died saving: the next block's child says so
	case ev.Ev != protocol.EvSaved || ev.Result == nil:
		c.mu.Lock()
		c.retired = "the Python process answered " + string(ev.Ev) + " to the save after a block, so it was replaced"
		c.mu.Unlock()
		c.kill()
	default:
		h.noteSave(*ev.Result)
	}
}
