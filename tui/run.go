package tui

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// The top model conducts the block being typed and run: Enter asks the
// session whether the input is complete, runs it, streams its output into
// the transcript and its state into the status bar, and keeps the keys
// typed meanwhile for after.

// secondInterrupt is how soon a second Ctrl+C, while a block has not
// unwound, offers to restart the Python process.
const secondInterrupt = 2 * time.Second

// The notices of restarts the REPL asks for (the next block's report of
// what came back completes them).
const (
	restartedStuck = "[Sandbox restarted] The block did not stop, so its Python process was restarted; " +
		"the next block runs in a new one, restored from the snapshot."
	restartedAsked = "[Sandbox restarted] Restarted as asked (/restart); the next block runs in a new Python process, " +
		"restored from the snapshot."
)

// stillOpen is the hint after an Enter at an empty line of an input the
// session still finds incomplete.
const stillOpen = "Still incomplete (an unclosed bracket or string?): Enter again on the empty line runs it as it is; " +
	"the session repairs what it can, or says where the problem is."

// waiting is whether keys wait: for the session's answer about the input,
// or, after an Enter typed while a block runs, for the block's end.
func (m *Model) waiting() bool { return m.asking != "" || len(m.pending) > 0 }

// replay handles the keys typed while the REPL waited, once it no longer
// waits (an Enter among them may make it wait again, keeping the rest).
func (m *Model) replay(cmd tea.Cmd) tea.Cmd {
	if m.asking != "" || m.s.running {
		return cmd
	}
	cmds := []tea.Cmd{cmd}
	pending := m.pending
	m.pending = nil
	for i, p := range pending {
		if m.waiting() || m.s.running {
			m.pending = append(m.pending, pending[i:]...)
			break
		}
		_, c := m.Update(p)
		cmds = append(cmds, c)
	}
	return tea.Batch(cmds...)
}

func (m *Model) ctrlC() tea.Cmd {
	atInput := m.focused() == component(m.input)
	m.closeAll()
	if !m.s.running {
		switch {
		case atInput && !m.input.Empty():
			m.input.clear()
		case m.live.running != "":
			// another client's block: stopped only when the person says so
			m.confirm = "interrupt " + m.live.running
			m.s.hint = "Stop " + m.live.running + "'s running block (KeyboardInterrupt)? y/n"
		}
		return nil
	}
	if !m.interrupt.IsZero() && time.Since(m.interrupt) < secondInterrupt {
		// interrupted again too (the first may have come before the
		// block began), and asked whether to restart
		m.confirm = "restart"
		m.s.hint = "The block does not stop. Restart its Python process (restored from the snapshot)? y/n"
	} else {
		m.interrupt = time.Now()
		m.s.hint = "Interrupting… (Ctrl+C again within 2 s offers to restart the Python process)"
	}
	if cancel := m.cancelRun; cancel != nil {
		// The first Ctrl+C reaches this block only, never another
		// client's; a later one (the block caught KeyboardInterrupt and
		// runs on) goes to the block holding the session, which is this one.
		m.cancelRun = nil
		cancel()
		return nil
	}
	s := m.s.sess
	return func() tea.Msg {
		if _, err := s.Interrupt(false); err != nil {
			return doneMsg{err: fmt.Errorf("interrupt: %w", err)}
		}
		return nil
	}
}

// answer closes the open y/n question.
func (m *Model) answer(yes bool) tea.Cmd {
	what := m.confirm
	m.confirm, m.s.hint = "", ""
	if !yes {
		m.tr.add(kindInfo, "(cancelled)")
		return nil
	}
	s, open := m.s.sess, m.cfg.Open
	if label, ok := strings.CutPrefix(what, "interrupt "); ok {
		return interruptOther(s, label)
	}
	switch what {
	case "restart":
		m.restarting = true
		key := blockKey(m.runID)
		return func() tea.Msg {
			if err := s.Restart(client.RestartOptions{Force: true}); err != nil {
				return doneMsg{err: fmt.Errorf("restart: %w", err)}
			}
			return doneMsg{text: restartedStuck, restart: key}
		}
	case "reset":
		return func() tea.Msg {
			if err := s.Remove(true); err != nil {
				return doneMsg{err: fmt.Errorf("reset: %w", err)}
			}
			ns, err := open(s.Meta.Name)
			if err != nil {
				return doneMsg{err: fmt.Errorf("reset: %w", err)}
			}
			return doneMsg{text: "Session " + s.Meta.Name + " was reset: its snapshot, helpers and variables are gone.", sess: ns}
		}
	}
	return nil
}

// enter runs the input when the session says it is complete, else
// continues it on a new line; a /command runs at once, and so does an
// input on a second Enter at an empty line: the session then repairs an
// unclosed bracket or string, or says where it is.
func (m *Model) enter() tea.Cmd {
	text := m.input.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if strings.HasPrefix(text, "/") && !strings.Contains(text, "\n") {
		m.input.take(text)
		return m.command(text)
	}
	if m.s.running {
		// typed ahead: this Enter and what follows wait for the block's end
		m.pending = append(m.pending, tea.KeyPressMsg{Code: tea.KeyEnter})
		return nil
	}
	if blankTail(text) >= 2 {
		return m.submit(strings.TrimRight(text, " \n"))
	}
	src := text
	// A last line of spaces only is the blank line that ends a block.
	if i := strings.LastIndexByte(src, '\n'); i >= 0 && strings.TrimSpace(src[i+1:]) == "" {
		src = src[:i+1]
	}
	m.asking = text
	s := m.s.sess
	return func() tea.Msg {
		kind, err := s.IsComplete(src)
		return completeMsg{text, kind, err}
	}
}

