package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// followRetry is how soon the live view follows the session again after
// its host went away (stopped, idle, restarted); the blocks themselves
// are pushed by the host, never polled.
const followRetry = 500 * time.Millisecond

// live is the live view of the blocks other clients (an agent through
// `sandbox mcp`, a `sandbox run`) run in the REPL's session: the host
// pushes each block's code, output and end (a follow request), which go
// into the transcript as they come, marked with the client ("mcp:
// claude"). While such a block runs, its line above the input says so,
// and Ctrl+C offers to stop it.
type live struct {
	s      *shared
	tr     *transcript
	width  int
	cancel context.CancelFunc
	events chan tea.Msg
	gen    int
	// running is the label of the other client's block that runs, ""
	// when none does; since is when it started.
	running string
	since   time.Time
	// ended counts the other clients' blocks that ended, and the follows
	// that started (blocks may have ended unseen before each), for the
	// REPL to refresh its panel.
	ended int
}

func newLive(s *shared, tr *transcript) *live { return &live{s: s, tr: tr} }

// liveMsg is one event of the followed session; gen says which follow.
type liveMsg struct {
	gen int
	ev  protocol.Event
}

// follow starts following the current session (ending the follow of the
// one before) and returns the command that waits for its first event.
func (l *live) follow() tea.Cmd {
	if l.cancel != nil {
		l.cancel()
	}
	l.gen++
	l.running = ""
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	events := make(chan tea.Msg, 256)
	l.events = events
	gen, s := l.gen, l.s.sess
	loop := func() {
		for ctx.Err() == nil {
			err := s.Follow(ctx, func(ev protocol.Event) {
				select {
				case events <- liveMsg{gen, ev}:
				case <-ctx.Done():
				}
			})
			if err != nil && !errors.Is(err, client.ErrNotRunning) && ctx.Err() == nil {
				// the block that ran when the host went away ends here
				select {
				case events <- liveMsg{gen, protocol.Event{Ev: "block", Kind: "gone"}}:
				case <-ctx.Done():
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(followRetry):
			}
		}
	}
	return func() tea.Msg {
		go loop()
		return <-events
	}
}

// next waits for the followed session's next event.
func (l *live) next() tea.Cmd {
	events := l.events
	return func() tea.Msg { return <-events }
}

// Update takes the followed session's events, and follows another session
// when the REPL switches to it.
func (l *live) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case sessionMsg:
		return l.follow()
	case liveMsg:
		if msg.gen != l.gen {
			return nil
		}
		l.event(msg.ev)
		return l.next()
	}
	return nil
}

func (l *live) event(ev protocol.Event) {
	switch ev.Ev {
	case "ok":
		// Every follow, the first too, reads the session once it holds:
		// a block another client ran between the REPL's own first read
		// and the host's ok would be seen by neither.
		l.ended++
	case "block":
		switch ev.Kind {
		case "start":
			l.running, l.since = clientLabel(ev.Client), time.Now()
			l.tr.push(&entry{kind: kindBlock, text: strings.TrimRight(ev.Data, "\n"), label: l.running})
			l.tr.scroll = 0
		case "end":
			l.ended++
			l.showEnd(ev.Result)
		case "gone":
			// No refresh here: its read would start a host again, and a
			// stopped session (sandbox stop, rm) must stay stopped. The
			// next host's follow refreshes ("ok" above).
			if l.running != "" {
				l.tr.add(kindProblem, "the session's host stopped while "+l.running+"'s block ran")
			}
			l.running = ""
		}
	case "out":
		if l.running == "" {
			return
		}
		kind := kindStdout
		if ev.Stream == "stderr" {
			kind = kindStderr
		}
		l.tr.print(kind, ev.Data)
	case "note":
		if l.running == "" {
			return
		}
		if ev.Kind == "restart" {
			l.tr.add(kindRestart, ev.Data)
		} else {
			l.tr.add(kindRepair, ev.Data)
		}
	}
}

// showEnd shows how another client's block ended: its error, as the
// REPL's own blocks show theirs.
func (l *live) showEnd(res *protocol.Result) {
	l.running = ""
	if res == nil || res.Error == nil {
		return
	}
	l.tr.add(kindError, errorText(res.Error))
}

func (l *live) SetSize(width, _ int) { l.width = width }

// Height is how many lines it takes: one while another client's block
// runs.
func (l *live) Height() int {
	if l.running == "" {
		return 0
	}
	return 1
}

// View is the line that says whose block runs.
func (l *live) View() []string {
	if l.running == "" {
		return nil
	}
	text := "● " + l.running + " is running a block · Ctrl+C stops it"
	return []string{l.s.th.info.Render(ansi.Truncate(text, max(1, l.width), "…"))}
}

// clientLabel names a block's client ("mcp: claude-code", "sandbox run").
func clientLabel(c *protocol.Client) string {
	if c == nil {
		return "another client"
	}
	return c.String()
}

// interruptOther interrupts the block another client runs in session s.
func interruptOther(s *client.Session, label string) tea.Cmd {
	return func() tea.Msg {
		// the person confirmed: another client's block, so any
		msg, err := s.Interrupt(true)
		if err != nil {
			return doneMsg{err: err}
		}
		if msg == "" {
			msg = "Sent an interrupt to " + label + "'s block."
		}
		return doneMsg{text: msg}
	}
}
