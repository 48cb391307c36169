package repair

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// lineIndex turns byte offsets into 1-based lines and character columns.
// Columns count runes, so a line with non-ASCII text gets a prefix table
// built once, keeping lookups linear even for very long lines.
type lineIndex struct {
	src    string
	starts []int
	cols   map[int][]int32 // line index -> rune column of each byte; nil for ASCII lines
}

func newLineIndex(src string) *lineIndex {
	starts := make([]int, 1, 1+strings.Count(src, "\n"))
	for i := 0; ; {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		starts = append(starts, i)
	}
	return &lineIndex{src: src, starts: starts}
}

// line returns the 0-based index of the line holding off.
func (x *lineIndex) line(off int) int {
	return sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > off }) - 1
}

// pos returns the 1-based line and character column of off.
func (x *lineIndex) pos(off int) (line, col int) {
	l := x.line(off)
	start := x.starts[l]
	end := x.lineEnd(l)
	if off > end {
		off = end
	}
	if x.cols == nil {
		x.cols = map[int][]int32{}
	}
	tab, ok := x.cols[l]
	if !ok {
		tab = runeColumns(x.src[start:end])
		x.cols[l] = tab
	}
	if tab == nil {
		return l + 1, off - start + 1
	}
	return l + 1, int(tab[off-start]) + 1
}

// runeColumns returns, for each byte of text and its end, the 0-based rune
// index it belongs to, or nil when text is ASCII and bytes are runes.
func runeColumns(text string) []int32 {
	if isASCII(text) {
		return nil
	}
	tab := make([]int32, len(text)+1)
	n := int32(0)
	for i := 0; i < len(text); {
		_, size := utf8.DecodeRuneInString(text[i:])
		for k := 0; k < size; k++ {
			tab[i+k] = n
		}
		i += size
		n++
	}
	tab[len(text)] = n
	return tab
}

// lineEnd returns the offset of the end of line l, before its newline.
func (x *lineIndex) lineEnd(l int) int {
	if l+1 < len(x.starts) {
		return x.starts[l+1] - 1
	}
	return len(x.src)
}

// text returns line l (0-based) without its line ending.
func (x *lineIndex) text(l int) string {
	return strings.TrimSuffix(x.src[x.starts[l]:x.lineEnd(l)], "\r")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
