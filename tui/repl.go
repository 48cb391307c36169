// Package tui is the sandbox REPL (`vis-agent sandbox repl`): a Bubble Tea
// program in which a person types blocks into a persistent sandbox session
// and watches what the session holds. It is a thin client of package
// client: running a block, whether an input is complete, completions and
// the defs panel are all the session's answers.
package tui

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

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
}

// Run runs the REPL on a terminal until the person quits; the session
// keeps running.
func Run(cfg Config, in io.Reader, out io.Writer) error {
	// Bubble Tea paints at most fps times a second: its most, so that a
	// key shows within about 8 ms.
	_, err := tea.NewProgram(New(cfg), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(120)).Run()
	return err
}

// secondInterrupt is how soon a second Ctrl+C, while a block has not
// unwound, offers to restart the Python process.
const secondInterrupt = 2 * time.Second

// wideLayout is the width from which the panel sits beside the transcript
// rather than under it.
const wideLayout = 100

// Model is the REPL's state.
type Model struct {
	cfg  Config
	sess *client.Session
	th   *theme
	w, h int

	ed      editor
	hist    *history
	tr      transcript
	hint    string    // one line under the input: completions, questions
	asking  string    // the input whose completeness the session is asked
	pending []tea.Msg // keys and pastes typed meanwhile, replayed after the answer
	confirm string    // "restart" or "reset": a y/n question is open

	defs       *defsData
	showPanel  bool
	panelTab   int      // tabDefs or tabAttachments
	panel      []string // rendered panel lines, for panelW
	panelW     int
	chosenLine int // the panel line of the chosen attachment (-1: none)

	atts    []Descriptor // the session's attachments, newest first
	attsErr string
	sel     int           // the chosen one
	focus   bool          // keys go to the attachments list
	view    *viewer       // the attachment being viewed
	comment *commentInput // a comment being written

	status    protocol.Status
	statusErr string
	running   bool
	runID     int
	events    chan tea.Msg
	started   time.Time
	interrupt time.Time // when Ctrl+C last interrupted the running block
	// cancelRun cancels the running block's own run: withdrawn while it
	// waits behind another client's block, interrupted when it runs.
	cancelRun context.CancelFunc
	lastDur   time.Duration
	snapshot  string
	seen      activity // the session's activity when the REPL last read it
	timeout   time.Duration
	spin      spinner.Model
}

// New is the REPL's model for cfg.
func New(cfg Config) *Model {
	m := &Model{cfg: cfg, sess: cfg.Session, th: newTheme(true), w: 80, h: 24, ed: newEditor(), showPanel: true,
		spin: spinner.New(spinner.WithSpinner(spinner.MiniDot))}
	m.hist = &history{}
	if cfg.HistoryDir != "" {
		m.hist = loadHistory(historyFile(cfg.HistoryDir, cfg.Session.Meta.Workspace))
	}
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
	}
)

// Init asks the terminal's background (for light or dark colours), and the
// session its status and defs, and starts watching the session for other
// clients' blocks.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.refresh(), m.watch())
}

