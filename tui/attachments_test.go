package tui

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

var attached = time.Date(2026, 11, 30, 11, 2, 3, 0, time.UTC)

const reportV2 = "# Weekly report\n\nSales **rose** by `12%`.\n\n- north: up\n- south: flat\n\n> checked by hand\n\n```python\ndef total(xs):\n    return sum(xs)\n```\n"

// attachmentList is a session's attachments, newest first: two versions
// of a Markdown report (the newer commentable, with a comment), a PNG and
// some bytes.
func attachmentList() []Descriptor {
	return []Descriptor{
		{ID: "a4", Filename: "report.md", Version: 2, Kind: "text", MediaType: "text/markdown", Size: int64(len(reportV2)), SHA256: strings.Repeat("ab", 32),
			Commentable: true, Created: attached, Session: "default", Block: 7,
			Comments: []Comment{{ID: 1, Text: "Check the south figure.", Author: "repl", Created: attached.Add(time.Minute)}}},
		{ID: "a3", Filename: "plot.png", Version: 1, Kind: "image", MediaType: "image/png", Size: 94, SHA256: strings.Repeat("cd", 32), Created: attached, Session: "default", Block: 6},
		{ID: "a2", Filename: "blob.bin", Version: 1, Kind: "bytes", MediaType: "application/octet-stream", Size: 40, SHA256: strings.Repeat("ef", 32), Created: attached, Session: "default", Block: 5},
		{ID: "a1", Filename: "report.md", Version: 1, Kind: "text", MediaType: "text/markdown", Size: 20, SHA256: strings.Repeat("01", 32), Created: attached, Session: "default", Block: 4},
	}
}

