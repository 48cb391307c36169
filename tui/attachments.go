package tui

import (
	"fmt"
	"image"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The panel's tabs.
const (
	tabDefs = iota
	tabAttachments
)

// maxViewBytes is how much of an attachment the viewer reads: the store
// holds up to 64 MiB, a screen shows a few kilobytes.
const maxViewBytes = 1 << 20

const panelKeys = "↑/↓ choose · Enter views · c comments · Esc back to the input"

// Messages of the attachment store's answers.
type (
	attachmentsMsg struct {
		list []Descriptor
		err  error
	}
	// openedMsg is a version to view: its descriptor with its comments,
	// its first maxViewBytes bytes, and the image they hold, if whole.
	openedMsg struct {
		d    Descriptor
		data []byte
		err  error
		img  image.Image
	}
	commentedMsg struct {
		d   Descriptor
		err error
	}
)

func (m *Model) loadAttachments() tea.Cmd {
	s := m.sess
	m.seen.attachments = attachmentsStamp(s) // before the read, as in refresh
	return func() tea.Msg {
		list, err := listAttachments(s)
		return attachmentsMsg{list, err}
	}
}

// attachments takes the store's list (newest first), keeping the chosen
// version chosen while the list has the keys or the viewer is open; else
// the newest is chosen. An open viewer then shows the current state (see
// follow).
func (m *Model) attachments(msg attachmentsMsg) tea.Cmd {
	m.panelW = 0
	if m.view != nil {
		m.view.width = 0 // its title names the versions there are
	}
	if msg.err != nil {
		m.attsErr = msg.err.Error()
		return nil
	}
	chosen := m.chosen()
	if !m.focus && m.view == nil {
		chosen = nil
	}
	newest := false // the viewer shows its file's newest version
	if v := m.view; v != nil {
		vs := m.versions(v.d.Filename)
		newest = len(vs) == 0 || vs[len(vs)-1].ID == v.d.ID
	}
	m.atts, m.attsErr = msg.list, ""
	m.sel = 0
	for i, d := range m.atts {
		if chosen != nil && d.ID == chosen.ID {
			m.sel = i
		}
	}
	if m.view == nil {
		return nil
	}
	return m.follow(newest)
}

// follow brings the open viewer up to the store's list: a viewer that
// showed its file's newest version moves to a newer one a block attached
// since (unless a comment on the shown one is being written); else its
// version is read again (for comments added since), or, when the list no
// longer holds it, the viewer says so.
func (m *Model) follow(newest bool) tea.Cmd {
	v := m.view
	vs := m.versions(v.d.Filename)
	i := slices.IndexFunc(vs, func(d Descriptor) bool { return d.ID == v.d.ID })
	switch {
	case i < 0:
		v.data, v.img, v.loading, v.width = nil, nil, false, 0
		v.err = "it is no longer among the session's attachments"
		return nil
	case newest && i < len(vs)-1 && m.comment == nil: // not under a comment being written on it
		latest, was := vs[len(vs)-1], v.d.Version
		m.sel = slices.IndexFunc(m.atts, func(d Descriptor) bool { return d.ID == latest.ID })
		cmd := m.open(latest)
		m.hint = fmt.Sprintf("%s v%d is new: it replaced v%d here ([ shows v%d)", latest.Filename, latest.Version, was, was)
		return cmd
	}
	return m.read(v.d)
}

// chosen is the attachment version chosen in the panel, if any.
func (m *Model) chosen() *Descriptor {
	if m.sel < 0 || m.sel >= len(m.atts) {
		return nil
	}
	return &m.atts[m.sel]
}

// versions are the versions of filename in the list, oldest first.
func (m *Model) versions(filename string) []Descriptor {
	var vs []Descriptor
	for _, d := range m.atts {
		if d.Filename == filename {
			vs = append(vs, d)
		}
	}
	slices.SortFunc(vs, func(a, b Descriptor) int { return a.Version - b.Version })
	return vs
}

// switchTab is F3: to the attachments tab with the keys on its list, or,
// from that list, back to defs and the input.
func (m *Model) switchTab() {
	m.showPanel, m.panelW = true, 0
	if m.panelTab == tabAttachments && m.focus {
		m.panelTab, m.focus, m.hint = tabDefs, false, ""
		return
	}
	m.panelTab, m.focus, m.hint = tabAttachments, true, panelKeys
}

// panelKey handles a key while the attachments list has the keys; other
// keys go back to the input.
func (m *Model) panelKey(k tea.KeyPressMsg) tea.Cmd {
	m.hint = panelKeys
	m.panelW = 0
	switch k.String() {
	case "up":
		m.sel = max(0, m.sel-1)
	case "down":
		m.sel = max(0, min(len(m.atts)-1, m.sel+1))
	case "home", "pgup":
		m.sel = 0
	case "end", "pgdown":
		m.sel = max(0, len(m.atts)-1)
	case "enter":
		if d := m.chosen(); d != nil {
			return m.open(*d)
		}
	case "c":
		if d := m.chosen(); d != nil {
			m.startComment(*d)
		}
	case "f3":
		m.switchTab()
	case "esc", "ctrl+c":
		m.focus, m.hint = false, ""
		if k.String() == "ctrl+c" && m.running {
			return m.ctrlC()
		}
	default:
		m.focus, m.hint = false, ""
		return m.key(k)
	}
	return nil
}

// open shows version d in the viewer, reading it from the store.
func (m *Model) open(d Descriptor) tea.Cmd {
	if m.view == nil || m.view.d.Filename != d.Filename {
		m.view = &viewer{}
	}
	m.view.d, m.view.loading, m.view.data, m.view.err, m.view.width = d, true, nil, "", 0
	m.hint = ""
	return m.read(d)
}

// read reads version d from the store for the viewer.
func (m *Model) read(d Descriptor) tea.Cmd {
	s := m.sess
	return func() tea.Msg {
		fresh, data, err := readAttachment(s, d.ID)
		if err != nil {
			return openedMsg{d: d, err: err}
		}
		return openedMsg{fresh, data, nil, decodeWhole(fresh, data)}
	}
}

func (m *Model) opened(msg openedMsg) {
	v := m.view
	if v == nil || v.d.ID != msg.d.ID {
		return // closed, or another version asked for since
	}
	v.d, v.data, v.img, v.loading, v.width, v.err = msg.d, msg.data, msg.img, false, 0, ""
	if msg.err != nil {
		v.err = msg.err.Error()
	}
}

// viewKey handles a key while the viewer is open.
func (m *Model) viewKey(k tea.KeyPressMsg) tea.Cmd {
	v := m.view
	page := max(1, m.viewHeight()-2)
	m.hint = ""
	switch k.String() {
	case "esc", "q", "ctrl+c":
		m.view = nil
		if m.focus {
			m.hint = panelKeys
		}
		if k.String() == "ctrl+c" && m.running {
			return m.ctrlC() // its hint says it interrupts
		}
	case "up", "k":
		v.top--
	case "down", "j":
		v.top++
	case "pgup", "b":
		v.top -= page
	case "pgdown", "space", " ":
		v.top += page
	case "home", "g":
		v.top = 0
	case "end", "G":
		v.top = 1 << 30
	case "[", "]":
		vs := m.versions(v.d.Filename)
		i := slices.IndexFunc(vs, func(d Descriptor) bool { return d.ID == v.d.ID })
		if k.String() == "[" {
			i--
		} else {
			i++
		}
		if i < 0 || i >= len(vs) {
			m.hint = fmt.Sprintf("%s has versions %d to %d", v.d.Filename, vs[0].Version, vs[len(vs)-1].Version)
			return nil
		}
		return m.open(vs[i])
	case "c":
		m.startComment(v.d)
	case "f1":
		m.view = nil
		m.tr.add(kindInfo, helpText)
	}
	return nil
}

// startComment opens the comment input for version d, or says why a
// read-only version takes none.
func (m *Model) startComment(d Descriptor) {
	if !d.Commentable {
		m.hint = fmt.Sprintf("%s v%d is read-only: only versions attached with commentable=True take comments", d.Filename, d.Version)
		return
	}
	m.comment = &commentInput{d: d, ed: newEditor()}
	m.hint = fmt.Sprintf("Comment on %s v%d: Enter saves, Alt+Enter starts a new line, Esc cancels", d.Filename, d.Version)
}

// commentInput is a comment being written on one version.
type commentInput struct {
	d      Descriptor
	ed     editor
	saving bool
}

// commentKey handles a key while a comment is being written.
func (m *Model) commentKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.comment
	if c.saving {
		return nil
	}
	switch k.String() {
	case "esc", "ctrl+c":
		m.comment, m.hint = nil, ""
		if m.focus && m.view == nil {
			m.hint = panelKeys
		}
	case "enter":
		text := strings.TrimSpace(c.ed.Value())
		if text == "" {
			m.hint = "An empty comment is not saved; Esc cancels"
			return nil
		}
		c.saving = true
		m.hint = "Saving the comment…"
		s, d := m.sess, c.d
		return func() tea.Msg {
			_, err := s.CommentAttachment(d.ID, 0, text)
			return commentedMsg{d, err}
		}
	case "alt+enter", "ctrl+j", "shift+enter":
		c.ed.Insert("\n")
	case "up":
		c.ed.Up()
	case "down":
		c.ed.Down()
	default:
		editKey(&c.ed, k)
	}
	return nil
}

