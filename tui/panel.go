package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

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
			add(" " + th.panelName.Render(h.Signature))
			if h.Doc != "" {
				add("   " + th.panelDim.Render(h.Doc))
			}
		}
	}
	if len(d.Variables) > 0 {
		add(th.panelDim.Render(fmt.Sprintf("variables (%d)", len(d.Variables))))
		for _, v := range d.Variables {
			line := " " + th.panelName.Render(v.Name) + ": " + v.Type + ", " + sizeText(v.Size)
			if v.Saved {
				line += th.panelDim.Render(" · saved")
			} else {
				line += th.panelBad.Render(" · not saved: " + strings.TrimPrefix(v.Reason, "not saved: "))
			}
			add(line)
		}
	}
	return out
}

// window is the panel's lines fitting height: its tab line, then the
// lines from the top, or, when the chosen line (and the one under it)
// would not show, from where it does.
func window(lines []string, chosen, height int) []string {
	if len(lines) <= height || height < 2 {
		return lines[:min(len(lines), max(0, height))]
	}
	start := 1
	if chosen+2 > start+height-1 {
		start = min(chosen+2-(height-1), len(lines)-(height-1))
	}
	return append([]string{lines[0]}, lines[start:start+height-1]...)
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
