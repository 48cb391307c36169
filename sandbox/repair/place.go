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

// settleBracket picks, of the places a closer for the bracket of pl
// compiles at (at, where the repair put it, and runs), the one a writer
// most likely meant, or refuses the block naming two of them. A place
// that gives a builtin arguments it does not take, as max(len(a)) does,
// leaves a literal with a subscript or method it lacks, as True[1] or
// 'need'.append(t), or wraps a lone name in parentheses, is not meant. Of
// the others, the only one that makes the bracket one of two operands of
// the same form wins, as set(a) - set(b) does, else the one where the
// statement ends, as a writer who loses count of closers loses the last
// ones of a line; unless another place reads as deliberately: before a
// subscript of a call's result, as in read(4)[0]; before a
// comma, splitting the arguments between two calls; before a comparison,
// as in len(d == n; or inside a parenthesis that groups part of an
// expression, as in (x >> 3 + 1.
func (s *searcher) settleBracket(src string, pl *place, at int, runs []edit) *Problem {
	var fits []edit
	for _, e := range append([]edit{s.path[0].edits[0]}, runs...) {
		next := apply(src, []edit{e})
		if !misusedBuiltinNear(next, pl.opener, e.off) && !redundantParens(src, pl.opener, e.off) &&
			!misusesLiteral(next, lineStartOf(next, pl.opener), lineEndFrom(next, min(e.off+1, len(next)))) {
			fits = append(fits, e)
		}
	}
	if len(fits) == 0 {
		p := ambiguous(src, pl, "", at, at)
		_, col := newLineIndex(src).pos(at)
		p.Message = fmt.Sprintf("'%c' is never closed, and a closer at column %d, where Python accepts one, gives code that fails when run or that nobody writes (a builtin called with arguments it does not take, a method or subscript of a literal that has none, or arithmetic on True, False or None); not repaired",
			src[pl.opener], col)
		return p
	}
	pick, guard := -1, false
	switch {
	case len(fits) == 1:
		pick = 0
	case parallelPlace(src, pl.opener, fits) >= 0:
		pick, guard = parallelPlace(src, pl.opener, fits), true
	case layoutPlace(src, pl.opener, fits) >= 0:
		pick = layoutPlace(src, pl.opener, fits)
	case !grouping(src, pl.opener):
		pick, guard = statementEnd(src, pl.opener, fits), true
	}
	for i, e := range fits {
		if guard && pick >= 0 && i != pick && deliberate(src, pl.opener, e.off) {
			pick = -1
		}
	}
	if pick < 0 {
		return ambiguous(src, pl, runs[0].text, fits[0].off, fits[1].off)
	}
	if e := fits[pick]; e.off != at {
		s.path[0] = change{cost: 2, edits: []edit{e}, notes: []note{closerNote(e.off, pl.opener, src)}, place: pl}
		s.result = apply(src, s.path[0].edits)
	}
	return nil
}

