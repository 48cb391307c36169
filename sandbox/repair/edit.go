package repair

import "strings"

// edit replaces src[off:end] with text; off == end inserts.
type edit struct {
	off, end int
	text     string
}

// change is one proposed fix: edits applied together (sorted by offset and
// not overlapping), the notes that explain them to the reader, and a cost
// that ranks it against other changes leaving as many problems: lower costs
// keep more of the block's evident meaning.
type change struct {
	edits []edit
	notes []note
	cost  int
	place *place // what the change closes, when it inserts one closer
}

// note explains one part of a change. Its offsets are in the text the
// change applies to; text renders the sentence given a function that maps
// such offsets to a line and column of the original block.
type note struct {
	kind string
	at   int
	text func(pos posFunc) string
}

type posFunc func(off int) (line, col int)

func insert(at int, text string) edit { return edit{off: at, end: at, text: text} }

func replace(off, end int, text string) edit { return edit{off: off, end: end, text: text} }

// apply returns src with the edits made.
func apply(src string, edits []edit) string {
	var b strings.Builder
	n := len(src)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.off)
	}
	b.Grow(n)
	last := 0
	for _, e := range edits {
		b.WriteString(src[last:e.off])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(src[last:])
	return b.String()
}

// mapBack maps an offset in the text produced by edits to the text they
// were applied to. An offset inside inserted text maps to where it went in.
func mapBack(x int, edits []edit) int {
	shift := 0
	for _, e := range edits {
		start := e.off + shift
		if x < start {
			break
		}
		if x < start+len(e.text) {
			return e.off
		}
		shift += len(e.text) - (e.end - e.off)
	}
	return x - shift
}
