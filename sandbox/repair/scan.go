package repair

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bom is the UTF-8 byte order mark.
const bom = "\ufeff"

// maxDepth bounds how deeply f-strings and their fields may nest before the
// scanner gives up; CPython itself refuses far shallower nesting.
const maxDepth = 100

// scan reports the quote, bracket, f-string and escape problems in src,
// following the tokenizer of CPython 3.minor, in source order, with their
// lines, columns and messages (the tests' view of the scanner).
func scan(src string, minor int) []Problem {
	return finish(scanRaw(src, minor, 0), newLineIndex(src), minor)
}

// scanRaw scans src and returns its problems sorted by offset, without line,
// column or message. With limit > 0 it stops after limit problems, which is
// all the repair search needs to know that an edit did not help.
func scanRaw(src string, minor, limit int) []Problem {
	s := &scanner{src: src, minor: minor, limit: limit, specBudget: len(src) + 4096}
	s.run()
	byOffset := func(a, b Problem) int { return cmp.Compare(a.off, b.off) }
	if !slices.IsSortedFunc(s.probs, byOffset) {
		slices.SortStableFunc(s.probs, byOffset)
	}
	return s.probs
}

type scanner struct {
	src   string
	minor int
	limit int // stop after this many problems; 0 means no limit
	probs []Problem
	stop  bool

	// Reading a field of an f-string may need a second, speculative pass;
	// specDepth counts open passes, whose problems may be dropped, and
	// specBudget caps the bytes they read so the scan stays linear.
	specDepth  int
	specBudget int

	pos     int
	indent  int // indentation width of the current physical line
	stack   []bracket
	prev    tokKind // the last token of code, to spot a statement glued to an open bracket
	prevStr bool    // that token was a string, so a string after it continues it
	lastEnd int     // offset just past the last token of any kind, where closers go

	// starts, when not nil, collects the logical lines outside brackets
	// (see LineStarts).
	starts *[]LineStart

	// names, when not nil, collects the offsets of the backslashes of
	// well-formed \N{NAME} escapes (see nameEscapes).
	names *[]int
}

type bracket struct {
	off    int
	indent int // indentation of the line the bracket is on
	ch     byte
}

type tokKind uint8

const (
	tokNone    tokKind = iota
	tokOperand         // a name, number, string or closing bracket
	tokOther           // an operator, keyword or opening bracket
)

func (s *scanner) add(p Problem) {
	s.probs = append(s.probs, p)
	s.checkLimit()
}

func (s *scanner) checkLimit() {
	if s.specDepth == 0 && s.limit > 0 && len(s.probs) >= s.limit {
		s.stop = true
	}
}

// run scans the whole source at the level of code: it skips comments,
// reads literals, and keeps the stack of open brackets.
func (s *scanner) run() {
	src := s.src
	if strings.HasPrefix(src, bom) {
		// A file may start with a byte order mark; source text may not.
		s.add(Problem{Kind: KindByteOrderMark, off: 0, d: detail{end: len(bom)}})
		s.pos = len(bom)
	}
	atLineStart := true
	for s.pos < len(src) && !s.stop {
		if atLineStart {
			atLineStart = false
			s.lineStart()
			continue
		}
		c := src[s.pos]
		switch {
		case c == '\n':
			s.pos++
			atLineStart = true
		case c == ' ' || c == '\t' || c == '\f' || c == '\r':
			s.pos++
		case c == '#':
			s.pos = lineEndFrom(src, s.pos)
		case c == '\\':
			// A backslash joins the next line to this one, so that line
			// does not start a statement.
			s.pos++
			if strings.HasPrefix(src[s.pos:], "\r\n") {
				s.pos += 2
			} else if s.pos < len(src) && src[s.pos] == '\n' {
				s.pos++
			}
		case c == '"' || c == '\'':
			s.codeString(s.pos, s.pos)
		case isDigit(c) || c == '.' && s.pos+1 < len(src) && isDigit(src[s.pos+1]):
			s.pos = numberEnd(src, s.pos)
			s.operand()
		case c == '(' || c == '[' || c == '{':
			s.stack = append(s.stack, bracket{off: s.pos, indent: s.indent, ch: c})
			s.pos++
			s.token(tokOther)
		case c == ')' || c == ']' || c == '}':
			s.closeBracket(c)
		case isIdentStart(c):
			s.word()
		default:
			s.pos++
			s.token(tokOther)
		}
	}
	if n := len(s.stack); s.limit == 0 {
		s.probs = slices.Grow(s.probs, n)
	}
	for _, b := range s.stack {
		if s.stop {
			return
		}
		s.add(Problem{Kind: KindUnclosedBracket, off: b.off, d: detail{ch: b.ch, at: s.lastEnd}})
	}
}

