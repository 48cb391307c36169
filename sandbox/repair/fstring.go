package repair

import "strings"

// fieldState says how reading an f-string replacement field ended.
type fieldState uint8

const (
	fieldClosed       fieldState = iota // at its '}'
	fieldEndedString                    // the f-string's own quote ended it
	fieldUnterminated                   // the f-string never closes
)

// fieldMode chooses how a field treats the f-string's own quote. CPython
// 3.12+ reads it as a nested string; older versions end the f-string there.
// Both readings are tried so a nested quote is reported as such rather than
// as the cascade of errors it causes.
type fieldMode uint8

const (
	modeNormal fieldMode = iota // on the f-string's quote, retry as below
	modeNested                  // read it as a nested string (3.12 rules)
	modeLegacy                  // let it end the f-string
)

// fstring reads an f-string from its text to its closing quote.
func (s *scanner) fstring(lit strLit, depth int) (int, bool) {
	src := s.src
	set := fstops[lit.q]
	for i := lit.body; i < len(src) && !s.stop; {
		k := strings.IndexAny(src[i:], set)
		if k < 0 {
			break
		}
		i += k
		switch c := src[i]; {
		case c == '\\':
			if i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '}') {
				i++ // the brace still opens or closes a field
				continue
			}
			i = s.escape(lit, i)
		case c == '{':
			if i+1 < len(src) && src[i+1] == '{' {
				i += 2
				continue
			}
			if e := quantifierEnd(src, i); lit.raw && e > 0 {
				// {2,3} in a raw f-string is a regular expression's
				// count, not a tuple to format.
				s.add(Problem{Kind: KindFStringBrace, off: i, d: detail{sub: subTextField, lit: lit, end: e}})
				i = e + 1
				continue
			}
			end, st := s.field(lit, i, depth, modeNormal)
			switch st {
			case fieldEndedString:
				return end, true
			case fieldUnterminated:
				return end, false
			}
			i = end
		case c == '}':
			if i+1 < len(src) && src[i+1] == '}' {
				i += 2
				continue
			}
			s.add(Problem{Kind: KindFStringBrace, off: i, d: detail{sub: subSingleClose, lit: lit}})
			i++
		default:
			next, ended, closed := s.lineOrQuote(lit, i)
			if ended {
				return next, closed
			}
			i = next
		}
	}
	if s.stop {
		return len(src), false
	}
	s.unterminated(lit, len(src))
	return len(src), false
}

// quantifierEnd returns the offset of the '}' of a regular expression
// count at i, {n}, {n,}, {,m} or {n,m}, or -1.
func quantifierEnd(src string, i int) int {
	digits, commas := 0, 0
	for k := i + 1; k < len(src); k++ {
		switch c := src[k]; {
		case isDigit(c):
			digits++
		case c == ',' && commas == 0:
			commas++
		case c == '}' && digits > 0:
			return k
		default:
			return -1
		}
	}
	return -1
}

// field reads the replacement field whose '{' is at open: an expression,
// then an optional conversion and format spec, up to the closing '}'.
// While reading the expression it notes whether the content reads as text
// (empty, or two operands in a row like "hello world").
func (s *scanner) field(lit strLit, open, depth int, mode fieldMode) (int, fieldState) {
	src := s.src
	if depth >= maxDepth {
		s.add(Problem{Kind: KindTooDeep, off: open})
		s.stop = true
		return len(src), fieldUnterminated
	}
	var stack []bracket
	prev, empty, text, backslash := tokNone, true, false, false
	for i := open + 1; i < len(src) && !s.stop; {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\f' || c == '\r':
			i++
		case c == '\n':
			if !lit.triple && s.minor < 12 {
				s.unterminated(lit, i)
				return i, fieldUnterminated
			}
			i++
		case c == '\\':
			if s.minor < 12 && !backslash {
				backslash = true
				s.add(Problem{Kind: KindFStringBackslash, off: i, d: detail{lit: lit}})
			}
			i++
		case c == '#' && s.minor >= 12:
			i = lineEndFrom(src, i)
		case isQuote(c):
			end, st, ok := s.fieldString(lit, open, i, i, depth, mode, empty || text)
			if !ok {
				return end, st
			}
			backslash = s.nestedBackslash(lit, i, end, backslash)
			i, prev, empty = end, tokOperand, false
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, bracket{off: i, ch: c})
			i, prev, empty = i+1, tokOther, false
		case c == ')' || c == ']' || c == '}':
			n := len(stack)
			if n == 0 && c == '}' {
				if empty || text {
					s.add(Problem{Kind: KindFStringBrace, off: open, d: detail{sub: subTextField, lit: lit, end: i}})
				}
				return i + 1, fieldClosed
			}
			if n == 0 {
				s.add(Problem{Kind: KindUnmatchedCloser, off: i, d: detail{ch: c}})
			} else {
				if stack[n-1].ch != openerOf(c) {
					s.add(Problem{Kind: KindMismatchedCloser, off: i, d: detail{ch: c, other: stack[n-1].off}})
				}
				stack = stack[:n-1]
			}
			i, prev = i+1, tokOperand
		case c == '!' && len(stack) == 0 && !strings.HasPrefix(src[i:], "!="):
			i, prev = wordEnd(src, i+1), tokOther // a conversion such as !r
		case c == ':' && len(stack) == 0:
			end, st := s.formatSpec(lit, open, i+1, depth, mode)
			if st == fieldClosed && (empty || text || dictSpec(src[i+1:end-1])) {
				s.add(Problem{Kind: KindFStringBrace, off: open, d: detail{sub: subTextField, lit: lit, end: end - 1}})
			}
			return end, st
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			text = text || prev == tokOperand
			i, prev, empty = numberEnd(src, i), tokOperand, false
		case c == '$' || c == '?' || c == '`':
			i, text, empty = i+1, true, false
		case isIdentStart(c):
			end := wordEnd(src, i)
			if end == i {
				i += max(typographicAt(src, i), 1)
				prev, empty = tokOther, false
				continue
			}
			if end < len(src) && isQuote(src[end]) && s.isPrefix(src[i:end]) {
				e, st, ok := s.fieldString(lit, open, i, end, depth, mode, empty || text)
				if !ok {
					return e, st
				}
				backslash = s.nestedBackslash(lit, i, e, backslash)
				i, prev, empty = e, tokOperand, false
				continue
			}
			if w := src[i:end]; keywords[w] && !operandKeywords[w] {
				// A statement keyword means the braces hold code as text.
				text = text || statementKeywords[w]
				prev = tokOther
			} else {
				text = text || prev == tokOperand
				prev = tokOperand
			}
			i, empty = end, false
		default:
			i, prev, empty = i+1, tokOther, false
		}
	}
	if s.stop {
		return len(src), fieldUnterminated
	}
	s.unterminated(lit, len(src))
	return len(src), fieldUnterminated
}

