package repair

import (
	"fmt"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Python's messages for the indentation errors repaired here.
const (
	msgUnexpectedIndent = "unexpected indent"
	msgUnindent         = "unindent does not match any outer indentation level"
	msgTabs             = "inconsistent use of tabs and spaces in indentation"
)

// The kinds of the indentation fixes.
const (
	fixExpandTabs = "expand-tabs"
	fixDedent     = "dedent"
	fixRealign    = "realign-dedent"
)

// maxLevels bounds the indentation levels moveRun tries, a compile each.
const maxLevels = 8

// tabWidths are the tab widths tried, the usual ones first: of widths
// giving the same program, the first is used.
var tabWidths = []int{4, 8, 2, 1, 3, 5, 6, 7}

// indentLine is a logical line of a block: where its indentation starts
// and ends.
type indentLine struct{ start, off int }

func (l indentLine) text(src string) string { return src[l.start:l.off] }

// indentRepair repairs the indentation of a block Python refused with one
// of the messages above, where exactly one reading keeps the block's
// meaning: tabs expanded to the only width (or widths giving the same
// program) that make the block compile; a block pasted with a common
// leading indent, or lines indented past the statement before them,
// moved to the only level that compiles; a dedent that matches no outer
// level re-aligned to the only outer level that compiles. It returns the
// repaired block and its fix, or the problem refusing a repair Python
// would run at more than one level, or neither.
func indentRepair(src string, perr protocol.SyntaxError, opts Options) (string, *Fix, *Problem) {
	if perr.Message != msgUnexpectedIndent && perr.Message != msgUnindent && perr.Message != msgTabs {
		return "", nil, nil
	}
	var lines []indentLine
	for _, ls := range LineStarts(src, opts.Minor) {
		lines = append(lines, indentLine{start: lineStartOf(src, ls.Off), off: ls.Off})
	}
	if len(lines) == 0 {
		return "", nil, nil
	}
	idx := newLineIndex(src)
	if mixesTabs(src, lines) {
		return expandTabs(src, lines, idx, opts.Compile)
	}
	// The line Python stopped at, a logical line's start.
	at := -1
	for i, l := range lines {
		if n, _ := idx.pos(l.off); n == perr.Line {
			at = i
		}
	}
	switch {
	case at < 0:
		return "", nil, nil
	case perr.Message == msgUnexpectedIndent && at == 0:
		return dedentBlock(src, lines[0].text(src), idx, opts.Compile)
	case perr.Message == msgUnexpectedIndent:
		return moveRun(src, lines, at, idx, opts.Compile, false)
	case perr.Message == msgUnindent:
		return moveRun(src, lines, at, idx, opts.Compile, true)
	}
	return "", nil, nil
}

// mixesTabs reports whether the indentation of the logical lines holds
// both tabs and spaces.
func mixesTabs(src string, lines []indentLine) bool {
	tabs, spaces := false, false
	for _, l := range lines {
		ind := l.text(src)
		tabs = tabs || strings.Contains(ind, "\t")
		spaces = spaces || strings.Contains(ind, " ")
	}
	return tabs && spaces
}

// width is the column an indentation reaches with tabs of tab columns.
func width(ind string, tab int) int {
	w := 0
	for i := 0; i < len(ind); i++ {
		switch ind[i] {
		case '\t':
			w = w/tab*tab + tab
		case '\f':
			w = 0
		default:
			w++
		}
	}
	return w
}

// nesting returns the block depth of each logical line given their
// indentation widths, or nil when a dedent matches no outer level.
func nesting(widths []int) []int {
	stack := []int{0}
	out := make([]int, len(widths))
	for i, w := range widths {
		if w > stack[len(stack)-1] {
			stack = append(stack, w)
		}
		for w < stack[len(stack)-1] {
			stack = stack[:len(stack)-1]
		}
		if w != stack[len(stack)-1] {
			return nil
		}
		out[i] = len(stack) - 1
	}
	return out
}

// reindent returns src with the indentation of each logical line i
// replaced by ind(i), or left when ind returns ok false.
func reindent(src string, lines []indentLine, ind func(i int) (string, bool)) string {
	var edits []edit
	for i, l := range lines {
		if s, ok := ind(i); ok && s != l.text(src) {
			edits = append(edits, replace(l.start, l.off, s))
		}
	}
	return apply(src, edits)
}

// expandTabs rewrites the indentation of a block mixing tabs and spaces
// with spaces, for the tab width that makes it compile; when several do,
// they must give the same nesting, hence the same program.
func expandTabs(src string, lines []indentLine, idx *lineIndex, compile Compiler) (string, *Fix, *Problem) {
	var fixed string
	var chosen, nest []int
	for _, tab := range tabWidths {
		widths := make([]int, len(lines))
		for i, l := range lines {
			widths[i] = width(l.text(src), tab)
		}
		n := nesting(widths)
		if n == nil {
			continue
		}
		next := reindent(src, lines, func(i int) (string, bool) { return strings.Repeat(" ", widths[i]), true })
		if compile(next) != nil {
			continue
		}
		switch {
		case chosen == nil:
			fixed, nest = next, n
		case !equalInts(n, nest):
			first := lines[0]
			for _, l := range lines {
				if strings.Contains(l.text(src), "\t") {
					first = l
					break
				}
			}
			line, _ := idx.pos(first.off)
			return "", nil, &Problem{Kind: KindAmbiguous, Line: line, Column: 1, off: first.start,
				Message: fmt.Sprintf("the tabs of the indentation could be %d or %d columns wide, and Python runs both; not repaired", chosen[0], tab)}
		}
		chosen = append(chosen, tab)
	}
	if chosen == nil {
		return "", nil, nil
	}
	for _, l := range lines {
		if strings.Contains(l.text(src), "\t") {
			line, _ := idx.pos(l.off)
			why := "the only width that makes the block's indentation consistent"
			if len(chosen) > 1 {
				why = "as every width that makes the block's indentation consistent gives the same program"
			}
			return fixed, &Fix{Kind: fixExpandTabs, Line: line, Column: 1,
				Message: lineMessage(line, fmt.Sprintf("replaced the tabs of the indentation with spaces, %d columns a tab, %s", chosen[0], why))}, nil
		}
	}
	return "", nil, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dedentBlock removes the indentation ind that every line of the block
// starts with, as when it was pasted from inside a function, string lines
// included, as the paste indented them too.
func dedentBlock(src, ind string, idx *lineIndex, compile Compiler) (string, *Fix, *Problem) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(src, "\n") {
		body := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, ind):
			b.WriteString(line[len(ind):])
		case strings.Trim(body, " \t\f") == "":
			b.WriteString(line[len(body):]) // a blank line keeps only its line break
		default:
			return "", nil, nil // a line the paste did not indent
		}
	}
	fixed := b.String()
	if compile(fixed) != nil {
		return "", nil, nil
	}
	line, _ := idx.pos(len(src) - len(strings.TrimLeft(src, " \t\f\r\n")))
	return fixed, &Fix{Kind: fixDedent, Line: line, Column: 1,
		Message: lineMessage(line, fmt.Sprintf("removed the indentation of %s that every line of the block starts with, as a block pasted from deeper code has", columns(ind)))}, nil
}