func (s *scanner) operand() {
	s.token(tokOperand)
}

// token records that a token of kind k ends at s.pos.
func (s *scanner) token(k tokKind) {
	s.prev, s.prevStr, s.lastEnd = k, false, s.pos
}

// lineStart measures the indentation of a physical line and, inside open
// brackets, checks whether the line starts a new statement.
func (s *scanner) lineStart() {
	src := s.src
	i, width := s.pos, 0
loop:
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ':
			width++
		case '\t':
			width = width/8*8 + 8
		case '\f':
			width = 0
		default:
			break loop
		}
	}
	s.pos = i
	if i >= len(src) || src[i] == '\n' || src[i] == '\r' || src[i] == '#' {
		return
	}
	prevIndent := s.indent
	s.indent = width
	if len(s.stack) > 0 {
		s.checkStatement(i, width, prevIndent)
	} else if s.starts != nil {
		*s.starts = append(*s.starts, LineStart{Off: s.pos, Indent: width})
	}
}

// checkStatement reports a line inside open brackets that can only be a new
// statement: it starts with a statement keyword, or a name follows a
// complete operand at or left of the indentation of an open bracket's line,
// or a line that reads as a statement follows a comma there, dedented from
// the line before, as after the items of a dict never closed. The brackets
// the statement cuts off are treated as closed from here on.
func (s *scanner) checkStatement(i, width, prevIndent int) {
	src := s.src
	end := wordEnd(src, i)
	if end == i {
		return
	}
	w := src[i:end]
	if end < len(src) && isQuote(src[end]) && s.isPrefix(w) {
		return
	}
	from := -1
	switch {
	case statementKeywords[w]:
		from = 0
	case colonKeywords[w]:
		if e := codeEnd(src, i); e > i && src[e-1] == ':' {
			from = 0
		}
	case !keywords[w] && (s.prev == tokOperand ||
		width < prevIndent && s.lastEnd > 0 && src[s.lastEnd-1] == ',' && looksLikeCode(src[i:lineEndFrom(src, i)])):
		for k, b := range s.stack {
			if b.indent >= width {
				from = k
				break
			}
		}
	}
	if from < 0 {
		return
	}
	closers := make([]int, 0, len(s.stack)-from)
	for _, b := range s.stack[from:] {
		closers = append(closers, b.off)
	}
	s.stack = s.stack[:from]
	s.add(Problem{Kind: KindStatementInBracket, off: i, d: detail{closers: closers, at: s.lastEnd}})
}

// closeBracket matches the closer c at s.pos against the open brackets.
func (s *scanner) closeBracket(c byte) {
	if n := len(s.stack); n == 0 {
		s.add(Problem{Kind: KindUnmatchedCloser, off: s.pos, d: detail{ch: c}})
	} else {
		// Pop even on a mismatch: the wrong closer most often stands for
		// the right one, and popping keeps later lines from cascading.
		top := s.stack[n-1]
		s.stack = s.stack[:n-1]
		if top.ch != openerOf(c) {
			s.add(Problem{Kind: KindMismatchedCloser, off: s.pos, d: detail{ch: c, other: top.off}})
		}
	}
	s.pos++
	s.operand()
}

// word reads a name, a string with a prefix, or a non-ASCII character.
func (s *scanner) word() {
	src := s.src
	start := s.pos
	if size := typographicAt(src, start); size > 0 {
		s.add(Problem{Kind: KindTypographicQuote, off: start, d: detail{end: start + size}})
		s.pos += size
		s.token(tokOther)
		return
	}
	end := wordEnd(src, start)
	if end == start {
		_, size := utf8.DecodeRuneInString(src[start:])
		s.pos += size
		s.token(tokOther)
		return
	}
	if end < len(src) && isQuote(src[end]) && s.isPrefix(src[start:end]) {
		s.codeString(start, end)
		return
	}
	s.pos = end
	if w := src[start:end]; keywords[w] && !operandKeywords[w] {
		s.token(tokOther)
		return
	}
	s.operand()
}

// codeString reads a string literal outside any f-string.
func (s *scanner) codeString(start, quote int) {
	lit := s.newLit(start, quote)
	end, closed := s.literal(lit, 0)
	s.pos = end
	s.operand()
	s.prevStr = true
	if closed {
		s.checkEndsEarly(lit, end)
	}
}

