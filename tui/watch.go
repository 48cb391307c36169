package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// watchEvery is how often the REPL looks whether attachments of its
// session were stored or commented on by others (the attachments store's
// stamp, a look at small files, no call to the session). Other clients'
// blocks need no look: the live view's follow pushes their ends.
const watchEvery = time.Second

// activity is what the REPL has seen of its session: how many of other
// clients' blocks had ended (the live view counts them) and the
// attachments store's stamp.
type activity struct {
	blocks      int
	attachments string
}

func attachmentsStamp(s *client.Session) string {
	return s.AttachmentsStamp(false)
}

// watchMsg is what the session's attachments store said at a look.
type watchMsg struct {
	sess        *client.Session
	attachments string
}

// watch looks at the session's attachments after watchEvery; each answer
// schedules the next look, so one loop runs for the REPL's life.
func (m *Model) watch() tea.Cmd {
	s := m.s.sess
	return tea.Tick(watchEvery, func(time.Time) tea.Msg {
		return watchMsg{s, attachmentsStamp(s)}
	})
}

// watched refreshes what changed in the session since the REPL last read
// it, at a look: after attachments, those.
func (m *Model) watched(msg watchMsg) tea.Cmd {
	next := m.watch()
	if cmd := m.othersRan(); cmd != nil {
		return tea.Batch(next, cmd)
	}
	if msg.sess == m.s.sess && !m.busy() && msg.attachments != m.seen.attachments {
		return tea.Batch(next, m.loadAttachments())
	}
	return next
}

// othersRan refreshes the panel and status (an open viewer too) when
// other clients' blocks ended since the REPL last read them: at once when
// the live view says so, or at the next look when the REPL was busy then.
// While a block of its own runs, its end refreshes all.
func (m *Model) othersRan() tea.Cmd {
	if m.busy() || m.live.ended == m.seen.blocks {
		return nil
	}
	return m.refreshFrom(false)
}

// busy: a block of the REPL's own runs, or it asks a question.
func (m *Model) busy() bool { return m.s.running || m.asking != "" }
