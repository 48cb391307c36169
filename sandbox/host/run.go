package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// run runs one block for a client and sends its result.
func (h *Host) run(req protocol.Request, out *sink, w *watch) {
	client := protocol.Client{}
	if req.Client != nil {
		client = *req.Client
	}
	if req.Trust != nil {
		h.mu.Lock()
		h.trust = session.TrustEnviron(*req.Trust)
		h.mu.Unlock()
	}
	t := h.enqueue(client)
	if !h.acquire(out, w.withdrawn) {
		h.finish(t)
		select {
		case <-w.withdrawn:
			res := notStarted()
			out.Send(protocol.Event{Ev: protocol.EvResult, Result: &res})
		default:
			out.Send(protocol.Event{Ev: protocol.EvError, Message: "the session stopped before the block could run"})
		}
		return
	}
	defer h.release()
	h.begin(t)
	started := time.Now()
	h.mu.Lock()
	h.attached = []protocol.Attached{}
	h.mu.Unlock()
	rec := h.newRecord(req, started)
	rec.begin()
	out.mu.Lock()
	out.tap = rec.tap
	out.mu.Unlock()
	res, saving := h.runBlock(req, out, t, w)
	res.DurationMS = time.Since(started).Milliseconds()
	h.mu.Lock()
	res.Attachments, h.attached = h.attached, nil
	h.lastUse = time.Now()
	h.mu.Unlock()
	h.noteSave(res)
	res.Saved, res.Preload = 0, nil
	out.mu.Lock()
	out.tap = nil
	out.mu.Unlock()
	// Before the result: a client that reads the journal after its block
	// finds it there.
	rec.finish(res)
	// The block has ended before its client hears so: an interrupt sent
	// on the result finds nothing running.
	h.finish(t)
	var ps *pendingSave
	if saving != nil {
		// Noted before the client hears: a Settle it sends next waits.
		ps = h.notePending(saving, protocol.ClampTimeout(time.Duration(req.TimeoutMS)*time.Millisecond)+unwindGrace)
	}
	out.Send(protocol.Event{Ev: protocol.EvResult, Result: &res})
	switch {
	case ps == nil:
	case h.cfg.SaveDelay > 0:
		go h.saveLater(ps)
	default:
		// with the turn still held: no block runs before this one is saved
		h.saveAfter(ps)
	}
}

// blockError is a result for a block that did not run to its end.
func blockError(typ, msg string) protocol.Result {
	return protocol.Result{Error: &protocol.BlockError{Type: typ, Message: msg, Traceback: typ + ": " + msg + "\n"}, Saved: -1}
}

