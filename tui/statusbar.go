package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// maxHint is how many lines the hint line may wrap to.
const maxHint = 3

// statusBar is the bottom of the screen: the hint (a passing one, such as
// a question or completions, else the focused component's keys), wrapped
// to at most maxHint lines, and the status line: the session, the
// running block or the last one and what the snapshot did, then Python,
// access and workspace, what matters most first, as a narrow terminal
// cuts the end.
type statusBar struct {
	s         *shared
	status    protocol.Status
	statusErr string
	started   time.Time // when the running block started
	lastDur   time.Duration
	snapshot  string
	spin      spinner.Model
	width     int
	// what the top model shows here: the focused component's standing
	// hint, how far the transcript is scrolled back, the blocks' timeout
	standing string
	scrolled int
	timeout  time.Duration
}

func newStatusBar(s *shared) *statusBar {
	return &statusBar{s: s, spin: spinner.New(spinner.WithSpinner(spinner.MiniDot))}
}

// Update takes the session's status and the spinner's ticks; another
// session's status starts unknown.
func (b *statusBar) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case statusMsg:
		b.status, b.statusErr = msg.st, ""
		if msg.err != nil {
			b.statusErr = msg.err.Error()
		}
	case spinner.TickMsg:
		if b.s.running {
			var cmd tea.Cmd
			b.spin, cmd = b.spin.Update(msg)
			return cmd
		}
	case sessionMsg:
		b.status, b.statusErr, b.lastDur, b.snapshot = protocol.Status{}, "", 0, ""
	}
	return nil
}

// begin shows a block running since now; its spinner turns with tick.
func (b *statusBar) begin(now time.Time) (tick tea.Cmd) {
	b.started = now
	return b.spin.Tick
}

// end shows how the last block went.
func (b *statusBar) end(res protocol.Result) {
	b.lastDur = time.Duration(res.DurationMS) * time.Millisecond
	b.snapshot = res.Snapshot
}

func (b *statusBar) SetSize(width, _ int) { b.width = width }

// Height is how many lines the bar takes: its hint's and the status line.
func (b *statusBar) Height() int { return len(b.hint()) + 1 }

func (b *statusBar) hint() []string {
	text := b.s.hint
	if text == "" {
		text = b.standing
	}
	if text == "" {
		return nil
	}
	lines := wrapText(text, b.width)
	if len(lines) > maxHint {
		lines = lines[:maxHint]
		lines[maxHint-1] = ansi.Truncate(lines[maxHint-1]+" …", b.width, "…")
	}
	return lines
}

func (b *statusBar) View() []string {
	th := b.s.th
	var out []string
	for _, l := range b.hint() {
		out = append(out, th.hint.Render(l))
	}
	return append(out, th.status.Render(pad(ansi.Truncate(b.line(), b.width, "…"), b.width)))
}

func (b *statusBar) line() string {
	meta := b.s.sess.Meta
	parts := []string{meta.Name}
	if b.s.running {
		parts = append(parts, b.spin.View()+" running "+roundDur(time.Since(b.started)))
	} else if b.lastDur > 0 || b.snapshot != "" {
		parts = append(parts, "last "+roundDur(b.lastDur))
		if b.snapshot != "" {
			parts = append(parts, "snapshot "+b.snapshot)
		}
	}
	if b.scrolled > 0 {
		parts = append(parts, fmt.Sprintf("↑%d lines (PgDn)", b.scrolled))
	}
	switch {
	case b.statusErr != "" && b.status.Python == "":
		parts = append(parts, "not running")
	case b.status.Python != "":
		parts = append(parts, "Python "+b.status.Python, onOff("jail", b.status.Jailed)+" · "+onOff("network", b.status.Network))
	}
	parts = append(parts, shortPath(meta.Workspace))
	if b.timeout > 0 {
		parts = append(parts, "timeout "+b.timeout.String())
	}
	return " " + strings.Join(parts, " │ ")
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return ansi.Truncate(s, w, "")
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
