package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// testShared is what components share, for a session that is never
// dialled (the tests hand the components its answers as messages).
func testShared() *shared {
	return &shared{th: newTheme(true), sess: &client.Session{Meta: session.Meta{Name: "default", Workspace: "/home/u/work/proj"}}}
}

// takePosted is what the components posted, emptied.
func takePosted(s *shared) []tea.Msg {
	p := s.posted
	s.posted = nil
	return p
}

func viewText(c component) string { return stripped(strings.Join(c.View(), "\n")) }

func TestTranscriptComponent(t *testing.T) {
	tr := newTranscript(testShared())
	tr.SetSize(40, 5)
	for i := 0; i < 10; i++ {
		tr.add(kindBlock, fmt.Sprintf("print(%d)", i))
	}
	if v := tr.View(); len(v) != 5 || stripped(v[4]) != ">>> print(9)" {
		t.Fatalf("the view follows the bottom: %q", v)
	}
	tr.Update(key("pgup"))
	if tr.scroll != 4 || stripped(tr.View()[4]) != ">>> print(5)" {
		t.Fatalf("PgUp scrolls a page less a line: scroll %d", tr.scroll)
	}
	tr.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	tr.Update(key("pgup"))
	tr.View()
	if tr.scroll != 5 {
		t.Fatalf("scrolling stops at the top: scroll %d", tr.scroll)
	}
	tr.Update(key("pgdown"))
	tr.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if tr.scroll != 0 {
		t.Fatalf("PgDn and the wheel come back to the bottom: scroll %d", tr.scroll)
	}
	tr.Update(noteMsg{kindInfo, "a note"})
	if !strings.HasSuffix(viewText(tr), "\na note") {
		t.Fatalf("a note is not added:\n%s", viewText(tr))
	}
	tr.Update(tea.KeyPressMsg{Code: 'l', Mod: tea.ModCtrl})
	if len(tr.entries) != 0 || strings.TrimSpace(viewText(tr)) != "" {
		t.Fatal("Ctrl+L does not clear the transcript")
	}
}

func TestInputComponent(t *testing.T) {
	s := testShared()
	in := newInput(s, &history{entries: []string{"old = 1"}})
	in.SetSize(40, 3)
	for _, k := range []string{"i", "f", " ", "x", ":", "alt+enter", "p", "a", "s", "s"} {
		in.Update(key(k))
	}
	if got := in.Value(); got != "if x:\n    pass" {
		t.Fatalf("typed: %q", got)
	}
	if v := viewText(in); v != ">>> if x:\n...     pass" {
		t.Fatalf("the input's view: %q", v)
	}
	if x, y := in.Cursor(); x != len("...     pass") || y != 1 {
		t.Fatalf("the cursor at %d,%d", x, y)
	}
	in.Update(tea.PasteMsg{Content: "\n\tz"})
	if got := in.Value(); !strings.HasSuffix(got, "pass\n    z") {
		t.Fatalf("a paste: %q", got)
	}
	in.clear()
	in.Update(key("up"))
	if in.Value() != "old = 1" {
		t.Fatalf("Up on an empty input walks the history: %q", in.Value())
	}
	in.clear()
	in.Update(key("tab"))
	if in.Value() != "    " {
		t.Fatalf("Tab at a line's start indents: %q", in.Value())
	}
	in.clear()
	for _, k := range []string{"g", "r"} {
		in.Update(key(k))
	}
	s.running = true
	if in.Update(key("tab")) != nil || s.hint != "Completion waits until the block ends." {
		t.Fatalf("Tab while a block runs: hint %q", s.hint)
	}
	s.running = false
	if in.Update(key("tab")) == nil {
		t.Fatal("Tab after a word does not ask the session")
	}
	in.Update(completionsMsg{src: "gr", word: "gr", names: []string{"greet", "greeting"}})
	if in.Value() != "greet" || s.hint != "greet  greeting" {
		t.Fatalf("completions: input %q, hint %q", in.Value(), s.hint)
	}
	if err := in.take("x = 1"); err != nil || !in.Empty() || in.hist.entries[len(in.hist.entries)-1] != "x = 1" {
		t.Fatalf("take: %v, input %q, history %q", err, in.Value(), in.hist.entries)
	}
}