// fieldString reads a string nested in a field, its prefix at start and
// its quote at quote. When that quote is the f-string's own, the reading
// depends on mode; ok is false when the field ends here.
func (s *scanner) fieldString(lit strLit, open, start, quote, depth int, mode fieldMode, text bool) (end int, st fieldState, ok bool) {
	src := s.src
	if lit.closesAt(src, quote) {
		switch mode {
		case modeLegacy:
			s.add(Problem{Kind: KindFStringBrace, off: open, d: detail{sub: subUnclosedField, lit: lit, at: quote, text: text}})
			return quote + lit.delim(), fieldEndedString, false
		case modeNormal:
			end, st := s.retryField(lit, open, depth)
			return end, st, false
		}
	}
	inner := s.newLit(start, quote)
	end, closed := s.literal(inner, depth+1)
	if !closed {
		return end, fieldUnterminated, false
	}
	if s.minor < 12 && lit.closesAt(src, quote) {
		s.add(Problem{Kind: KindFStringQuote, off: quote, d: detail{lit: inner, other: end - inner.delim()}})
	}
	return end, fieldClosed, true
}

// nestedBackslash reports a backslash in the string nested at
// src[start:end], which Python before 3.12 rejects in a field like any
// other, unless one was reported for the field already. It returns
// whether the field now has one reported.
func (s *scanner) nestedBackslash(lit strLit, start, end int, reported bool) bool {
	if s.minor >= 12 || reported {
		return reported
	}
	k := strings.IndexByte(s.src[start:end], '\\')
	if k < 0 {
		return false
	}
	s.add(Problem{Kind: KindFStringBackslash, off: start + k, d: detail{lit: lit}})
	return true
}

// retryField rereads the field at open after meeting the f-string's own
// quote inside it. If the field then closes cleanly with that quote read as
// a nested string (3.12 rules; a problem before 3.12), that reading stands;
// otherwise the quote ends the f-string and the field is left unclosed.
func (s *scanner) retryField(lit strLit, open, depth int) (int, fieldState) {
	if s.specDepth > 0 {
		// Already rereading an enclosing field by 3.12 rules: keep to
		// them, so rereads never nest and the scan stays linear.
		return s.field(lit, open, depth, modeNested)
	}
	if s.specBudget > 0 {
		mark := len(s.probs)
		s.specDepth++
		end, st := s.field(lit, open, depth, modeNested)
		s.specDepth--
		s.specBudget -= end - open
		if st == fieldClosed && onlyKind(s.probs[mark:], KindFStringQuote) {
			s.checkLimit()
			return end, st
		}
		s.probs = s.probs[:mark]
		s.stop = false
	}
	return s.field(lit, open, depth, modeLegacy)
}

// onlyKind reports whether every problem in probs is of kind.
func onlyKind(probs []Problem, kind string) bool {
	for _, p := range probs {
		if p.Kind != kind {
			return false
		}
	}
	return true
}

// formatSpec reads a format spec after a field's ':' up to the field's '}'. The
// spec is text in which '{' opens a nested field.
func (s *scanner) formatSpec(lit strLit, open, i, depth int, mode fieldMode) (int, fieldState) {
	src := s.src
	for i < len(src) && !s.stop {
		c := src[i]
		switch {
		case c == '{':
			end, st := s.field(lit, i, depth+1, mode)
			if st != fieldClosed {
				return end, st
			}
			i = end
		case c == '}':
			return i + 1, fieldClosed
		case c == '\\':
			i = s.escape(lit, i)
		case c == '\n' && !lit.triple:
			s.unterminated(lit, i)
			return i, fieldUnterminated
		case lit.closesAt(src, i):
			s.add(Problem{Kind: KindFStringBrace, off: open, d: detail{sub: subUnclosedField, lit: lit, at: i}})
			return i + lit.delim(), fieldEndedString
		default:
			i++
		}
	}
	if s.stop {
		return len(src), fieldUnterminated
	}
	s.unterminated(lit, len(src))
	return len(src), fieldUnterminated
}

// dictSpec reports whether spec, the text after a field's ':', holds a
// quote past its first character outside nested fields: a spec never does
// (a quote may only be its fill character, first), so the braces hold a
// dict as text, as in compression={'method': 'gzip'} or
// hashdict({"apples": 1, "bananas": 2}).
func dictSpec(spec string) bool {
	depth := 0
	for k := 1; k < len(spec); k++ {
		switch c := spec[k]; {
		case c == '{':
			depth++
		case c == '}':
			depth--
		case isQuote(c) && depth == 0:
			return true
		}
	}
	return false
}
