package tui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// Bounds of what the transcript keeps, so that any amount of output leaves
// the REPL's memory bounded: of one output, its first and last lines, each
// cut at maxLine bytes; of the whole transcript, the last maxEntries
// entries holding at most maxKept lines of output.
const (
	headKeep = 500
	tailKeep = 500
	maxLine  = 1000
	// A message (a notice, a traceback, a command's answer) keeps its
	// first maxMessageLines lines.
	maxMessageLines = 1000
	maxEntries      = 2000
	maxKept         = 50000
	// A folded output shows its first foldHead and last foldTail lines.
	foldAt   = 30
	foldHead = 20
	foldTail = 5
)

type entryKind int

const (
	kindBlock   entryKind = iota // a block as typed
	kindStdout                   // what it printed
	kindStderr                   // what it printed on stderr
	kindError                    // how it failed
	kindRepair                   // the repair note
	kindRestart                  // the [Sandbox restarted] notice
	kindInfo                     // answers of the REPL's commands
	kindProblem                  // the REPL's own trouble (the session did not answer)
)

type entry struct {
	kind  entryKind
	text  string
	label string  // a block another client ran: which one ("mcp: claude")
	out   *output // stdout and stderr entries
	lines []string
	width int // the width lines were rendered for; 0: render again
}

// output is what one block printed on one stream, bounded: the first
// headKeep lines, the last tailKeep, and a count of those between.
type output struct {
	head      []string
	tail      []string // a ring once full
	tailStart int
	omitted   int
	partial   strings.Builder // the line being printed
	cut       int             // bytes cut from it
}

func (o *output) write(data string) {
	for data != "" {
		i := strings.IndexByte(data, '\n')
		seg := data
		if i >= 0 {
			seg = data[:i]
		}
		if room := maxLine - o.partial.Len(); len(seg) > room {
			if room > 0 {
				o.partial.WriteString(seg[:room])
			}
			o.cut += len(seg) - max(room, 0)
		} else {
			o.partial.WriteString(seg)
		}
		if i < 0 {
			return
		}
		o.add(o.finish())
		data = data[i+1:]
	}
}

// finish is the partial line as the transcript shows it.
func (o *output) finish() string {
	s := outputLine(o.partial.String())
	if o.cut > 0 {
		s += fmt.Sprintf(" … (+%d bytes)", o.cut)
	}
	o.partial.Reset()
	o.cut = 0
	return s
}

func (o *output) add(line string) {
	switch {
	case len(o.head) < headKeep:
		o.head = append(o.head, line)
	case len(o.tail) < tailKeep:
		o.tail = append(o.tail, line)
	default:
		o.tail[o.tailStart] = line
		o.tailStart = (o.tailStart + 1) % tailKeep
		o.omitted++
	}
}

func (o *output) keptLines() int { return len(o.head) + len(o.tail) }

// count is how many lines were printed, the one being printed included.
func (o *output) count() int {
	n := len(o.head) + len(o.tail) + o.omitted
	if o.partial.Len() > 0 {
		n++
	}
	return n
}

// kept is every line kept, in order, with -1 standing for the omitted
// ones when there are any.
func (o *output) kept() (lines []string, gap int) {
	lines = append(lines, o.head...)
	gap = -1
	if o.omitted > 0 {
		gap = len(lines)
	}
	lines = append(lines, o.tail[o.tailStart:]...)
	lines = append(lines, o.tail[:o.tailStart]...)
	if o.partial.Len() > 0 {
		s := outputLine(o.partial.String())
		if o.cut > 0 {
			s += fmt.Sprintf(" … (+%d bytes)", o.cut)
		}
		lines = append(lines, s)
	}
	return lines, gap
}

// outputLine is a line a block printed as the transcript shows it: what
// follows its last carriage return (a progress bar's last state), its
// colours kept (termtext.Output: SGR only, conceal not, reset at the end
// of the line) and every other escape sequence and control character
// shown escaped, as `sandbox run` shows them; tabs expanded.
func outputLine(s string) string {
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(termtext.Output(s), "\uFFFD"), "\t", "    ")
}

