package tui

import "charm.land/lipgloss/v2"

// theme is the REPL's styles for a light or a dark terminal. Colours are
// written out in full; Bubble Tea lowers them to what the terminal shows
// (none under NO_COLOR).
type theme struct {
	dark bool

	prompt, out, errOut, err, caret, repair, restart, info, problem, fold lipgloss.Style
	status, busy, hint, panelTitle, panelName, panelDim, panelBad, rule   lipgloss.Style

	keyword, name, fn, str, num, comment, op lipgloss.Style

	mdHeading, mdCode lipgloss.Style
}

func newTheme(dark bool) *theme {
	c := lipgloss.LightDark(dark)
	col := func(light, dark string) lipgloss.Style {
		return lipgloss.NewStyle().Foreground(c(lipgloss.Color(light), lipgloss.Color(dark)))
	}
	return &theme{
		dark:    dark,
		prompt:  col("#8a8a8a", "#6c6c6c"),
		out:     lipgloss.NewStyle(),
		errOut:  col("#af5f00", "#ffaf5f"),
		err:     col("#d70000", "#ff5f5f"),
		caret:   col("#d70000", "#ff5f5f").Bold(true),
		repair:  col("#875f00", "#ffd75f"),
		restart: col("#005faf", "#5fafff").Bold(true),
		info:    col("#5f5f5f", "#a8a8a8"),
		problem: col("#d70000", "#ff5f5f").Bold(true),
		fold:    col("#8a8a8a", "#808080").Italic(true),

		status: lipgloss.NewStyle().Foreground(c(lipgloss.Color("#262626"), lipgloss.Color("#e4e4e4"))).
			Background(c(lipgloss.Color("#d0d0d0"), lipgloss.Color("#3a3a3a"))),
		busy:       col("#005faf", "#5fafff"),
		hint:       col("#5f5f5f", "#a8a8a8"),
		panelTitle: lipgloss.NewStyle().Bold(true),
		panelName:  col("#005f87", "#87d7ff"),
		panelDim:   col("#6c6c6c", "#8a8a8a"),
		panelBad:   col("#af5f00", "#ffaf5f"),
		rule:       col("#bcbcbc", "#4e4e4e"),

		keyword: col("#8700af", "#d787ff").Bold(true),
		name:    lipgloss.NewStyle(),
		fn:      col("#005faf", "#87afff"),
		str:     col("#008700", "#87d787"),
		num:     col("#af5f00", "#ffaf5f"),
		comment: col("#8a8a8a", "#808080").Italic(true),
		op:      col("#5f5f5f", "#bcbcbc"),

		mdHeading: col("#005f87", "#87d7ff").Bold(true),
		mdCode:    col("#008700", "#87d787"),
	}
}
