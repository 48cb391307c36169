package repair

import (
	"slices"
	"strings"
)

// Where a dropped closer could go: the candidate places settle compiles.

// stringPlaces lists the other ways to end the string of pl: its closing
// quote before each spot in its text where code could start, or at the
// line end after any trailing spaces (which only a string holds); its
// lone quote of the other kind made its own; and, for the strings before
// it on its line, whose quotes a dropped one shifts, a closing quote
// inside their text or their own lone quote of the other kind made right.
// An f-string is not closed before one of its fields.
func stringPlaces(src string, pl *place) []edit {
	lit := pl.lit
	end := textEnd(src, lit.body, textStop(src, lit.body, pl.end))
	out := closePlaces(src, lit.body, end, lit.q, pl.inBrkt)
	if f := lastField(src[lit.body:end]); lit.fmt && f >= 0 {
		// Not before a field of the f-string's (see lastField).
		out = slices.DeleteFunc(out, func(e edit) bool { return e.off <= lit.body+f })
	}
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
// (inside brackets, between items that are not all literals: numbers,
// strings, True, False, None and displays of them, or in a value
// assigned to several names) a comma follows; at a line end where the next line is indented no deeper than
// the bracket's; right after it for a call left open at its line end.
// Nothing before a keyword argument: it belongs to its call.
func bracketPlaces(src string, pl *place) []edit {
	o, end := pl.opener, pl.end
	type level struct {
		opener             int
		grouping, literals bool
		compound           bool
		commas             []edit
		// scalars, rows: the level holds a literal number, string or
		// constant, a display of literals; both are items of no one form,
		// as in [0, 4, 7, [1, 3, 8]], which a lost closer likely joined.
		scalars, rows bool
	}
	literal := func(l *level, row bool) {
		l.scalars, l.rows = l.scalars || !row, l.rows || row
		if l.scalars && l.rows {
			l.literals = false
		}
	}
	open := func(at int) level {
		call := isCall(src, at)
		// A call's arguments may be split between two calls even when
		// they are literals, as in np.array(1), 2.
		return level{opener: at, grouping: src[at] == '(' && !call, literals: !call}
	}
	var out []edit
	assertion := inAssert(src, o)
	// In the value assigned to several names, as in first, last =
	// group[0, group[-1], a comma may end a subscript: the value is a
	// tuple (see unpackedPlace). A call's arguments, or a display's
	// items, are not split so: a call may return the tuple, and a
	// display laid out one item a line is one; unless the value is a
	// tuple already, as in a, b, x = f(a), f(b, f(x), whose count of
	// items the names give.
	targets, value := unpacking(src, o)
	unpacks := targets > 1 && subscript(src, o)
	if targets > 1 && src[o] == '(' && isCall(src, o) && bracketDepth(src, o) == 0 {
		items, _ := splitItems(src[:o], value, true)
		unpacks = len(items) > 1
	}
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
	assign := firstAssignment(src, o)
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
			literal(top, false)
		case c == '#':
			i = lineEndFrom(src, i) - 1
		case c == '(' || c == '[' || c == '{':
			if c == '[' && (closed || afterNumber) {
				add(i) // before a subscript of the content
			}
			// A display of literals, as [1, 0] in [[1, 0], [0, 1]], is a
			// literal item itself; a call or subscript is not.
			if isCall(src, i) || c == '[' && afterOperand {
				top.literals = false
			}
			stack = append(stack, open(i))
			afterOperand = false
		case c == ')' || c == ']' || c == '}':
			if !top.literals {
				out = append(out, top.commas...)
			} else {
				// A row of literals laid out on its own line may still
				// end before the comma ending that line (see layoutPlace).
				out = append(out, slices.DeleteFunc(top.commas, func(e edit) bool { return !commaEndsLine(src, e.off) })...)
			}
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && !top.literals {
				stack[len(stack)-1].literals = false
			} else if len(stack) > 0 {
				literal(&stack[len(stack)-1], true)
			}
			afterOperand, afterCloser = true, true
		case c == ' ' || c == '\t' || c == '\r':
			afterCloser = closed
		case c == '\n':
			if at := trimRightSpace(src, o, i); afterOperand && len(stack) == 1 && nextLineIndent(src, i+1) <= indent ||
				afterOperand && len(stack) > 1 && laidOut(src, top.opener, at) {
				// Or where the lines lay out the end of a bracket opened
				// inside, as a call ending its line in a chain of calls.
				add(at)
			}
		case isDigit(c):
			i = numberEnd(src, i) - 1
			afterOperand = true
			literal(top, false)
		case isIdentChar(c):
			e := max(wordEnd(src, i), i+1) // a byte of no letter still moves on
			w := src[i:e]
			if afterOperand && keywords[w] && !operandKeywords[w] {
				if !top.grouping || top.compound {
					add(trimRightSpace(src, o, i))
				}
				top.compound = true
			}
			switch {
			case operandKeywords[w]:
				literal(top, false)
			case !(e < end && isQuote(src[e])): // not a string prefix
				top.literals = false
			}
			afterOperand = !keywords[w] || operandKeywords[w]
			i = e - 1
		case c == ',':
			if afterOperand && (nested || len(stack) > 1 || unpacks) {
				top.commas = append(top.commas, insert(i, string(closerOf(src[top.opener]))))
			}
			if len(stack) == 1 && !nested && !assertion && !unpacks {
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
			if i == assign {
				// An assignment starting a line no deeper than the
				// bracket's, as reset = True after x = f(, is the next
				// statement, not a keyword: the bracket closes before it.
				i = end
				continue
			}
			if foreignKeyword(src, top.opener, i) || top.opener != o && tolerant(calleeName(src, o)) &&
				!tolerant(calleeName(src, top.opener)) && containsString(toleranceKeywords, keywordBefore(src, top.opener, i)) {
				// Not the call's own, as index= in np.arange(4.0, index=i)
				// or atol= in assert_allclose(a, f(x, atol=1e-6): the
				// keyword of the call outside.
				afterOperand = false
				continue
			}
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

// statementAssign reports whether the = at eq, spaced on both sides,
// follows a name that starts its line at an indentation no deeper than
// indent: written as a statement, where a keyword argument has no
// spaces.
func statementAssign(src string, eq, indent int) bool {
	if eq+1 >= len(src) || src[eq+1] != ' ' || src[eq-1] != ' ' {
		return false
	}
	k := eq - 1
	for k > 0 && src[k-1] == ' ' {
		k--
	}
	b := k
	for b > 0 && isIdentChar(src[b-1]) {
		b--
	}
	start := b
	for start > 0 && (src[start-1] == ' ' || src[start-1] == '\t') {
		start--
	}
	return b < k && (start == 0 || src[start-1] == '\n') && b-start <= indent
}

// firstAssignment returns the offset of the = of the first line after
// the bracket at opener written as an assignment statement (see
// statementAssign), as reset = True after x = f(, or -1: a closer after
// it would take that statement in. Strings' lines are their text.
func firstAssignment(src string, opener int) int {
	indent := indentOf(src, opener)
	for k := opener + 1; k < len(src); k++ {
		switch c := src[k]; {
		case isQuote(c):
			k = skipString(src, k, len(src)) - 1
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '\n':
			if eq := strings.Index(src[k+1:lineEndFrom(src, k+1)], " = "); eq >= 0 && statementAssign(src, k+2+eq, indent) {
				return k + 2 + eq
			}
		}
	}
	return -1
}

// foreignKeyword reports whether the keyword argument whose = is at eq
// is one the call of arrayFuncs whose bracket is at o does not take.
func foreignKeyword(src string, o, eq int) bool {
	name := calleeName(src, o)
	s := o - len(name)
	if name == "" || s == 0 || src[s-1] != '.' {
		return false
	}
	sig, ok := arrayFunc(src, s, name)
	if !ok && numpyChain(src, o) {
		sig, ok = signature{kw: []string{"*"}}, true // any keyword but those foreignToNumpy names
	}
	w := keywordBefore(src, o, eq)
	return ok && w != "" && (foreignToNumpy(name, w) || !containsString(sig.kw, w) && !containsString(sig.kw, "*"))
}

// keywordBefore returns the keyword whose = is at eq, in the bracket at
// o, or "".
func keywordBefore(src string, o, eq int) string {
	k := eq
	for k > o && src[k-1] == ' ' {
		k--
	}
	b := k
	for b > o && isIdentChar(src[b-1]) {
		b--
	}
	return src[b:k]
}

// commaEndsLine reports whether the comma at i ends its line, but for
// spaces and a comment.
func commaEndsLine(src string, i int) bool {
	k := i + 1
	for k < len(src) && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r') {
		k++
	}
	return k == len(src) || src[k] == '\n' || src[k] == '#'
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