// messageText is a message as the transcript shows it: a traceback, a
// notice (a rewind's names the files the rewound blocks wrote, a
// restart's the names restored, any of which a block chose) or a
// command's answer (/defs: names, docstrings). Escape sequences and
// control characters but newline show as text (termtext.Text), never
// reaching the terminal; tabs expanded. Its first maxMessageLines lines
// are kept, each cut at maxLine bytes (cutLine): wrapping a line costs by
// its length, and a block can set a name of megabytes.
func messageText(s string) string {
	lines := strings.Split(s, "\n")
	if n := len(lines) - maxMessageLines; n > 0 {
		lines = append(lines[:maxMessageLines], fmt.Sprintf("… (+%d lines)", n))
	}
	for i, l := range lines {
		lines[i] = cutLine(l)
	}
	return strings.ReplaceAll(termtext.Text(strings.Join(lines, "\n")), "\t", "    ")
}

// sessionLine is s, one line a session set (a name, a docstring's
// line), as the REPL shows it: cut (cutLine), its controls as text.
func sessionLine(s string) string { return termtext.Line(cutLine(s)) }

// cutLine is s, a line a session set, cut at maxLine bytes (whole
// characters), saying how many more there were.
func cutLine(s string) string {
	if len(s) <= maxLine {
		return s
	}
	i := maxLine
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf(" … (+%d bytes)", len(s)-i)
}

// printable is a line of what a session set (another client's code, a
// label, an attachment) as the REPL shows it: what follows its last
// carriage return, tabs expanded, escape sequences and other control
// characters dropped.
func printable(s string) string {
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	if strings.IndexByte(s, '\x1b') >= 0 {
		s = ansi.Strip(s)
	}
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case !unicode.IsControl(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// transcript is the scrollable record of the session as seen from here:
// the blocks run, what they printed, how they failed, the session's notes
// and the REPL's messages.
type transcript struct {
	s        *shared
	entries  []*entry
	kept     int  // lines of output the entries keep
	expanded bool // long outputs shown whole
	scroll   int  // lines scrolled back from the bottom; 0 follows
	width    int
	height   int
	// restart is the notice of a restart seen here (a block's Python
	// process replaced under it, or a restart asked for), which the next
	// block's "[Sandbox restarted]" report completes rather than repeats;
	// restartRun is the block run last when it was added, restartKey
	// which restart it tells of.
	restart    *entry
	restartRun int
	restartKey string
}

func newTranscript(s *shared) *transcript { return &transcript{s: s} }

// Update takes the keys that scroll and fold it (routed here from the
// input), the wheel, messages for it and a new theme.
func (t *transcript) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch msg.String() {
		case "pgup":
			t.scroll += max(1, t.height-1)
		case "pgdown":
			t.scroll = max(0, t.scroll-max(1, t.height-1))
		case "ctrl+o":
			t.toggle()
		case "ctrl+l":
			t.clear()
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			t.scroll += 3
		case tea.MouseWheelDown:
			t.scroll = max(0, t.scroll-3)
		}
	case noteMsg:
		t.add(msg.kind, msg.text)
	case themeMsg:
		t.invalidate()
	}
	return nil
}

func (t *transcript) SetSize(width, height int) { t.width, t.height = width, height }

func (t *transcript) View() []string { return t.view(t.s.th, t.width, t.height) }

func (t *transcript) add(kind entryKind, text string) {
	t.push(&entry{kind: kind, text: strings.TrimRight(text, "\n")})
}

func (t *transcript) push(e *entry) {
	if len(t.entries) >= maxEntries {
		t.drop(maxEntries / 10)
	}
	t.entries = append(t.entries, e)
}

// drop forgets the n oldest entries.
func (t *transcript) drop(n int) {
	for _, e := range t.entries[:n] {
		if e.out != nil {
			t.kept -= e.out.keptLines()
		}
	}
	t.entries = append(t.entries[:0], t.entries[n:]...)
}

