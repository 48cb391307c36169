package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/internal/termtext"
)

// input is where blocks are typed: the editor with python's prompts, the
// history of the workspace's inputs, and completion from the session.
// Enter is its conductor's (run.go): whether the input runs is the
// session's answer.
type input struct {
	s *shared
	editorBox
	hist *history
}

func newInput(s *shared, hist *history) *input {
	return &input{s: s, editorBox: editorBox{ed: newEditor()}, hist: hist}
}

// Update takes keys while it has the focus, pastes, and the session's
// completions.
func (in *input) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return in.key(msg)
	case tea.PasteMsg:
		in.ed.Insert(msg.Content)
	case completionsMsg:
		in.completions(msg)
	}
	return nil
}

func (in *input) key(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+d":
		in.ed.Delete()
	case "alt+enter", "ctrl+j", "shift+enter":
		in.ed.Newline()
	case "tab":
		return in.tab()
	case "up":
		if !in.ed.Up() {
			if s, ok := in.hist.back(in.ed.Value()); ok {
				in.ed.SetValue(s)
			}
		}
	case "down":
		if !in.ed.Down() {
			if s, ok := in.hist.forward(); ok {
				in.ed.SetValue(s)
			}
		}
	default:
		editKey(&in.ed, k)
	}
	return nil
}

func (in *input) View() []string {
	th := in.s.th
	return in.draw(th.prompt.Render(">>> "), th.prompt.Render("... "))
}

func (in *input) Value() string { return in.ed.Value() }

func (in *input) Empty() bool { return in.ed.Empty() }

// clear empties the input and ends a walk through the history.
func (in *input) clear() {
	in.ed.SetValue("")
	in.hist.pos = len(in.hist.entries)
}

// take empties the input, keeping what it held in the history.
func (in *input) take(text string) error {
	in.ed.SetValue("")
	return in.hist.add(text)
}

// tab indents at a line's start, else completes the word before the
// cursor from the session.
func (in *input) tab() tea.Cmd {
	if in.ed.OnlySpacesBeforeCursor() {
		in.ed.Insert("    ")
		return nil
	}
	if in.s.running {
		in.s.hint = "Completion waits until the block ends."
		return nil
	}
	word, src, s := in.ed.WordBeforeCursor(), in.ed.Value(), in.s.sess
	if word == "" {
		return nil
	}
	return func() tea.Msg {
		names, err := s.Completions(word)
		return completionsMsg{src, word, names, err}
	}
}

func (in *input) completions(msg completionsMsg) {
	if msg.src != in.ed.Value() || msg.word != in.ed.WordBeforeCursor() {
		return
	}
	switch {
	case msg.err != nil:
		in.s.hint = "no completions: " + sessionLine(msg.err.Error())
	case len(msg.names) == 0:
		in.s.hint = "no completions"
	default:
		prefix := msg.names[0]
		for _, n := range msg.names[1:] {
			for !strings.HasPrefix(n, prefix) {
				prefix = prefix[:len(prefix)-1]
			}
		}
		// The names are the session's (any key of its globals, any name
		// an object's __dir__ gives): one with a control character or
		// an escape sequence, or longer than a line, is shown as text
		// (cut), never typed in.
		unsafe := len(prefix) > maxLine || termtext.Line(prefix) != prefix
		if len(prefix) > len(msg.word) && !unsafe {
			in.ed.Insert(prefix[len(msg.word):])
		}
		if len(msg.names) > 1 || unsafe {
			shown := make([]string, len(msg.names))
			for i, n := range msg.names {
				shown[i] = sessionLine(n)
			}
			in.s.hint = strings.Join(shown, "  ")
		}
	}
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
