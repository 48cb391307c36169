package repair

import "strings"

// strLit describes one string literal: where its prefix, opening quote and
// text start, and how its prefix changes the reading of its text.
type strLit struct {
	start, quote, body int
	q                  byte
	triple             bool
	raw, bytes, fmt    bool
}

func (s *scanner) newLit(start, quote int) strLit {
	src := s.src
	l := strLit{start: start, quote: quote, body: quote + 1, q: src[quote]}
	for _, c := range []byte(strings.ToLower(src[start:quote])) {
		switch c {
		case 'r':
			l.raw = true
		case 'b':
			l.bytes = true
		case 'f', 't':
			l.fmt = true
		}
	}
	if hasTriple(src, quote, l.q) {
		l.triple = true
		l.body = quote + 3
	}
	return l
}

// delim is the length of the literal's quote: 1 or 3.
func (l strLit) delim() int {
	if l.triple {
		return 3
	}
	return 1
}

func (l strLit) quoteText() string { return strings.Repeat(string(l.q), l.delim()) }

// closesAt reports whether the quote at i ends the literal.
func (l strLit) closesAt(src string, i int) bool {
	return src[i] == l.q && (!l.triple || hasTriple(src, i, l.q))
}

func hasTriple(src string, i int, q byte) bool {
	return i+3 <= len(src) && src[i] == q && src[i+1] == q && src[i+2] == q
}

// stops lists, per quote character, the bytes that can end a run of plain
// text in a literal, so the scanner can skip the rest with IndexAny.
var stops = map[byte]string{'"': "\\\n\"", '\'': "\\\n'"}
var fstops = map[byte]string{'"': "\\\n\"{}", '\'': "\\\n'{}"}

// literal reads the string literal lit from its text to its closing quote
// and returns the offset after it. An unterminated literal is reported and
// ends at its line end (single quotes) or at the end of the source.
func (s *scanner) literal(lit strLit, depth int) (end int, closed bool) {
	if lit.fmt {
		return s.fstring(lit, depth)
	}
	src := s.src
	set := stops[lit.q]
	for i := lit.body; i < len(src); {
		k := strings.IndexAny(src[i:], set)
		if k < 0 {
			break
		}
		i += k
		if src[i] == '\\' {
			i = s.escape(lit, i)
			continue
		}
		next, ended, closed := s.lineOrQuote(lit, i)
		if ended {
			return next, closed
		}
		i = next
	}
	s.unterminated(lit, len(src))
	return len(src), false
}

// lineOrQuote reads the line end or quote at i in the text of lit: a line
// end ends a one-line literal, unterminated; a closing quote ends it. ended
// says the literal ended, at next.
func (s *scanner) lineOrQuote(lit strLit, i int) (next int, ended, closed bool) {
	switch {
	case s.src[i] == '\n' && !lit.triple:
		s.unterminated(lit, i)
		return i, true, false
	case lit.closesAt(s.src, i):
		return i + lit.delim(), true, true
	}
	return i + 1, false, false
}

// unterminated reports lit as never closed; at is where it stopped.
func (s *scanner) unterminated(lit strLit, at int) {
	kind := KindUnterminatedString
	if lit.triple {
		kind = KindUnterminatedTriple
	}
	s.add(Problem{Kind: kind, off: lit.start, d: detail{lit: lit, end: at, inBrkt: len(s.stack) > 0, joined: s.prevStr}})
}

// escape checks the backslash escape at i and returns the offset after it.
// Only escapes CPython rejects are reported; unknown ones like \d merely
// warn. Bytes literals have no \u, \U or \N, and raw literals no escapes.
func (s *scanner) escape(lit strLit, i int) int {
	src := s.src
	if i+1 >= len(src) {
		return i + 1
	}
	c := src[i+1]
	switch {
	case c == '\r' && i+2 < len(src) && src[i+2] == '\n':
		return i + 3
	case lit.raw:
	case c == 'x':
		if !hexRun(src, i+2, 2) {
			s.badEscape(lit, i, subHex2)
		}
	case c == 'u' && !lit.bytes:
		if !hexRun(src, i+2, 4) {
			s.badEscape(lit, i, subHex4)
		}
	case c == 'U' && !lit.bytes:
		if !hexRun(src, i+2, 8) || src[i+2:i+4] != "00" || src[i+4:i+6] > "10" {
			s.badEscape(lit, i, subHex8)
		}
	case c == 'N' && !lit.bytes:
		if end := nameEscapeEnd(src, i+2); end > 0 && !(lit.fmt && isLowerName(src[i+3:end-1])) {
			if s.names != nil && s.specDepth == 0 {
				*s.names = append(*s.names, i)
			}
			return end
		}
		s.badEscape(lit, i, subName)
	}
	return i + 2
}

func (s *scanner) badEscape(lit strLit, i int, sub subKind) {
	s.add(Problem{Kind: KindInvalidEscape, off: i, d: detail{sub: sub, lit: lit}})
}

// isLowerName reports whether name is a lower-case identifier, as a field
// of an f-string is and the name of a character is not: f"\N{name}" was
// meant as a backslash, N and a field.
func isLowerName(name string) bool {
	if name == "" || wordEnd(name, 0) != len(name) || isDigit(name[0]) {
		return false
	}
	return strings.ToLower(name) == name
}

// hexRun reports whether src[i:i+n] is n hex digits.
func hexRun(src string, i, n int) bool {
	if i+n > len(src) {
		return false
	}
	for _, c := range []byte(src[i : i+n]) {
		if !isDigit(c) && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// nameEscapeEnd returns the offset after the {NAME} of a \N escape whose
// brace is at i, or -1 when it is malformed. Whether the name exists is
// left to Python.
func nameEscapeEnd(src string, i int) int {
	if i >= len(src) || src[i] != '{' {
		return -1
	}
	for k := i + 1; k < len(src) && k < i+100; k++ {
		c := src[k]
		switch {
		case c == '}':
			if k == i+1 {
				return -1
			}
			return k + 1
		case c == ' ' || c == '-' || isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		default:
			return -1
		}
	}
	return -1
}