func (m *Model) refresh() tea.Cmd {
	s := m.sess
	m.seen.blocks = blocksStamp(s) // before the read: a block ending later is seen
	// defs first: it starts the session's host when none runs
	return tea.Sequence(func() tea.Msg {
		data, err := s.Defs(client.DefsOptions{JSON: true})
		return defsMsg{data, err}
	}, func() tea.Msg {
		st, err := s.Status()
		return statusMsg{st, err}
	}, m.loadAttachments())
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.panelW = 0
	case tea.BackgroundColorMsg:
		if dark := msg.IsDark(); dark != m.th.dark {
			m.th = newTheme(dark)
			m.tr.invalidate()
			m.panelW = 0
		}
	case tea.KeyPressMsg:
		// a question's answer and an interrupt never wait behind typed-ahead keys
		if m.waiting() && m.confirm == "" && !(m.running && msg.String() == "ctrl+c") {
			m.pending = append(m.pending, msg)
			return m, nil
		}
		return m, m.key(msg)
	case tea.PasteMsg:
		if m.waiting() {
			m.pending = append(m.pending, msg)
			return m, nil
		}
		if m.comment != nil {
			m.comment.ed.Insert(msg.Content)
		} else {
			m.ed.Insert(msg.Content)
		}
	case tea.MouseWheelMsg:
		switch {
		case m.view != nil && msg.Button == tea.MouseWheelUp:
			m.view.top -= 3
		case m.view != nil && msg.Button == tea.MouseWheelDown:
			m.view.top += 3
		case msg.Button == tea.MouseWheelUp:
			m.tr.scroll += 3
		case msg.Button == tea.MouseWheelDown:
			m.tr.scroll = max(0, m.tr.scroll-3)
		}
	case spinner.TickMsg:
		if m.running {
			var cmd tea.Cmd
			m.spin, cmd = m.spin.Update(msg)
			return m, cmd
		}
	case statusMsg:
		m.status, m.statusErr = msg.st, ""
		if msg.err != nil {
			m.statusErr = msg.err.Error()
		}
	case defsMsg:
		if msg.err == nil {
			if d, err := parseDefs(msg.data); err == nil {
				m.defs, m.panelW = d, 0
			}
		}
	case attachmentsMsg:
		return m, m.attachments(msg)
	case watchMsg:
		return m, m.watched(msg)
	case openedMsg:
		m.opened(msg)
	case commentedMsg:
		return m, m.commented(msg)
	case completeMsg:
		return m, m.replay(m.completed(msg))
	case completionsMsg:
		m.completions(msg)
	case runEventMsg:
		if msg.id == m.runID {
			m.runEvent(msg.ev)
			return m, m.next()
		}
	case runDoneMsg:
		if msg.id == m.runID {
			return m, m.replay(m.runDone(msg))
		}
	case doneMsg:
		if msg.sess != nil {
			// another session: its own attachments come with the refresh
			m.sess, m.atts, m.sel, m.view, m.comment, m.panelW = msg.sess, nil, 0, nil, nil, 0
		}
		if msg.err != nil {
			m.tr.add(kindProblem, msg.err.Error())
		} else if msg.text != "" {
			m.tr.add(kindInfo, msg.text)
		}
		return m, m.refresh()
	}
	return m, nil
}

// waiting is whether keys wait: for the session's answer about the input,
// or, after an Enter typed while a block runs, for the block's end.
func (m *Model) waiting() bool { return m.asking != "" || len(m.pending) > 0 }

// replay handles the keys typed while the REPL waited, once it no longer
// waits (an Enter among them may make it wait again, keeping the rest).
func (m *Model) replay(cmd tea.Cmd) tea.Cmd {
	if m.asking != "" || m.running {
		return cmd
	}
	cmds := []tea.Cmd{cmd}
	pending := m.pending
	m.pending = nil
	for i, p := range pending {
		if m.waiting() || m.running {
			m.pending = append(m.pending, pending[i:]...)
			break
		}
		_, c := m.Update(p)
		cmds = append(cmds, c)
	}
	return tea.Batch(cmds...)
}

// key handles a key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case m.confirm != "":
		return m.answer(k.String() == "y")
	case m.comment != nil:
		return m.commentKey(k)
	case m.view != nil:
		return m.viewKey(k)
	case m.focus:
		return m.panelKey(k)
	}
	if k.String() != "tab" {
		m.hint = ""
	}
	switch k.String() {
	case "ctrl+c":
		return m.ctrlC()
	case "ctrl+d":
		if m.ed.Empty() {
			return tea.Quit
		}
		m.ed.Delete()
	case "enter":
		return m.enter()
	case "alt+enter", "ctrl+j", "shift+enter":
		m.ed.Newline()
	case "tab":
		return m.tab()
	case "up":
		if !m.ed.Up() {
			if s, ok := m.hist.back(m.ed.Value()); ok {
				m.ed.SetValue(s)
			}
		}
	case "down":
		if !m.ed.Down() {
			if s, ok := m.hist.forward(); ok {
				m.ed.SetValue(s)
			}
		}
	case "pgup":
		m.tr.scroll += max(1, m.transcriptHeight()-1)
	case "pgdown":
		m.tr.scroll = max(0, m.tr.scroll-max(1, m.transcriptHeight()-1))
	case "ctrl+o":
		m.tr.toggle()
	case "f2":
		m.showPanel = !m.showPanel
		m.focus = m.focus && m.showPanel
	case "f3":
		m.switchTab()
	case "f1":
		m.tr.add(kindInfo, helpText)
	case "ctrl+l":
		m.tr.clear()
	default:
		editKey(&m.ed, k)
	}
	return nil
}

