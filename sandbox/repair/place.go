package repair

import (
	"fmt"
	"slices"
	"strings"
)

// A dropped closing quote or bracket can often be put back at more than
// one place, each giving a program Python compiles: "w in mode can end
// after w or at the line end, f(a + b after a or b. The search takes the
// first place that compiles; settle then compiles the other places, and
// keeps the repair only when no other place compiles, or when the block
// itself says which one was meant (for a bracket, settleBracket weighs the
// places by what writers do). A wrong program that runs is worse than a
// refusal.

// place is what a change closing a string or a bracket closes: the string
// lit, or the bracket at opener, and the end of the text where the closer
// may go.
type place struct {
	lit    *strLit // nil for a bracket
	opener int
	end    int
	inBrkt bool // the string sits inside brackets
}

// maxPlaces bounds the compiler calls settle makes.
const maxPlaces = 8

// settle checks the repair found, when it is one change closing a string
// or a bracket, against the other places the closer could go. It returns
// nil when the repair stands, after moving the closer when the block says
// where it belongs, or the problem that refuses it.
func (s *searcher) settle(src string) *Problem {
	if len(s.path) != 1 || s.path[0].place == nil {
		return nil
	}
	c := s.path[0]
	at := c.edits[0].off
	pl := c.place
	var alts []edit
	if pl.lit != nil {
		alts = stringPlaces(src, pl)
	} else {
		alts = bracketPlaces(src, pl)
	}
	budget := maxPlaces
	var runs []edit // the other places Python compiles
	for _, e := range alts {
		// Text with a bracket it does not close, or closing one it did not
		// open, reads as code cut off, as in ",.) for w in text.split(".
		if pl.lit != nil && e.off > pl.lit.body && e.off <= pl.end && balanced(src[pl.lit.body:at]) && !balanced(src[pl.lit.body:e.off]) {
			continue
		}
		next := apply(src, []edit{e})
		if next == s.result || len(scanRaw(next, s.minor, 1)) > 0 {
			continue
		}
		if budget == 0 {
			return ambiguous(src, pl, "", at, e.off)
		}
		budget--
		if s.compile(next) == nil {
			if pl.lit == nil {
				runs = append(runs, e)
				continue
			}
			if !ownClose(pl, e) {
				return ambiguous(src, pl, e.text, at, e.off)
			}
			runs = append(runs, e)
		}
	}
	if pl.lit == nil {
		return s.settleBracket(src, pl, at, runs)
	}
	if len(runs) == 0 {
		return nil
	}
	offs := []int{at}
	for _, e := range runs {
		offs = append(offs, e.off)
	}
	first, last := slices.Min(offs), slices.Max(offs)
	// A reading where the string is a format that % fills, or the
	// receiver of a method, as in '%s' % name or ''.join(parts), is the
	// one meant when it is the only such reading.
	var strong []int
	for _, p := range offs {
		if formatOrMethod(src, pl.lit.body, p) {
			strong = append(strong, p)
		}
	}
	var pick int
	switch {
	case len(strong) == 1:
		pick = strong[0]
	// Else, of two readings, a string that is one word, like '__name__'
	// in getattr(obj, '__name__, None), most likely ends where code
	// starts, when that code holds only names the block knows. Text with
	// spaces may be a message holding a comma, like "Hello, world", and an
	// empty string may be one quote of '', so there the block does not say.
	case len(runs) == 1 && first > pl.lit.body && isWord(src[pl.lit.body:first]) && knownNames(src, first, last):
		pick = first
	default:
		return ambiguous(src, pl, string(pl.lit.q), first, last)
	}
	if pick != at {
		moved := closeStringAt(pick, pl.lit.q)
		moved.place = pl
		s.path[0] = moved
		s.result = apply(src, moved.edits)
	}
	return nil
}

// formatOrMethod reports whether the string whose text is src[body:p],
// closed at p, is a %-format followed by the % operator, or a word (or
// nothing) followed by a method call.
func formatOrMethod(src string, body, p int) bool {
	text, rest := src[body:p], src[p:lineEndFrom(src, p)]
	if strings.HasPrefix(rest, " % ") {
		return hasConversion(text)
	}
	if len(rest) > 1 && rest[0] == '.' && isWord(text) {
		e := wordEnd(rest, 1)
		return e > 1 && e < len(rest) && rest[e] == '('
	}
	return false
}

// hasConversion reports whether text holds a %-format's conversion, as
// %s or %(name)d.
func hasConversion(text string) bool {
	for k := 0; k+1 < len(text); k++ {
		if text[k] == '%' && strings.IndexByte("sdrifxXeEgGc(*-0123456789.", text[k+1]) >= 0 {
			return true
		}
	}
	return false
}

