package tui

import (
	"fmt"
	"image"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// maxViewBytes is how much of an attachment the viewer reads: the store
// holds up to 64 MiB, a screen shows a few kilobytes.
const maxViewBytes = 1 << 20

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

// loadAttachments reads the session's attachments list.
func (m *Model) loadAttachments() tea.Cmd {
	s := m.s.sess
	m.seen.attachments = attachmentsStamp(s) // before the read, as in refresh
	return func() tea.Msg {
		list, err := listAttachments(s)
		return attachmentsMsg{list, err}
	}
}

// versions are the versions of filename in list, oldest first.
func versions(list []Descriptor, filename string) []Descriptor {
	var vs []Descriptor
	for _, d := range list {
		if d.Filename == filename {
			vs = append(vs, d)
		}
	}
	slices.SortFunc(vs, func(a, b Descriptor) int { return a.Version - b.Version })
	return vs
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
		add(mark + name.Render(termtext.Line(d.Filename)) + " v" + fmt.Sprint(d.Version))
		add("    " + th.panelDim.Render(attachmentSummary(d)))
	}
	return out, chosen
}

// attachmentSummary is a version's kind, size and comments in a few words.
func attachmentSummary(d Descriptor) string {
	parts := []string{}
	if d.Kind != "" {
		parts = append(parts, termtext.Line(d.Kind))
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
		rows = append(rows, fmt.Sprintf("  %s v%d  %s  %s  block %d  %s", termtext.Line(d.Filename), d.Version, attachmentSummary(d),
			termtext.Line(d.MediaType), d.Block, termtext.Line(d.ID)))
	}
	return strings.Join(rows, "\n")
}
