package tui

import (
	"bytes"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// watchEvery is how often the REPL looks whether other clients (an agent
// through `sandbox mcp`, a `sandbox run`) ran blocks or stored attachments
// in its session: two reads of small files, no call to the session.
const watchEvery = time.Second

// activity is what changes in a session's files when a block ends there
// (its block counter) and when an attachment of it is stored or commented
// on (the attachments store's stamp).
type activity struct{ blocks, attachments string }

// maxCounter bounds what the REPL reads of the block counter: the jailed
// code may replace it with anything (a huge file, a FIFO, a link to
// /dev/zero), which reads as no counter.
const maxCounter = 64

func blocksStamp(s *client.Session) string {
	if s.Remote != nil {
		return "" // another machine's files: not watched
	}
	counter, _ := fsutil.ReadRegular(s.Folder.BlocksFile(), maxCounter)
	return string(bytes.TrimSpace(counter))
}

func attachmentsStamp(s *client.Session) string {
	return s.AttachmentsStamp(false)
}

// watchMsg is what the session's files said at a look.
type watchMsg struct {
	sess *client.Session
	now  activity
}

// watch looks at the session's files after watchEvery; each answer
// schedules the next look, so one loop runs for the REPL's life.
func (m *Model) watch() tea.Cmd {
	s := m.s.sess
	return tea.Tick(watchEvery, func(time.Time) tea.Msg {
		return watchMsg{s, activity{blocksStamp(s), attachmentsStamp(s)}}
	})
}

// watched refreshes what changed in the session since the REPL last read
// it (m.seen, taken before each read): after blocks the panel and status
// (an open viewer too), after attachments only those. While a block of
// its own runs, its end refreshes all.
func (m *Model) watched(msg watchMsg) tea.Cmd {
	next := m.watch()
	switch {
	case msg.sess != m.s.sess || m.s.running || m.asking != "":
	case msg.now.blocks != m.seen.blocks:
		return tea.Batch(next, m.refresh())
	case msg.now.attachments != m.seen.attachments:
		return tea.Batch(next, m.loadAttachments())
	}
	return next
}