// columns describes an indentation for a note.
func columns(ind string) string {
	switch {
	case strings.Trim(ind, " ") == "":
		return plural(len(ind), "space")
	case strings.Trim(ind, "\t") == "":
		return plural(len(ind), "tab")
	}
	return fmt.Sprintf("%q", ind)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// moveRun moves the logical line at and the lines that go with it to an
// enclosing indentation level: for an unexpected indent, any level open
// at the line before; for a dedent that matches no level, an outer one
// (below the level of the line before, which the writer meant to leave).
// The lines that go with it are those at its indentation and those nested
// under them. It moves them when exactly one level compiles, and refuses
// when more than one does.
func moveRun(src string, lines []indentLine, at int, idx *lineIndex, compile Compiler, outer bool) (string, *Fix, *Problem) {
	ind := lines[at].text(src)
	w := width(ind, 8)
	// The levels open before the line: the indentation of the line that
	// opened each.
	var levels []string
	for _, l := range lines[:at] {
		lw := width(l.text(src), 8)
		for len(levels) > 0 && width(levels[len(levels)-1], 8) > lw {
			levels = levels[:len(levels)-1]
		}
		if len(levels) == 0 || width(levels[len(levels)-1], 8) < lw {
			levels = append(levels, l.text(src))
		}
	}
	if len(levels) == 0 || levels[0] != "" {
		return "", nil, nil
	}
	if outer {
		levels = levels[:len(levels)-1]
	}
	if len(levels) > maxLevels {
		return "", nil, nil // nested too deeply to try every level
	}
	end := runEnd(src, lines, at, w)
	var fixed []string
	var fits []string
	for _, lv := range levels {
		next := reindent(src, lines, func(i int) (string, bool) {
			if i < at || i >= end || !strings.HasPrefix(lines[i].text(src), ind) {
				return "", false
			}
			return lv + lines[i].text(src)[len(ind):], true
		})
		if compile(next) == nil {
			fits = append(fits, lv)
			fixed = append(fixed, next)
		}
	}
	byDistance := outer && len(fits) > 1
	if byDistance {
		// A dedent lands next to the level meant: the one nearest the
		// line, when it is nearer than every other that compiles. The
		// level left is not one of them: the line was dedented.
		if k := nearest(fits, w); k >= 0 {
			fits, fixed = fits[k:k+1], fixed[k:k+1]
		}
	}
	line, _ := idx.pos(lines[at].off)
	lastLine, _ := idx.pos(lines[end-1].off)
	what := fmt.Sprintf("line %d", line)
	if lastLine > line {
		what = fmt.Sprintf("lines %d to %d", line, lastLine)
	}
	switch len(fits) {
	case 0:
		return "", nil, nil
	case 1:
		kind, why := fixDedent, "the only level open there that Python accepts"
		if outer {
			kind, why = fixRealign, "the only outer indentation level Python accepts there"
		}
		if byDistance {
			why = "the outer indentation level nearest to it that Python accepts there"
		}
		return fixed[0], &Fix{Kind: kind, Line: line, Column: 1,
			Message: lineMessage(line, fmt.Sprintf("moved %s from column %d to column %d, %s", what, w+1, width(fits[0], 8)+1, why))}, nil
	}
	cols := make([]string, len(fits))
	for i, f := range fits {
		cols[i] = fmt.Sprint(width(f, 8) + 1)
	}
	this := "this line"
	if end-at > 1 {
		this = fmt.Sprintf("this line and the %s that go with it", plural(end-at-1, "line"))
	}
	return "", nil, &Problem{Kind: KindAmbiguous, Line: line, Column: 1, off: lines[at].start,
		Message: fmt.Sprintf("%s could start at column %s, and Python runs each; not repaired", this, strings.Join(cols, " or "))}
}

// nearest returns the index of the level of fits nearest to width w,
// when it is strictly nearer than the others, else -1.
func nearest(fits []string, w int) int {
	dist := func(x int) int { return max(x-w, w-x) }
	best, second := -1, 1<<30
	for i, f := range fits {
		switch d := dist(width(f, 8)); {
		case best < 0 || d < dist(width(fits[best], 8)):
			if best >= 0 {
				second = min(second, dist(width(fits[best], 8)))
			}
			best = i
		default:
			second = min(second, d)
		}
	}
	if dist(width(fits[best], 8)) < second {
		return best
	}
	return -1
}

// runEnd returns the index after the last logical line that goes with the
// line at, whose indentation is w wide: the lines after it at the same
// width, and the body of one of them that ends with a colon, which is as
// deep as its first line or deeper.
func runEnd(src string, lines []indentLine, at, w int) int {
	opens, body := endsWithColon(src, lines[at]), 0
	i := at + 1
	for ; i < len(lines); i++ {
		lw := width(lines[i].text(src), 8)
		switch {
		case lw == w:
			opens, body = endsWithColon(src, lines[i]), 0
		case lw > w && opens && (body == 0 || lw >= body):
			if body == 0 {
				body = lw
			}
		default:
			return i
		}
	}
	return i
}

// endsWithColon reports whether the physical line starting the logical
// line l ends with a colon, as a compound statement's header does.
func endsWithColon(src string, l indentLine) bool {
	e := codeEnd(src, l.off)
	return e > l.off && src[e-1] == ':'
}
