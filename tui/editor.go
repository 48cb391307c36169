package tui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// editor is the input: a multi-line text with one cursor. It stands in
// for bubbles' textarea, which renders all of its text on every key (150
// ms a key at 500 lines here, see BENCHMARKS.md); this one edits a line in
// place and renders only the lines on screen.
type editor struct {
	lines [][]rune
	row   int // the cursor's line
	col   int // the cursor's rune offset in its line
	top   int // the first line on screen
}

func newEditor() editor { return editor{lines: [][]rune{nil}} }

// Value is the text.
func (e *editor) Value() string {
	var b strings.Builder
	for i, l := range e.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(string(l))
	}
	return b.String()
}

// SetValue replaces the text and puts the cursor at its end.
func (e *editor) SetValue(s string) {
	parts := strings.Split(s, "\n")
	e.lines = make([][]rune, len(parts))
	for i, p := range parts {
		e.lines[i] = []rune(p)
	}
	e.row = len(e.lines) - 1
	e.col = len(e.lines[e.row])
	e.top = 0
}

// Empty reports whether there is no text at all.
func (e *editor) Empty() bool { return len(e.lines) == 1 && len(e.lines[0]) == 0 }

// Insert types s at the cursor (newlines split lines; tabs become spaces,
// other control characters are dropped).
func (e *editor) Insert(s string) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	s = strings.ReplaceAll(s, "\t", "    ")
	parts := strings.Split(s, "\n")
	line := e.lines[e.row]
	rest := append([]rune(nil), line[e.col:]...)
	cur := append(line[:e.col:e.col], clean(parts[0])...)
	if len(parts) == 1 {
		e.col = len(cur)
		e.lines[e.row] = append(cur, rest...)
		return
	}
	added := make([][]rune, 0, len(parts))
	added = append(added, cur)
	for _, p := range parts[1:] {
		added = append(added, clean(p))
	}
	last := len(added) - 1
	e.col = len(added[last])
	added[last] = append(added[last], rest...)
	e.lines = append(e.lines[:e.row], append(added, e.lines[e.row+1:]...)...)
	e.row += last
}

func clean(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if !unicode.IsControl(r) {
			out = append(out, r)
		}
	}
	return out
}

// Newline splits the line at the cursor, indenting the new line as the
// one before it, one level more after a colon.
func (e *editor) Newline() {
	before := e.lines[e.row][:e.col]
	indent := leadingSpaces(before)
	if t := strings.TrimRight(string(before), " "); strings.HasSuffix(t, ":") && !strings.HasPrefix(strings.TrimSpace(t), "#") {
		indent += 4
	}
	e.Insert("\n" + strings.Repeat(" ", indent))
}

func leadingSpaces(l []rune) int {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n
}

// Backspace deletes before the cursor: a level of indentation when only
// spaces precede it, else a character, joining lines at a line's start.
func (e *editor) Backspace() {
	line := e.lines[e.row]
	switch {
	case e.col > 0 && leadingSpaces(line[:e.col]) == e.col:
		n := (e.col-1)%4 + 1
		e.lines[e.row] = append(line[:e.col-n], line[e.col:]...)
		e.col -= n
	case e.col > 0:
		e.lines[e.row] = append(line[:e.col-1], line[e.col:]...)
		e.col--
	case e.row > 0:
		prev := e.lines[e.row-1]
		e.col = len(prev)
		e.lines[e.row-1] = append(prev, line...)
		e.lines = append(e.lines[:e.row], e.lines[e.row+1:]...)
		e.row--
	}
}

// Delete deletes the character under the cursor, joining the next line at
// a line's end.
func (e *editor) Delete() {
	line := e.lines[e.row]
	if e.col < len(line) {
		e.lines[e.row] = append(line[:e.col], line[e.col+1:]...)
	} else if e.row+1 < len(e.lines) {
		e.lines[e.row] = append(line, e.lines[e.row+1]...)
		e.lines = append(e.lines[:e.row+1], e.lines[e.row+2:]...)
	}
}

// DeleteToStart and DeleteToEnd cut the line before or after the cursor.
func (e *editor) DeleteToStart() {
	e.lines[e.row] = e.lines[e.row][e.col:]
	e.col = 0
}

func (e *editor) DeleteToEnd() { e.lines[e.row] = e.lines[e.row][:e.col] }

// DeleteWord deletes the word before the cursor.
func (e *editor) DeleteWord() {
	start := wordStart(e.lines[e.row], e.col)
	if start == e.col {
		e.Backspace()
		return
	}
	e.lines[e.row] = append(e.lines[e.row][:start], e.lines[e.row][e.col:]...)
	e.col = start
}