func TestPanelComponent(t *testing.T) {
	s := testShared()
	p := newPanel(s)
	p.SetSize(48, 20)
	if v := viewText(p); !strings.Contains(v, "[defs] attachments (0)") || !strings.Contains(v, "(waiting for the session)") {
		t.Fatalf("the panel before the session answers:\n%s", v)
	}
	p.Update(defsMsg{data: defsJSON})
	p.Update(attachmentsMsg{list: attachmentList()})
	if v := viewText(p); !strings.Contains(v, "greet(name, punct=<str>)") || !strings.Contains(v, "attachments (4)") {
		t.Fatalf("the defs tab:\n%s", v)
	}
	p.show(tabAttachments)
	p.Focus()
	p.Update(key("down"))
	if v := viewText(p); !strings.Contains(v, "▶ plot.png v1") {
		t.Fatalf("the chosen version is not marked:\n%s", v)
	}
	p.Update(key("enter"))
	p.Update(key("c"))
	p.Update(key("esc"))
	p.Update(key("x"))
	got := takePosted(s)
	want := []tea.Msg{openMsg{attachmentList()[1]}, commentOnMsg{attachmentList()[1]}, closeMsg{p}, closeMsg{p}, key("x")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the list posts %v, want %v", got, want)
	}
	p.Update(attachmentsMsg{list: append([]Descriptor{{ID: "a9", Filename: "new.txt", Version: 1}}, attachmentList()...)})
	if d := p.chosenVersion(); d == nil || d.ID != "a3" {
		t.Fatalf("a new list while the list has the keys: chosen %+v", d)
	}
	p.Update(chooseMsg{"a1"})
	if d := p.chosenVersion(); d == nil || d.ID != "a1" {
		t.Fatalf("chooseMsg: chosen %+v", d)
	}
	p.Blur()
	p.Update(sessionMsg{})
	if p.defs != nil || len(p.atts) != 0 || p.sel != 0 || !strings.Contains(viewText(p), "attachments (0)") {
		t.Fatalf("another session: the panel keeps the old one's:\n%s", viewText(p))
	}
}

func TestViewerComponent(t *testing.T) {
	s := testShared()
	v := newViewer(s)
	v.SetSize(80, 12)
	list := attachmentList()
	v.follow(attachmentsMsg{list: list}, false)
	if v.open(list[0]) == nil || !v.shown || !v.loading {
		t.Fatal("open does not read the version")
	}
	if !strings.Contains(viewText(v), "reading…") {
		t.Fatalf("the viewer while reading:\n%s", viewText(v))
	}
	v.Update(openedMsg{d: list[0], data: []byte(reportV2)})
	if f := viewText(v); !strings.Contains(f, "report.md  v2 (versions 1–2") || !strings.Contains(f, "lines 1–11 of") {
		t.Fatalf("the viewer:\n%s", f)
	}
	v.Update(key("down"))
	v.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	viewText(v)
	if v.top != 4 {
		t.Fatalf("scrolled to %d, not 4", v.top)
	}
	if v.Update(key("[")) == nil || v.d.ID != "a1" || v.top != 4 {
		t.Fatalf("[ shows %s at line %d", v.d.ID, v.top)
	}
	v.Update(key("["))
	if s.hint != "report.md has versions 1 to 2" {
		t.Fatalf("[ before the first version: hint %q", s.hint)
	}
	v.Update(key("c"))
	v.Update(key("esc"))
	if got := takePosted(s); fmt.Sprint(got) != fmt.Sprint([]tea.Msg{commentOnMsg{v.d}, closeMsg{v}}) {
		t.Fatalf("the viewer posts %v", got)
	}
	v.Blur()
	if v.shown || len(v.View()) != 12 {
		t.Fatal("Blur does not close the viewer")
	}
}