// statementEnd returns the index of the only place of fits that ends the
// bracket's statement (see endsStatement), or -1.
func statementEnd(src string, opener int, fits []edit) int {
	found := -1
	for i, e := range fits {
		if !endsStatement(src, opener, e.off) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// layoutPlace returns the index of the only place of fits that ends an
// item laid out on its own line, as a row of a matrix written one per
// line: a closer for a bracket opened on its line, right before the comma
// ending that line, when the next line starts at the same indentation, as
// the next item does; or -1.
func layoutPlace(src string, opener int, fits []edit) int {
	found := -1
	for i, e := range fits {
		o := closedBy(src, opener, e.off)
		end := lineEndFrom(src, e.off)
		rest := strings.TrimSpace(src[e.off:end])
		if lineStartOf(src, o) != lineStartOf(src, e.off) || !strings.HasPrefix(rest, ",") ||
			strings.TrimSpace(strings.SplitN(rest[1:], "#", 2)[0]) != "" || end >= len(src) ||
			nextLineIndent(src, end+1) != indentOf(src, e.off) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// parallelPlace returns the index of the only place of fits that makes
// the bracket it closes one of two operands of the same form on either
// side of a binary operator, as set(a) - set(b) or dtype[x] | dtype[y]
// (a writer applies the same call or subscript to both operands), or -1.
func parallelPlace(src string, opener int, fits []edit) int {
	found := -1
	for i, e := range fits {
		o := closedBy(src, opener, e.off)
		head := headOf(src, o)
		// An operand holding its twin, as dtype[a | dtype[b]], is not of
		// the twin's form.
		if head == "" || strings.Contains(src[o+1:e.off], head) ||
			!twinAfter(src, e.off, head) && !twinBefore(src, o-(len(head)-1), e.off, head) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// headOf is what the bracket at o starts an operand with: the name it
// calls or subscripts with the bracket, as np.arcsinh( or dtype[, or ""
// when no name comes right before it.
func headOf(src string, o int) string {
	s := o
	for s > 0 && (isIdentChar(src[s-1]) || src[s-1] == '.') {
		s--
	}
	if s == o || !isIdentStart(src[s]) || keywords[src[s:o]] {
		return ""
	}
	return src[s : o+1]
}

// twinAfter reports whether a binary operator follows p on its line and
// then an operand starting with head.
func twinAfter(src string, p int, head string) bool {
	rest := src[p:lineEndFrom(src, p)]
	if !binaryAfter(rest) {
		return false
	}
	t := strings.TrimLeft(rest, " ")
	t = strings.TrimLeft(t[1:], " ")
	return strings.HasPrefix(t, head)
}

// twinBefore reports whether the operand starting at s, with head and
// closed at p, follows a binary operator that follows a closed operand
// starting with head, and the operand ends there or the same operator
// follows it, as in x[a] | x[b] | y: with another operator after it, as
// in f(x)/f(z) - 1, the operands are of no one form.
func twinBefore(src string, s, p int, head string) bool {
	start := lineStartOf(src, s)
	t := strings.TrimRight(src[start:s], " ")
	n := len(t)
	for n > 0 && len(t)-n < 2 && strings.IndexByte("+-*/%@&|^", t[n-1]) >= 0 {
		n--
	}
	op := t[n:]
	after := strings.TrimLeft(src[p:lineEndFrom(src, p)], " ")
	if op == "" || after != "" && strings.IndexByte(",)]}:#", after[0]) < 0 &&
		!(strings.HasPrefix(after, op) && !strings.ContainsRune("+-*/%@&|^", rune(after[min(len(op), len(after)-1)]))) {
		return false
	}
	t = strings.TrimRight(t[:n], " ")
	if t == "" || t[len(t)-1] != closerOf(head[len(head)-1]) {
		return false
	}
	o := matchingOpener(t, len(t)-1)
	if o < len(head)-1 || t[o-(len(head)-1):o+1] != head {
		return false
	}
	b := o - len(head) // the byte before the twin's head
	return b < 0 || !isIdentChar(t[b]) && t[b] != '.'
}

// matchingOpener returns the offset in text of the bracket the closer at
// c closes, or -1 (brackets in strings are counted too: a miscount only
// fails to find a twin).
func matchingOpener(text string, c int) int {
	depth := 0
	for k := c; k >= 0; k-- {
		switch text[k] {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// maxCallsChecked bounds the calls misusedBuiltinNear checks, each a scan
// of its arguments, so that a line of nested calls stays linear.
const maxCallsChecked = 16

// misusedBuiltinNear reports whether a call on the lines from opener's to
// the one holding off in src misuses a builtin.
func misusedBuiltinNear(src string, opener, off int) bool {
	end := lineEndFrom(src, min(off+1, len(src)))
	checked := 0
	for k := lineStartOf(src, opener); k < end && checked < maxCallsChecked; k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, end) - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' && k > 0 && isIdentChar(src[k-1]):
			name := calleeName(src, k)
			_, builtin := signatures[name]
			_, method := methods[name]
			if builtin || method {
				checked++
				if misusesBuiltin(src, k) {
					return true
				}
			}
		}
	}
	return false
}

// redundantParens reports whether a closer at p, in the bracket at opener
// or one opened inside it, would close a parenthesis around a lone name,
// attribute or number, as (dx3) in f((dx3), dy3): nobody writes those.
func redundantParens(src string, opener, p int) bool {
	o := closedBy(src, opener, p)
	inner := strings.TrimSpace(src[o+1 : p])
	if src[o] != '(' || inner == "" || isCall(src, o) {
		return false
	}
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; !isIdentChar(c) && c != '.' {
			return false
		}
	}
	return true
}

// closedBy returns the bracket a closer at p closes: the bracket at
// opener or the innermost one opened inside it and still open at p.
func closedBy(src string, opener, p int) int {
	stack := []int{opener}
	for k := opener + 1; k < p; k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, p) - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, k)
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return stack[len(stack)-1]
}

// isCall reports whether the bracket at o opens a call's arguments: a
// parenthesis right after a name that is no keyword, or after a closer.
func isCall(src string, o int) bool {
	if src[o] != '(' || o == 0 {
		return false
	}
	if c := src[o-1]; c == ')' || c == ']' {
		return true
	}
	name := calleeName(src, o)
	return name != "" && !keywords[name]
}

// grouping reports whether the bracket at o is a parenthesis grouping
// part of an expression on one line, not a call's or a tuple's.
func grouping(src string, o int) bool {
	if src[o] != '(' || isCall(src, o) {
		return false
	}
	// A comma directly inside makes it a tuple.
	end, depth := lineEndFrom(src, o), 0
	for k := o + 1; k < end; k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, end) - 1
		case c == '#':
			return true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			return false
		}
	}
	return true
}

