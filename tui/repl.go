// Package tui is the sandbox REPL (`vis-agent sandbox repl`): a Bubble Tea
// program in which a person types blocks into a persistent sandbox session
// and watches what the session holds. It is a thin client of package
// client: running a block, whether an input is complete, completions and
// the defs panel are all the session's answers. Its parts are components
// under one top model (see component.go).
package tui

import (
	"context"
	"io"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Config is what the REPL works on.
type Config struct {
	Session *client.Session
	// Open is the client of another session of the same workspace
	// (/session NAME, and /reset making the session anew).
	Open func(name string) (*client.Session, error)
	// HistoryDir holds the input history, one file per workspace.
	HistoryDir string
	// NoEcho: a block's trailing expression shows nothing (sandbox.echo
	// = false); else its repr follows the output.
	NoEcho bool
}

// Run runs the REPL on a terminal until the person quits; the session
// keeps running.
func Run(cfg Config, in io.Reader, out io.Writer) error {
	// Bubble Tea paints at most fps times a second: its most, so that a
	// key shows within about 8 ms.
	_, err := tea.NewProgram(New(cfg), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(120)).Run()
	return err
}

// wideLayout is the width from which the panel sits beside the transcript
// rather than under it.
const wideLayout = 100

// Model is the REPL: its components, the focus stack that says which of
// them has the keys, and the conductor of the block being run (run.go).
type Model struct {
	cfg  Config
	s    *shared
	w, h int

	tr      *transcript
	input   *input
	panel   *panel
	viewer  *viewer
	comment *commentBox
	bar     *statusBar
	live    *live
	parts   []component // every component, in the order broadcast messages reach them
	focus   []focusable // the focus stack above the input: keys go to its top

	// the block being typed and run (run.go)
	asking    string    // the input whose completeness the session is asked
	pending   []tea.Msg // keys and pastes typed meanwhile, replayed after the answer
	confirm   string    // "restart" or "reset": a y/n question is open
	runID     int
	events    chan tea.Msg
	interrupt time.Time // when Ctrl+C last interrupted the running block
	// cancelRun cancels the running block's own run: withdrawn while it
	// waits behind another client's block, interrupted when it runs.
	cancelRun  context.CancelFunc
	restarting bool // the running block's Python process is being restarted (y)
	restarts   int  // restarts asked for with /restart
	timeout    time.Duration
	seen       activity // the session's activity when the REPL last read it
	// leaving: the person quit, and the last frame (which stays in the
	// terminal, the REPL drawing no alternate screen) is the transcript.
	leaving bool
}

// New is the REPL's model for cfg.
func New(cfg Config) *Model {
	hist := &history{}
	if cfg.HistoryDir != "" {
		hist = loadHistory(historyFile(cfg.HistoryDir, cfg.Session.Meta.Workspace))
	}
	s := &shared{th: newTheme(true), sess: cfg.Session}
	m := &Model{cfg: cfg, s: s, w: 80, h: 24, tr: newTranscript(s), input: newInput(s, hist), panel: newPanel(s),
		viewer: newViewer(s), comment: newCommentBox(s), bar: newStatusBar(s)}
	m.live = newLive(s, m.tr)
	m.parts = []component{m.tr, m.input, m.panel, m.viewer, m.comment, m.bar, m.live}
	// the first screen says how to run a block, and where the rest is
	m.tr.add(kindInfo, "Enter runs a block in session "+cfg.Session.Meta.Name+"; its state stays between blocks.\n"+
		"F1 or /help: keys and commands · F3: attachments · Ctrl+D: leave")
	return m
}

// Messages of the session's answers.
type (
	statusMsg struct {
		st  protocol.Status
		err error
	}
	defsMsg struct {
		data string
		err  error
	}
	completeMsg struct {
		src, kind string
		err       error
	}
	completionsMsg struct {
		src, word string
		names     []string
		err       error
	}
	runEventMsg struct {
		id int
		ev protocol.Event
	}
	runDoneMsg struct {
		id  int
		res protocol.Result
		err error
	}
	// doneMsg ends a command: text for the transcript, or its error.
	doneMsg struct {
		text string
		err  error
		sess *client.Session // a session to switch to
		// restart, when set, says text is the notice of a restart, and
		// which one (transcript.restarted)
		restart string
	}
)

// Init asks the terminal's background (for light or dark colours), and the
// session its status and defs, and starts watching the session for other
// clients' blocks and following them live.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.refresh(), m.watch(), m.live.follow())
}

func (m *Model) refresh() tea.Cmd { return m.refreshFrom(true) }

// refreshFrom reads the session's defs, status and attachments; start
// says whether the read may start the session's host (the REPL's own
// start, blocks and commands). Other clients' blocks refresh from a
// running host only: a refresh that comes after a stop beside the REPL
// must not start one.
func (m *Model) refreshFrom(start bool) tea.Cmd {
	s := m.s.sess
	m.seen.blocks = m.live.ended // before the read: a block ending later is seen
	// defs first: it starts the session's host when none runs (and start)
	return tea.Sequence(func() tea.Msg {
		data, err := s.Defs(client.DefsOptions{JSON: true, Running: !start})
		return defsMsg{data, err}
	}, func() tea.Msg {
		st, err := s.Status()
		return statusMsg{st, err}
	}, m.loadAttachments())
}

