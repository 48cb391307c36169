package tui

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// updating says whether -update was given (make golden): rewrite the
// golden frames. The flag is x/exp/golden's, which teatest brings into
// this test binary, with that meaning.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// newModel is a REPL at w×h on a dark terminal. Its session is never
// dialled: these tests hand the model the session's answers as messages,
// the way the commands it returns would (the tmux tests in cmd/vis-agent
// drive it against real sessions).
func newModel(t *testing.T, w, h int) *Model {
	t.Helper()
	s := &client.Session{Meta: session.Meta{Name: "default", Workspace: "/home/u/work/proj"}}
	m := New(Config{Session: s, HistoryDir: t.TempDir()})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(statusMsg{st: protocol.Status{Name: "default", Python: "3.12.1", Network: true}})
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		cmd = m.Update2(key(k))
	}
	return cmd
}

// Update2 is Update for tests that want only the command.
func (m *Model) Update2(msg tea.Msg) tea.Cmd {
	_, cmd := m.Update(msg)
	return cmd
}

// key is the key press tmux or a terminal would send for a name.
func key(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "f2":
		return tea.KeyPressMsg{Code: tea.KeyF2}
	case "f3":
		return tea.KeyPressMsg{Code: tea.KeyF3}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "ctrl+c", "ctrl+d", "ctrl+o", "ctrl+u":
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(key(string(r)))
	}
}

func frame(m *Model) string { return stripped(m.View().Content) }

func stripped(s string) string { return ansi.Strip(s) }

// run submits src as complete and finishes it with the given events.
func run(t *testing.T, m *Model, src string, res protocol.Result, events ...protocol.Event) {
	t.Helper()
	typeText(m, src)
	if press(m, "enter") == nil || m.asking != src {
		t.Fatalf("Enter did not ask the session about %q", src)
	}
	m.Update(completeMsg{src: src, kind: "complete"})
	if !m.s.running {
		t.Fatalf("%q did not run", src)
	}
	for _, ev := range events {
		m.Update(runEventMsg{m.runID, ev})
	}
	m.Update(runDoneMsg{id: m.runID, res: res})
}

func TestEditorIndentsAndDedents(t *testing.T) {
	e := newEditor()
	e.Insert("def f(x):")
	e.Newline()
	e.Insert("if x:  ")
	e.Newline()
	e.Insert("return 1")
	e.Newline()
	if got, want := e.Value(), "def f(x):\n    if x:  \n        return 1\n        "; got != want {
		t.Fatalf("auto-indent: %q, want %q", got, want)
	}
	e.Backspace()
	e.Insert("pass")
	if got := e.Value(); !strings.HasSuffix(got, "\n    pass") {
		t.Fatalf("backspace in indentation dedents one level: %q", got)
	}
	e.Insert("\tq\x07\r\nz")
	if got := e.Value(); !strings.HasSuffix(got, "\n    pass    q\nz") {
		t.Fatalf("tabs, controls and CRLF in typed text: %q", got)
	}
	e.SetValue("a\nb")
	e.Up()
	e.Home()
	e.Backspace() // nothing before the first line
	e.Right()
	e.Delete() // joins b
	if got := e.Value(); got != "ab" {
		t.Fatalf("join lines: %q", got)
	}
}