func wordStart(l []rune, col int) int {
	i := col
	for i > 0 && l[i-1] == ' ' {
		i--
	}
	for i > 0 && isWordRune(l[i-1]) {
		i--
	}
	if i == col && i > 0 {
		i--
	}
	return i
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// Cursor moves.
func (e *editor) Left() {
	if e.col > 0 {
		e.col--
	} else if e.row > 0 {
		e.row--
		e.col = len(e.lines[e.row])
	}
}

func (e *editor) Right() {
	if e.col < len(e.lines[e.row]) {
		e.col++
	} else if e.row+1 < len(e.lines) {
		e.row++
		e.col = 0
	}
}

func (e *editor) WordLeft() { e.col = wordStart(e.lines[e.row], e.col) }

func (e *editor) WordRight() {
	l := e.lines[e.row]
	for e.col < len(l) && !isWordRune(l[e.col]) {
		e.col++
	}
	for e.col < len(l) && isWordRune(l[e.col]) {
		e.col++
	}
}

func (e *editor) Home() { e.col = 0 }
func (e *editor) End()  { e.col = len(e.lines[e.row]) }

// Up and Down move between lines; they report false on the first or last
// line, where the keys walk the history instead.
func (e *editor) Up() bool {
	if e.row == 0 {
		return false
	}
	e.row--
	e.col = min(e.col, len(e.lines[e.row]))
	return true
}

func (e *editor) Down() bool {
	if e.row+1 >= len(e.lines) {
		return false
	}
	e.row++
	e.col = min(e.col, len(e.lines[e.row]))
	return true
}

// OnlySpacesBeforeCursor is true where Tab indents rather than completes.
func (e *editor) OnlySpacesBeforeCursor() bool {
	return leadingSpaces(e.lines[e.row][:e.col]) == e.col
}

// WordBeforeCursor is the name or dotted path Tab completes.
func (e *editor) WordBeforeCursor() string {
	l := e.lines[e.row]
	i := e.col
	for i > 0 && (isWordRune(l[i-1]) || l[i-1] == '.') {
		i--
	}
	return string(l[i:e.col])
}

// Height is how many lines the editor takes on screen, at most max.
func (e *editor) Height(limit int) int { return min(len(e.lines), max(1, limit)) }

// View renders height lines of the editor, width columns wide, with
// python's prompts; it returns the cursor's position in them.
func (e *editor) View(width, height int, prompt, more string) (lines []string, cx, cy int) {
	if e.row < e.top {
		e.top = e.row
	}
	if e.row >= e.top+height {
		e.top = e.row - height + 1
	}
	e.top = max(0, min(e.top, len(e.lines)-height))
	avail := max(1, width-ansi.StringWidth(prompt))
	for i := e.top; i < min(len(e.lines), e.top+height); i++ {
		p := more
		if i == 0 {
			p = prompt
		}
		l := e.lines[i]
		start := 0
		if i == e.row {
			// scroll a long line so that the cursor shows: back from the
			// cursor while the characters fit (a screen's worth of them,
			// not the whole line, however long it is)
			start = e.col
			for w := 0; start > 0; start-- {
				if w += runeWidth(l[start-1]); w >= avail {
					break
				}
			}
			shown := ansi.StringWidth(string(l[start:e.col]))
			for ; start < e.col && shown >= avail; shown = ansi.StringWidth(string(l[start:e.col])) {
				start++ // a grapheme wider than its characters
			}
			cy = i - e.top
			cx = ansi.StringWidth(p) + shown
		}
		lines = append(lines, p+ansi.Truncate(string(l[start:]), avail, ""))
	}
	return lines, cx, cy
}

// runeWidth is how many columns r takes (the editor holds no control
// characters, so ASCII takes one).
func runeWidth(r rune) int {
	if r < utf8.RuneSelf {
		return 1
	}
	return ansi.StringWidth(string(r))
}

// editorBox is an editor drawn as a component of its own (the input, the
// comment box): its size, and where its last drawing left the cursor.
type editorBox struct {
	ed            editor
	width, height int
	cx, cy        int // the cursor in the lines last drawn
}

// SetSize gives the box its width; height is the most lines it shows.
func (b *editorBox) SetSize(width, height int) { b.width, b.height = width, height }

// Height is how many lines the box takes, at most limit.
func (b *editorBox) Height(limit int) int { return b.ed.Height(limit) }

// Cursor is where the cursor is in the lines View drew last.
func (b *editorBox) Cursor() (x, y int) { return b.cx, b.cy }

// draw draws the editor, prompt before its first line and more before
// the others, and keeps where the cursor is.
func (b *editorBox) draw(prompt, more string) []string {
	var lines []string
	lines, b.cx, b.cy = b.ed.View(b.width, b.height, prompt, more)
	return lines
}
