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

// panelLines is the defs panel, width columns wide: helpers with their
// signature and first docstring line, variables with type, size and
// whether the snapshot holds them.
func panelLines(th *theme, d *defsData, width int) []string {
	var out []string
	add := func(s string) { out = append(out, ansi.Truncate(s, width, "…")) }
	add(th.panelTitle.Render("defs") + th.panelDim.Render("  (F2 hides)"))
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

func sizeText(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