// checkEndsEarly reports a string glued to a following word, as in
// 'It's': a quote inside the text ended the string. Keywords may follow a
// string directly ("a"if x else"b"), and so may another prefixed string.
func (s *scanner) checkEndsEarly(lit strLit, end int) {
	src := s.src
	if end >= len(src) || !isIdentChar(src[end]) || typographicAt(src, end) > 0 {
		return
	}
	wEnd := wordEnd(src, end)
	if wEnd == end || keywords[src[end:wEnd]] {
		return
	}
	if wEnd < len(src) && isQuote(src[wEnd]) && s.isPrefix(src[end:wEnd]) {
		return
	}
	next := -1
	if k := strings.IndexByte(src[wEnd:lineEndFrom(src, wEnd)], lit.q); k >= 0 {
		next = wEnd + k
	}
	s.add(Problem{Kind: KindStringEndsEarly, off: end - 1, d: detail{lit: lit, end: wEnd, other: next}})
}

// isPrefix reports whether w is a string prefix in CPython 3.minor.
func (s *scanner) isPrefix(w string) bool {
	if len(w) > 2 {
		return false
	}
	switch strings.ToLower(w) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	case "t", "tr", "rt":
		return s.minor >= 14
	}
	return false
}

var keywords = setOf("False", "None", "True", "and", "as", "assert", "async", "await",
	"break", "class", "continue", "def", "del", "elif", "else", "except", "finally",
	"for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not",
	"or", "pass", "raise", "return", "try", "while", "with", "yield")

// operandKeywords are keywords that are values, not operators.
var operandKeywords = setOf("False", "None", "True")

// statementKeywords can only start a statement, never sit inside brackets.
var statementKeywords = setOf("assert", "break", "class", "continue", "def", "del",
	"elif", "except", "finally", "from", "global", "import", "nonlocal", "pass",
	"raise", "return", "try", "while", "with")

// colonKeywords also occur inside expressions, so they only start a
// statement when their line ends with a colon.
var colonKeywords = setOf("async", "else", "for", "if")

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isQuote(c byte) bool { return c == '"' || c == '\'' }

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// wordEnd returns the end of the identifier starting at i (i itself when
// there is none). Non-ASCII letters count; typographic quotes do not.
func wordEnd(src string, i int) int {
	for i < len(src) {
		c := src[i]
		if c < utf8.RuneSelf {
			if !isIdentChar(c) {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(src[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) &&
			!unicode.Is(unicode.Mc, r) && !unicode.Is(unicode.Pc, r) {
			break
		}
		i += size
	}
	return i
}

// numberEnd returns the end of the number starting at i; an exponent's
// sign ends it early, which is harmless for finding problems.
func numberEnd(src string, i int) int {
	for i < len(src) && (isIdentChar(src[i]) && src[i] < utf8.RuneSelf || src[i] == '.') {
		i++
	}
	return i
}

func openerOf(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}

func closerOf(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// lineEndFrom returns the offset of the newline ending the line holding i,
// or len(src).
func lineEndFrom(src string, i int) int {
	if k := strings.IndexByte(src[i:], '\n'); k >= 0 {
		return i + k
	}
	return len(src)
}

// lineStartOf returns the offset where the line holding i starts.
func lineStartOf(src string, i int) int {
	return strings.LastIndexByte(src[:i], '\n') + 1
}

// codeEnd returns the offset just past the last character of code on the
// line holding i, ignoring a trailing comment. It only follows simple
// quotes, which is enough to decide where to propose an edit.
func codeEnd(src string, i int) int {
	start, end := lineStartOf(src, i), lineEndFrom(src, i)
	last := start
	var q byte
	for k := start; k < end; k++ {
		c := src[k]
		switch {
		case q != 0:
			if c == '\\' {
				k++
			} else if c == q {
				q = 0
			}
			last = min(k+1, end)
		case c == '#':
			return last
		case c == '"' || c == '\'':
			q = c
			last = k + 1
		case c != ' ' && c != '\t' && c != '\r' && c != '\f':
			last = k + 1
		}
	}
	return last
}

// typographicAt returns the byte size of the typographic quote at i, or 0.
func typographicAt(src string, i int) int {
	if i+3 > len(src) || src[i] != 0xE2 || src[i+1] != 0x80 {
		return 0
	}
	if c := src[i+2]; c >= 0x98 && c <= 0x9F { // U+2018..U+201F
		return 3
	}
	return 0
}

// typographicDouble reports whether the typographic quote at i is a double
// one (“ ” „ ‟) rather than a single one (‘ ’ ‚ ‛).
func typographicDouble(src string, i int) bool { return src[i+2] >= 0x9C }
