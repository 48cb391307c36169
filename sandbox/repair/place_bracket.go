package repair

import (
	"fmt"
	"slices"
	"strings"
)

// How a closer for a dropped bracket is placed when it compiles at more
// than one place: settleBracket weighs the places by what writers do.

// settleBracket picks, of the places a closer for the bracket of pl
// compiles at (at, where the repair put it, and runs), the one a writer
// most likely meant, or refuses the block naming two of them. A place
// that gives a builtin arguments it does not take, as max(len(a)) does,
// leaves a literal with a subscript or method it lacks, as True[1] or
// 'need'.append(t), code that fails whenever it runs (see failsWhenRun
// and wrongCount), or wraps a lone name in parentheses, is not meant.
// The only place on the bracket's line that gives it the form of another
// line of the block wins, wherever it is (see siblingCloser). Of the
// others, the only one that makes the bracket one of two operands of
// the same form wins, as set(a) - set(b) does, else the one where the
// statement ends, as a writer who loses count of closers loses the last
// ones of a line; unless another place reads as deliberately: before a
// subscript of a call's result, as in read(4)[0]; before a
// comma, splitting the arguments between two calls; before a comparison,
// as in len(d == n; or inside a parenthesis that groups part of an
// expression, as in (x >> 3 + 1.
func (s *searcher) settleBracket(src string, pl *place, at int, runs []edit) *Problem {
	assign := firstAssignment(src, pl.opener)
	sane := func(e edit) bool {
		next := apply(src, []edit{e})
		from, to := lineStartOf(next, pl.opener), lineEndFrom(next, min(e.off+1, len(next)))
		closes := closedBy(src, pl.opener, e.off)
		return !misusedBuiltinNear(next, pl.opener, e.off) && !redundantParens(src, pl.opener, e.off) &&
			!misusesLiteral(next, from, to) && !failsWhenRun(next, from, to) && !wrongCount(src, pl.opener, next) &&
			!againstLayout(next, pl.opener, e.off+1) && !starredIndex(src, closes, e.off) &&
			(assign < 0 || e.off < assign) && !wrapsLastArgument(src, closes, e.off)
	}
	// A place no other rule looks at, as before an attribute of a name in
	// np.arcsinh(z).real, wins when it gives the line the form of
	// another line of the block.
	if e, ok := s.siblingCloser(src, pl.opener); ok && sane(e) {
		s.moveCloser(src, pl, at, e)
		return nil
	}
	var fits []edit
	for _, e := range append([]edit{s.path[0].edits[0]}, runs...) {
		if sane(e) {
			fits = append(fits, e)
		}
	}
	if len(fits) == 0 {
		p := ambiguous(src, pl, "", at, at)
		_, col := newLineIndex(src).pos(at)
		p.Message = fmt.Sprintf("'%c' is never closed, and a closer at column %d, where Python accepts one, gives code that fails when run or that nobody writes (lines laid out against their brackets, a builtin or an assertion called with arguments it does not take, a method or subscript of a literal or type that has none, arithmetic on True, False, None or np.newaxis, the type of a dunder, a generator of its own loop variable or that variable outside it, a string, list or module called, a number added to a string, rows of one matrix nested to different depths, an unpacking in a subscript, an assignment taken into a call, or more values than names); not repaired",
			src[pl.opener], col)
		return p
	}
	pick, guard := 0, false
	if len(fits) > 1 {
		pick, guard = weighPlaces(src, pl.opener, fits)
	}
	for i, e := range fits {
		if guard && pick >= 0 && i != pick && deliberate(src, pl.opener, e.off) {
			pick = -1
		}
	}
	if pick < 0 {
		return ambiguous(src, pl, runs[0].text, fits[0].off, fits[1].off)
	}
	s.moveCloser(src, pl, at, fits[pick])
	return nil
}

// weighPlaces returns the index of the place of fits a writer most
// likely meant, by the rules settleBracket names, in its order, or -1;
// guard says whether a place elsewhere that reads as deliberate still
// makes the block ambiguous.
func weighPlaces(src string, opener int, fits []edit) (pick int, guard bool) {
	if p := parallelPlace(src, opener, fits); p >= 0 {
		return p, true
	}
	if p := unpackedPlace(src, opener, fits); p >= 0 {
		return p, false
	}
	if p := layoutPlace(src, opener, fits); p >= 0 {
		return p, false
	}
	if grouping(src, opener) {
		return -1, false
	}
	return statementEnd(src, opener, fits), true
}