// editKey applies an editing key that is not a line's end or a history
// step to e (the input, or a comment being written); it says whether k was
// one.
func editKey(e *editor, k tea.KeyPressMsg) bool {
	switch k.String() {
	case "left", "ctrl+b":
		e.Left()
	case "right", "ctrl+f":
		e.Right()
	case "alt+left", "ctrl+left", "alt+b":
		e.WordLeft()
	case "alt+right", "ctrl+right", "alt+f":
		e.WordRight()
	case "home", "ctrl+a":
		e.Home()
	case "end", "ctrl+e":
		e.End()
	case "backspace", "ctrl+h":
		e.Backspace()
	case "delete":
		e.Delete()
	case "ctrl+u":
		e.DeleteToStart()
	case "ctrl+k":
		e.DeleteToEnd()
	case "ctrl+w", "alt+backspace":
		e.DeleteWord()
	default:
		if k.Text == "" || k.Mod&^(tea.ModShift|tea.ModCapsLock|tea.ModNumLock) != 0 {
			return false
		}
		e.Insert(k.Text)
	}
	return true
}

func (m *Model) ctrlC() tea.Cmd {
	if !m.running {
		m.ed.SetValue("")
		m.hist.pos = len(m.hist.entries)
		return nil
	}
	if !m.interrupt.IsZero() && time.Since(m.interrupt) < secondInterrupt {
		// interrupted again too (the first may have come before the
		// block began), and asked whether to restart
		m.confirm = "restart"
		m.hint = "The block does not stop. Restart its Python process (restored from the snapshot)? y/n"
	} else {
		m.interrupt = time.Now()
		m.hint = "Interrupting… (Ctrl+C again within 2 s offers to restart the Python process)"
	}
	if cancel := m.cancelRun; cancel != nil {
		// The first Ctrl+C reaches this block only, never another
		// client's; a later one (the block caught KeyboardInterrupt and
		// runs on) goes to the block holding the session, which is this one.
		m.cancelRun = nil
		cancel()
		return nil
	}
	s := m.sess
	return func() tea.Msg {
		if err := s.Interrupt(); err != nil {
			return doneMsg{err: fmt.Errorf("interrupt: %w", err)}
		}
		return nil
	}
}