func TestCommentBoxComponent(t *testing.T) {
	s := testShared()
	c := newCommentBox(s)
	c.SetSize(60, 3)
	if c.start(attachmentList()[1]) || c.shown || !strings.Contains(s.hint, "plot.png v1 is read-only") {
		t.Fatalf("a read-only version opened a comment: hint %q", s.hint)
	}
	d := attachmentList()[0]
	if !c.start(d) || !strings.HasPrefix(c.Hint(), "Comment on report.md v2: Enter saves") {
		t.Fatal("a commentable version opens no comment")
	}
	if c.Update(key("enter")) != nil || s.hint != "An empty comment is not saved; Esc cancels" {
		t.Fatalf("an empty comment: hint %q", s.hint)
	}
	typeInto(c, "fine")
	c.Update(key("alt+enter"))
	c.Update(tea.PasteMsg{Content: "by me"})
	if v := viewText(c); v != "comment> fine\n       … by me" {
		t.Fatalf("the comment's view: %q", v)
	}
	if c.Update(key("enter")) == nil || !c.saving || c.Hint() != "Saving the comment…" {
		t.Fatal("Enter does not save")
	}
	c.Update(commentedMsg{d: d, err: errString("locked")})
	if c.saving || c.ed.Value() != "fine\nby me" || s.hint != "The comment was not saved: locked" {
		t.Fatalf("a failed save: saving %v, text %q, hint %q", c.saving, c.ed.Value(), s.hint)
	}
	c.Update(key("enter"))
	c.Update(commentedMsg{d: d})
	if got := takePosted(s); fmt.Sprint(got) != fmt.Sprint([]tea.Msg{closeMsg{c}, noteMsg{kindInfo, "Comment added to report.md v2."}, reloadMsg{}}) {
		t.Fatalf("a saved comment posts %v", got)
	}
	c.Blur()
	if c.shown {
		t.Fatal("Blur does not close the box")
	}
}

func typeInto(c component, text string) {
	for _, r := range text {
		c.Update(key(string(r)))
	}
}

func TestStatusBarComponent(t *testing.T) {
	s := testShared()
	b := newStatusBar(s)
	b.SetSize(100, 0)
	b.Update(statusMsg{st: protocol.Status{Python: "3.13.0", Jailed: true}})
	if got := b.line(); got != " default │ Python 3.13.0 │ jail on · network off │ …/work/proj" {
		t.Fatalf("the status line: %q", got)
	}
	s.running = true
	b.begin(time.Now().Add(-1500 * time.Millisecond))
	if got := b.line(); !strings.Contains(got, " running 1.5 s │") {
		t.Fatalf("a running block: %q", got)
	}
	s.running = false
	b.end(protocol.Result{DurationMS: 1500, Snapshot: "saved"})
	b.scrolled, b.timeout = 7, time.Minute
	if got := b.line(); !strings.Contains(got, "│ last 1.5 s │ snapshot saved │ ↑7 lines (PgDn) │") || !strings.HasSuffix(got, "│ timeout 1m0s") {
		t.Fatalf("after a block: %q", got)
	}
	b.standing = "the focused one's keys"
	if v := viewText(b); !strings.HasPrefix(v, "the focused one's keys\n") || b.Height() != 2 {
		t.Fatalf("the standing hint:\n%s", v)
	}
	s.hint = "a question"
	if v := viewText(b); !strings.HasPrefix(v, "a question\n") {
		t.Fatalf("a passing hint over the standing one:\n%s", v)
	}
	// a long hint wraps, up to three lines
	s.hint = "The block does not stop. Restart its Python process (restored from the snapshot)? y/n"
	b.SetSize(40, 0)
	if v := viewText(b); b.Height() != 4 || !strings.Contains(v, "\nsnapshot)? y/n\n") {
		t.Fatalf("a long hint at 40 columns:\n%s", v)
	}
	s.hint = strings.Repeat("name ", 40)
	if h := b.hint(); len(h) != maxHint || !strings.HasSuffix(h[maxHint-1], "…") {
		t.Fatalf("a hint longer than three lines: %q", h)
	}
	b.SetSize(100, 0)
	b.Update(sessionMsg{})
	if got := b.line(); strings.Contains(got, "Python") || strings.Contains(got, "last") {
		t.Fatalf("another session keeps the old one's status: %q", got)
	}
}

// recorder is a component that keeps what reaches it: how a component
// added to the REPL (such as a live view of other clients' blocks) gets
// the broadcast messages, its own kinds among them.
type recorder struct{ got []string }

type recorderMsg struct{}

func (r *recorder) Update(msg tea.Msg) tea.Cmd {
	r.got = append(r.got, fmt.Sprintf("%T", msg))
	return nil
}
func (r *recorder) SetSize(int, int) {}
func (r *recorder) View() []string   { return nil }

