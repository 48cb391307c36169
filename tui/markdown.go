package tui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// The viewer renders Markdown itself, a line at a time: headings, lists,
// quotes, rules and fenced code blocks, and within a line emphasis,
// strong emphasis and code spans by CommonMark's delimiter rules.
// glamour, the kept Go renderer, would have added 44 packages to the
// binary, among them chroma with every lexer, and about 30 ms of package
// initialisation to every `vis-agent python` here; goldmark alone 7
// packages and about 1 ms.

// markdown is Markdown rendered for the terminal, width columns wide.
func (t *theme) markdown(src string, width int) []string {
	var out []string
	prose := func(s string) { out = append(out, strings.Split(ansi.Wrap(s, width, ""), "\n")...) }
	plain := lipgloss.NewStyle()
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
			st := t.mdHeading
			if level == 1 {
				st = st.Underline(true)
			}
			prose(t.inline(strings.TrimSpace(trimmed[level:]), st))
		case trimmed == "---" || trimmed == "***" || trimmed == "___":
			out = append(out, t.rule.Render(strings.Repeat("─", width)))
		case strings.HasPrefix(trimmed, "> ") || trimmed == ">":
			prose(t.rule.Render("│ ") + t.inline(strings.TrimPrefix(strings.TrimPrefix(trimmed, ">"), " "), t.info))
		case len(trimmed) > 1 && strings.ContainsRune("-*+", rune(trimmed[0])) && trimmed[1] == ' ':
			indent := strings.Repeat(" ", len(l)-len(strings.TrimLeft(l, " ")))
			prose(indent + "• " + t.inline(trimmed[2:], plain))
		default:
			prose(t.inline(l, plain))
		}
	}
	return out
}

// Bounds of the inline rendering of one line (attachments are written by
// block code, so any line may be built to be slow): a longer line is shown
// as it is, and a closing delimiter looks back over so many others for its
// opener.
const (
	maxInline      = 4096
	inlineLookback = 32
)

// mdNode is a piece of a line of Markdown: text, a code span, or a run of
// '*' or '_' that may open or close emphasis.
type mdNode struct {
	text        string
	code        bool
	delim       byte
	n, size     int  // the run's characters left unmatched, and its length
	open, close bool // whether it can open, close emphasis
	// what it opens (outermost first) and closes (innermost first):
	// 1 emphasis, 2 strong emphasis
	opens, closes []int
}

// inline is a line of Markdown in style base, its emphasis in italics, its
// strong emphasis in bold and its code spans in the code style; backslash
// escapes are applied.
func (t *theme) inline(s string, base lipgloss.Style) string {
	if len(s) > maxInline {
		return base.Render(s)
	}
	nodes := mdNodes(s)
	mdMatch(nodes)
	// Runs of one look are written between the codes that style them,
	// taken once per look from lipgloss (a style renders a marker).
	type look struct{ code, bold, italic bool }
	var codes [8][2]string
	var seen [8]bool
	var b strings.Builder
	var run strings.Builder
	cur, bold, italic := look{}, 0, 0
	flush := func() {
		if run.Len() == 0 {
			return
		}
		i := 0
		for j, on := range []bool{cur.code, cur.bold, cur.italic} {
			if on {
				i |= 1 << j
			}
		}
		if !seen[i] {
			st := base
			if cur.code {
				st = t.mdCode
			}
			st = st.Bold(cur.bold || st.GetBold()).Italic(cur.italic || st.GetItalic())
			codes[i][0], codes[i][1], _ = strings.Cut(st.Render(mdMarker), mdMarker)
			seen[i] = true
		}
		b.WriteString(codes[i][0])
		b.WriteString(run.String())
		b.WriteString(codes[i][1])
		run.Reset()
	}
	write := func(l look, text string) {
		if l != cur {
			flush()
			cur = l
		}
		run.WriteString(text)
	}
	apply := func(tags []int, by int) {
		for _, w := range tags {
			if w == 2 {
				bold += by
			} else {
				italic += by
			}
		}
	}
	for _, n := range nodes {
		switch {
		case n.code:
			write(look{true, bold > 0, italic > 0}, n.text)
		case n.delim != 0:
			apply(n.closes, -1)
			write(look{false, bold > 0, italic > 0}, strings.Repeat(string(n.delim), n.n))
			apply(n.opens, 1)
		default:
			write(look{false, bold > 0, italic > 0}, n.text)
		}
	}
	flush()
	return b.String()
}

// mdMarker stands for the text in a style rendered to learn its codes: a
// character of Unicode's private use area.
const mdMarker = "\ue000"