// comparisons start the operators that compare or test values, which
// code more often applies to a call's result than passes as an argument,
// as in len(d) == n.
var comparisons = []string{"==", "!=", "<", ">", "is ", "in ", "not ", "and ", "or ", "if "}

// deliberate reports whether a closer at p reads as placed on purpose:
// before a subscript of a call's or subscript's result (an attribute
// of one, as in f(rng(2).normal(5), reads as often as not as part of the
// argument), before a comma ending a call's arguments, or before a
// comparison.
func deliberate(src string, opener, p int) bool {
	if p >= len(src) {
		return false
	}
	switch src[p] {
	case ',':
		return isCall(src, closedBy(src, opener, p))
	case '[':
		return p > 0 && strings.IndexByte(")]", src[p-1]) >= 0
	}
	// A comparison inside a subscript is a mask when it tests the object
	// subscripted, as in x[x > 0], and one directly inside an assertion's
	// call is its point, as in assert_(x == 1).
	o := closedBy(src, opener, p)
	switch {
	case src[o] == '[':
		if name := calleeName(src, o); name != "" && usesName(src[o+1:p], name) {
			return false
		}
	case !isCall(src, o) || strings.HasPrefix(calleeName(src, o), "assert"):
		return false
	}
	rest := strings.TrimLeft(src[p:lineEndFrom(src, p)], " ")
	for _, op := range comparisons {
		if strings.HasPrefix(rest, op) {
			return true
		}
	}
	return false
}

// calleeName is the name called by the parenthesis at o, as assert_equal
// in np.testing.assert_equal(, or "".
func calleeName(src string, o int) string {
	s := o
	for s > 0 && isIdentChar(src[s-1]) {
		s--
	}
	return src[s:o]
}

// endsStatement reports whether a closer at p for the bracket at opener
// ends the bracket's statement: the code from the bracket to p is
// balanced, and after p come only spaces, a comment and a final colon
// before the end of the block or a line that is no deeper than the
// bracket's own, which starts the next statement.
func endsStatement(src string, opener, p int) bool {
	if !balancedCode(src[opener+1 : p]) {
		return false
	}
	e := lineEndFrom(src, p)
	rest := strings.TrimSpace(src[p:e])
	if k := strings.IndexByte(rest, '#'); k >= 0 {
		rest = strings.TrimSpace(rest[:k])
	}
	if rest != "" && rest != ":" {
		return false
	}
	if e >= len(src) || strings.TrimSpace(src[e:]) == "" {
		return true
	}
	return nextLineIndent(src, e+1) <= indentOf(src, opener)
}

