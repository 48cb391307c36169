package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The panel's tabs.
const (
	tabDefs = iota
	tabAttachments
)

// panelKeys is the attachments list's keys, its standing hint.
const panelKeys = "↑/↓ choose · Enter views · c comments · Esc back to the input"

// panel is the side panel, beside the transcript or under it: the defs
// tab (the session's helpers and variables) and the attachments tab
// (every version attached in the session, newest first), whose list takes
// the keys while it has the focus.
type panel struct {
	s       *shared
	shown   bool // F2 hides it
	tab     int
	focused bool // the attachments list is on the focus stack
	defs    *defsData
	atts    []Descriptor // newest first
	attsErr string
	sel     int // the chosen version
	width   int
	height  int
	// lines are the rendered tabs at linesW (nil: render again), chosen
	// the chosen version's line in them (-1: none).
	lines  []string
	linesW int
	chosen int
}

func newPanel(s *shared) *panel { return &panel{s: s, shown: true} }

// Update takes keys while the list has the focus, the session's defs and
// attachments, and a version to choose.
func (p *panel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		p.key(msg)
	case defsMsg:
		if msg.err == nil {
			if d, err := parseDefs(msg.data); err == nil {
				p.defs, p.lines = d, nil
			}
		}
	case attachmentsMsg:
		p.take(msg)
	case chooseMsg:
		for i, d := range p.atts {
			if d.ID == msg.id {
				p.sel, p.lines = i, nil
			}
		}
	case sessionMsg:
		p.defs, p.atts, p.attsErr, p.sel, p.lines = nil, nil, "", 0, nil
	case themeMsg:
		p.lines = nil
	}
	return nil
}

// key handles a key while the attachments list has the focus; any other
// key than its own goes back to the input.
func (p *panel) key(k tea.KeyPressMsg) {
	p.lines = nil
	switch k.String() {
	case "up":
		p.sel = max(0, p.sel-1)
	case "down":
		p.sel = max(0, min(len(p.atts)-1, p.sel+1))
	case "home", "pgup":
		p.sel = 0
	case "end", "pgdown":
		p.sel = max(0, len(p.atts)-1)
	case "enter":
		if d := p.chosenVersion(); d != nil {
			p.s.post(openMsg{*d})
		}
	case "c":
		if d := p.chosenVersion(); d != nil {
			p.s.post(commentOnMsg{*d})
		}
	case "esc":
		p.s.post(closeMsg{p})
	default:
		p.s.post(closeMsg{p}, k)
	}
}

// take takes the store's list (newest first), keeping the chosen version
// chosen while the list is on the focus stack (under the viewer too); else
// the newest is chosen.
func (p *panel) take(msg attachmentsMsg) {
	p.lines = nil
	if msg.err != nil {
		p.attsErr = msg.err.Error()
		return
	}
	chosen := p.chosenVersion()
	if !p.focused {
		chosen = nil
	}
	p.atts, p.attsErr, p.sel = msg.list, "", 0
	for i, d := range p.atts {
		if chosen != nil && d.ID == chosen.ID {
			p.sel = i
		}
	}
}

// chosenVersion is the version chosen in the list, if any.
func (p *panel) chosenVersion() *Descriptor {
	if p.sel < 0 || p.sel >= len(p.atts) {
		return nil
	}
	return &p.atts[p.sel]
}

func (p *panel) Focus()       { p.focused, p.lines = true, nil }
func (p *panel) Blur()        { p.focused, p.lines = false, nil }
func (p *panel) Hint() string { return panelKeys }

// show shows the panel on tab.
func (p *panel) show(tab int) { p.shown, p.tab, p.lines = true, tab, nil }

func (p *panel) SetSize(width, height int) { p.width, p.height = width, height }

// lineCount is how many lines the panel has at width, shown whole.
func (p *panel) lineCount(width int) int { return len(p.render(width)) }

func (p *panel) View() []string {
	all := "/defs lists them all"
	if p.tab == tabAttachments {
		all = "/attachments lists them all"
	}
	return window(p.render(p.width), p.chosen, p.height, func(n int, above bool) string {
		text := fmt.Sprintf("… %d more: %s", n, all)
		if above {
			text = fmt.Sprintf("… %d more above", n)
		}
		return p.s.th.panelDim.Render(ansi.Truncate(text, p.width, "…"))
	})
}