// moveCloser makes the repair the closer e for the bracket of pl, when
// it is not at, where the search put it.
func (s *searcher) moveCloser(src string, pl *place, at int, e edit) {
	if e.off != at {
		s.path[0] = change{cost: 2, edits: []edit{e}, notes: []note{closerNote(e.off, pl.opener, src)}, place: pl}
		s.result = apply(src, s.path[0].edits)
	}
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

// layoutPlace returns the index of the only place of fits the layout of
// the lines says a closer ends (see laidOut), or -1.
func layoutPlace(src string, opener int, fits []edit) int {
	found := -1
	for i, e := range fits {
		if !laidOut(src, closedBy(src, opener, e.off), e.off) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// laidOut reports whether a closer at p for the bracket at o ends what
// the lines lay out: an item on its own line, as a row of a matrix
// written one per line (the bracket opened on p's line, p right before
// the comma ending it, the next line at the same indentation, as the next
// item is); a call on its own line in a chain of calls, one per line (the
// bracket opened on p's line, p at its end, the next line a .method left
// of the bracket's arguments, which no argument starts with); or a
// bracket whose closer stood alone on the
// next line, which holds nothing but the indentation of the bracket's
// line (editors strip the spaces of other blank lines).
func laidOut(src string, o, p int) bool {
	end := lineEndFrom(src, p)
	rest := strings.TrimSpace(strings.SplitN(src[p:end], "#", 2)[0])
	if end >= len(src) {
		return false
	}
	next := src[end+1 : lineEndFrom(src, end+1)]
	own := lineStartOf(src, o) == lineStartOf(src, p)
	switch {
	case own && rest == ",":
		return nextLineIndent(src, end+1) == indentOf(src, p)
	case own && rest == "":
		t := strings.TrimLeft(next, " ")
		return len(t) > 1 && t[0] == '.' && isIdentStart(t[1]) && len(next)-len(t) <= o-lineStartOf(src, o)
	case rest == "":
		ind := indentOf(src, o)
		return ind > 0 && strings.TrimRight(next, "\r") == strings.Repeat(" ", ind)
	}
	return false
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
			!twinAfter(src, e.off, head) && !twinBefore(src, o-(len(head)-1), e.off, head) &&
				!comparedTwin(src, o-(len(head)-1), e.off, head) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// unpackedPlace returns the index of the only place of fits that gives
// an assignment to several names as many values, as in first, last =
// group[0], group[-1], when each other place gives it one subscript or
// display, as group[0, group[-1]] (a call may return the tuple, a
// subscript seldom does), or -1.
func unpackedPlace(src string, opener int, fits []edit) int {
	targets, value := unpacking(src, opener)
	if targets < 2 {
		return -1
	}
	found := -1
	for i, e := range fits {
		next := apply(src, []edit{e})
		items, _ := splitItems(next, value, true)
		switch {
		case len(items) == targets:
			if found >= 0 {
				return -1
			}
			found = i
		case len(items) != 1 || isCallExpr(items[0]):
			return -1
		}
	}
	return found
}

// unpacking returns how many names the statement of the bracket at
// opener assigns, when it starts its line as name, name, ... = and the
// bracket is in the value, and where the value starts; else 0.
func unpacking(src string, opener int) (targets, value int) {
	start := lineStartOf(src, opener)
	eq := strings.Index(src[start:opener], " = ")
	if eq < 0 {
		return 0, 0
	}
	n := plainNames(src[start : start+eq])
	if n == 0 {
		return 0, 0
	}
	return n, start + eq + 3
}

// plainNames returns how many names text, the targets of an assignment,
// lists between its commas, or 0 when one is not a plain name.
func plainNames(text string) int {
	names := strings.Split(text, ",")
	for _, t := range names {
		if t = strings.TrimSpace(t); t == "" || wordEnd(t, 0) != len(t) {
			return 0
		}
	}
	return len(names)
}

// isCallExpr reports whether the expression a ends with a call's
// arguments.
func isCallExpr(a string) bool {
	if !strings.HasSuffix(a, ")") {
		return false
	}
	o := matchingOpener(a, len(a)-1)
	return o > 0 && (isIdentChar(a[o-1]) || a[o-1] == ')' || a[o-1] == ']')
}

// Lines of at least minSiblingShape tokens, of at most maxSiblingLine
// bytes, are matched against their siblings: short lines, as x = f(a),
// share a form by chance, and each place on the line is tried.
const (
	minSiblingShape = 12
	maxSiblingLine  = 200
)

// siblingCloser returns the closer that, put on the bracket's line, gives
// that line the form of another line of the block, names, numbers and
// strings aside (see lineShape), when exactly one place does and Python
// compiles the block with it: a writer repeats a line's form, as in
// np.arcsinh(z).real - 1 among np.arctanh(z).real - 1 and
// np.arcsin(z).imag - 1, where np.arcsinh(z.real - 1) is the closer put
// back at the line's end.
func (s *searcher) siblingCloser(src string, opener int) (edit, bool) {
	from, to := lineStartOf(src, opener), lineEndFrom(src, opener)
	if to-from > maxSiblingLine || s.compiles == 0 {
		return edit{}, false
	}
	shapes := siblingShapes(src, from, to)
	if len(shapes) == 0 {
		return edit{}, false
	}
	var found []edit
	for q := opener + 1; q <= to; q++ {
		if src[q-1] == ' ' || q < to && isIdentChar(src[q]) && isIdentChar(src[q-1]) {
			continue
		}
		e := insert(q, string(closerOf(src[closedBy(src, opener, q)])))
		line := src[from:q] + e.text + src[q:to]
		if sh := lineShape(line); len(sh) >= minSiblingShape && shapes[sh] {
			if found = append(found, e); len(found) > 1 {
				return edit{}, false
			}
		}
	}
	if len(found) != 1 {
		return edit{}, false
	}
	s.compiles--
	return found[0], s.compile(apply(src, found)) == nil
}

// siblingShapes are the forms of the block's lines other than the one
// from from to to.
func siblingShapes(src string, from, to int) map[string]bool {
	shapes := map[string]bool{}
	for i := 0; i < len(src); i = lineEndFrom(src, i) + 1 {
		if i != from {
			shapes[lineShape(src[i:lineEndFrom(src, i)])] = true
		}
	}
	return shapes
}

// lineShape is the form of a line of code: its tokens with every name
// but a keyword as n, every number as 0, every string as s, without
// spaces or a comment.
func lineShape(line string) string {
	var b strings.Builder
	for k := 0; k < len(line); k++ {
		switch c := line[k]; {
		case c == '#':
			return b.String()
		case c == ' ' || c == '\t' || c == '\r':
		case isQuote(c):
			b.WriteByte('s')
			k = skipString(line, k, len(line)) - 1
		case isIdentStart(c):
			e := wordEnd(line, k)
			if keywords[line[k:e]] {
				b.WriteString(line[k:e])
			} else {
				b.WriteByte('n')
			}
			k = max(e, k+1) - 1
		case isDigit(c):
			b.WriteByte('0')
			k = max(numberEnd(line, k), k+1) - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
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

// comparedTwin reports whether the operand starting at s, with head and
// closed at p, is compared (== or !=) with an operand of the same head
// and the same attributes after its bracket, which follow p too and end
// the operand, as in f(x).shape == f(y).shape: a writer compares the same
// attribute of the same call on both sides.
func comparedTwin(src string, s, p int, head string) bool {
	t := strings.TrimRight(src[lineStartOf(src, s):s], " ")
	if !strings.HasSuffix(t, "==") && !strings.HasSuffix(t, "!=") {
		return false
	}
	t = strings.TrimRight(t[:len(t)-2], " ")
	n := len(t)
	for n > 0 && (isIdentChar(t[n-1]) || t[n-1] == '.') {
		n--
	}
	trailer := t[n:]
	after := src[p:lineEndFrom(src, p)]
	if !strings.HasPrefix(trailer, ".") || !strings.HasPrefix(after, trailer) {
		return false
	}
	if rest := strings.TrimLeft(after[len(trailer):], " "); rest != "" && strings.IndexByte(",)]}:#", rest[0]) < 0 {
		return false
	}
	t = t[:n]
	if t == "" || t[len(t)-1] != closerOf(head[len(head)-1]) {
		return false
	}
	o := matchingOpener(t, len(t)-1)
	if o < len(head)-1 || t[o-(len(head)-1):o+1] != head {
		return false
	}
	b := o - len(head)
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
	var comparing []bool // for each bracket open on the line: a comparison's call
	inComparison := func() bool { return slices.Contains(comparing, true) }
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
			_, array := arrayFuncs[name]
			array = array || unaryUfuncs[name] || moduleFuncNames[name]
			if builtin || method || array || assertions[name] {
				checked++
				if misusesBuiltin(src, k) {
					return true
				}
			} else if checked++; numpyChain(src, k) && frameKeywordIn(src, k) || inComparison() && !tolerant(name) && keywordOf(src, k, toleranceKeywords) {
				return true
			}
			comparing = append(comparing, assertions[name] || tolerant(name))
		case c == '(' || c == '[' || c == '{':
			comparing = append(comparing, false)
		case c == ')' || c == ']' || c == '}':
			if len(comparing) > 0 {
				comparing = comparing[:len(comparing)-1]
			}
		}
	}
	return false
}

// toleranceKeywords are the keywords of the comparisons of numpy and
// pandas (see assertions), which a call inside one given them takes from
// it, as rng.ppf(q, atol=1e-10) inside assert_allclose(a, rng.ppf(q,
// atol=1e-10)) does.
var toleranceKeywords = []string{"atol", "rtol", "err_msg", "equal_nan", "check_dtype", "check_names", "check_exact"}

// tolerant reports whether the function name takes toleranceKeywords:
// a comparison, or numpy's isclose and allclose.
func tolerant(name string) bool {
	return assertions[name] || name == "isclose" || name == "allclose"
}

// keywordOf reports whether the call whose bracket is at o is given one
// of the keywords kws.
func keywordOf(src string, o int, kws []string) bool {
	args, _ := callArgs(src, o)
	return slices.ContainsFunc(kws, func(kw string) bool { return keywordIn(args, kw) })
}

// frameKeywordIn reports whether the call whose bracket is at o takes a
// keyword no numpy function of its name takes (see foreignToNumpy).
func frameKeywordIn(src string, o int) bool {
	args, _ := callArgs(src, o)
	name := calleeName(src, o)
	for _, a := range args {
		if k := wordEnd(a, 0); k > 0 && k+1 < len(a) && a[k] == '=' && a[k+1] != '=' && foreignToNumpy(name, a[:k]) {
			return true
		}
	}
	return false
}

// starredIndex reports whether a closer at p for the bracket at o makes
// it a subscript holding an unpacked item, as values[i, labels, *args]:
// Python accepts one from 3.11 on for the variadic generics of typing, as
// tuple[int, *Ts], which name a type; a subscript of a value holding one
// is a closer put back after the items of the call around it, as in
// f(values[i, labels, *args) for f(values[i], labels, *args).
func starredIndex(src string, o, p int) bool {
	if src[o] != '[' || o == 0 || !isIdentChar(src[o-1]) && src[o-1] != ')' && src[o-1] != ']' {
		return false
	}
	if name := calleeName(src, o); name == "tuple" || name == "" || name[0] >= 'A' && name[0] <= 'Z' {
		return false
	}
	args, _ := argsUpTo(src[:p]+"]", o)
	for _, a := range args {
		if strings.HasPrefix(a, "*") && !strings.HasPrefix(a, "**") {
			return true
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
	return src[o] == '(' && !isCall(src, o) && lone(inner)
}

// wrapsLastArgument reports whether a closer at p for the call opened at
// o would end its arguments with one wrapped whole in a parenthesis just
// closed, as emit((group-1*2+1)) does for emit((group-1)*2+1): the
// closer meant for the group was lost inside it. A lone name or number
// wrapped, as in np.zeros((10)), is how some write a shape; a tuple, a
// generator, a yield, a lambda or an assignment expression needs its
// parenthesis.
func wrapsLastArgument(src string, o, p int) bool {
	j := trimRightSpace(src, o+1, p)
	if src[o] != '(' || !isCall(src, o) || j <= o+1 || src[j-1] != ')' {
		return false
	}
	g := matchingOpener(src[:j], j-1)
	if g <= o {
		return false
	}
	if b := nonSpaceBefore(src, o, g); b != o && src[b] != ',' {
		return false
	}
	inner := src[g+1 : j-1]
	if lone(inner) || strings.ContainsAny(inner, "\n\\") ||
		strings.Contains(inner, " for ") || strings.Contains(inner, "yield") || strings.Contains(inner, ":=") || strings.Contains(inner, "lambda") {
		return false
	}
	items, _ := splitItems(src[:j], g+1, false)
	return len(items) == 1 && items[0] != ""
}

// lone reports whether text is a name, an attribute chain or a number
// alone, spaces aside.
func lone(text string) bool {
	t := strings.Trim(text, " ")
	for i := 0; i < len(t); i++ {
		if !isIdentChar(t[i]) && t[i] != '.' {
			return false
		}
	}
	return t != ""
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
// argument), before a comma ending a call's arguments or a row of a
// display, before a comparison, or before a product of a list or a
// subscript.
func deliberate(src string, opener, p int) bool {
	if p >= len(src) {
		return false
	}
	switch src[p] {
	case ',':
		o := closedBy(src, opener, p)
		// Or ending a row of a display of rows, as [3] in [[3], [np.nan]].
		return isCall(src, o) || o != opener && src[o] != '(' && !subscript(src, o)
	case '[':
		return p > 0 && strings.IndexByte(")]", src[p-1]) >= 0
	}
	// A list repeated, as ['row'] * 4, or a subscript's item scaled, as
	// x.shape[axes] // 2, read as often as the product inside.
	if o := closedBy(src, opener, p); o == opener && src[o] == '[' {
		rest := strings.TrimLeft(src[p:lineEndFrom(src, p)], " ")
		if rest != "" && strings.IndexByte("*/%", rest[0]) >= 0 && (subscript(src, o) || rest[0] == '*' && !strings.HasPrefix(rest, "**")) {
			return true
		}
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

// subscript reports whether the bracket at o subscripts what comes
// right before it.
func subscript(src string, o int) bool {
	return src[o] == '[' && o > 0 && (isIdentChar(src[o-1]) || src[o-1] == ')' || src[o-1] == ']')
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

// againstLayout reports whether a line of src, from the one holding from
// to the one holding to, starts against its brackets, as it does when a
// closer is put back where the writer did not lose it: aligned with the
// text after an open bracket, as that bracket's arguments are, while a
// bracket opened after that one is still open, as in "f(a, g(b,\n  c)"
// with c under a. (A closer leading its line says less: "f(\n  g(a\n))"
// is "f(\n  g(a)\n)". Nor does a bracket ending its line, whose
// arguments some writers align with the bracket before it, nor one that
// follows the open bracket right away, as [ in np.matrix([[1],\n [2]]).)
func againstLayout(src string, from, to int) bool {
	type open struct{ off, col int }
	var stack []open
	first, end := lineStartOf(src, from), lineEndFrom(src, min(to, len(src)))
	lineStart := 0
	for k := 0; k < end; k++ {
		c := src[k]
		if k == lineStart && k >= first && len(stack) > 0 {
			f := k
			for f < end && (src[f] == ' ' || src[f] == '\t') {
				f++
			}
			col := f - k
			inner := stack[len(stack)-1].off
			if f < end && strings.IndexByte("\n#)]}", src[f]) < 0 && !commaEndsLine(src, inner) {
				for _, b := range stack[:len(stack)-1] {
					if col == b.col+1 && strings.IndexByte("([{", src[b.off+1]) < 0 {
						return true
					}
				}
			}
		}
		switch {
		case c == '\n':
			lineStart = k + 1
		case isQuote(c):
			e := skipString(src, k, end)
			if n := strings.LastIndexByte(src[k:e], '\n'); n >= 0 {
				lineStart = k + n + 1 // a triple-quoted string's lines are text
			}
			k = e - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, open{k, k - lineStart})
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return false
}
