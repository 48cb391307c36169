package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// commentBox is a comment being written on one version, in place of the
// input (under the viewer when the viewer is open). It exists while it has
// the keys: it opens on a commentable version and closes when saved or
// cancelled.
type commentBox struct {
	s *shared
	d Descriptor
	editorBox
	shown  bool
	saving bool
}

func newCommentBox(s *shared) *commentBox { return &commentBox{s: s} }

// start opens the box on version d, or says why a read-only version takes
// no comment; it reports whether it opened.
func (c *commentBox) start(d Descriptor) bool {
	if !d.Commentable {
		c.s.hint = fmt.Sprintf("%s v%d is read-only: only versions attached with commentable=True take comments", termtext.Line(d.Filename), d.Version)
		return false
	}
	c.d, c.ed, c.shown, c.saving = d, newEditor(), true, false
	return true
}

// Update takes keys while the box is open, pastes, and the store's answer
// to a save.
func (c *commentBox) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return c.key(msg)
	case tea.PasteMsg:
		c.ed.Insert(msg.Content)
	case commentedMsg:
		c.saved(msg)
	}
	return nil
}

func (c *commentBox) key(k tea.KeyPressMsg) tea.Cmd {
	if c.saving {
		return nil
	}
	switch k.String() {
	case "esc", "ctrl+c":
		c.s.post(closeMsg{c})
	case "enter":
		text := strings.TrimSpace(c.ed.Value())
		if text == "" {
			c.s.hint = "An empty comment is not saved; Esc cancels"
			return nil
		}
		c.saving = true
		s, d := c.s.sess, c.d
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

// saved closes the box once its comment is in the store, saying so; a
// failed save keeps the text, to be saved again or cancelled.
func (c *commentBox) saved(msg commentedMsg) {
	if !c.shown || c.d.ID != msg.d.ID {
		return
	}
	if msg.err != nil {
		c.saving = false
		c.s.hint = "The comment was not saved: " + msg.err.Error()
		return
	}
	done := fmt.Sprintf("Comment added to %s v%d.", termtext.Line(msg.d.Filename), msg.d.Version)
	c.s.hint = done
	c.s.post(closeMsg{c}, noteMsg{kindInfo, done}, reloadMsg{})
}

func (c *commentBox) Focus() {}
func (c *commentBox) Blur()  { c.shown, c.saving = false, false }

func (c *commentBox) Hint() string {
	if c.saving {
		return "Saving the comment…"
	}
	return fmt.Sprintf("Comment on %s v%d: Enter saves, Alt+Enter starts a new line, Esc cancels", termtext.Line(c.d.Filename), c.d.Version)
}

func (c *commentBox) View() []string {
	th := c.s.th
	return c.draw(th.prompt.Render("comment> "), th.prompt.Render("       … "))
}