// Update handles a message, then the messages the components posted
// meanwhile.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmds := []tea.Cmd{m.update(msg)}
	for len(m.s.posted) > 0 {
		next := m.s.posted[0]
		m.s.posted = m.s.posted[1:]
		cmds = append(cmds, m.update(next))
	}
	return m, tea.Batch(cmds...)
}

// update routes one message: keys by the focus stack, the running block's
// messages to its conductor, the components' requests to what they ask
// for, anything else to every component.
func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return nil
	case tea.BackgroundColorMsg:
		if dark := msg.IsDark(); dark != m.s.th.dark {
			m.s.th = newTheme(dark)
			return m.broadcast(themeMsg{})
		}
		return nil
	case tea.KeyPressMsg:
		// a question's answer and an interrupt never wait behind typed-ahead keys
		if m.waiting() && m.confirm == "" && !(m.s.running && msg.String() == "ctrl+c") {
			m.pending = append(m.pending, msg)
			return nil
		}
		return m.key(msg)
	case tea.PasteMsg:
		if m.waiting() {
			m.pending = append(m.pending, msg)
			return nil
		}
		if m.comment.shown {
			return m.comment.Update(msg)
		}
		return m.input.Update(msg)
	case tea.MouseWheelMsg:
		if m.viewer.shown {
			return m.viewer.Update(msg)
		}
		return m.tr.Update(msg)
	case completeMsg:
		return m.replay(m.completed(msg))
	case runEventMsg:
		if msg.id == m.runID {
			m.runEvent(msg.ev)
			return m.next()
		}
		return nil
	case runDoneMsg:
		if msg.id == m.runID {
			return m.replay(m.runDone(msg))
		}
		return nil
	case doneMsg:
		return m.done(msg)
	case watchMsg:
		return m.watched(msg)
	case liveMsg:
		cmd := m.live.Update(msg)
		if m.live.running == "" && strings.HasPrefix(m.confirm, "interrupt ") {
			// the block it asked about has ended
			m.confirm, m.s.hint = "", ""
		}
		return tea.Batch(cmd, m.othersRan())
	case attachmentsMsg:
		// every component gets the list; the open viewer follows it
		// unless a comment on its version is being written
		return tea.Batch(m.broadcast(msg), m.viewer.follow(msg, m.comment.shown))
	case openMsg:
		cmd := m.viewer.open(msg.d)
		m.push(m.viewer)
		return cmd
	case commentOnMsg:
		if m.comment.start(msg.d) {
			m.push(m.comment)
		}
		return nil
	case closeMsg:
		m.pop(msg.c)
		return nil
	case reloadMsg:
		return m.loadAttachments()
	}
	return m.broadcast(msg)
}

func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	for _, p := range m.parts {
		cmds = append(cmds, p.Update(msg))
	}
	return tea.Batch(cmds...)
}

// focused is the component the keys go to.
func (m *Model) focused() component {
	if n := len(m.focus); n > 0 {
		return m.focus[n-1]
	}
	return m.input
}

// push gives c the keys until it closes.
func (m *Model) push(c focusable) {
	if m.focused() == component(c) {
		return
	}
	c.Focus()
	m.focus = append(m.focus, c)
}

// pop closes c and what was pushed after it; the keys go back to what had
// them before.
func (m *Model) pop(c focusable) {
	for i := len(m.focus) - 1; i >= 0; i-- {
		if m.focus[i] == c {
			for j := len(m.focus) - 1; j >= i; j-- {
				m.focus[j].Blur()
			}
			m.focus = m.focus[:i]
			return
		}
	}
}

// closeAll gives the keys back to the input.
func (m *Model) closeAll() {
	if len(m.focus) > 0 {
		m.pop(m.focus[0])
	}
}

// key handles a key press: a question's answer; keys of a comment being
// written; the keys that work everywhere else (Ctrl+C, F1, and but in the
// viewer F2 and F3); the focused component's keys.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if m.confirm != "" {
		return m.answer(k.String() == "y")
	}
	name := k.String()
	if name != "tab" {
		m.s.hint = "" // a completion's hint stays while Tab is pressed
	}
	top := m.focused()
	switch {
	case top == m.comment:
		return m.comment.Update(k)
	case name == "ctrl+c":
		return m.ctrlC()
	case name == "f1":
		m.closeAll()
		m.tr.add(kindInfo, helpText)
		return nil
	case top == m.viewer:
		return m.viewer.Update(k)
	case name == "f2":
		m.closeAll()
		m.panel.shown = !m.panel.shown
		return nil
	case name == "f3":
		m.switchTab()
		return nil
	case top == m.panel:
		return m.panel.Update(k)
	}
	// the input has the keys
	switch name {
	case "enter":
		return m.enter()
	case "ctrl+d":
		if m.input.Empty() {
			return m.leave()
		}
	case "pgup", "pgdown", "ctrl+o", "ctrl+l":
		return m.tr.Update(k)
	}
	return m.input.Update(k)
}