// print adds output of a running block, to the last entry when it is the
// same stream.
func (t *transcript) print(kind entryKind, data string) {
	var e *entry
	if n := len(t.entries); n > 0 && t.entries[n-1].kind == kind {
		e = t.entries[n-1]
	} else {
		e = &entry{kind: kind, out: &output{}}
		t.push(e)
	}
	before := e.out.keptLines()
	e.out.write(data)
	t.kept += e.out.keptLines() - before
	for t.kept > maxKept && len(t.entries) > 1 {
		t.drop(1)
	}
	e.width = 0
}

// restarted adds the notice of restart key, run being the block run
// last; the same restart told twice (the stuck block's end and the
// restart's own answer both tell it, in either order) adds nothing.
func (t *transcript) restarted(text, key string, run int) {
	if key == t.restartKey {
		return
	}
	t.add(kindRestart, text)
	t.restart, t.restartRun, t.restartKey = t.entries[len(t.entries)-1], run, key
}

// note adds a note a block's output began with: a repair note, or a
// restart notice, which completes the notice of a restart seen here (its
// first line, the reason, is that notice's own) rather than repeats it.
func (t *transcript) note(kind entryKind, text string) {
	if kind != kindRestart || t.restart == nil {
		t.add(kind, text)
		return
	}
	if _, report, ok := strings.Cut(strings.TrimRight(text, "\n"), "\n"); ok {
		t.restart.text += "\n" + report
		t.restart.width = 0
	}
	t.restart = nil
}

// settle stops waiting for a restart's report once block run, a later
// one than the restart's, has ended without it (another client's block
// may have had it).
func (t *transcript) settle(run int) {
	if t.restart != nil && run > t.restartRun {
		t.restart = nil
	}
}

func (t *transcript) clear() {
	t.entries, t.kept, t.scroll, t.restart = nil, 0, 0, nil
}

// toggle expands or folds every long output.
func (t *transcript) toggle() {
	t.expanded = !t.expanded
	t.invalidate()
}

func (t *transcript) invalidate() {
	for _, e := range t.entries {
		e.width = 0
	}
}

// render is e's lines at width, cached until e changes: a block, its
// output and its traceback cut at the width as a terminal would; messages
// wrapped between words, a note's bar on each of its lines.
func (t *transcript) render(th *theme, e *entry, width int) []string {
	if e.width == width {
		return e.lines
	}
	width = max(1, width)
	var lines []string
	switch e.kind {
	case kindBlock:
		text := e.text
		if e.label != "" {
			// another client's code: shown, never obeyed by the terminal
			src := strings.Split(text, "\n")
			for i, l := range src {
				src[i] = printable(l)
			}
			text = strings.Join(src, "\n")
			lines = hardwrap([]string{th.info.Render("── " + printable(e.label) + " ──")}, width)
		}
		for i, l := range th.highlight(text) {
			p := "... "
			if i == 0 {
				p = ">>> "
			}
			lines = append(lines, wrapCode(th.prompt.Render(p), l, width)...)
		}
	case kindStdout, kindStderr:
		lines = hardwrap(t.renderOutput(th, e), width)
	case kindError:
		for _, l := range wrapText(messageText(e.text), width) {
			if isCaretLine(l) {
				lines = append(lines, th.caret.Render(l))
			} else {
				lines = append(lines, th.err.Render(l))
			}
		}
	case kindRepair, kindRestart:
		st := th.repair
		if e.kind == kindRestart {
			st = th.restart
		}
		for _, l := range wrapText(messageText(e.text), width-2) {
			lines = append(lines, st.Render("▌ "+l))
		}
	case kindInfo, kindProblem:
		st := th.info
		if e.kind == kindProblem {
			st = th.problem
		}
		for _, l := range wrapText(messageText(e.text), width) {
			lines = append(lines, st.Render(l))
		}
	}
	e.lines, e.width = lines, width
	return e.lines
}

// minCodeWrap is the narrowest room for code that wrapCode wraps between
// words; narrower, a line is cut as a terminal cuts it.
const minCodeWrap = 16

