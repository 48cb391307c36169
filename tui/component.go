package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// The REPL is a top model (Model, repl.go) over components, each one part
// of the screen with its own state, Update, View and SetSize:
//
//	transcript  the blocks run, their output, errors and notices (transcript.go)
//	input       the block being typed, its history and completions (input.go)
//	panel       the side panel: the defs and attachments tabs (panel.go)
//	viewer      one attachment version, on the whole screen (viewer.go)
//	commentBox  a comment being written on a version (comment.go)
//	statusBar   the hint line and the status line (statusbar.go)
//
// The top model routes messages: keys to the component at the top of its
// focus stack (the input at the bottom; the attachments list, the viewer
// and a comment above it as they open), what the running block sends to
// its conductor (run.go), and every other message to every component,
// each taking its own kinds and ignoring the rest. Before drawing, it gives
// each component its size (layout). A component never calls another: it
// posts a message (shared.post), which the top model handles as soon as
// the message at hand is done, within the same Update.
//
// Adding a component, such as a live view of other clients' blocks: write
// its type with these methods, add it to Model.parts (it then receives
// every broadcast message, its own kinds among them, sessionMsg and
// themeMsg too), give it a place in layout and View, and, if it takes the
// keys, make it focusable and push it.
type component interface {
	// Update takes a message routed to it: keys while it has the focus,
	// and every broadcast one.
	Update(msg tea.Msg) tea.Cmd
	// SetSize gives it its place: width columns, height lines.
	SetSize(width, height int)
	// View is its lines: at most height of them, each at most width wide.
	View() []string
}

// focusable is a component that can take the keys: the top model pushes
// it on its focus stack (Focus) and pops it (Blur) when it posts closeMsg,
// or when the keys go back to the input at once (Ctrl+C, F1, another
// session). One that exists only while it has the keys (the viewer, a
// comment) closes on Blur.
type focusable interface {
	component
	Focus()
	Blur()
}

// hinter is a component with a standing hint (its keys), shown on the hint
// line while it has the focus and no passing hint is shown.
type hinter interface{ Hint() string }

// shared is what the components of one REPL share (the idea of
// soft-serve's common.Common): the theme, the session, the passing hint
// under the input, whether a block runs, and the messages posted for the
// top model.
type shared struct {
	th      *theme
	sess    *client.Session
	hint    string // cleared by the next key, set again by what that key does
	running bool
	posted  []tea.Msg
}

// post hands msgs to the top model, to handle once the message at hand is.
func (s *shared) post(msgs ...tea.Msg) { s.posted = append(s.posted, msgs...) }

// Messages every component receives.
type (
	// sessionMsg: the REPL now works on another session (/session NAME,
	// /reset); each component forgets what it held of the old one.
	sessionMsg struct{}
	// themeMsg: the theme changed (the terminal's background); each
	// component drops what it rendered.
	themeMsg struct{}
	// noteMsg adds a message to the transcript.
	noteMsg struct {
		kind entryKind
		text string
	}
	// chooseMsg chooses a version in the attachments list.
	chooseMsg struct{ id string }
)

// Messages components post to the top model.
type (
	// openMsg opens version d in the viewer.
	openMsg struct{ d Descriptor }
	// commentOnMsg opens the comment input on version d.
	commentOnMsg struct{ d Descriptor }
	// closeMsg gives the keys back to what had them before c.
	closeMsg struct{ c focusable }
	// reloadMsg reads the session's attachments again.
	reloadMsg struct{}
)