// render is the panel at width: its tabs, then the shown tab.
func (p *panel) render(width int) []string {
	if p.lines != nil && p.linesW == width {
		return p.lines
	}
	th := p.s.th
	var body []string
	p.chosen = -1
	if p.tab == tabAttachments {
		var chosen int
		body, chosen = attachmentLines(th, p.atts, p.attsErr, p.sel, p.focused, width)
		if chosen >= 0 {
			p.chosen = chosen + 1
		}
	} else {
		body = defsLines(th, p.defs, width)
	}
	p.lines = append([]string{ansi.Truncate(panelTabs(th, p.tab, len(p.atts)), width, "…")}, body...)
	p.linesW = width
	return p.lines
}

// defsData is the session's description of its helpers and variables: the
// JSON of defs(), as `vis-agent sandbox defs --json` prints it.
type defsData struct {
	Helpers []struct {
		Name      string `json:"name"`
		Kind      string `json:"kind"`
		Signature string `json:"signature"`
		Block     int    `json:"block"`
		Lines     int    `json:"lines"`
		Doc       string `json:"doc"`
	} `json:"helpers"`
	Variables []struct {
		Name   string `json:"name"`
		Type   string `json:"type"`
		Size   int64  `json:"size"`
		Saved  bool   `json:"saved"`
		Reason string `json:"reason"`
	} `json:"variables"`
}

func parseDefs(s string) (*defsData, error) {
	var d defsData
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, fmt.Errorf("read the session's defs: %w", err)
	}
	return &d, nil
}

// panelTabs is the panel's first line: its two tabs, the shown one
// bracketed.
func panelTabs(th *theme, tab, attachments int) string {
	names := []string{"defs", fmt.Sprintf("attachments (%d)", attachments)}
	for i, n := range names {
		if i == tab {
			names[i] = th.panelTitle.Render("[" + n + "]")
		} else {
			names[i] = th.panelDim.Render(" " + n + " ")
		}
	}
	return names[0] + names[1] + th.panelDim.Render("  F3")
}

// defsLines is the defs tab: helpers with their signature and first
// docstring line, variables with type, size and whether the snapshot holds
// them.
func defsLines(th *theme, d *defsData, width int) []string {
	var out []string
	add := func(s string) { out = append(out, ansi.Truncate(s, width, "…")) }
	if d == nil {
		add(th.panelDim.Render("(waiting for the session)"))
		return out
	}
	if len(d.Helpers) == 0 && len(d.Variables) == 0 {
		add(th.panelDim.Render("nothing defined yet"))
		return out
	}
	if len(d.Helpers) > 0 {
		add(th.panelDim.Render(fmt.Sprintf("helpers (%d)", len(d.Helpers))))
		for _, h := range d.Helpers {
			add(" " + th.panelName.Render(sessionLine(h.Signature)))
			if h.Doc != "" {
				add("   " + th.panelDim.Render(sessionLine(h.Doc)))
			}
		}
	}
	if len(d.Variables) > 0 {
		add(th.panelDim.Render(fmt.Sprintf("variables (%d)", len(d.Variables))))
		for _, v := range d.Variables {
			// names, types and reasons are the session's: shown as text
			line := " " + th.panelName.Render(sessionLine(v.Name)) + ": " + sessionLine(v.Type) + ", " + sizeText(v.Size)
			if v.Saved {
				line += th.panelDim.Render(" · saved")
			} else {
				line += th.panelBad.Render(" · not saved: " + sessionLine(strings.TrimPrefix(v.Reason, "not saved: ")))
			}
			add(line)
		}
	}
	return out
}

// window is the panel's lines fitting height: its tab line, then the
// lines from the top, or, when the chosen line (and the one under it)
// would not show, from where it does; a line from more stands for the
// lines cut above and for those cut below, when there is room for it.
func window(lines []string, chosen, height int, more func(n int, above bool) string) []string {
	if len(lines) <= height || height < 2 {
		return lines[:min(len(lines), max(0, height))]
	}
	rows := height - 1 // under the tab line
	need := 0          // the end of the chosen line and the one under it
	if chosen >= 0 {
		need = min(chosen+2, len(lines))
	}
	marks := rows >= 2
	a, b := 1, 1+rows // lines[a:b] show
	switch {
	case need > rows:
		marks = rows >= 4
		a, b = need-rows, need
		if marks {
			a++
			if b < len(lines) {
				a++
			}
		}
	case marks:
		b-- // a row for the mark below
	}
	out := append(make([]string, 0, height), lines[0])
	if marks && a > 1 {
		out = append(out, more(a-1, true))
	}
	out = append(out, lines[a:b]...)
	if marks && b < len(lines) {
		out = append(out, more(len(lines)-b, false))
	}
	return out
}

func sizeText(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