func TestEditorViewScrollsToTheCursor(t *testing.T) {
	e := newEditor()
	var lines []string
	for i := 0; i < 500; i++ {
		lines = append(lines, fmt.Sprintf("x%d = %d", i, i))
	}
	e.SetValue(strings.Join(lines, "\n"))
	view, cx, cy := e.View(40, 5, ">>> ", "... ")
	if len(view) != 5 || view[4] != "... x499 = 499" || cy != 4 || cx != len("... x499 = 499") {
		t.Fatalf("view at the end: %q cursor %d,%d", view, cx, cy)
	}
	for e.Up() {
	}
	view, _, cy = e.View(40, 5, ">>> ", "... ")
	if view[0] != ">>> x0 = 0" || cy != 0 {
		t.Fatalf("view at the start: %q", view)
	}
	e.SetValue(strings.Repeat("y", 100))
	view, cx, _ = e.View(40, 1, ">>> ", "... ")
	if ansi.StringWidth(view[0]) > 40 || cx >= 40 {
		t.Fatalf("a long line scrolls: %q cursor %d", view[0], cx)
	}
	// wide characters: the cursor stays on screen, after the last one
	e.SetValue(strings.Repeat("界y", 50))
	view, cx, _ = e.View(40, 1, ">>> ", "... ")
	if ansi.StringWidth(view[0]) > 40 || cx != 38 || !strings.HasSuffix(view[0], "界y") {
		t.Fatalf("a line of wide characters: %q cursor %d", view[0], cx)
	}
	// a pasted line of 200,000 characters: a key's repaint looks at a
	// screen's worth of it (it looked at the whole line once a column)
	e.SetValue(strings.Repeat("z", 200_000))
	start := time.Now()
	for range 20 {
		e.Insert("a")
		e.View(120, 1, ">>> ", "... ")
	}
	if d := time.Since(start) / 20; d > 50*time.Millisecond {
		t.Fatalf("a key on a line of 200,000 characters takes %v", d)
	}
}

// TestFirstScreenSaysWhereHelpIs: before anything is typed, the
// transcript says how a block runs and names F1 and /help.
func TestFirstScreenSaysWhereHelpIs(t *testing.T) {
	for _, w := range []int{120, 80, 40} {
		f := frame(newModel(t, w, 24))
		if !strings.Contains(strings.Join(strings.Fields(f), " "), "F1 or /help: keys and commands") {
			t.Errorf("at %d columns the first screen does not name F1 and /help:\n%s", w, f)
		}
	}
}

func TestEnterAsksTheSessionAndKeepsTypedAhead(t *testing.T) {
	m := newModel(t, 100, 30)
	typeText(m, "def f():")
	if press(m, "enter") == nil {
		t.Fatal("Enter did not ask the session")
	}
	typeText(m, "return 2") // typed before the answer
	m.Update(completeMsg{src: "def f():", kind: "incomplete"})
	if got := m.input.ed.Value(); got != "def f():\n    return 2" {
		t.Fatalf("after an incomplete answer: %q", got)
	}
	press(m, "enter")
	m.Update(completeMsg{src: "def f():\n    return 2", kind: "incomplete"})
	press(m, "enter")
	if m.asking != "def f():\n    return 2\n    " {
		t.Fatalf("asked about %q", m.asking)
	}
	m.Update(completeMsg{src: m.asking, kind: "complete"})
	if !m.s.running || !m.input.ed.Empty() || m.input.hist.entries[0] != "def f():\n    return 2" {
		t.Fatalf("the block did not run whole: running %v, input %q, history %q", m.s.running, m.input.ed.Value(), m.input.hist.entries)
	}
	// typed while it runs: the Enter waits for the block's end
	typeText(m, "f()")
	press(m, "enter")
	typeText(m, "x")
	if m.input.ed.Value() != "f()" {
		t.Fatalf("keys after an Enter typed ahead went to the input: %q", m.input.ed.Value())
	}
	m.Update(runDoneMsg{id: m.runID, res: protocol.Result{DurationMS: 3, Snapshot: "saved"}})
	if m.asking != "f()" || len(m.pending) != 1 {
		t.Fatalf("after the block: asking %q, pending %d", m.asking, len(m.pending))
	}
}

