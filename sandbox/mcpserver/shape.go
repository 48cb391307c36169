package mcpserver

import (
	"strings"
	"unicode/utf8"
)

// screen turns a block's output into what a terminal would leave on the
// screen, for a model: escape sequences (colours, cursor moves, titles)
// are dropped, and a carriage return moves back to the line's start, so
// that a progress bar redrawn 2,000 times is one line, its final state.
// It works on a stream: a line is passed on when its newline comes.
type screen struct {
	line []rune // the current line, as overwritten so far
	col  int    // where the next character goes in line
	esc  []byte // an escape sequence not finished yet
	part []byte // the start of a character split between writes
}

// maxLine bounds the line a screen holds back: a longer one (no newline
// in megabytes) is passed on as it is.
const maxLine = 64 << 10

// write takes output and returns what is final of it.
func (s *screen) write(data string) string {
	if len(s.part) > 0 {
		data = string(s.part) + data
		s.part = nil
	}
	var out strings.Builder
	for i := 0; i < len(data); {
		c := data[i]
		if len(s.esc) > 0 || c == 0x1b {
			s.esc = append(s.esc, c)
			i++
			if escDone(s.esc) {
				s.esc = s.esc[:0]
			}
			continue
		}
		switch c {
		case '\n':
			out.WriteString(string(s.line))
			out.WriteByte('\n')
			s.line, s.col = s.line[:0], 0
			i++
			continue
		case '\r':
			s.col = 0
			i++
			continue
		case '\b':
			s.col = max(0, s.col-1)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(data[i:])
		if r == utf8.RuneError && size == 1 && !utf8.FullRuneInString(data[i:]) {
			s.part = append(s.part, data[i:]...)
			break
		}
		i += size
		if s.col < len(s.line) {
			s.line[s.col] = r
		} else {
			s.line = append(s.line, r)
		}
		s.col++
		if len(s.line) >= maxLine {
			out.WriteString(string(s.line))
			s.line, s.col = s.line[:0], 0
		}
	}
	return out.String()
}

// flush is the unfinished last line.
func (s *screen) flush() string {
	rest := string(s.line) + string(s.part)
	s.line, s.col, s.part = s.line[:0], 0, nil
	return rest
}

// escDone reports whether seq (from its ESC) is a whole escape sequence:
// CSI (ESC [ … final byte 0x40–0x7e), OSC and the other strings (ESC ] P
// X ^ _ … BEL or ESC \), or ESC and one more byte. An overlong one ends
// (it is dropped) at 256 bytes.
func escDone(seq []byte) bool {
	n := len(seq)
	switch {
	case n < 2:
		return false
	case n >= 256:
		return true
	}
	switch seq[1] {
	case '[':
		return n > 2 && seq[n-1] >= 0x40 && seq[n-1] <= 0x7e
	case ']', 'P', 'X', '^', '_':
		return seq[n-1] == 0x07 || n > 3 && seq[n-2] == 0x1b && seq[n-1] == '\\'
	}
	return true
}