// pngBytes is a PNG w×h pixels, from black at the top to white at the
// bottom.
func pngBytes(t *testing.T, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetGray(x, y, color.Gray{Y: uint8(y * 255 / max(1, h-1))})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAttachmentsTabViewerAndComment: F3 shows the attachments tab with
// its list taking the keys; Enter opens a version in the viewer, [ and ]
// switch versions, c opens the comment input on a commentable version and
// refuses on a read-only one; golden frames of each.
func TestAttachmentsTabViewerAndComment(t *testing.T) {
	m := newModel(t, 120, 30)
	script(t, m)
	if cmd := m.refresh(); cmd == nil {
		t.Fatal("no refresh")
	}
	m.Update(attachmentsMsg{list: attachmentList()})
	if f := frame(m); !strings.Contains(f, "[defs] attachments (4)") {
		t.Fatalf("the tab line does not count the attachments:\n%s", f)
	}
	press(m, "f3")
	if !m.panel.focused || m.panel.tab != tabAttachments {
		t.Fatal("F3 does not open the attachments tab with the keys on it")
	}
	tab := frame(m)
	for _, want := range []string{"[attachments (4)]", "▶ report.md v2", "text · 137 B · ✎ 1 comment", "plot.png v1", "image · 94 B · read-only", "Enter views"} {
		if !strings.Contains(tab, want) {
			t.Errorf("the attachments tab lacks %q", want)
		}
	}
	golden(t, "attachments-tab.golden", tab)

	// Enter opens the chosen version; its bytes come from the store
	if press(m, "enter") == nil || !m.viewer.shown || !m.viewer.loading {
		t.Fatal("Enter does not open the viewer")
	}
	if !strings.Contains(frame(m), "reading…") {
		t.Fatal("the viewer does not say it reads")
	}
	m.Update(openedMsg{d: attachmentList()[0], data: []byte(reportV2)})
	view := frame(m)
	for _, want := range []string{"report.md  v2 (versions 1–2: [ and ] switch)", "text · text/markdown · 137 B · commentable (c)",
		"attached by block 7 of session default, 2026-11-30 11:02:03 UTC", "Weekly report", "Sales rose by 12%.", "• north: up",
		"│ checked by hand", "▏ def total(xs):", "Comments (1)", "repl, 2026-11-30 11:03", "  Check the south figure.", "Esc closes"} {
		if !strings.Contains(view, want) {
			t.Errorf("the viewer lacks %q", want)
		}
	}
	if strings.Contains(view, ">>> ") {
		t.Error("the viewer shows the input")
	}
	golden(t, "attachments-viewer.golden", view)

	// c: the comment input, under the viewer
	press(m, "c")
	typeText(m, "Looks right")
	press(m, "alt+enter")
	typeText(m, "to me")
	comment := frame(m)
	for _, want := range []string{"comment> Looks right", "       … to me", "Comment on report.md v2: Enter saves"} {
		if !strings.Contains(comment, want) {
			t.Errorf("the comment input lacks %q", want)
		}
	}
	golden(t, "attachments-comment.golden", comment)
	if press(m, "enter") == nil || !m.comment.saving {
		t.Fatal("Enter does not save the comment")
	}
	m.Update(commentedMsg{d: m.comment.d, err: errString("the store is locked")})
	if !m.comment.shown || m.comment.ed.Value() != "Looks right\nto me" || !strings.Contains(frame(m), "The comment was not saved: the store is locked") {
		t.Fatal("a failed save loses the comment or does not say so")
	}
	press(m, "enter")
	if cmd := m.Update2(commentedMsg{d: m.comment.d}); cmd == nil || m.comment.shown || !m.viewer.shown || m.focused() != component(m.viewer) {
		t.Fatal("a saved comment does not close the input and read the version again")
	}

	// [ : the older version, read-only: c says why not
	press(m, "[")
	if m.viewer.d.ID != "a1" {
		t.Fatalf("[ shows %s, not report.md v1", m.viewer.d.ID)
	}
	m.Update(openedMsg{d: attachmentList()[3], data: []byte("# Draft\n\nnothing yet\n")})
	press(m, "[")
	if !strings.Contains(frame(m), "report.md has versions 1 to 2") {
		t.Error("[ before the first version does not say so")
	}
	press(m, "c")
	if m.comment.shown || !strings.Contains(frame(m), "report.md v1 is read-only: only versions attached with commentable=True take comments") {
		t.Errorf("c on a read-only version:\n%s", frame(m))
	}
	press(m, "esc")
	if m.viewer.shown || !m.panel.focused {
		t.Fatal("Esc does not close the viewer back to the list")
	}

	// an image is described, bytes summarised
	press(m, "down")
	press(m, "enter")
	d, data := attachmentList()[1], pngBytes(t, 640, 480)
	m.Update(openedMsg{d: d, data: data, img: decodeWhole(d, data)})
	if f := frame(m); !strings.Contains(f, "PNG image, 640 × 480 pixels, 94 B") || !strings.Contains(f, "(no preview: over 1 MiB, or not decodable)") {
		t.Errorf("the image is not described, or a preview is drawn of bytes that are not all of it:\n%s", f)
	}
	d.Size = int64(len(data))
	m.Update(openedMsg{d: d, data: data, img: decodeWhole(d, data)})
	if f := frame(m); !strings.Contains(f, "\n"+strings.Repeat("░", 64)+"\n") || !strings.Contains(f, "\n"+strings.Repeat("█", 64)+"\n") {
		t.Errorf("no preview of the image:\n%s", f)
	}
	press(m, "esc")
	press(m, "down")
	press(m, "enter")
	m.Update(openedMsg{d: attachmentList()[2], data: append([]byte("\x00\x01binary"), bytes.Repeat([]byte{0xff}, 32)...)})
	if f := frame(m); !strings.Contains(f, "binary data (application/octet-stream), 40 B; its first 40 bytes:") || !strings.Contains(f, "00000000  00 01 62 69") {
		t.Errorf("the bytes are not summarised:\n%s", f)
	}
	press(m, "esc")

	// a new attachment keeps the chosen one chosen; typing goes back to the input
	list := append([]Descriptor{{ID: "a5", Filename: "new.txt", Version: 1, Size: 3}}, attachmentList()...)
	m.Update(attachmentsMsg{list: list})
	if d := m.panel.chosenVersion(); d == nil || d.ID != "a2" {
		t.Fatalf("after a refresh the chosen one is %+v", d)
	}
	typeText(m, "x")
	if m.panel.focused || m.input.ed.Value() != "x" {
		t.Fatalf("typing in the list does not go back to the input: focus %v, input %q", m.panel.focused, m.input.ed.Value())
	}
	m.Update(attachmentsMsg{list: list})
	if d := m.panel.chosenVersion(); d == nil || d.ID != "a5" {
		t.Fatalf("a refresh while the input has the keys does not choose the newest: %+v", d)
	}
	// F3 switches tabs whether or not the list has the keys
	if press(m, "f3"); m.panel.focused || m.panel.tab != tabDefs {
		t.Fatal("F3 on the attachments tab, the input having the keys, does not switch to defs")
	}
	if press(m, "f3"); !m.panel.focused || m.panel.tab != tabAttachments {
		t.Fatal("F3 on defs does not give the attachments list the keys")
	}
	if press(m, "esc"); m.panel.focused || m.panel.tab != tabAttachments {
		t.Fatal("Esc does not give the keys back to the input")
	}
	if press(m, "f3"); m.panel.focused || m.panel.tab != tabDefs {
		t.Fatal("F3 after Esc does not switch to defs")
	}

	// narrow: the chosen one shows in the folded panel
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 24})
	press(m, "f3")
	for range 4 {
		press(m, "down")
	}
	if f := frame(m); !strings.Contains(f, "▶ report.md v1") || !strings.Contains(f, "[attachments (5)]") {
		t.Errorf("the chosen one or the tabs do not show at 60 columns:\n%s", f)
	}
	press(m, "enter")
	// another session: none of this one's attachments stay
	other := &client.Session{Meta: session.Meta{Name: "other", Workspace: "/home/u/work/proj"}}
	m.Update(doneMsg{text: "Now in session other.", sess: other})
	if m.viewer.shown || len(m.panel.atts) != 0 || !strings.Contains(frame(m), "[attachments (0)]") {
		t.Errorf("after /session the old session's attachments stay:\n%s", frame(m))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestMarkdownAndTextKinds(t *testing.T) {
	th := newTheme(true)
	d := Descriptor{Filename: "x.py", MediaType: "text/x-python", Size: 10}
	if got := textKind(d); got != "python" {
		t.Errorf("textKind(x.py) = %q", got)
	}
	if isText(Descriptor{MediaType: "application/octet-stream"}, []byte("a\x00b")) {
		t.Error("NUL bytes read as text")
	}
	if !isText(Descriptor{MediaType: "application/octet-stream"}, []byte("héllo"[:2])) {
		t.Error("UTF-8 cut at the sample's end is not text")
	}
	if got := th.inline("a **b** `c` * d `e", lipgloss.NewStyle()); stripped(got) != "a b c * d `e" {
		t.Errorf("inline: %q", stripped(got))
	}
	if got := attachmentSummary(Descriptor{Commentable: true, Size: 3}); got != "3 B · ✎ commentable" {
		t.Errorf("a commentable version whose comments were not counted: %q", got)
	}
}

// TestPanelWindowKeepsTheChosenLine: the panel's window shows the chosen
// line and the one under it, and a line saying how many are cut above and
// below, where there is room for it.
func TestPanelWindowKeepsTheChosenLine(t *testing.T) {
	lines := []string{"tabs", "a", "a'", "b", "b'", "c", "c'", "d", "d'"}
	more := func(n int, above bool) string {
		if above {
			return fmt.Sprintf("↑%d", n)
		}
		return fmt.Sprintf("↓%d", n)
	}
	for _, c := range []struct {
		chosen, height int
		want           string
	}{
		{-1, 4, "tabs a a' ↓6"},
		{1, 4, "tabs a a' ↓6"},
		{5, 4, "tabs b' c c'"}, // no room for marks
		{7, 4, "tabs c' d d'"},
		{5, 6, "tabs ↑3 b' c c' ↓2"},
		{7, 6, "tabs ↑4 c c' d d'"},
		{-1, 3, "tabs a ↓7"},
		{-1, 2, "tabs a"},
		{7, 20, "tabs a a' b b' c c' d d'"},
		{7, 1, "tabs"},
		{7, 0, ""},
	} {
		got := window(lines, c.chosen, c.height, more)
		if strings.Join(got, " ") != c.want || len(got) != min(c.height, len(lines)) {
			t.Errorf("window(chosen %d, height %d) = %q, want %q", c.chosen, c.height, strings.Join(got, " "), c.want)
		}
	}
}

// storeSession is a session folder under a temporary Vis home, with its
// attachments store open (closed when the test ends); no host runs.
func storeSession(t *testing.T) (session.Meta, *client.Session, *attachments.Store) {
	t.Helper()
	meta := session.Meta{Name: "default", Workspace: "/home/u/work/proj"}
	sess, err := client.Open(filepath.Join(t.TempDir(), "sandbox", "sessions"), meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := attachments.Open(paths.AttachmentsOf(sess.Folder.Dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return meta, sess, st
}

// TestAttachmentsFromTheStore runs the REPL's commands against a real
// store and session folder (no host is needed): the list with comment
// counts, the viewer reading a version, and a comment saved and read back.
func TestAttachmentsFromTheStore(t *testing.T) {
	meta, sess, st := storeSession(t)
	attach := func(name, text string, commentable bool) {
		_, err := st.Attach(attachments.New{Session: sess.Folder.ID(), SessionName: meta.Name, Block: 2,
			Filename: name, Commentable: commentable}, strings.NewReader(text), attachments.Limits{})
		if err != nil {
			t.Fatal(err)
		}
	}
	attach("notes.md", "# Notes\n\nfirst\n", true)
	attach("notes.md", "# Notes\n\nsecond\n", false)
	if _, err := st.Comment(sess.Folder.ID(), "notes.md", 1, "an earlier one", "ann"); err != nil {
		t.Fatal(err)
	}

	m := New(Config{Session: sess, HistoryDir: t.TempDir()})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.loadAttachments()())
	press(m, "f3")
	if f := frame(m); !strings.Contains(f, "▶ notes.md v2") || !strings.Contains(f, "text · 16 B · read-only") || !strings.Contains(f, "text · 15 B · ✎ 1 comment") {
		t.Fatalf("the list from the store:\n%s", f)
	}
	press(m, "c")
	if m.comment.shown {
		t.Fatal("c opened a comment on a read-only version")
	}
	press(m, "down")
	m.Update(press(m, "enter")())
	if f := frame(m); !strings.Contains(f, "Notes") || !strings.Contains(f, "\nfirst") || !strings.Contains(f, "  an earlier one") {
		t.Fatalf("the viewer from the store:\n%s", f)
	}
	press(m, "c")
	typeText(m, "from the REPL")
	cmd := m.Update2(press(m, "enter")())
	if m.comment.shown || cmd == nil || !strings.Contains(frame(m), "Comment added to notes.md v1.") {
		t.Fatalf("the comment was not saved:\n%s", frame(m))
	}
	d, err := st.Get(sess.Folder.ID(), "notes.md", 1)
	if err != nil || len(d.Comments) != 2 || d.Comments[1].Text != "from the REPL" {
		t.Fatalf("the store holds %+v (%v)", d.Comments, err)
	}
	m.Update(m.viewer.open(m.viewer.d)())
	if f := frame(m); !strings.Contains(f, "Comments (2)") || !strings.Contains(f, "  from the REPL") {
		t.Fatalf("the viewer does not show the new comment:\n%s", f)
	}
	// /attachments lists them in the transcript
	press(m, "esc", "esc")
	typeText(m, "/attachments")
	msg := press(m, "enter")()
	m.Update(msg)
	if f := frame(m); !strings.Contains(f, "Attachments (2, newest first") || !strings.Contains(f, "notes.md v1  text · 15 B · ✎ 2 comments  text/markdown  block 2") {
		t.Fatalf("/attachments:\n%s", f)
	}
}

func TestShades(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 8, 4))
	for y := 0; y < 4; y++ {
		for x := 0; x < 4; x++ {
			img.Set(x, y, color.White)
			img.Set(x+4, y, color.RGBA{A: 255})
		}
	}
	if got := strings.Join(shades(img, 8, true), "|"); got != "████    |████    " {
		t.Errorf("dark: %q", got)
	}
	if got := strings.Join(shades(img, 8, false), "|"); got != "    ████|    ████" {
		t.Errorf("light: %q", got)
	}
	tall := image.NewGray(image.Rect(0, 0, 10, 1000))
	if got := shades(tall, 64, true); len(got) != previewRows || len([]rune(got[0])) != 1 {
		t.Errorf("a tall image: %d lines of %d", len(got), len([]rune(got[0])))
	}
	if shades(image.NewGray(image.Rect(0, 0, 0, 0)), 8, true) != nil {
		t.Error("an empty image")
	}
}

// TestViewerFollowsTheStore: an open viewer shows the store's current
// state after each refresh: it moves to a version a block attached when
// it showed the newest (not while a comment on it is being written),
// stays on an older one it was moved to (read again,
// with a comment added since by another client), and says so when the
// session's attachments are gone.
func TestViewerFollowsTheStore(t *testing.T) {
	meta, sess, st := storeSession(t)
	key := sess.Folder.ID()
	attach := func(text string) {
		_, err := st.Attach(attachments.New{Session: key, SessionName: meta.Name, Block: 2, Filename: "log.txt", Commentable: true},
			strings.NewReader(text), attachments.Limits{})
		if err != nil {
			t.Fatal(err)
		}
	}
	attach("first run\n")
	m := New(Config{Session: sess, HistoryDir: t.TempDir()})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.loadAttachments()())
	press(m, "f3")
	m.Update(press(m, "enter")())
	if f := frame(m); !strings.Contains(f, "log.txt  v1") || !strings.Contains(f, "\nfirst run") {
		t.Fatalf("the viewer on v1:\n%s", f)
	}
	// refresh is the refresh after a block: the list, then what the
	// viewer asks for.
	refresh := func() {
		t.Helper()
		if cmd := m.Update2(m.loadAttachments()()); cmd != nil {
			m.Update(cmd())
		}
	}

	attach("second run\n")
	refresh()
	f := frame(m)
	for _, want := range []string{"log.txt  v2 (versions 1–2", "\nsecond run", "log.txt v2 is new: it replaced v1 here ([ shows v1)"} {
		if !strings.Contains(f, want) {
			t.Errorf("after a block attached v2, the viewer lacks %q:\n%s", want, f)
		}
	}
	if d := m.panel.chosenVersion(); d == nil || d.Version != 2 {
		t.Errorf("the list's chosen version after the viewer moved: %+v", d)
	}

	// a comment being written keeps the viewer on its version
	press(m, "c")
	attach("third run\n")
	refresh()
	if f := frame(m); !strings.Contains(f, "log.txt  v2 (versions 1–3") || !strings.Contains(f, "comment> ") {
		t.Errorf("a new version moved the viewer from under a comment being written:\n%s", f)
	}
	press(m, "esc")

	m.Update(press(m, "[")())
	if _, err := st.Comment(key, "log.txt", 1, "seen elsewhere", "ann"); err != nil {
		t.Fatal(err)
	}
	attach("fourth run\n")
	refresh()
	f = frame(m)
	for _, want := range []string{"log.txt  v1 (versions 1–4", "\nfirst run", "Comments (1)", "  seen elsewhere"} {
		if !strings.Contains(f, want) {
			t.Errorf("a viewer moved to v1 lacks %q after a refresh:\n%s", want, f)
		}
	}

	if err := st.RemoveSession(key); err != nil {
		t.Fatal(err)
	}
	refresh()
	if f := frame(m); !strings.Contains(f, "could not read it: it is no longer among the session's attachments") || strings.Contains(f, "first run") {
		t.Errorf("the viewer after the session's attachments were removed:\n%s", f)
	}
}