func TestSlashCommandsAndCtrlKeys(t *testing.T) {
	m := newModel(t, 100, 50)
	typeText(m, "/timeout 2h")
	press(m, "enter")
	said := func() string { return m.tr.entries[len(m.tr.entries)-1].text }
	if m.timeout.String() != "35m0s" || said() != "Blocks now time out after 35m0s, the maximum (2h was lowered to it)." {
		t.Fatalf("/timeout is clamped: %v: %q", m.timeout, said())
	}
	typeText(m, "/timeout 1m")
	press(m, "enter")
	if m.timeout != time.Minute || said() != "Blocks now time out after 1m0s." {
		t.Fatalf("/timeout 1m: %v: %q", m.timeout, said())
	}
	typeText(m, "/nope")
	press(m, "enter")
	typeText(m, "/help")
	press(m, "enter")
	f := frame(m)
	if !strings.Contains(f, "unknown command /nope; /help lists them") || !strings.Contains(f, "/reset") {
		t.Fatalf("unknown command and help:\n%s", f)
	}
	typeText(m, "/reset")
	press(m, "enter")
	if m.confirm != "reset" || !strings.Contains(frame(m), "Delete session default's snapshot") {
		t.Fatal("/reset does not ask first")
	}
	press(m, "n")
	if m.confirm != "" || !strings.Contains(frame(m), "(cancelled)") {
		t.Fatal("n does not cancel /reset")
	}
	typeText(m, "/clear")
	press(m, "enter")
	if strings.Contains(frame(m), "cancelled") {
		t.Fatal("/clear kept the transcript")
	}

	typeText(m, "half typed")
	press(m, "ctrl+c")
	if !m.input.ed.Empty() {
		t.Fatal("Ctrl+C does not clear the input")
	}
	run(t, m, "while True: pass", protocol.Result{})
	m.s.running = true // as if the block had not ended yet
	if press(m, "ctrl+c") == nil || m.confirm != "" {
		t.Fatal("the first Ctrl+C does not interrupt")
	}
	m.interrupt = m.interrupt.Add(-secondInterrupt) // as if 2 s had passed
	if press(m, "ctrl+c") == nil || m.confirm != "" || !strings.Contains(frame(m), "Interrupting…") {
		t.Fatal("a Ctrl+C 2 s after the first does not interrupt again, or offers a restart")
	}
	typeText(m, "1")
	press(m, "enter") // typed ahead: waits for the block's end
	if press(m, "ctrl+c") == nil || m.confirm != "restart" || !strings.Contains(frame(m), "Restart its Python process") {
		t.Fatal("a second Ctrl+C does not interrupt again and offer a restart")
	}
	if press(m, "n"); m.confirm != "" || len(m.pending) != 1 {
		t.Fatal("the answer waits behind a typed-ahead Enter")
	}
	press(m, "ctrl+c")
	press(m, "ctrl+c")
	m.Update(runDoneMsg{id: m.runID, res: protocol.Result{Error: &protocol.BlockError{Type: "KeyboardInterrupt", Traceback: "KeyboardInterrupt\n"}}})
	if m.confirm != "" {
		t.Fatal("the restart question stays after the block ended")
	}
	if m.asking != "1" {
		t.Fatalf("the typed-ahead Enter did not ask about %q after the block", "1")
	}
	m.Update(completeMsg{src: "1", kind: "complete"})
	m.Update(runDoneMsg{id: m.runID})
	typeText(m, "x")
	if cmd := press(m, "ctrl+d"); cmd != nil {
		t.Fatal("Ctrl+D quits with input")
	}
	press(m, "ctrl+u")
	if cmd := press(m, "ctrl+d"); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.QuitMsg" {
		t.Fatal("Ctrl+D on an empty input does not quit")
	}
	// the last frame, left in the terminal, is the transcript alone
	if f := frame(m); strings.ContainsAny(f, "│─") || strings.Contains(f, "[defs]") || strings.Contains(f, "Python 3.12.1") ||
		!strings.Contains(f, ">>> 1") || len(strings.Split(f, "\n")) != 50 {
		t.Errorf("the last frame is not the transcript alone:\n%s", f)
	}
}