// balancedCode reports whether the brackets of code pair up, skipping
// strings and comments.
func balancedCode(code string) bool {
	depth := 0
	for k := 0; k < len(code); k++ {
		switch c := code[k]; {
		case isQuote(c):
			k = skipString(code, k, len(code)) - 1
		case c == '#':
			k = lineEndFrom(code, k) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// formatOrMethod reports whether the string whose text is src[body:p],
// closed at p, is a %-format followed by the % operator, or a word (or
// nothing) followed by a method call.
func formatOrMethod(src string, body, p int) bool {
	text, rest := src[body:p], src[p:lineEndFrom(src, p)]
	if strings.HasPrefix(rest, " % ") {
		for k := 0; k+1 < len(text); k++ {
			if text[k] == '%' && strings.IndexByte("sdrifxXeEgGc(*-0123456789.", text[k+1]) >= 0 {
				return true
			}
		}
		return false
	}
	if len(rest) > 1 && rest[0] == '.' && isWord(text) {
		e := wordEnd(rest, 1)
		return e > 1 && e < len(rest) && rest[e] == '('
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
func usesName(text, name string) bool {
	for i := 0; ; {
		k := strings.Index(text[i:], name)
		if k < 0 {
			return false
		}
		s, e := i+k, i+k+len(name)
		if (s == 0 || !isIdentChar(text[s-1])) && (e == len(text) || !isIdentChar(text[e])) {
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

// stringPlaces lists the other ways to end the string of pl: its closing
// quote before each spot in its text where code could start, or at the
// line end after any trailing spaces (which only a string holds); its
// lone quote of the other kind made its own; and, for the strings before
// it on its line, whose quotes a dropped one shifts, a closing quote
// inside their text or their own lone quote of the other kind made right.
func stringPlaces(src string, pl *place) []edit {
	lit := pl.lit
	out := closePlaces(src, lit.body, textEnd(src, lit.body, textStop(src, lit.body, pl.end)), lit.q, pl.inBrkt)
	if k := strings.IndexByte(src[lit.body:pl.end], otherQuote(lit.q)); k >= 0 && strings.Count(src[lit.body:pl.end], string(otherQuote(lit.q))) == 1 {
		out = append(out, replace(lit.body+k, lit.body+k+1, string(lit.q)))
	} else if k := unpairedQuote(src, lit.body, pl.end, otherQuote(lit.q), pl.inBrkt); k >= 0 {
		out = append(out, replace(k, k+1, string(lit.q)))
	}
	for i := lineStartOf(src, lit.start); i < lit.start; i++ {
		switch c := src[i]; {
		case c == '#':
			return out
		case isQuote(c):
			close := skipString(src, i, lit.start) - 1
			if hasTriple(src, i, c) || close <= i || src[close] != c {
				return out
			}
			out = append(out, closePlaces(src, i+1, close, c, pl.inBrkt)...)
			if text := src[i+1 : close]; strings.Count(text, string(otherQuote(c))) == 1 {
				k := i + 1 + strings.IndexByte(text, otherQuote(c))
				out = append(out, replace(k, k+1, string(c)))
			}
			i = close
		}
	}
	return out
}

// unpairedQuote returns the last quote q in the text src[body:end] that
// code could follow, as ' does in "can't stop') or "<a href="x">" % v,
// when it is left over from pairing the others, counting no apostrophe
// between two letters: the closing quote typed as the other kind. Else -1.
func unpairedQuote(src string, body, end int, q byte, inBrkt bool) int {
	last, n := -1, 0
	for k := body; k < end; k++ {
		switch {
		case src[k] == '\\':
			k++
		case src[k] == q && !(k > body && isIdentStart(src[k-1]) && k+1 < end && isIdentStart(src[k+1])):
			last = k
			n++
		}
	}
	if n%2 == 0 || last+1 < end && !codeStartsAt(src, last+1, end, inBrkt) {
		return -1
	}
	return last
}

// textEnd is where the text of a string that runs to end stops: before
// the line's '\r', keeping trailing spaces, when end is the line end, else
// before the spaces at end.
func textEnd(src string, body, end int) int {
	if end == len(src) || src[end] == '\n' {
		if end > body && src[end-1] == '\r' {
			end--
		}
		return end
	}
	return trimRightSpace(src, body, end)
}

// closePlaces lists a closing quote q at end and before each spot in the
// text src[body:end] where code could start.
func closePlaces(src string, body, end int, q byte, inBrkt bool) []edit {
	out := []edit{insert(end, string(q))}
	for p := body; p < end; p++ {
		if src[p] == '\\' {
			p++
			continue
		}
		// An empty string only before a method, a comma or a closer, as
		// in '.join(parts) or f(x, ').
		if codeStartsAt(src, p, end, inBrkt) && (p > body || strings.IndexByte(".,)]}", src[p]) >= 0) {
			out = append(out, insert(p, string(q)))
		}
	}
	return out
}

// codeStartsAt reports whether src[i:end] could be the code after a
// string: a separator, a closer, an operator, an attribute or subscript,
// or a keyword after a space.
func codeStartsAt(src string, i, end int, inBrkt bool) bool {
	switch c := src[i]; c {
	case ',':
		// In brackets, or before the message of an assert.
		return inBrkt || inAssert(src, i)
	case ')', ']', '}', ':', '%', '*', '+', '[', '=', '!', '<', '>':
		return true
	case '.':
		// A method call, as in "-".join(parts); "example".com is text.
		e := wordEnd(src, i+1)
		return e > i+1 && e < end && src[e] == '('

	case ' ':
		rest := strings.TrimLeft(src[i:end], " ")
		if rest == "" || strings.HasPrefix(rest, ".") {
			return false
		}
		if rest[0] == '#' {
			return src[i-1] != ' ' // a comment, from the first space before it
		}
		if src[i+1] == ' ' {
			return false // code after a string leaves one space before an operator
		}
		w := rest[:wordEnd(rest, 0)]
		return w == "in" || w == "not" || w == "and" || w == "or" || w == "if" || w == "else" || w == "is" || w == "for" ||
			w == "" && strings.ContainsRune("%*+=!<>", rune(rest[0]))
	}
	return false
}

// bracketPlaces lists the other places a closer could go to close the
// bracket pl.opener, or a bracket opened inside it (whose own closer then
// closes the outer one), nearest to the chosen place first: after an
// operand where an attribute, a subscript, an operator, a keyword or
// (inside brackets, between items that are not all literals) a comma
// follows; at a line end where the next line is indented no deeper than
// the bracket's; right after it for a call left open at its line end.
// Nothing before a keyword argument: it belongs to its call.
func bracketPlaces(src string, pl *place) []edit {
	o, end := pl.opener, pl.end
	type level struct {
		opener             int
		grouping, literals bool
		compound           bool
		commas             []edit
	}
	open := func(at int) level {
		call := isCall(src, at)
		// A call's arguments may be split between two calls even when
		// they are literals, as in np.array(1), 2.
		return level{opener: at, grouping: src[at] == '(' && !call, literals: !call}
	}
	var out []edit
	assertion := inAssert(src, o)
	if c := src[o]; c == '(' && !open(o).grouping && emptyCallAt(src, o) {
		out = append(out, insert(o+1, ")"))
	}
	stack := []level{open(o)}
	nested := bracketDepth(src, o) > 0
	// afterCloser: the operand just read ends with a bracket, as a call
	// or subscript does; only its result, as in read(4)[0] or
	// fstat(f).size, is a likely place for a closer before a trailer.
	afterOperand, afterCloser := false, false
	indent := indentOf(src, o)
	add := func(at int) {
		top := stack[len(stack)-1]
		out = append(out, insert(at, string(closerOf(src[top.opener]))))
	}
	for i := o + 1; i < end && len(stack) > 0; i++ {
		c := src[i]
		top := &stack[len(stack)-1]
		closed, afterNumber := afterCloser, i > o+1 && isDigit(src[i-1])
		afterCloser = false
		switch {
		case isQuote(c):
			i = skipString(src, i, end) - 1
			afterOperand = true
		case c == '#':
			i = lineEndFrom(src, i) - 1
		case c == '(' || c == '[' || c == '{':
			if c == '[' && (closed || afterNumber) {
				add(i) // before a subscript of the content
			}
			top.literals = false
			stack = append(stack, open(i))
			afterOperand = false
		case c == ')' || c == ']' || c == '}':
			if !top.literals {
				out = append(out, top.commas...)
			}
			stack = stack[:len(stack)-1]
			afterOperand, afterCloser = true, true
		case c == ' ' || c == '\t' || c == '\r':
			afterCloser = closed
		case c == '\n':
			if afterOperand && len(stack) == 1 && nextLineIndent(src, i+1) <= indent {
				add(trimRightSpace(src, o, i))
			}
		case isDigit(c):
			i = numberEnd(src, i) - 1
			afterOperand = true
		case isIdentChar(c):
			e := max(wordEnd(src, i), i+1) // a byte of no letter still moves on
			w := src[i:e]
			if afterOperand && keywords[w] && !operandKeywords[w] {
				if !top.grouping || top.compound {
					add(trimRightSpace(src, o, i))
				}
				top.compound = true
			}
			if !(e < end && isQuote(src[e])) { // not a string prefix
				top.literals = false
			}
			afterOperand = !keywords[w] || operandKeywords[w]
			i = e - 1
		case c == ',':
			if afterOperand && (nested || len(stack) > 1) {
				top.commas = append(top.commas, insert(i, string(closerOf(src[top.opener]))))
			}
			if len(stack) == 1 && !nested && !assertion {
				// A place before would leave this comma outside any
				// bracket, making a tuple of the statement (an assert's
				// comma starts its message instead).
				out = out[:0]
			}
			top.compound = true
			afterOperand = false
		case c == '.' && (closed || afterOperand && strings.HasPrefix(src[i+1:end], "__")):
			// A call's result, or a dunder, as in type(self).__name__.
			add(i)
			afterOperand = false
		case c == '=' && (i+1 >= end || src[i+1] != '=') && !strings.ContainsRune("=!<>:+-*/%&|^@", rune(src[i-1])):
			// A keyword argument: nothing since its bracket opened.
			out = slices.DeleteFunc(out, func(e edit) bool { return e.off > top.opener })
			top.commas = nil
			afterOperand = false
		case strings.IndexByte("+-*/%<>!&|^@=", c) >= 0:
			if afterOperand && (!top.grouping || top.compound) {
				add(trimRightSpace(src, o, i))
			}
			top.compound = true
			afterOperand = false
		default:
			afterOperand = false
		}
	}
	if len(stack) > 0 && !stack[0].literals {
		out = append(out, stack[0].commas...)
	}
	slices.SortFunc(out, func(a, b edit) int { return b.off - a.off })
	return out
}

// inAssert reports whether the line holding i is an assert statement,
// whose comma starts its message rather than a tuple.
func inAssert(src string, i int) bool {
	return strings.HasPrefix(strings.TrimLeft(src[lineStartOf(src, i):i], " \t"), "assert ")
}

// emptyCallAt reports whether the call opened at o reads as one without
// arguments: nothing follows on its line, or an operator no argument
// starts with, as in line.rstrip( + "\n" or time( + timeout.
func emptyCallAt(src string, o int) bool {
	rest := strings.TrimSpace(src[o+1 : lineEndFrom(src, o)])
	if rest == "" || binaryAfter(rest) {
		return true
	}
	t := strings.TrimLeft(rest[1:], " ")
	return rest[0] == '+' && t != "" && isQuote(t[0]) // a sign on a string
}

// skipString returns the offset after the string literal whose quote is at
// i, or end when it does not close before end.
func skipString(src string, i, end int) int {
	q := src[i]
	n := 1
	if hasTriple(src, i, q) {
		n = 3
	}
	for k := i + n; k < end; k++ {
		switch {
		case src[k] == '\\':
			k++
		case src[k] == q && (n == 1 || hasTriple(src, k, q)):
			return k + n
		case src[k] == '\n' && n == 1:
			return k
		}
	}
	return end
}

// bracketDepth returns how many brackets are open at i, reading src from
// its start.
func bracketDepth(src string, i int) int {
	depth := 0
	for k := 0; k < i; k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, i) - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return depth
}

// nextLineIndent returns the indentation of the next non-blank line from i,
// or 0 at the end of src.
func nextLineIndent(src string, i int) int {
	for i < len(src) {
		end := lineEndFrom(src, i)
		if strings.TrimSpace(src[i:end]) != "" {
			return indentOf(src, i+len(src[i:end])-len(strings.TrimLeft(src[i:end], " \t")))
		}
		i = end + 1
	}
	return 0
}