// wrapCode is a line of a block (highlighted) after its prompt, wrapped
// at width between words: the rows it continues on start under its code,
// at its indentation.
func wrapCode(prompt, code string, width int) []string {
	pw := ansi.StringWidth(prompt)
	if pw+ansi.StringWidth(code) <= width {
		return []string{prompt + code}
	}
	plain := ansi.Strip(code)
	indent := len(plain) - len(strings.TrimLeft(plain, " "))
	room := width - pw - indent
	if room < minCodeWrap {
		return hardwrap([]string{prompt + code}, width)
	}
	rows := strings.Split(ansi.Wrap(ansi.TruncateLeft(code, indent, ""), room, ""), "\n")
	out := []string{prompt + strings.Repeat(" ", indent) + rows[0]}
	for _, r := range rows[1:] {
		out = append(out, strings.Repeat(" ", pw+indent)+r)
	}
	return out
}

// wrapText is text wrapped at width between words, each line that wraps
// continuing at its own indentation.
func wrapText(text string, width int) []string {
	width = max(1, width)
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent > width/2 {
			indent = 0
		}
		for _, w := range wrapWords(l[indent:], width-indent) {
			out = append(out, l[:indent]+w)
		}
	}
	return out
}

// wrapWords cuts a line into lines at most width wide at its spaces
// (dropping those at a cut), cutting only a word wider than a line.
func wrapWords(l string, width int) []string {
	var out []string
	cur, curW := "", -1 // -1: no line begun
	for _, w := range strings.Split(l, " ") {
		ww := ansi.StringWidth(w)
		if curW >= 0 && curW+1+ww <= width {
			cur, curW = cur+" "+w, curW+1+ww
			continue
		}
		if curW >= 0 {
			out = append(out, strings.TrimRight(cur, " "))
			curW = -1
		}
		if w == "" {
			continue // a space at a cut
		}
		for ww > width {
			head := ansi.Truncate(w, width, "")
			if head == "" { // a character wider than the line
				_, n := utf8.DecodeRuneInString(w)
				head = w[:n]
			}
			out = append(out, head)
			w = w[len(head):]
			ww = ansi.StringWidth(w)
		}
		cur, curW = w, ww
	}
	if curW >= 0 {
		out = append(out, cur)
	}
	return out
}

func (t *transcript) renderOutput(th *theme, e *entry) []string {
	st := th.out
	if e.kind == kindStderr {
		st = th.errOut
	}
	lines, gap := e.out.kept()
	n := e.out.count()
	var raw []string
	if !t.expanded && n > foldAt {
		for _, l := range lines[:foldHead] {
			raw = append(raw, st.Render(l))
		}
		raw = append(raw, th.fold.Render(fmt.Sprintf("… %s more lines (Ctrl+O shows them)", thousands(n-foldHead-foldTail))))
		for _, l := range lines[len(lines)-foldTail:] {
			raw = append(raw, st.Render(l))
		}
		return raw
	}
	for i, l := range lines {
		if i == gap {
			raw = append(raw, th.fold.Render(fmt.Sprintf("… %s lines not kept (the first %d and last %d are)", thousands(e.out.omitted), headKeep, tailKeep)))
		}
		raw = append(raw, st.Render(l))
	}
	return raw
}

// thousands is n with thousands separators: 98,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// view is height lines of the transcript at width, scrolled back t.scroll
// lines from the bottom; it renders only the entries on screen (all of
// them when scrolled, to know where the top is).
func (t *transcript) view(th *theme, width, height int) []string {
	if t.scroll > 0 {
		total := 0
		for _, e := range t.entries {
			total += len(t.render(th, e, width))
		}
		t.scroll = max(0, min(t.scroll, total-height))
	}
	need := height + t.scroll
	var chunks [][]string
	got := 0
	for i := len(t.entries) - 1; i >= 0 && got < need; i-- {
		l := t.render(th, t.entries[i], width)
		chunks = append(chunks, l)
		got += len(l)
	}
	out := make([]string, 0, got)
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i]...)
	}
	out = out[:max(0, len(out)-t.scroll)]
	if len(out) > height {
		out = out[len(out)-height:]
	}
	if pad := height - len(out); pad > 0 {
		out = append(make([]string, pad), out...)
	}
	return out
}