// blankTail is how many lines at the end of text hold spaces only.
func blankTail(text string) int {
	lines := strings.Split(text, "\n")
	n := 0
	for i := len(lines) - 1; i >= 0 && strings.TrimSpace(lines[i]) == ""; i-- {
		n++
	}
	return n
}

func (m *Model) completed(msg completeMsg) tea.Cmd {
	if msg.src != m.asking {
		return nil // an answer about an input since cleared
	}
	m.asking = ""
	if msg.err != nil {
		m.tr.add(kindProblem, "the session did not answer: "+msg.err.Error())
		return nil
	}
	if msg.kind == "incomplete" {
		m.input.ed.Newline()
		if blankTail(msg.src) > 0 {
			m.s.hint = stillOpen
		}
		return nil
	}
	return m.submit(strings.TrimRight(msg.src, " \n"))
}

// submit runs a block in the session, streaming its output here.
func (m *Model) submit(src string) tea.Cmd {
	if err := m.input.take(src); err != nil {
		m.tr.add(kindProblem, err.Error())
	}
	m.tr.add(kindBlock, src)
	m.tr.scroll = 0
	m.s.running, m.interrupt = true, time.Time{}
	tick := m.bar.begin(time.Now())
	m.runID++
	id, s, opts := m.runID, m.s.sess, client.RunOptions{Timeout: m.timeout, Echo: !m.cfg.NoEcho}
	events := make(chan tea.Msg, 64)
	m.events = events
	ctx, cancel := context.WithCancel(context.Background())
	m.cancelRun = cancel
	start := func() tea.Msg {
		go func() {
			defer cancel()
			res, err := s.RunContext(ctx, src, opts, func(ev protocol.Event) { events <- runEventMsg{id, ev} })
			events <- runDoneMsg{id, res, err}
		}()
		return <-events
	}
	return tea.Batch(start, tick)
}

// next waits for the running block's next event.
func (m *Model) next() tea.Cmd {
	events := m.events
	return func() tea.Msg { return <-events }
}

func (m *Model) runEvent(ev protocol.Event) {
	switch ev.Ev {
	case protocol.EvOut:
		kind := kindStdout
		if ev.Stream == protocol.StreamStderr {
			kind = kindStderr
		}
		m.tr.print(kind, ev.Data)
	case protocol.EvNote:
		if ev.Kind == protocol.NoteRestart {
			m.tr.note(kindRestart, ev.Data)
		} else {
			m.tr.note(kindRepair, ev.Data)
		}
	case protocol.EvWait:
		m.tr.add(kindInfo, ev.Message)
	}
}

// runDone shows how the block ended. A block whose Python process was
// replaced under it (a restart asked for here, a timeout it would not
// unwind from, a crash) ends in one notice of the restart, not an error.
func (m *Model) runDone(msg runDoneMsg) tea.Cmd {
	restarting := m.restarting
	m.s.running, m.events, m.cancelRun, m.restarting = false, nil, nil, false
	if m.confirm != "reset" {
		// the interrupt's hint or its restart question ends with the block
		m.confirm, m.s.hint = "", ""
	}
	m.tr.settle(msg.id) // an earlier restart's report came with this block, or will not come
	if msg.err != nil {
		m.tr.add(kindProblem, "the block did not run: "+msg.err.Error())
		return m.refresh()
	}
	res := msg.res
	m.bar.end(res)
	switch e := res.Error; {
	case e != nil && e.Type == "SandboxRestarted":
		text := restartedStuck
		if !restarting {
			text = "[Sandbox restarted] " + sentence(e.Message)
		}
		m.tr.restarted(text, blockKey(msg.id), msg.id)
	case e != nil:
		m.tr.add(kindError, errorText(e))
	}
	return m.refresh()
}

// blockKey names the restart of block run's Python process under it.
func blockKey(run int) string { return fmt.Sprintf("block %d", run) }

// sentence is s with a capital and a full stop.
func sentence(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + "."
}

// errorText is how a block's error reads in the transcript: Python's
// traceback, and under it the excerpt of the failing line only when the
// traceback neither marks the spot nor quotes the line (raise
// ValueError(...) has no carets, but its line is there).
func errorText(e *protocol.BlockError) string {
	text := strings.TrimRight(e.Traceback, "\n")
	if text == "" {
		text = e.Type + ": " + e.Message
	}
	if e.Excerpt != "" && !hasCaretLine(text) && !quotesLine(text, e.Excerpt) {
		text += "\n" + e.Excerpt
	}
	return text
}

// quotesLine is whether text has a line that is the source line of
// excerpt ("N: code", then its carets), as a traceback quotes it.
func quotesLine(text, excerpt string) bool {
	first, _, _ := strings.Cut(excerpt, "\n")
	_, code, _ := strings.Cut(first, ": ")
	if code = strings.TrimSpace(code); code == "" {
		return false
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == code {
			return true
		}
	}
	return false
}

// hasCaretLine is whether a traceback already marks the failing spot.
func hasCaretLine(text string) bool {
	for _, l := range strings.Split(text, "\n") {
		if isCaretLine(l) {
			return true
		}
	}
	return false
}

// isCaretLine is a line of carets (^, ~) under the failing spot.
func isCaretLine(l string) bool { return strings.TrimSpace(l) != "" && strings.Trim(l, " ^~") == "" }