// ownClose reports whether e closes the string of pl inside its own text.
func ownClose(pl *place, e edit) bool {
	return e.off == e.end && e.text == string(pl.lit.q) && e.off >= pl.lit.body && e.off <= pl.end
}

// ambiguous is the problem refusing a closer that fits at a and at b.
func ambiguous(src string, pl *place, closer string, a, b int) *Problem {
	idx := newLineIndex(src)
	a, b = min(a, b), max(a, b)
	p := Problem{Kind: KindAmbiguous, off: pl.opener}
	what := fmt.Sprintf("'%c'", src[pl.opener])
	if pl.lit != nil {
		p.off = pl.lit.start
		what = "the string opened here"
	}
	p.Line, p.Column = idx.pos(p.off)
	la, ca := idx.pos(a)
	lb, cb := idx.pos(b)
	// The problem is shown at the opener's line: a column alone names a
	// place on that line only.
	where := fmt.Sprintf("at line %d, column %d or at line %d, column %d", la, ca, lb, cb)
	switch {
	case closer == "":
		where = "at more places than were checked"
	case la == lb && la == p.Line:
		where = fmt.Sprintf("at column %d or %d", ca, cb)
	case la == lb:
		where = fmt.Sprintf("at line %d, column %d or %d", la, ca, cb)
	}
	p.Message = fmt.Sprintf("%s could be closed by '%s' %s, and Python runs both; not repaired", what, closer, where)
	return &p
}

// balanced reports whether the brackets in text pair up.
func balanced(text string) bool {
	depth, stray := rawBracketDepth(text)
	return !stray && depth == 0
}

// rawBracketDepth is how many brackets text leaves open, counting every
// bracket character (quotes and comments are not skipped), and whether a
// closing one came with none open, where it stops counting.
func rawBracketDepth(text string) (depth int, stray bool) {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth < 0 {
				return depth, true
			}
		}
	}
	return depth, false
}

// isWord reports whether text has no spaces but trailing ones, or only
// spaces, as a name, a prompt or a separator does.
func isWord(text string) bool {
	return !strings.ContainsAny(strings.TrimRight(text, " \t"), " \t") || strings.Trim(text, " \t") == ""
}

// knownNames reports whether every name in the code src[from:to] is a
// keyword, a builtin, an attribute or keyword argument, or a name the
// block uses as code on another line (in a string, as "pyarrow" is, it is
// text).
func knownNames(src string, from, to int) bool {
	lineStart, lineEnd := lineStartOf(src, from), lineEndFrom(src, to)
	before, after := withoutStrings(src[:lineStart]), withoutStrings(src[lineEnd:])
	for i := from; i < to; {
		if src[i] == '#' {
			return true // a comment holds text, not names
		}
		e := wordEnd(src, i)
		if e == i || isDigit(src[i]) {
			i = max(e, i+1)
			continue
		}
		w := src[i:e]
		attr := i > 0 && src[i-1] == '.'
		kwarg := e < to && src[e] == '=' && (e+1 >= to || src[e+1] != '=')
		if !keywords[w] && !builtins[w] && !attr && !kwarg &&
			!usesName(before, w) && !usesName(after, w) {
			return false
		}
		i = e
	}
	return true
}

// withoutStrings is code with the text of its string literals left out.
func withoutStrings(code string) string {
	var b strings.Builder
	for k := 0; k < len(code); k++ {
		if isQuote(code[k]) {
			k = skipString(code, k, len(code)) - 1
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(code[k])
	}
	return b.String()
}

// usesName reports whether name occurs in text as a whole word.
func usesName(text, name string) bool { return nameUse(text, name, true) }

// nameUse reports whether name occurs in text as a whole word, counting
// an attribute of that name, as in x.name, only with attrs.
func nameUse(text, name string, attrs bool) bool {
	for i := 0; ; {
		k := strings.Index(text[i:], name)
		if k < 0 {
			return false
		}
		s, e := i+k, i+k+len(name)
		if (s == 0 || !isIdentChar(text[s-1]) && (attrs || text[s-1] != '.')) && (e == len(text) || !isIdentChar(text[e])) {
			return true
		}
		i = e
	}
}

// builtins are names every block knows.
var builtins = setOf("abs", "all", "any", "bool", "bytes", "dict", "enumerate", "filter", "float",
	"format", "getattr", "hasattr", "int", "isinstance", "len", "list", "map", "max", "min",
	"object", "open", "print", "range", "repr", "reversed", "self", "set", "setattr",
	"sorted", "str", "sum", "super", "tuple", "type", "zip")