// leave quits: the last frame is the transcript alone, at the terminal's
// width, so that what stays in its scrollback is what was run and printed,
// not the panel beside it or the status bar under it.
func (m *Model) leave() tea.Cmd {
	m.leaving, m.tr.scroll = true, 0
	return tea.Quit
}

// switchTab is F3: the defs tab (or a hidden panel) gives way to the
// attachments tab, whose list takes the keys; the attachments tab, whether
// its list has the keys or not, to defs, the keys going to the input.
func (m *Model) switchTab() {
	if m.panel.shown && m.panel.tab == tabAttachments {
		m.closeAll()
		m.panel.show(tabDefs)
		return
	}
	m.panel.show(tabAttachments)
	m.push(m.panel)
}

// switchTo makes the REPL work on session sess: the keys go back to the
// input, and every component forgets what it held of the old one.
func (m *Model) switchTo(sess *client.Session) tea.Cmd {
	m.closeAll()
	m.s.sess = sess
	return m.broadcast(sessionMsg{})
}

// done ends a command: another session to work on, then its message.
func (m *Model) done(msg doneMsg) tea.Cmd {
	var cmd tea.Cmd
	if msg.sess != nil {
		cmd = m.switchTo(msg.sess)
	}
	switch {
	case msg.err != nil:
		m.tr.add(kindProblem, msg.err.Error())
	case msg.restart != "":
		m.tr.restarted(msg.text, msg.restart, m.runID)
	case msg.text != "":
		m.tr.add(kindInfo, msg.text)
	}
	return tea.Batch(cmd, m.refresh())
}

// editing is where text is typed below the transcript: a comment being
// written, else, unless the viewer takes the screen, the input.
func (m *Model) editing() interface {
	component
	Height(limit int) int
	Cursor() (x, y int)
} {
	switch {
	case m.comment.shown:
		return m.comment
	case m.viewer.shown:
		return nil
	}
	return m.input
}

// layout gives each component its place, from the bottom up: the status
// bar (and its hint), the input or a comment (at most a third of the
// height), then the viewer on the rest, or the transcript with the panel
// beside it (from wideLayout columns) or under it (at most a quarter of
// the height, under a rule).
func (m *Model) layout() {
	w, h := m.w, m.h
	b := m.bar
	b.standing, b.scrolled, b.timeout = "", m.tr.scroll, m.timeout
	if hn, ok := m.focused().(hinter); ok {
		b.standing = hn.Hint()
	}
	b.SetSize(w, 0)
	rest := h - b.Height()
	if !m.viewer.shown {
		m.live.SetSize(w, 0)
		rest -= m.live.Height()
	}
	if ed := m.editing(); ed != nil {
		n := ed.Height(max(3, h/3))
		ed.SetSize(w, n)
		rest -= n
	}
	rest = max(1, rest)
	switch {
	case m.viewer.shown:
		m.viewer.SetSize(w, rest)
	case !m.panel.shown:
		m.tr.SetSize(w, rest)
	case w >= wideLayout:
		pw := min(48, w/3)
		m.tr.SetSize(w-pw-1, rest)
		m.panel.SetSize(pw, rest)
	default:
		under := min(m.panel.lineCount(w)+1, max(3, h/4))
		m.tr.SetSize(w, max(1, rest-under))
		m.panel.SetSize(w, under-1)
	}
}

// View draws the REPL: the transcript (with the panel beside it, or under
// it on a narrow terminal) or the viewer, the input or a comment, and the
// status bar. It fills the terminal's height, without the alternate
// screen, so the transcript stays in the terminal when the REPL ends.
func (m *Model) View() tea.View {
	if m.leaving {
		// the terminal's cursor stays on the last row, which what runs
		// next writes over: an empty one
		return tea.NewView(strings.Join(append(m.tr.view(m.s.th, m.w, max(1, m.h-1)), ""), "\n"))
	}
	m.layout()
	th := m.s.th
	var rows []string
	switch {
	case m.viewer.shown:
		rows = m.viewer.View()
	case m.panel.shown && m.w >= wideLayout:
		body, side := m.tr.View(), m.panel.View()
		sep := th.rule.Render("│")
		for i, l := range body {
			p := ""
			if i < len(side) {
				p = side[i]
			}
			rows = append(rows, pad(l, m.tr.width)+sep+p)
		}
	default:
		rows = m.tr.View()
		if m.panel.shown {
			rows = append(rows, th.rule.Render(strings.Repeat("─", m.w)))
			rows = append(rows, m.panel.View()...)
		}
	}
	if !m.viewer.shown {
		rows = append(rows, m.live.View()...)
	}
	var cursor *tea.Cursor
	if ed := m.editing(); ed != nil {
		lines := ed.View()
		if m.confirm == "" && m.focused() == component(ed) {
			x, y := ed.Cursor()
			cursor = tea.NewCursor(x, len(rows)+y)
		}
		rows = append(rows, lines...)
	}
	rows = append(rows, m.bar.View()...)
	v := tea.NewView(strings.Join(rows, "\n"))
	v.MouseMode = tea.MouseModeCellMotion
	v.Cursor = cursor
	return v
}