// TestSwitchingSessionResetsTheComponents: /session (a doneMsg with a
// session) gives the keys back to the input and every component forgets
// the old session; the transcript keeps its record.
func TestSwitchingSessionResetsTheComponents(t *testing.T) {
	m := newModel(t, 120, 30)
	rec := &recorder{}
	m.parts = append(m.parts, rec)
	script(t, m)
	m.Update(attachmentsMsg{list: attachmentList()})
	m.Update(recorderMsg{})
	press(m, "f3", "enter")
	m.Update(openedMsg{d: attachmentList()[0], data: []byte(reportV2)})
	press(m, "c")
	if m.focused() != component(m.comment) || len(m.focus) != 3 {
		t.Fatalf("the focus stack: %v", m.focus)
	}
	other := &client.Session{Meta: session.Meta{Name: "other", Workspace: "/home/u/work/proj"}}
	m.Update(doneMsg{text: "Now in session other.", sess: other})
	f := frame(m)
	switch {
	case len(m.focus) != 0 || m.comment.shown || m.viewer.shown || m.panel.focused:
		t.Errorf("the keys are not back at the input: %v", m.focus)
	case m.panel.defs != nil || len(m.panel.atts) != 0 || len(m.viewer.atts) != 0:
		t.Error("the panel or the viewer keeps the old session's")
	case m.bar.status.Python != "" || m.bar.lastDur != 0 || strings.Contains(f, "Python 3.12.1"):
		t.Errorf("the status bar keeps the old session's:\n%s", f)
	case !strings.Contains(f, ">>> greet('bob')") || !strings.Contains(f, "Now in session other.") || !strings.Contains(f, " other │"):
		t.Errorf("the transcript or the status after the switch:\n%s", f)
	case !strings.Contains(strings.Join(rec.got, " "), "tui.recorderMsg") || rec.got[len(rec.got)-1] != "tui.sessionMsg":
		t.Errorf("an added component got %v", rec.got)
	}
}

// TestFocusStack: keys go to the component on top of the focus stack;
// Esc gives them back one level at a time, Ctrl+C and F1 at once.
func TestFocusStack(t *testing.T) {
	m := newModel(t, 120, 30)
	m.Update(attachmentsMsg{list: attachmentList()})
	press(m, "f3")
	press(m, "enter")
	press(m, "c")
	if m.focused() != component(m.comment) || !m.viewer.shown || !m.panel.focused {
		t.Fatalf("F3, Enter, c: the stack is %v", m.focus)
	}
	for _, want := range []component{m.viewer, m.panel, m.input} {
		press(m, "esc")
		if m.focused() != want {
			t.Fatalf("Esc: %T has the keys, not %T", m.focused(), want)
		}
	}
	press(m, "f3", "enter")
	press(m, "ctrl+c")
	if m.focused() != component(m.input) || m.viewer.shown || m.panel.focused {
		t.Fatal("Ctrl+C in the viewer does not give the keys to the input")
	}
	press(m, "f3", "down", "enter")
	press(m, "f1")
	if m.focused() != component(m.input) || m.viewer.shown || !strings.Contains(frame(m), "Commands") {
		t.Fatal("F1 in the viewer does not show the help in the transcript")
	}
}

func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		text  string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"the next block runs in a new one", 10, "the next|block runs|in a new|one"},
		{"  line 1: added the missing closing quote", 20, "  line 1: added the|  missing closing|  quote"},
		{"a supercalifragilistic word", 8, "a|supercal|ifragili|stic|word"},
		{"Enter         run it", 14, "Enter|run it"},
		{"aligned   columns stay", 30, "aligned   columns stay"},
		{"界界界界 界界", 5, "界界|界界|界界"},
		{"x\n\ny z", 1, "x||y|z"},
	} {
		if got := strings.Join(wrapText(c.text, c.width), "|"); got != c.want {
			t.Errorf("wrapText(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
		}
	}
}

// TestMessagesWrapBetweenWords: errors, notes and the REPL's messages
// wrap between words, a note's bar on each of its lines; output and
// blocks are cut at the width, as a terminal does.
func TestMessagesWrapBetweenWords(t *testing.T) {
	tr := newTranscript(testShared())
	tr.SetSize(30, 40)
	tr.add(kindError, "SandboxRestarted: the Python process was killed by signal 9")
	tr.add(kindRepair, "Repaired this block before running it.\n  line 1: added the missing closing \" at column 13")
	tr.add(kindInfo, "The Python process was restarted; the next block runs in a new one")
	tr.print(kindStdout, strings.Repeat("0123456789", 4)+"\n")
	want := `SandboxRestarted: the Python
process was killed by signal 9
▌ Repaired this block before
▌ running it.
▌   line 1: added the missing
▌   closing " at column 13
The Python process was
restarted; the next block runs
in a new one
012345678901234567890123456789
0123456789`
	if got := strings.TrimLeft(viewText(tr), "\n"); got != want {
		t.Fatalf("at 30 columns:\n%s\nwant:\n%s", got, want)
	}
}