func TestHistoryWalksWholeEntriesAndSurvives(t *testing.T) {
	dir := t.TempDir()
	path := historyFile(dir, "/w")
	h := loadHistory(path)
	for _, s := range []string{"a = 1", "def f():\n    return 1", "def f():\n    return 1", "b = 2"} {
		if err := h.add(s); err != nil {
			t.Fatal(err)
		}
	}
	// a torn last line, as a kill in the middle of a write leaves
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`"torn`)
	f.Close()
	h = loadHistory(path)
	if got := strings.Join(h.entries, "|"); got != "a = 1|def f():\n    return 1|b = 2" {
		t.Fatalf("reloaded history: %q", got)
	}
	if other := loadHistory(historyFile(dir, "/elsewhere")); len(other.entries) != 0 {
		t.Fatal("another workspace shares the history")
	}

	m := newModel(t, 100, 30)
	m.input.hist = h
	typeText(m, "draft")
	press(m, "up")
	press(m, "up")
	if m.input.ed.Value() != "def f():\n    return 1" {
		t.Fatalf("Up twice: %q", m.input.ed.Value())
	}
	press(m, "up") // within the entry: to its first line
	press(m, "up")
	if m.input.ed.Value() != "a = 1" {
		t.Fatalf("Up walks within a multi-line entry, then on: %q", m.input.ed.Value())
	}
	press(m, "down", "down")
	if m.input.ed.Value() != "b = 2" {
		t.Fatalf("Down: %q", m.input.ed.Value())
	}
	press(m, "down")
	if m.input.ed.Value() != "draft" {
		t.Fatalf("Down past the newest: %q", m.input.ed.Value())
	}
}

func TestLongOutputIsFoldedAndBounded(t *testing.T) {
	m := newModel(t, 100, 40)
	typeText(m, "big()")
	press(m, "enter")
	m.Update(completeMsg{src: "big()", kind: "complete"})
	chunk := strings.Repeat("line of output\n", 4000)
	for i := 0; i < 25; i++ { // 100,000 lines
		m.Update(runEventMsg{m.runID, protocol.Event{Ev: "out", Stream: "stdout", Data: chunk}})
	}
	m.Update(runEventMsg{m.runID, protocol.Event{Ev: "out", Stream: "stdout", Data: strings.Repeat("z", 5000) + "\n"}})
	m.Update(runDoneMsg{id: m.runID, res: protocol.Result{}})
	out := m.tr.entries[len(m.tr.entries)-1].out
	if len(out.head) != headKeep || len(out.tail) != tailKeep || out.count() != 100001 {
		t.Fatalf("kept %d+%d lines of %d", len(out.head), len(out.tail), out.count())
	}
	f := frame(m)
	if !strings.Contains(f, "… 99,976 more lines (Ctrl+O shows them)") || !strings.Contains(f, "… (+4000 bytes)") {
		t.Fatalf("folded output:\n%s", f)
	}
	press(m, "ctrl+o")
	press(m, "pgup")
	if f := frame(m); strings.Contains(f, "more lines") {
		t.Fatalf("Ctrl+O does not expand:\n%s", f)
	}
	m.tr.scroll = 1 << 30
	if f := frame(m); !strings.Contains(f, ">>> big()") {
		t.Fatalf("scrolled to the top:\n%s", f)
	}
	if !strings.Contains(m.bar.line(), "(PgDn)") {
		t.Fatal("the status bar does not say the transcript is scrolled back")
	}
}

const defsJSON = `{"helpers":[{"name":"greet","kind":"function","signature":"greet(name, punct=<str>)","block":1,"lines":3,"doc":"Say hello."}],
"variables":[{"name":"gen","type":"generator","size":104,"saved":false,"reason":"generator cannot be pickled"},{"name":"n","type":"int","size":28,"saved":true,"reason":null}]}`