func (m *Model) commented(msg commentedMsg) tea.Cmd {
	if m.comment == nil || m.comment.d.ID != msg.d.ID {
		return nil
	}
	if msg.err != nil {
		// the text stays, to be saved again or cancelled
		m.comment.saving = false
		m.hint = "The comment was not saved: " + msg.err.Error()
		return nil
	}
	done := fmt.Sprintf("Comment added to %s v%d.", msg.d.Filename, msg.d.Version)
	m.comment, m.hint = nil, done
	m.tr.add(kindInfo, done)
	cmds := []tea.Cmd{m.loadAttachments()}
	if m.view != nil && m.view.d.ID == msg.d.ID {
		top := m.view.top
		cmds = append(cmds, m.open(m.view.d))
		m.view.top, m.hint = top, done
	}
	return tea.Batch(cmds...)
}

// attachmentLines is the attachments tab: each version, newest first, with
// its kind, size, and whether it takes comments and has some; the chosen
// one marked while the list has the keys. It returns the chosen one's
// line too (-1: none).
func attachmentLines(th *theme, atts []Descriptor, errText string, sel int, focus bool, width int) ([]string, int) {
	var out []string
	add := func(s string) { out = append(out, ansi.Truncate(s, width, "…")) }
	chosen := -1
	switch {
	case errText != "" && len(atts) == 0:
		add(th.panelBad.Render("attachments: " + errText))
	case len(atts) == 0:
		add(th.panelDim.Render("no attachments yet: attach(data, filename=…)"))
	}
	for i, d := range atts {
		mark := "  "
		name := th.panelName
		if focus && i == sel {
			mark, name, chosen = "▶ ", name.Reverse(true), len(out)
		}
		add(mark + name.Render(d.Filename) + " v" + fmt.Sprint(d.Version))
		add("    " + th.panelDim.Render(attachmentSummary(d)))
	}
	return out, chosen
}

// attachmentSummary is a version's kind, size and comments in a few words.
func attachmentSummary(d Descriptor) string {
	parts := []string{}
	if d.Kind != "" {
		parts = append(parts, d.Kind)
	}
	parts = append(parts, sizeText(d.Size))
	switch {
	case !d.Commentable:
		parts = append(parts, "read-only")
	case d.Comments == nil:
		parts = append(parts, "✎ commentable") // comments not counted
	case len(d.Comments) == 1:
		parts = append(parts, "✎ 1 comment")
	default:
		parts = append(parts, fmt.Sprintf("✎ %d comments", len(d.Comments)))
	}
	return strings.Join(parts, " · ")
}

// attachmentTable is /attachments: one row a version, newest first.
func attachmentTable(atts []Descriptor) string {
	if len(atts) == 0 {
		return "No attachments in this session yet."
	}
	rows := []string{fmt.Sprintf("Attachments (%d, newest first; F3 opens the list, Enter views one):", len(atts))}
	for _, d := range atts {
		rows = append(rows, fmt.Sprintf("  %s v%d  %s  %s  block %d  %s", d.Filename, d.Version, attachmentSummary(d),
			d.MediaType, d.Block, d.ID))
	}
	return strings.Join(rows, "\n")
}
