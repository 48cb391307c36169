package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// markdown is Markdown rendered for the terminal, width columns wide:
// headings, lists, quotes and rules styled, code blocks kept as they are
// (Python ones highlighted), inline code and bold set apart.
func (t *theme) markdown(src string, width int) []string {
	var out []string
	prose := func(s string) { out = append(out, strings.Split(ansi.Wrap(s, width, ""), "\n")...) }
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		l := printable(lines[i])
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence, lang := trimmed[:3], strings.ToLower(strings.TrimSpace(trimmed[3:]))
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
				code = append(code, expandTabs(lines[i]))
			}
			if lang == "python" || lang == "py" || lang == "pycon" {
				code = t.highlight(strings.Join(code, "\n"))
			} else {
				for j, c := range code {
					code[j] = t.mdCode.Render(printable(c))
				}
			}
			for _, c := range hardwrap(code, max(1, width-2)) {
				out = append(out, t.rule.Render("▏ ")+c)
			}
		case strings.HasPrefix(trimmed, "#"):
			level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
			text := strings.TrimSpace(trimmed[level:])
			st := t.mdHeading
			if level == 1 {
				st = st.Underline(true)
			}
			prose(st.Render(text))
		case trimmed == "---" || trimmed == "***" || trimmed == "___":
			out = append(out, t.rule.Render(strings.Repeat("─", width)))
		case strings.HasPrefix(trimmed, "> ") || trimmed == ">":
			prose(t.rule.Render("│ ") + t.info.Render(t.inline(strings.TrimPrefix(strings.TrimPrefix(trimmed, ">"), " "))))
		case len(trimmed) > 1 && strings.ContainsRune("-*+", rune(trimmed[0])) && trimmed[1] == ' ':
			indent := strings.Repeat(" ", len(l)-len(strings.TrimLeft(l, " ")))
			prose(indent + "• " + t.inline(trimmed[2:]))
		default:
			prose(t.inline(l))
		}
	}
	return out
}

// inline styles `code` and **bold** within a line of Markdown.
func (t *theme) inline(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexAny(s, "`*")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		mark, st := "`", t.mdCode
		if strings.HasPrefix(s, "**") {
			mark, st = "**", t.mdBold
		}
		if s[0] == '*' && mark == "`" {
			b.WriteByte('*') // a lone star
			s = s[1:]
			continue
		}
		end := strings.Index(s[len(mark):], mark)
		if end < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(st.Render(s[len(mark) : len(mark)+end]))
		s = s[len(mark)+end+len(mark):]
	}
	return b.String()
}