// script is what the golden frames show: a helper, a call with its echo,
// a repaired block, an error with its caret, a restart notice.
func script(t *testing.T, m *Model) {
	run(t, m, "def greet(name, punct='!'):\n    \"\"\"Say hello.\"\"\"\n    return 'hi ' + name + punct", protocol.Result{DurationMS: 2, Snapshot: "saved"})
	run(t, m, "greet('bob')", protocol.Result{DurationMS: 1, Snapshot: "unchanged"},
		protocol.Event{Ev: "out", Stream: "stdout", Data: "'hi bob!'\n"})
	run(t, m, `print("hello)`, protocol.Result{Repaired: true, DurationMS: 4, Snapshot: "unchanged"},
		protocol.Event{Ev: "note", Kind: "repair", Data: "Repaired this block before running it.\n  line 1: added the missing closing \" at column 13"},
		protocol.Event{Ev: "out", Stream: "stdout", Data: "hello\n"})
	run(t, m, "1/0", protocol.Result{DurationMS: 1, Error: &protocol.BlockError{Type: "ZeroDivisionError", Message: "division by zero",
		Excerpt: "1: 1/0\n   ^^^", Traceback: "Traceback (most recent call last):\n  File \"<block 4>\", line 1, in <module>\nZeroDivisionError: division by zero\n"}})
	run(t, m, "n = 2", protocol.Result{Restarted: true, DurationMS: 310, Snapshot: "saved"},
		protocol.Event{Ev: "note", Kind: "restart", Data: "[Sandbox restarted] The session was restarted (vis-agent sandbox restart).\nRestored helpers (1): greet."})
	m.Update(defsMsg{data: defsJSON})
}

func TestPanelAndLayouts(t *testing.T) {
	m := newModel(t, 120, 30)
	script(t, m)
	wide := frame(m)
	for _, want := range []string{"│ greet(name, punct=<str>)", "Say hello.", "gen: generator, 104 B · not saved: gen…",
		"n: int, 28 B · saved", "Python 3.12.1", "jail off · network on", "last 310 ms", "snapshot saved", "\n1: 1/0 ", "\n   ^^^ "} {
		if !strings.Contains(wide, want) {
			t.Errorf("the wide frame lacks %q", want)
		}
	}
	press(m, "f2")
	if strings.Contains(frame(m), "[defs]") {
		t.Error("F2 does not hide the panel")
	}
	press(m, "f2")
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 30})
	narrow := frame(m)
	lines := strings.Split(narrow, "\n")
	if len(lines) != 30 {
		t.Fatalf("the frame is %d lines high, not 30", len(lines))
	}
	under := false
	for _, l := range lines {
		if ansi.StringWidth(l) > 60 {
			t.Fatalf("a line wider than 60 columns: %q", l)
		}
		under = under || strings.HasPrefix(l, "[defs] attachments (0)")
	}
	if !under {
		t.Fatalf("the panel is not under the transcript at 60 columns:\n%s", narrow)
	}
	if updating() {
		t.Log("golden frames rewritten")
	}
	golden(t, "wide.golden", wide)
	golden(t, "narrow.golden", narrow)
	// colours pinned: the dark theme lowered to 256 colours
	var b bytes.Buffer
	w := &colorprofile.Writer{Forward: &b, Profile: colorprofile.ANSI256}
	w.Write([]byte(m.View().Content))
	golden(t, "narrow-256.golden", b.String())
	m.Update(tea.BackgroundColorMsg{Color: ansi.White})
	if m.s.th.dark {
		t.Fatal("a light background keeps the dark theme")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updating() {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make golden writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (make golden rewrites it after a deliberate change):\n%s", name, got)
	}
}

func TestTranscriptMemoryIsBounded(t *testing.T) {
	var tr transcript
	chunk := strings.Repeat("x\n", 2000)
	for i := 0; i < 200; i++ { // 200 blocks of 2,000 lines each
		tr.add(kindBlock, fmt.Sprintf("print(%d)", i))
		tr.print(kindStdout, chunk)
	}
	if tr.kept > maxKept || tr.kept != 50*(headKeep+tailKeep) {
		t.Fatalf("the transcript keeps %d lines of output", tr.kept)
	}
	if first := tr.entries[0]; first.kind != kindStdout && first.text != "print(150)" {
		t.Fatalf("the oldest entry kept: %+v", first)
	}
}