// onlyComments reports whether src holds no code: blank lines and
// comments only.
func onlyComments(src string) bool {
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// runBlock runs the block in the child; saving is that child when the
// result went out before its snapshot was saved (saveAfter).
func (h *Host) runBlock(req protocol.Request, out *sink, t *ticket, w *watch) (_ protocol.Result, saving *proc) {
	c, refused := h.childFor(req, t)
	if refused != nil {
		return *refused, nil
	}
	if !h.startBlock(c, t, w, out) {
		return notStarted(), nil
	}
	defer h.endBlock(c, w)

	timeout := protocol.ClampTimeout(time.Duration(req.TimeoutMS) * time.Millisecond)
	dog := startWatchdog(timeout, unwindGrace, func() {
		h.mu.Lock()
		h.interruptTicket(t)
		h.mu.Unlock()
	}, func() { h.retire(c, timeout) })
	defer dog.stop()

	started := time.Now()
	ev, note, end := h.runRepaired(c, req, out, t, dog)
	if end != nil {
		return *end, nil
	}
	return h.outcome(c, ev, note, dog, started, out)
}

// childFor is the child a block runs in, or the result of a block that
// does not run: interrupted before it started, holding no code, or
// finding no Python process.
func (h *Host) childFor(req protocol.Request, t *ticket) (*proc, *protocol.Result) {
	if h.cancelled(t) {
		res := notStarted()
		return nil, &res
	}
	if onlyComments(req.Code) {
		res := blockError("EmptyBlock", "the block holds only comments or blank lines, so nothing ran")
		return nil, &res
	}
	if req.Policy != nil {
		h.usePolicy(*req.Policy)
	}
	h.relieveMemorySometimes()
	c, err := h.readyChild()
	if err != nil {
		res := blockError("SandboxError", err.Error())
		return nil, &res
	}
	if h.cancelled(t) {
		res := notStarted()
		return nil, &res
	}
	return c, nil
}

// startBlock marks the session busy with t's block and tells the client
// it started; false when its client withdrew it first.
func (h *Host) startBlock(c *proc, t *ticket, w *watch, out *sink) bool {
	h.mu.Lock()
	h.busy = true
	h.mu.Unlock()
	if !w.start(t) {
		h.mu.Lock()
		h.busy = false
		h.mu.Unlock()
		return false
	}
	// From here the block may run: a client that loses the host after this
	// must not send it again.
	out.Send(protocol.Event{Ev: protocol.EvStarted})
	h.git.shown(&h.mu)
	c.setSink(out)
	return true
}

// endBlock undoes startBlock once the block ended.
func (h *Host) endBlock(c *proc, w *watch) {
	// The block's host calls end with it.
	c.calls.CancelAll()
	w.finish()
	c.drain()
	c.setSink(nil)
	h.mu.Lock()
	h.busy = false
	h.mu.Unlock()
}

// runRepaired runs the block in c, repaired once when Python refuses it
// and the repair engine fixes it; it returns the child's result event and
// the repair's note, or end, the result of a block that ended otherwise.
func (h *Host) runRepaired(c *proc, req protocol.Request, out *sink, t *ticket, dog *watchdog) (ev protocol.Event, note string, end *protocol.Result) {
	code := req.Code
	for {
		if h.cancelled(t) { // while the block was being repaired
			res := notStarted()
			return ev, note, &res
		}
		if ev, end = h.exchange(c, protocol.Request{V: protocol.Version, Op: protocol.OpRun, Code: code, Echo: req.Echo}, out, t, dog); end != nil {
			return ev, note, end
		}
		if ev.Syntax == nil {
			return ev, note, nil
		}
		if note != "" {
			res := syntaxResult(repair.Result{Source: code, PythonError: ev.Syntax})
			return ev, note, &res
		}
		rep := repair.Repair(code, repair.Options{Minor: c.minor, Compile: c.compiler()})
		if !rep.Repaired {
			if rep.PythonError == nil {
				rep.PythonError = ev.Syntax
			}
			res := syntaxResult(rep)
			return ev, note, &res
		}
		code, note = rep.Source, rep.NoteWhen("before running it")
		out.Send(protocol.Event{Ev: protocol.EvNote, Kind: protocol.NoteRepair, Data: note})
	}
}

// exchange sends the child one run request and forwards its events to
// the client until its result; end is the block's result when the child
// was lost or answered something else.
func (h *Host) exchange(c *proc, run protocol.Request, out *sink, t *ticket, dog *watchdog) (ev protocol.Event, end *protocol.Result) {
	if err := c.conn.Send(run); err != nil {
		res := h.childLost(c, dog.expired(), dog.timeout)
		return ev, &res
	}
	for {
		ev = protocol.Event{}
		if err := c.receive(&ev); err != nil {
			res := h.childLost(c, dog.expired(), dog.timeout)
			return ev, &res
		}
		switch ev.Ev {
		case protocol.EvOut, protocol.EvNote:
			out.Send(ev)
		case protocol.EvRunning:
			h.running(t, c)
		case protocol.EvResult:
			return ev, nil
		default:
			res := blockError("SandboxError", "the Python process answered "+string(ev.Ev)+": "+ev.Message)
			return ev, &res
		}
	}
}

// outcome is the result of a block the child ran to its end (note: the
// repair it ran with), with what the host adds to it: the timeout, the
// hints, and the checks of the files the block changed.
func (h *Host) outcome(c *proc, ev protocol.Event, note string, dog *watchdog, started time.Time, out *sink) (_ protocol.Result, saving *proc) {
	if ev.Result == nil {
		// Not the driver's: the block wrote on its descriptor to the
		// host. Its stream can no longer be trusted to line up.
		c.kill()
		reason := "the Python process sent a result that holds none (the block wrote to the host's link), so it was replaced"
		h.stopChild(reason)
		return blockError("SandboxRestarted", reason+"; the next block runs in a new Python process restored from the snapshot"), nil
	}
	res := *ev.Result
	// The host's own fields: what the child put there (only code that
	// wrote to the link does) is not passed on.
	res.Checks, res.Attachments, res.Git = nil, nil, nil
	res.Repaired, res.RepairNote = note != "", note
	if dog.expired() {
		markTimedOut(&res, dog.timeout)
	}
	// The block has ended: its timeout no longer runs while the files
	// it changed are checked.
	dog.stop()
	resultHints(&res, c.policy)
	refusalHint(&res)
	gitNoted := takeGitNotes(&res)
	h.checkBlock(c, &res, started, out)
	h.noteGit(c, &res, started, gitNoted, out)
	if res.Snapshot == "saving" {
		saving = c
	}
	return res, saving
}

// markTimedOut makes res the result of a block interrupted at its
// timeout.
func markTimedOut(res *protocol.Result, timeout time.Duration) {
	res.TimedOut = true
	past := humanDuration(timeout)
	if res.Error != nil {
		res.Error.Message = fmt.Sprintf("the block ran past its timeout of %s and was interrupted", past)
		res.Error.Traceback += "The block ran past its timeout of " + past + ".\n"
		return
	}
	// Its code caught the interrupt (pytest.main does) and ended on its
	// own: still a timeout, never a silent one.
	res.Error = &protocol.BlockError{Type: "TimeoutError",
		Message:   fmt.Sprintf("the block ran past its timeout of %s; its code caught the KeyboardInterrupt and went on", past),
		Traceback: "The block ran past its timeout of " + past + ": it was interrupted, and its code caught the KeyboardInterrupt and went on.\n"}
}

// syntaxResult is the error of a block Python refused and the repair could
// not fix: Python's message, and the first wrong delimiter with a caret.
func syntaxResult(rep repair.Result) protocol.Result {
	pe := rep.PythonError
	line, col := pe.Line, pe.Column
	text := pe.Text
	if len(rep.Problems) > 0 {
		line, col = rep.Problems[0].Line, rep.Problems[0].Column
		text = lineOf(rep.Source, line)
	} else if l := lineOf(rep.Source, line); l != "" {
		text = l
	}
	text = strings.TrimRight(text, "\r\n")
	excerpt := fmt.Sprintf("%d: %s", line, text)
	if col > 0 && text != "" {
		excerpt += "\n" + strings.Repeat(" ", len(fmt.Sprint(line))+2+len([]rune(text[:min(len(text), byteOffset(text, col-1))]))) + "^"
	}
	msg := rep.Error() + "\n"
	for _, l := range strings.Split(rep.Source, "\n") {
		if hint := magicHint(l); hint != "" {
			msg += hint + "\n"
			break
		}
	}
	return protocol.Result{Saved: -1, Error: &protocol.BlockError{Type: "SyntaxError", Message: pe.Message, Line: line, Column: col,
		Excerpt: excerpt, Traceback: msg}}
}

// lineOf is line n (1-based) of src, or "".
func lineOf(src string, n int) string {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

// byteOffset is the byte offset of character n of s.
func byteOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// readyChild is ensureChild for a block: a child that was killed a moment
// ago may not have been reaped yet, so it is asked first whether it
// answers, and replaced when it does not.
func (h *Host) readyChild() (*proc, error) {
	c, err := h.ensureChild()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	broken := c.callsBroken
	c.mu.Unlock()
	if broken != "" {
		h.stopChild(broken + ", so its Python process was replaced")
		if c, err = h.ensureChild(); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	fresh := h.fresh.c == c && time.Since(h.fresh.ready) < freshFor
	h.fresh.c = nil
	h.mu.Unlock()
	if fresh && c.alive() {
		return c, nil
	}
	err = c.ping()
	if err == nil {
		return c, nil
	}
	// Dead, or hung between blocks (a thread of an earlier block holding
	// the GIL): replaced either way.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.mu.Lock()
		c.retired = fmt.Sprintf("the Python process did not answer for %s between blocks", humanDuration(pingTimeout))
		c.mu.Unlock()
	}
	c.kill()
	<-c.exited
	return h.ensureChild()
}

// freshFor is how long after a new child said it was ready its first block
// need not ask whether it answers: no block ran in it to hang it.
const freshFor = time.Second

// childLost is the result of a block whose child died under it.
func (h *Host) childLost(c *proc, timedOut bool, timeout time.Duration) protocol.Result {
	reason := c.exitReason()
	// A standby for the block after the crash (made once the session is
	// idle: this block still runs).
	h.mu.Lock()
	h.scheduleStandbyLocked()
	h.mu.Unlock()
	res := blockError("SandboxRestarted", reason+"; the next block runs in a new Python process restored from the snapshot")
	res.TimedOut = timedOut
	return res
}

// retire saves what the stuck child was doing (its Python stacks, through
// faulthandler, and a small record) and kills it. Collection takes at most
// about 500 ms; a failed collection does not stop the kill.
func (h *Host) retire(c *proc, timeout time.Duration) {
	started := time.Now()
	dir := filepath.Join(h.cfg.Logs, c.started.UTC().Format("2006-01-02"), fmt.Sprintf("sandbox-%s-%d", h.cfg.Meta.Name, c.pid()))
	reason := fmt.Sprintf("the previous block did not stop within %s of its timeout's interrupt, so its Python process was retired", humanDuration(unwindGrace))
	record := map[string]any{
		"session": h.cfg.Meta.Name, "workspace": h.cfg.Meta.Workspace, "pid": c.pid(),
		"child_started": c.started.UTC().Format(time.RFC3339Nano), "retired_at": started.UTC().Format(time.RFC3339Nano),
		"timeout_ms": timeout.Milliseconds(), "reason": "block did not unwind after KeyboardInterrupt",
	}
	before, _ := c.stacks.snapshot()
	stacks := "failed"
	if err := os.MkdirAll(dir, 0o700); err == nil {
		stacks = "timed out"
		c.signalStacks()
		deadline := started.Add(400 * time.Millisecond)
		for time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			data, last := c.stacks.snapshot()
			if len(data) > len(before) && time.Since(last) > 30*time.Millisecond {
				if err := writeFile0600(filepath.Join(dir, "python-stacks.log"), data[len(before):]); err == nil {
					stacks = "captured"
				}
				break
			}
		}
		record["python_stacks"] = stacks
		record["collect_ms"] = time.Since(started).Milliseconds()
		data, _ := json.MarshalIndent(record, "", "  ")
		if writeFile0600(filepath.Join(dir, "hang.json"), append(data, '\n')) == nil {
			reason += " (hang record in " + dir + ")"
		}
	}
	c.mu.Lock()
	c.retired = reason
	c.mu.Unlock()
	fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: retired the Python process %d: hang record in %s (stacks %s)\n", c.pid(), dir, stacks)
	c.kill()
}

// signalStacks asks faulthandler in the child for every thread's stack.
func (c *proc) signalStacks() { c.process.Signal(sigStacks) }

func writeFile0600(path string, data []byte) error {
	return os.WriteFile(path, data, 0o600)
}

// ask answers a request the child answers in one event: defs,
// is_complete, completions.
func (h *Host) ask(req protocol.Request, out *sink) {
	if !h.acquire(out, nil) {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: "the session stopped"})
		return
	}
	defer h.release()
	c, err := h.ensureChild()
	if err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	ev, err := h.answerOf(c, req, 0)
	if err != nil {
		out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		return
	}
	out.Send(ev)
}