// answer closes the open y/n question.
func (m *Model) answer(yes bool) tea.Cmd {
	what := m.confirm
	m.confirm, m.hint = "", ""
	if !yes {
		m.tr.add(kindInfo, "(cancelled)")
		return nil
	}
	s, open := m.sess, m.cfg.Open
	switch what {
	case "restart":
		return func() tea.Msg {
			if err := s.Restart(client.RestartOptions{Force: true}); err != nil {
				return doneMsg{err: fmt.Errorf("restart: %w", err)}
			}
			return doneMsg{text: "The Python process was restarted; the next block runs in a new one restored from the snapshot."}
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
// continues it on a new line; a /command runs at once.
func (m *Model) enter() tea.Cmd {
	text := m.ed.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if strings.HasPrefix(text, "/") && !strings.Contains(text, "\n") {
		m.hist.add(text)
		m.ed.SetValue("")
		return m.command(text)
	}
	if m.running {
		// typed ahead: this Enter and what follows wait for the block's end
		m.pending = append(m.pending, tea.KeyPressMsg{Code: tea.KeyEnter})
		return nil
	}
	src := text
	// A last line of spaces only is the blank line that ends a block.
	if i := strings.LastIndexByte(src, '\n'); i >= 0 && strings.TrimSpace(src[i+1:]) == "" {
		src = src[:i+1]
	}
	m.asking = text
	s := m.sess
	return func() tea.Msg {
		kind, err := s.IsComplete(src)
		return completeMsg{text, kind, err}
	}
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
		m.ed.Newline()
		return nil
	}
	return m.submit(strings.TrimRight(msg.src, " \n"))
}

// submit runs a block in the session, streaming its output here.
func (m *Model) submit(src string) tea.Cmd {
	if err := m.hist.add(src); err != nil {
		m.tr.add(kindProblem, err.Error())
	}
	m.ed.SetValue("")
	m.tr.add(kindBlock, src)
	m.tr.scroll = 0
	m.running, m.started, m.interrupt = true, time.Now(), time.Time{}
	m.runID++
	id, s, opts := m.runID, m.sess, client.RunOptions{Timeout: m.timeout, Echo: true}
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
	return tea.Batch(start, m.spin.Tick)
}

// next waits for the running block's next event.
func (m *Model) next() tea.Cmd {
	events := m.events
	return func() tea.Msg { return <-events }
}

func (m *Model) runEvent(ev protocol.Event) {
	switch ev.Ev {
	case "out":
		kind := kindStdout
		if ev.Stream == "stderr" {
			kind = kindStderr
		}
		m.tr.print(kind, ev.Data)
	case "note":
		if ev.Kind == "restart" {
			m.tr.add(kindRestart, ev.Data)
		} else {
			m.tr.add(kindRepair, ev.Data)
		}
	case "wait":
		m.tr.add(kindInfo, ev.Message)
	}
}

func (m *Model) runDone(msg runDoneMsg) tea.Cmd {
	m.running, m.events, m.cancelRun = false, nil, nil
	if m.confirm != "reset" {
		// the interrupt's hint or its restart question ends with the block
		m.confirm, m.hint = "", ""
	}
	if msg.err != nil {
		m.tr.add(kindProblem, "the block did not run: "+msg.err.Error())
		return m.refresh()
	}
	res := msg.res
	m.lastDur = time.Duration(res.DurationMS) * time.Millisecond
	m.snapshot = res.Snapshot
	if e := res.Error; e != nil {
		text := strings.TrimRight(e.Traceback, "\n")
		if text == "" {
			text = e.Type + ": " + e.Message
		}
		if e.Excerpt != "" && !hasCaretLine(text) {
			text += "\n" + e.Excerpt
		}
		m.tr.add(kindError, text)
	}
	return m.refresh()
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

// tab indents at a line's start, else completes the word before the
// cursor from the session.
func (m *Model) tab() tea.Cmd {
	if m.ed.OnlySpacesBeforeCursor() {
		m.ed.Insert("    ")
		return nil
	}
	if m.running {
		m.hint = "Completion waits until the block ends."
		return nil
	}
	word, src, s := m.ed.WordBeforeCursor(), m.ed.Value(), m.sess
	if word == "" {
		return nil
	}
	return func() tea.Msg {
		names, err := s.Completions(word)
		return completionsMsg{src, word, names, err}
	}
}

func (m *Model) completions(msg completionsMsg) {
	if msg.src != m.ed.Value() || msg.word != m.ed.WordBeforeCursor() {
		return
	}
	switch {
	case msg.err != nil:
		m.hint = "no completions: " + msg.err.Error()
	case len(msg.names) == 0:
		m.hint = "no completions"
	default:
		prefix := msg.names[0]
		for _, n := range msg.names[1:] {
			for !strings.HasPrefix(n, prefix) {
				prefix = prefix[:len(prefix)-1]
			}
		}
		if len(prefix) > len(msg.word) {
			m.ed.Insert(prefix[len(msg.word):])
		}
		if len(msg.names) > 1 {
			m.hint = strings.Join(msg.names, "  ")
		}
	}
}

// Layout.

func (m *Model) wide() bool { return m.w >= wideLayout }

// input is the editor the keys go to: a comment's while one is written,
// else the block's.
func (m *Model) input() *editor {
	if m.comment != nil {
		return &m.comment.ed
	}
	return &m.ed
}

func (m *Model) inputHeight() int { return m.input().Height(max(3, m.h/3)) }

// underPanel is how many lines the panel (and the rule above it) takes
// under the transcript on a narrow terminal.
func (m *Model) underPanel() int {
	if !m.showPanel || m.wide() {
		return 0
	}
	return min(len(m.panelLines(m.w))+1, max(3, m.h/4))
}

// viewHeight is the viewer's height: all but the status bar, the hint and
// a comment being written.
func (m *Model) viewHeight() int {
	h := m.h - 1
	if m.hint != "" {
		h--
	}
	if m.comment != nil {
		h -= m.inputHeight()
	}
	return max(1, h)
}

func (m *Model) transcriptHeight() int {
	h := m.h - m.inputHeight() - 1 - m.underPanel()
	if m.hint != "" {
		h--
	}
	return max(1, h)
}

// panelLines is the panel at width: its tabs, then the shown tab.
func (m *Model) panelLines(width int) []string {
	if m.panelW != width {
		var body []string
		m.chosenLine = -1
		if m.panelTab == tabAttachments {
			var chosen int
			body, chosen = attachmentLines(m.th, m.atts, m.attsErr, m.sel, m.focus, width)
			if chosen >= 0 {
				m.chosenLine = chosen + 1
			}
		} else {
			body = defsLines(m.th, m.defs, width)
		}
		m.panel = append([]string{ansi.Truncate(panelTabs(m.th, m.panelTab, len(m.atts)), width, "…")}, body...)
		m.panelW = width
	}
	return m.panel
}

// View draws the REPL: the transcript (with the panel beside it, or under
// it on a narrow terminal), the input, a hint line when there is one, and
// the status bar. It fills the terminal's height, without the alternate
// screen, so the transcript stays in the terminal when the REPL ends.
func (m *Model) View() tea.View {
	th := m.th
	var rows []string
	if m.view != nil {
		rows = m.view.view(th, m.versions(m.view.d.Filename), m.w, m.viewHeight())
		return m.finish(rows)
	}
	tw, th2 := m.w, m.transcriptHeight()
	pw := 0
	if m.showPanel && m.wide() {
		pw = min(48, m.w/3)
		tw = m.w - pw - 1
	}
	body := m.tr.view(th, tw, th2)
	if pw > 0 {
		pl := window(m.panelLines(pw), m.chosenLine, len(body))
		sep := th.rule.Render("│")
		for i, l := range body {
			p := ""
			if i < len(pl) {
				p = pl[i]
			}
			rows = append(rows, pad(l, tw)+sep+p)
		}
	} else {
		rows = append(rows, body...)
		if n := m.underPanel(); n > 0 {
			rows = append(rows, th.rule.Render(strings.Repeat("─", m.w)))
			rows = append(rows, window(m.panelLines(m.w), m.chosenLine, n-1)...)
		}
	}
	return m.finish(rows)
}

// finish is the view of rows with the input (when it shows), the hint
// and the status bar under them.
func (m *Model) finish(rows []string) tea.View {
	th := m.th
	prompt, more := th.prompt.Render(">>> "), th.prompt.Render("... ")
	if m.comment != nil {
		prompt, more = th.prompt.Render("comment> "), th.prompt.Render("       … ")
	}
	var cursor *tea.Cursor
	if m.view == nil || m.comment != nil {
		in, cx, cy := m.input().View(m.w, m.inputHeight(), prompt, more)
		if m.confirm == "" && (!m.focus || m.comment != nil) {
			cursor = tea.NewCursor(cx, len(rows)+cy)
		}
		rows = append(rows, in...)
	}
	if m.hint != "" {
		rows = append(rows, th.hint.Render(ansi.Truncate(m.hint, m.w, "…")))
	}
	rows = append(rows, m.statusBar())
	v := tea.NewView(strings.Join(rows, "\n"))
	v.MouseMode = tea.MouseModeCellMotion
	v.Cursor = cursor
	return v
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return ansi.Truncate(s, w, "")
}

// statusBar is the session, the running block or the last one and what
// the snapshot did, then Python, access and workspace: what matters most
// first, as a narrow terminal cuts the end.
func (m *Model) statusBar() string {
	parts := []string{m.sess.Meta.Name}
	if m.running {
		parts = append(parts, m.spin.View()+" running "+roundDur(time.Since(m.started)))
	} else if m.lastDur > 0 || m.snapshot != "" {
		parts = append(parts, "last "+roundDur(m.lastDur))
		if m.snapshot != "" {
			parts = append(parts, "snapshot "+m.snapshot)
		}
	}
	if m.tr.scroll > 0 {
		parts = append(parts, fmt.Sprintf("↑%d lines (PgDn)", m.tr.scroll))
	}
	switch {
	case m.statusErr != "" && m.status.Python == "":
		parts = append(parts, "not running")
	case m.status.Python != "":
		parts = append(parts, "Python "+m.status.Python, onOff("jail", m.status.Jailed)+" · "+onOff("network", m.status.Network))
	}
	parts = append(parts, shortPath(m.sess.Meta.Workspace))
	if m.timeout > 0 {
		parts = append(parts, "timeout "+m.timeout.String())
	}
	s := " " + strings.Join(parts, " │ ")
	return m.th.status.Render(pad(ansi.Truncate(s, m.w, "…"), m.w))
}

func onOff(what string, on bool) string {
	if on {
		return what + " on"
	}
	return what + " off"
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// shortPath is a workspace as people read it: its last two elements.
func shortPath(p string) string {
	dir, base := filepath.Split(filepath.Clean(p))
	if parent := filepath.Base(dir); parent != "/" && parent != "." {
		return "…/" + parent + "/" + base
	}
	return p
}