func TestTinyTerminals(t *testing.T) {
	for _, size := range [][2]int{{0, 0}, {1, 1}, {10, 3}, {30, 6}, {200, 2}} {
		m := newModel(t, size[0], size[1])
		script(t, m)
		typeText(m, "x = 1")
		press(m, "alt+enter")
		typeText(m, "y = 2")
		if f := frame(m); f == "" {
			t.Errorf("%v: an empty frame", size)
		}
		press(m, "f2")
		frame(m)
		m.Update(attachmentsMsg{list: attachmentList()})
		press(m, "f3", "down")
		frame(m)
		press(m, "enter")
		m.Update(openedMsg{d: attachmentList()[1], data: pngBytes(t, 2, 2)})
		press(m, "pgdown", "c")
		if f := frame(m); f == "" {
			t.Errorf("%v: an empty viewer frame", size)
		}
	}
}

func TestHighlight(t *testing.T) {
	mark := func(tag string) lipgloss.Style {
		return lipgloss.NewStyle().Transform(func(s string) string { return tag + "<" + s + ">" })
	}
	th := &theme{keyword: mark("k"), fn: mark("f"), str: mark("s"), num: mark("n"), comment: mark("c"), op: mark("o"), name: lipgloss.NewStyle()}
	src := "@cache\ndef f(x=1.5e-3):  # doc\n    s = rb'a\\'b' + \"\"\"x\ny\"\"\"\n    return len(s) if x else None\n\"open"
	want := []string{
		"f<@cache>",
		"k<def> f<f>o<(>xo<=>n<1.5e-3>o<)>o<:>  c<# doc>",
		"    s o<=> s<rb'a\\'b'> o<+> s<\"\"\"x>",
		"s<y\"\"\">",
		"    k<return> f<len>o<(>so<)> k<if> x k<else> k<None>",
		"s<\"open>",
	}
	if got := th.highlight(src); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("highlight:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestScrollingFollowsTheBottom: the wheel and PgUp/PgDn scroll the
// transcript back and forth (the wheel scrolls the viewer when it is
// open); the next block brings the transcript back to its bottom.
func TestScrollingFollowsTheBottom(t *testing.T) {
	m := newModel(t, 100, 20)
	run(t, m, "for i in range(100): print('row', i)", protocol.Result{},
		protocol.Event{Ev: "out", Stream: "stdout", Data: strings.Repeat("row\n", 99) + "last row\n"})
	if !strings.Contains(frame(m), "last row") {
		t.Fatalf("the transcript does not follow the output:\n%s", frame(m))
	}
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if m.tr.scroll != 3 || strings.Contains(frame(m), "last row") {
		t.Fatalf("the wheel does not scroll back: scroll %d", m.tr.scroll)
	}
	press(m, "pgup")
	back := m.tr.scroll
	if back <= 3 {
		t.Fatalf("PgUp does not scroll back: scroll %d", back)
	}
	press(m, "pgdown")
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if m.tr.scroll != 0 || !strings.Contains(frame(m), "last row") {
		t.Fatalf("PgDn and the wheel do not come back to the bottom: scroll %d", m.tr.scroll)
	}
	press(m, "pgup")
	run(t, m, "print('next')", protocol.Result{}, protocol.Event{Ev: "out", Stream: "stdout", Data: "next\n"})
	if m.tr.scroll != 0 || !strings.Contains(frame(m), "\nnext") {
		t.Fatalf("a new block does not bring the transcript to its bottom:\n%s", frame(m))
	}

	m.Update(attachmentsMsg{list: attachmentList()})
	press(m, "f3", "enter")
	m.Update(openedMsg{d: attachmentList()[0], data: []byte(reportV2)})
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	frame(m)
	if m.viewer.top == 0 || m.tr.scroll != 0 {
		t.Fatalf("the wheel in the viewer: viewer at %d, transcript at %d", m.viewer.top, m.tr.scroll)
	}
}

// stuck runs a block that does not stop, interrupts it twice and answers
// y to the restart question; it returns the restart's answer (the
// doneMsg its command brings).
func stuck(t *testing.T, m *Model) tea.Msg {
	t.Helper()
	typeText(m, "while True: pass")
	press(m, "enter")
	m.Update(completeMsg{src: "while True: pass", kind: "complete"})
	press(m, "ctrl+c")
	press(m, "ctrl+c")
	if m.confirm != "restart" {
		t.Fatal("no restart question")
	}
	if press(m, "y") == nil || !m.restarting {
		t.Fatal("y does not restart")
	}
	return doneMsg{text: restartedStuck, restart: blockKey(m.runID)}
}

const restoredReport = "[Sandbox restarted] The session was restarted (vis-agent sandbox restart).\nRestored variables (1): kept."

// notices is the frame with the lines of notes joined (bars dropped).
func notices(m *Model) string { return strings.ReplaceAll(frame(m), "\n▌ ", " ") }

// TestOneRestartIsOneMessage: a stuck block restarted with y is one
// notice, whichever of the block's end and the restart's answer comes
// first, and the next block's report of what came back completes it; so
// is /restart; a restart the REPL did not ask for (the process died)
// says why, in the same kind of notice.
func TestOneRestartIsOneMessage(t *testing.T) {
	ended := runDoneMsg{res: protocol.Result{Error: &protocol.BlockError{Type: "SandboxRestarted",
		Message:   "the Python process was killed by signal 9 (killed); the next block runs in a new Python process restored from the snapshot",
		Traceback: "SandboxRestarted: the Python process was killed by signal 9 (killed)\n"}}}
	report := protocol.Event{Ev: "note", Kind: "restart", Data: restoredReport}
	for _, answerFirst := range []bool{false, true} {
		m := newModel(t, 100, 40)
		press(m, "f2") // the transcript on the whole width
		answer := stuck(t, m)
		ended.id = m.runID
		if answerFirst {
			m.Update(answer)
			m.Update(ended)
		} else {
			m.Update(ended)
			m.Update(answer)
		}
		run(t, m, "print(kept)", protocol.Result{}, report, protocol.Event{Ev: "out", Stream: "stdout", Data: "still here\n"})
		f := notices(m)
		want := "[Sandbox restarted] The block did not stop, so its Python process was restarted; the next block runs in a " +
			"new one, restored from the snapshot. Restored variables (1): kept.\n>>> print(kept)\nstill here\n"
		if !strings.Contains(f, want) || strings.Count(f, "[Sandbox restarted]") != 1 || strings.Contains(f, "SandboxRestarted") {
			t.Errorf("answer first %v: the restart is not one notice:\n%s", answerFirst, f)
		}
	}

	m := newModel(t, 100, 40)
	press(m, "f2")
	typeText(m, "/restart")
	m.Update(press(m, "enter")())
	run(t, m, "print(kept)", protocol.Result{}, report)
	run(t, m, "1", protocol.Result{}, report) // another restart, not seen here: its own notice
	f := notices(m)
	if !strings.Contains(f, "[Sandbox restarted] Restarted as asked (/restart); the next block runs in a new Python process, "+
		"restored from the snapshot. Restored variables (1): kept.\n>>> print(kept)\n") || strings.Count(f, "[Sandbox restarted]") != 2 {
		t.Errorf("/restart and the next block's report:\n%s", f)
	}

	m = newModel(t, 100, 40)
	press(m, "f2")
	run(t, m, "import os; os.kill(os.getpid(), 9)", protocol.Result{})
	ended.id = m.runID
	m.Update(ended)
	run(t, m, "print(kept)", protocol.Result{}, report)
	f = notices(m)
	if !strings.Contains(f, "[Sandbox restarted] The Python process was killed by signal 9 (killed); the next block runs in a "+
		"new Python process restored from the snapshot. Restored variables (1): kept.\n") || strings.Count(f, "[Sandbox restarted]") != 1 {
		t.Errorf("a block whose process died:\n%s", f)
	}
}

// TestSecondEnterAtAnEmptyLineRuns: an input the session finds incomplete
// gets a new line; an Enter on that empty line, still incomplete, says
// why and how to run it; a second Enter there runs it as it is. A def
// ends at its first blank line, as before.
func TestSecondEnterAtAnEmptyLineRuns(t *testing.T) {
	m := newModel(t, 100, 30)
	typeText(m, "print((1, 2)")
	press(m, "enter")
	m.Update(completeMsg{src: "print((1, 2)", kind: "incomplete"})
	if m.s.hint != "" || m.input.Value() != "print((1, 2)\n" {
		t.Fatalf("the first Enter: hint %q, input %q", m.s.hint, m.input.Value())
	}
	press(m, "enter")
	if m.asking != "print((1, 2)\n" {
		t.Fatalf("an Enter at the first empty line does not ask: %q", m.asking)
	}
	m.Update(completeMsg{src: m.asking, kind: "incomplete"})
	if !strings.Contains(frame(m), "Still incomplete (an unclosed bracket or string?): Enter again on the empty line runs it") {
		t.Fatalf("no word on how to run it:\n%s", frame(m))
	}
	if press(m, "enter") == nil || m.asking != "" || !m.s.running || m.tr.entries[len(m.tr.entries)-1].text != "print((1, 2)" {
		t.Fatalf("the second Enter at an empty line does not run the block: asking %q, running %v", m.asking, m.s.running)
	}
	m.Update(runDoneMsg{id: m.runID})

	typeText(m, "def f():")
	press(m, "enter")
	m.Update(completeMsg{src: "def f():", kind: "incomplete"})
	typeText(m, "return 1")
	press(m, "enter")
	m.Update(completeMsg{src: "def f():\n    return 1", kind: "incomplete"})
	press(m, "enter")
	m.Update(completeMsg{src: m.asking, kind: "complete"})
	if !m.s.running || m.s.hint != "" {
		t.Fatalf("a def does not run at its blank line: hint %q", m.s.hint)
	}
}

// TestErrorsColoursAndWrapping: a traceback that quotes the failing line
// gets no second excerpt of it (one without the source line still does,
// see script); a block's colours show as colours and its other escape
// sequences as text; a long line of a block wraps between words, its rows
// under its code.
func TestErrorsColoursAndWrapping(t *testing.T) {
	m := newModel(t, 60, 40)
	src := `raise ValueError("bad")`
	run(t, m, src, protocol.Result{Error: &protocol.BlockError{Type: "ValueError", Message: "bad", Excerpt: "1: " + src + "\n   " + strings.Repeat("^", len(src)),
		Traceback: "Traceback (most recent call last):\n  File \"<block 1>\", line 1, in <module>\n    " + src + "\nValueError: bad\n"}})
	if f := frame(m); strings.Count(f, src) != 2 || strings.Contains(f, "1: "+src) || strings.Contains(f, "^^^") {
		t.Errorf("the error's line is shown more than once:\n%s", f)
	}

	run(t, m, "show()", protocol.Result{}, protocol.Event{Ev: "out", Stream: "stdout", Data: "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[8mhidden\n"})
	v := m.View().Content
	if !strings.Contains(v, "\x1b[31mred") {
		t.Errorf("the block's colour is not kept:\n%q", v)
	}
	for _, raw := range []string{"\x1b]0;", "\x07", "\x1b[8m"} {
		if strings.Contains(v, raw) {
			t.Errorf("the block's %q reached the frame raw:\n%q", raw, v)
		}
	}
	if f := frame(m); !strings.Contains(f, `red \x1b]0;title\x07 \x1b[8mhidden`) {
		t.Errorf("the block's escape sequences are not shown as text:\n%s", f)
	}

	// a terminal's cut at 60 columns would fall inside "disagreement"
	words := []string{"an", "alphabetical", "breakfasting", "championship", "disagreement", "entertaining"}
	run(t, m, `x = "`+strings.Join(words, " ")+`"`, protocol.Result{})
	f := frame(m)
	echo := f[strings.LastIndex(f, ">>> x = "):]
	echo = echo[:strings.Index(echo, "\n─")]
	for _, w := range words {
		if !strings.Contains(echo, w) {
			t.Errorf("%q is cut between rows:\n%s", w, echo)
		}
	}
	if !strings.Contains(echo, "\n    disagreement entertaining\"") {
		t.Errorf("the block's second row is not under its code:\n%s", echo)
	}
}
