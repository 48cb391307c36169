package host

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// rewind brings back the session's state after an earlier block, from the
// snapshots its history keeps (sandbox rewind): the child says which block
// req names (To, or Back from the current state's) and rewinds to it in
// its own process when it still holds that block's values unchanged
// (OpRewindHere); else it saves and stops, and the next one restores that
// block's snapshot through the restart's restore path. The answer carries
// the "[Sandbox rewound]" notice, which the next block then does not
// repeat. Files are not rewound.
func (h *Host) rewind(req protocol.Request, out *sink) {
	h.mu.Lock()
	busy := h.busy
	h.mu.Unlock()
	if busy {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: "a block is running in this session: interrupt it first (vis-agent sandbox interrupt), then rewind"})
		return
	}
	if !h.acquire(out, nil) {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: "the session stopped"})
		return
	}
	defer h.release()
	hist, err := h.askChild(protocol.Request{Op: protocol.OpHistory, To: req.To, Back: req.Back}, 0)
	if err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	if hist.History == nil || hist.History.Block <= 0 {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: "the Python process did not say which block to rewind to"})
		return
	}
	if err := checkHistory(*hist.History); err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	to := hist.History.Block
	reason := fmt.Sprintf("the session was rewound to block %d (%s)", to, byWhom(req, "vis-agent sandbox rewind"))
	// As long as a new child's restore may take: one stuck in a value's
	// own code is killed, and the next one restores the snapshot.
	here, err := h.askChild(protocol.Request{Op: protocol.OpRewindHere, To: to, Reason: reason}, readyTimeout)
	if err == nil && here.Kind != protocol.KindRestart {
		h.noteRewind(*hist.History)
		out.Send(protocol.Event{Ev: protocol.EvOK, Message: here.Message, History: hist.History})
		return
	}
	if err == nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: the rewind to block %d restarts: %s\n", to, here.Message)
	}
	// A child that failed or died trying is replaced by one restored from
	// the block's snapshot all the same.
	if err := h.restartWith(reason, startOptions{rewind: to}); err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	h.noteRewind(*hist.History)
	notice, err := h.askChild(protocol.Request{Op: protocol.OpNotice}, 0)
	if err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	out.Send(protocol.Event{Ev: protocol.EvOK, Message: notice.Message, History: hist.History})
}

// checkHistory refuses a history answer no history holds: the child's
// process is the session's, which can answer anything, and the host
// marks the journal with its line (one statement of as many terms) and
// hands it to the client.
func checkHistory(hist protocol.History) error {
	if n := max(len(hist.Line), len(hist.Blocks)); n > config.MaxHistoryBlocks {
		return fmt.Errorf("the Python process answered a history of %d blocks, more than a history keeps (%d): not rewound", n, config.MaxHistoryBlocks)
	}
	for _, b := range append(hist.Line[:len(hist.Line):len(hist.Line)], hist.Blocks...) {
		if b <= 0 {
			return fmt.Errorf("the Python process answered a history with block %d: not rewound", b)
		}
	}
	return nil
}

// noteRewind marks in the journal the blocks a rewind went back past
// (and unmarks those it came back to), once every block's record is in.
func (h *Host) noteRewind(hist protocol.History) {
	j, err := h.journal.flush()
	if err == nil && j != nil {
		err = j.MarkRewound(hist.Line)
	}
	if err != nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v\n", err)
	}
}

// askChild sends the child one request and returns its answer; an "error"
// answer is the error. A child that does not answer within (0: the bound
// of a question, answerOf) is stopped. The caller holds the turn.
func (h *Host) askChild(req protocol.Request, within time.Duration) (protocol.Event, error) {
	c, err := h.ensureChild()
	if err != nil {
		return protocol.Event{}, err
	}
	ev, err := h.answerOf(c, req, within)
	if err != nil {
		return protocol.Event{}, err
	}
	if ev.Ev == protocol.EvError {
		return protocol.Event{}, fmt.Errorf("%s", ev.Message)
	}
	return ev, nil
}

// defaultAnswerTimeout is how long the child may take to answer a
// question (VIS_ENV_ANSWER_TIMEOUT_MS): a bound for a child kept silent,
// far above what answering takes.
const defaultAnswerTimeout = 30 * time.Second

// answerOf sends c one question (defs, a completion, a rewind's history
// or notice) and returns its answer, read within within (0:
// Config.AnswerTimeout) beyond a save c owes (it saves before it answers). The child's code is
// the session's, which can keep it silent: past the limit it is stopped,
// and the next block starts a new one from the snapshot, so a question
// never holds the session's turn (every later command, stop too) for
// good. The caller holds the turn.
func (h *Host) answerOf(c *proc, req protocol.Request, within time.Duration) (protocol.Event, error) {
	req.V = protocol.Version
	if err := c.conn.Send(req); err != nil {
		return protocol.Event{}, errChildGone
	}
	limit := within
	if limit <= 0 {
		limit = h.cfg.AnswerTimeout
	}
	if limit <= 0 {
		limit = defaultAnswerTimeout
	}
	h.mu.Lock()
	if ps := h.pending; ps != nil && ps.c == c {
		limit += ps.limit
	}
	h.mu.Unlock()
	c.link.SetReadDeadline(time.Now().Add(limit))
	ev, err := c.answer()
	c.link.SetReadDeadline(time.Time{})
	var ne net.Error
	var be *protocol.BoundsError
	var why string
	switch {
	case err == nil:
		return ev, nil
	case errors.As(err, &ne) && ne.Timeout():
		why = fmt.Sprintf("the Python process did not answer within %s (asked for %s), so it was stopped", humanDuration(limit), req.Op)
		c.mu.Lock()
		c.retired = why
		c.mu.Unlock()
		c.kill()
	case errors.As(err, &be):
		// receive has replaced the process and said why.
		c.mu.Lock()
		why = c.retired
		c.mu.Unlock()
	default:
		return protocol.Event{}, errChildGone
	}
	return protocol.Event{}, fmt.Errorf("%s; the next block starts a new one, restored from the snapshot", why)
}