// mdNodes cuts a line into text, code spans and delimiter runs. A code span
// runs from a run of backticks to the next run of as many (paired in one
// pass from the right, so the cut is linear); a run that pairs with none
// is text.
func mdNodes(s string) []mdNode {
	type run struct{ at, n int }
	var ticks []run
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			i += 2
		case s[i] == '`':
			j := i
			for j < len(s) && s[j] == '`' {
				j++
			}
			ticks = append(ticks, run{i, j - i})
			i = j
		default:
			i++
		}
	}
	pair := make([]int, len(ticks)) // the next run as long, or -1
	last := map[int]int{}
	for k := len(ticks) - 1; k >= 0; k-- {
		pair[k] = -1
		if j, ok := last[ticks[k].n]; ok {
			pair[k] = j
		}
		last[ticks[k].n] = k
	}

	var nodes []mdNode
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			nodes = append(nodes, mdNode{text: text.String()})
			text.Reset()
		}
	}
	k := 0 // the next run of backticks
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			text.WriteByte(s[i+1])
			i += 2
		case c == '`':
			for ticks[k].at < i {
				k++
			}
			r := ticks[k]
			j := pair[k]
			if j < 0 {
				text.WriteString(s[i : i+r.n])
				i, k = i+r.n, k+1
				continue
			}
			flush()
			nodes = append(nodes, mdNode{text: codeText(s[i+r.n : ticks[j].at]), code: true})
			i, k = ticks[j].at+ticks[j].n, j+1
		case c == '*' || c == '_':
			j := i
			for j < len(s) && s[j] == c {
				j++
			}
			before, after := ' ', ' ' // a line's ends count as spaces
			if i > 0 {
				before, _ = utf8.DecodeLastRuneInString(s[:i])
			}
			if j < len(s) {
				after, _ = utf8.DecodeRuneInString(s[j:])
			}
			left := !unicode.IsSpace(after) && (!isPunct(after) || unicode.IsSpace(before) || isPunct(before))
			right := !unicode.IsSpace(before) && (!isPunct(before) || unicode.IsSpace(after) || isPunct(after))
			open, close := left, right
			if c == '_' { // not within a word: snake_case stays as it is
				open = left && (!right || isPunct(before))
				close = right && (!left || isPunct(after))
			}
			flush()
			nodes = append(nodes, mdNode{delim: c, n: j - i, size: j - i, open: open, close: close})
			i = j
		default:
			j := strings.IndexAny(s[i+1:], "\\`*_")
			if j < 0 {
				j = len(s) - i - 1
			}
			text.WriteString(s[i : i+1+j])
			i += 1 + j
		}
	}
	flush()
	return nodes
}

// codeText is a code span's content: one space at each end is dropped
// when both are there and it is not all spaces.
func codeText(s string) string {
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		return s[1 : len(s)-1]
	}
	return s
}

// mdMatch pairs the delimiter runs of nodes as CommonMark's "process
// emphasis" does: each run that can close, from the left, takes the
// nearest run of its character that can open (two characters for strong
// emphasis when both have them, else one), and the runs between become
// text.
func mdMatch(nodes []mdNode) {
	var delims []int
	for i, n := range nodes {
		if n.delim != 0 {
			delims = append(delims, i)
		}
	}
	// below which no opener is left for closers of one kind (CommonMark's
	// openers_bottom): a search that failed is not made again
	type kind struct {
		c    byte
		open bool
		mod  int
	}
	bottom := map[kind]int{}
	for ci, c := range delims {
		cl := &nodes[c]
		for cl.close && cl.n > 0 {
			found := -1
			k := kind{cl.delim, cl.open, cl.size % 3}
			low := max(bottom[k], ci-inlineLookback)
			for oi := ci - 1; oi >= low; oi-- {
				o := &nodes[delims[oi]]
				// the rule of 3: a run that can both open and close does
				// not pair with one whose length makes a multiple of 3
				if o.delim == cl.delim && o.open && o.n > 0 &&
					!((o.close || cl.open) && (o.size+cl.size)%3 == 0 && (o.size%3 != 0 || cl.size%3 != 0)) {
					found = oi
					break
				}
			}
			if found < 0 {
				bottom[k] = ci
				break
			}
			op := &nodes[delims[found]]
			use := 1
			if op.n >= 2 && cl.n >= 2 {
				use = 2
			}
			op.n, cl.n = op.n-use, cl.n-use
			op.opens = append([]int{use}, op.opens...)
			cl.closes = append(cl.closes, use)
			for _, between := range delims[found+1 : ci] {
				nodes[between].open, nodes[between].close = false, false
			}
		}
	}
}

func isASCIIPunct(c byte) bool {
	return c < 0x80 && unicode.IsPunct(rune(c)) || strings.IndexByte("$+<=>^`|~", c) >= 0
}

func isPunct(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }
