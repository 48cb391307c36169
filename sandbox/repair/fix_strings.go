package repair

import (
	"fmt"
	"strings"
)

// closeString proposes ways to end a string that runs to its line end.
func closeString(src string, p Problem) []change {
	lit := p.d.lit
	end := textStop(src, lit.body, p.d.end)
	eol := trimRightSpace(src, lit.body, end)
	field := -1 // the brace of an f-string's last field (see lastField)
	if lit.fmt {
		if f := lastField(src[lit.body:end]); f >= 0 {
			field = lit.body + f
		}
	}
	var out []change
	closeAt := func(at, cost int) {
		if oddBackslashes(src, lit.body, at) {
			return
		}
		// Text ending in an escaped quote, like "dir\"", was meant to
		// end there; see closeAtEscapedQuote.
		if at >= lit.body+2 && src[at-1] == lit.q && src[at-2] == '\\' ||
			lit.raw && strings.Contains(src[lit.body:at], `\`+string(lit.q)) {
			cost += 3
		}
		// A closer without its opener in the text most likely belongs
		// to the code after the string.
		if strayCloser(src[lit.body:at]) {
			cost += 4
		}
		// An f-string's field after the place, as the {b_ndim} of
		// f"a={a}, b={b}) closed before its comma, is still its text.
		if at <= field {
			cost += 4
		}
		c := closeStringAt(at, lit.q)
		c.cost = cost
		c.place = &place{lit: &lit, end: p.d.end, inBrkt: p.d.inBrkt}
		out = append(out, c)
	}
	// The string may have been closed with the other quote, as in
	// "hello') or "b' in mode: a lone quote of the other kind, followed
	// by code, is where it ends.
	if at := swappedQuote(src, lit, eol); at >= 0 {
		out = append(out, swapQuote(at, lit.q))
	}
	// Closed at its line end inside brackets, the string would run into a
	// string on a later line by implicit concatenation, which only fits
	// when it already continues one.
	if strings.TrimSpace(src[lit.body:eol]) != "" && !(p.d.inBrkt && !p.d.joined && nextIsString(src, p.d.end)) {
		closeAt(textEnd(src, lit.body, end), 2) // trailing spaces belong to the text
	} else if end < p.d.end {
		closeAt(lit.body, 2) // an empty string before a comment, as in x = '  # none yet
	}
	// Close it before the closers and separators it swallowed.
	for k, n := eol, 0; k > lit.body && n < 6; k-- {
		c := src[k-1]
		if c == ' ' || c == '\t' {
			continue
		}
		if !strings.ContainsRune(")]}:,;", rune(c)) {
			break
		}
		cost := 1
		if strings.ContainsAny(src[k-1:eol], ":,;") {
			cost = 3
		}
		closeAt(k-1, cost)
		n++
	}
	// Or before a closer further in, with code after it.
	for k, n := lit.body, 0; k < eol && n < 3; k++ {
		if strings.IndexByte(")]}", src[k]) >= 0 && !onlyClosersAfter(src, k, eol) {
			closeAt(k, 4)
			n++
		}
	}
	if c, ok := makeTriple(src, p); ok {
		out = append(out, c)
	}
	if c, ok := unescapeBackslash(src, lit); ok {
		out = append(out, c)
	}
	if c, ok := quoteBeforeCloser(src, p, eol); ok {
		out = append(out, c)
	}
	return append(out, closeAtEscapedQuote(src, p, eol)...)
}

// lastField returns the offset in code of the brace of the last part
// that reads as an f-string's field: a brace, a name, and a closing brace
// with no colon or comma of a dict or set display between them, as
// {b_ndim} or {self._mtx[0, 0]}; or -1. Each byte is read at most twice.
func lastField(code string) int {
	last := -1
	for k := 0; k < len(code); {
		o := strings.IndexByte(code[k:], '{')
		if o < 0 {
			break
		}
		o += k
		k = o + 1
		if o+1 == len(code) || !isIdentStart(code[o+1]) {
			continue
		}
		depth := 0
	scan:
		for j := o + 1; j < len(code); j++ {
			switch c := code[j]; {
			case c == '[' || c == '(':
				depth++
			case c == ']' || c == ')':
				depth--
			case c == '}':
				last, k = o, j+1
				break scan
			case (c == ':' || c == ',') && depth == 0, c == '{', isQuote(c):
				k = j
				break scan
			}
		}
	}
	return last
}

// textStop is where the text of a string that runs from body to its line
// end stops: at an inline comment, two spaces or more and a '#' followed
// by a space, as in print("done)  # noqa: T201, which code has and text
// rarely does; else at end.
func textStop(src string, body, end int) int {
	k := strings.Index(src[body:end], "  #")
	if k < 0 || body+k+3 < end && src[body+k+3] != ' ' {
		return end
	}
	return trimRightSpace(src, body, body+k+2)
}

// closeStringAt inserts the closing quote q at at.
func closeStringAt(at int, q byte) change {
	return change{cost: 1, edits: []edit{insert(at, string(q))}, notes: []note{{kind: "close-string", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("added the missing closing %c at column %d", q, c)
		}}}}
}

// swappedQuote returns the offset of the quote of the other kind that
// most likely closed lit, whose text runs to eol: the first, when the
// closer of the bracket before lit follows it (see closerAfterQuote); the
// last of two ending the text before closers; the only one in the text;
// or the last of an odd number when only closers follow it; else -1.
func swappedQuote(src string, lit strLit, eol int) int {
	if lit.triple {
		return -1
	}
	if k := closerAfterQuote(src, lit, eol); k >= 0 {
		return k
	}
	text := src[lit.body:eol]
	alt := otherQuote(lit.q)
	k := strings.LastIndexByte(text, alt)
	n := strings.Count(text, string(alt))
	if k >= 1 && text[k-1] == alt && onlyClosersAfter(src, lit.body+k+1, eol) {
		// Text ending with two quotes of the other kind, as '"" or
		// '"""" or "Sobol'' do: a string of quotes holds one or three, as
		// '"' and '"""' do, more often than two or four, and text ends
		// with a quote of its own more often than with two.
		return lit.body + k
	}
	if k < 0 || n > 1 && (n%2 == 0 || !onlyClosersAfter(src, lit.body+k+1, eol)) {
		return -1 // quotes that pair up, as in "x, end=' '), quote a string inside
	}
	if text == string(alt) {
		return -1 // '" is most likely the string " without its closing quote
	}
	return lit.body + k
}

// closerAfterQuote returns the offset of the first quote of the other
// kind in the text of lit, which runs to eol, when the closer of the
// bracket just before lit follows it, as the " of ['CFUNCSMESS"] = """
// and of tp('1.0"), x) do: there the string ended; else -1.
func closerAfterQuote(src string, lit strLit, eol int) int {
	if lit.start == 0 || lit.body == eol || src[lit.start-1] != '(' && src[lit.start-1] != '[' {
		return -1
	}
	want := closerOf(src[lit.start-1])
	alt := otherQuote(lit.q)
	for k := lit.body + 1; k+1 < eol; k++ {
		switch src[k] {
		case '\\':
			k++
		case alt:
			if src[k+1] == want {
				return k
			}
			return -1 // a quote of the other kind before it may be the one
		}
	}
	return -1
}

// swapQuote replaces the quote at at with q, the one the string opened with.
func swapQuote(at int, q byte) change {
	return change{cost: 1, edits: []edit{replace(at, at+1, string(q))}, notes: []note{{kind: "replace-quote", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("replaced the %c at column %d with %c to match the quote that opens the string", otherQuote(q), c, q)
		}}}}
}

// unescapeBackslash handles a string left open by a quote that was meant
// to be escaped but follows an escaped backslash instead, as in
// "say \"hi\\" now": the string before ended at that quote, and this one
// opened at the quote meant to close it. One backslash less makes the
// quote text again.
func unescapeBackslash(src string, lit strLit) (change, bool) {
	start := lineStartOf(src, lit.quote)
	k := strings.LastIndexByte(src[start:lit.quote], lit.q)
	if k < 0 {
		return change{}, false
	}
	y := start + k
	n := 0
	for j := y - 1; j >= start && src[j] == '\\'; j-- {
		n++
	}
	if n < 2 || n%2 == 1 {
		return change{}, false
	}
	at := y - 1
	return change{cost: 1, edits: []edit{replace(at, y, "")}, notes: []note{{kind: "escape-quote", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("removed the backslash at column %d so the %c after it is escaped rather than a backslash", c, lit.q)
		}}}}, true
}

// quoteBeforeCloser handles a quote that ends the text of a triple-quoted
// string right before its closer, as in """Say "hi""""": the first three
// quotes of the run closed the string, and the last one opened this one,
// which runs to the line end. Escaping the first quote of the run makes it
// text again.
func quoteBeforeCloser(src string, p Problem, eol int) (change, bool) {
	lit := p.d.lit
	q := lit.q
	at := lit.quote - 3
	if !p.d.joined || lit.start != lit.quote || at < 1 || src[at-1] == q || !hasTriple(src, at, q) || !onlyClosersAfter(src, lit.body, eol) {
		return change{}, false
	}
	return change{cost: 0, edits: []edit{insert(at, `\`)}, notes: []note{{kind: "escape-quote", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("escaped the %c at column %d, which ended the triple-quoted string early", q, c)
		}}}}, true
}

// makeTriple turns a string whose text runs on to a later line into a
// triple-quoted one ending at the next matching quote.
func makeTriple(src string, p Problem) (change, bool) {
	lit := p.d.lit
	k := strings.IndexByte(src[p.d.end:], lit.q)
	if k < 0 {
		return change{}, false
	}
	j := p.d.end + k
	if src[j-1] == '\\' || j+1 < len(src) && src[j+1] == lit.q || strings.Contains(src[lit.body:j], strings.Repeat(string(lit.q), 3)) {
		return change{}, false
	}
	// Text does not run on over a line of code, as in a = "one / b = "two.
	for i := p.d.end + 1; i < j; i = lineEndFrom(src, i) + 1 {
		if line := strings.TrimSpace(src[i:lineEndFrom(src, i)]); line != "" && looksLikeCode(line) {
			return change{}, false
		}
	}
	qq := string([]byte{lit.q, lit.q})
	return change{cost: 3,
		edits: []edit{insert(lit.quote, qq), insert(j, qq)},
		notes: []note{{kind: "triple-quote", at: lit.quote, text: func(pos posFunc) string {
			_, c := pos(lit.quote)
			l2, c2 := pos(j)
			return fmt.Sprintf("made the string at column %d triple-quoted so it runs on to the %c at line %d, column %d", c, lit.q, l2, c2)
		}}}}, true
}

// escapedQuotes counts the quotes q in src[start:end] that a backslash
// escapes.
func escapedQuotes(src string, start, end int, q byte) int {
	n := 0
	for k := start; k < end; k++ {
		if src[k] == q && oddBackslashes(src, start, k) {
			n++
		}
	}
	return n
}

// closeAtEscapedQuote handles a string whose closing quote was escaped by a
// backslash meant as text, like "C:\\data\" or r"C:\temp\".
func closeAtEscapedQuote(src string, p Problem, eol int) []change {
	lit := p.d.lit
	var out []change
	for i := eol - 1; i > lit.body && len(out) < 2; i-- {
		if src[i] != lit.q || src[i-1] != '\\' {
			continue
		}
		cost := 3
		if onlyClosersAfter(src, i+1, eol) {
			cost = 1
		}
		if !lit.raw {
			// Other escaped quotes, as in "He said \"hi\" or
			// 'It\'s called \'vis\', say the writer escapes quotes in
			// this string: the last is one of them, and the string's own
			// closing quote is what is missing.
			if !oddBackslashes(src, lit.body, i) || escapedQuotes(src, lit.body, i+1, lit.q) > 1 {
				continue
			}
			at := i - 1
			out = append(out, change{cost: cost, edits: []edit{insert(at, `\`)}, notes: []note{{kind: "escape-backslash", at: at,
				text: func(pos posFunc) string {
					_, c := pos(at)
					return fmt.Sprintf("doubled the backslash at column %d so the %c after it closes the string", c, lit.q)
				}}}})
			continue
		}
		if lit.fmt {
			continue
		}
		// A raw string cannot end in a backslash: rewrite it as a plain
		// string with each backslash doubled, which keeps its value.
		edits := []edit{}
		if r := strings.IndexAny(src[lit.start:lit.quote], "rR"); r >= 0 {
			edits = append(edits, replace(lit.start+r, lit.start+r+1, ""))
		}
		for k := lit.body; k < i; k++ {
			if src[k] == '\\' {
				edits = append(edits, insert(k, `\`))
				if src[k+1] == lit.q && k+1 < i {
					edits = append(edits, insert(k+1, `\`)) // r"a\"b" holds a backslash and a quote
				}
			}
		}
		if cost > 1 {
			cost = 2 // a raw string ends at a backslash and a quote rather than take them as text
		}
		out = append(out, change{cost: cost, edits: edits, notes: []note{{kind: "unraw", at: lit.start,
			text: func(pos posFunc) string {
				_, c := pos(lit.start)
				return fmt.Sprintf("rewrote the raw string at column %d as a plain string with its backslashes doubled, since a raw string cannot end with a backslash", c)
			}}}})
	}
	return out
}

// maxTripleLines is how many lines of an unterminated triple-quoted string
// get a proposal to close it at their end.
const maxTripleLines = 16

// closeTriple proposes closing a triple-quoted string at the end of one of
// the lines it runs over. Closing it just before a line that reads as code
// is cheapest, so a docstring does not swallow the code after it.
func closeTriple(src string, p Problem) []change {
	lit := p.d.lit
	indent := indentOf(src, lit.start)
	out := swapTripleCloser(src, lit)
	swaps := len(out)
	start := lit.body
	// A string inside an expression whose text starts with code, as
	// dedent("""\nimport sys or exec('''if True:, holds code: its lines
	// reading as code say nothing of where it ends.
	codeText := codeInExpression(src, lit)
	for n := 0; start < len(src); n++ {
		if n == maxTripleLines {
			// A long string: closed on the line a closer on its own
			// stood on, when one holds the string's indentation alone
			// before code, as a long docstring's does.
			if cs, ce, ok := farIndentOnlyLine(src, start, indent); ok {
				if c, ok := closeTripleAt(src, lit, cs, ce, 1); ok {
					out = append(out, c)
				}
				break
			}
			// Else the only other guess is that it runs to
			// the end of the block, closed on the block's last line: on
			// the blank line a closer on its own line was dropped from,
			// or at the end of the text, not after the last line break,
			// which would add one to the string.
			e := len(src)
			if strings.HasSuffix(src, "\n") {
				e--
			}
			// That blank line is tried right after the first line's
			// guess: the guesses at the lines in between compile only
			// when prose reads as code by chance, and the compiles a
			// search may make would run out on them.
			cost := 2 + n
			if _, _, ok := endCloserLine(src, start); ok {
				cost = 2
			}
			start = max(lineStartOf(src, e), lit.body)
			if c, ok := closeTripleAt(src, lit, start, textEnd(src, start, e), cost); ok {
				out = append(out, c)
			}
			break
		}
		end := lineEndFrom(src, start)
		e := trimRightSpace(src, start, end)
		next := end + 1
		if e > start && next < len(src) {
			// The line under a section's heading underline is the
			// section's text, as the .Axes.set_ylim under "See Also" is,
			// not code going on after a closer.
			if cs, at, ok := continuationLine(src, next); ok && !introduces(src[start:e]) {
				// The closer stood at the start of a line that goes on
				// with the expression, as in ''', re.VERBOSE). After blank
				// lines it may have stood there, the text ending with
				// them, as in ffi.cdef('''...\n\n'''), or alone on the
				// last of them, as in dedent("""...\n"""\n): the two
				// differ in the string's last line break, real code
				// holds both as often, so neither is proposed, nor the
				// guesses made at the text's earlier lines.
				if cs > next {
					return out[:swaps]
				}
				if c, ok := closeTripleAt(src, lit, cs, at, 1); ok {
					out = append(out, c)
				}
				break
			}
			if cs, ce, ok := closerLine(src, next, indent); ok {
				// The line left where the closer stood on its own:
				// close it there, keeping the string's last line break.
				if c, ok := closeTripleAt(src, lit, cs, ce, 1); ok {
					out = append(out, c)
				}
				break
			}
		}
		if e > start {
			cost := 2 + n
			// The line after a doctest prompt is its output, not code.
			prompt := strings.HasPrefix(strings.TrimLeft(src[start:e], " \t"), ">>>")
			// A line ending with a comma goes on to the next, as a list of
			// names under "See Also" does.
			listed := src[e-1] == ','
			if next >= len(src) || !prompt && !listed && !codeText && !introduces(src[start:e]) && nextLineIsCode(src, next, indent) {
				cost = 1
				// The line that reads as code may be the text's last, when
				// a line of the string's indentation alone, the one its
				// closer stood on, comes after it before the code.
				if cs, ce, ok := indentOnlyLine(src, next, indent); ok {
					if c, ok := closeTripleAt(src, lit, cs, ce, 1); ok {
						out = append(out, c)
					}
				}
			}
			// Closers ending the text's last line that the text never
			// opened, as in details.) for dedent("""..., close the
			// brackets open before the string: the quotes stood before
			// them.
			if t := closersAtEnd(src, lit, start, e); cost == 1 && t < e {
				if c, ok := closeTripleAt(src, lit, start, t, 1); ok {
					out = append(out, c)
				}
			}
			// Spaces before the line end belong to the text.
			if c, ok := closeTripleAt(src, lit, start, textEnd(src, start, end), cost); ok {
				out = append(out, c)
			}
			if cost == 1 {
				// Closing any later would swallow the code, unless the
				// block ends with the blank line a closer on its own
				// line was dropped from, as a docstring's is: the line
				// that reads as code may be its prose, as "a[i:] have
				// e > x." is, and then does not compile. When that line
				// holds exactly the string's indentation, which editors
				// strip from other blank lines, it says where the string
				// ended, and the code is an example in the text, as in
				// "call it like this:"; it goes first (cost 0), as both
				// may compile. An empty line may just end the block.
				if cs, ce, ok := endCloserLine(src, next); ok {
					cost := 2 + n
					if indent > 0 && src[cs:ce] == strings.Repeat(" ", indent) {
						cost = 0
					}
					if c, ok := closeTripleAt(src, lit, cs, ce, cost); ok {
						out = append(out, c)
					}
				}
				break
			}
		}
		start = next
	}
	return out
}

// codeInExpression reports whether lit does not start its line, as a
// docstring does, and the first line of its text that is not blank reads
// as code.
func codeInExpression(src string, lit strLit) bool {
	if strings.TrimSpace(src[lineStartOf(src, lit.start):lit.start]) == "" {
		return false
	}
	for i := lit.body; i < len(src); i = lineEndFrom(src, i) + 1 {
		if line := strings.TrimSpace(src[i:lineEndFrom(src, i)]); line != "" {
			return looksLikeCode(line)
		}
	}
	return false
}

// introduces reports whether a line of a string's text leads into the
// lines after it, which then belong to the text: a section's underline,
// as the ------- under "Returns", or prose ending with a colon, as
// "readline via the set_completer() call:" before an example.
func introduces(line string) bool {
	t := strings.TrimSpace(line)
	if len(t) >= 3 && (strings.Trim(t, "-") == "" || strings.Trim(t, "=") == "") {
		return true
	}
	return strings.HasSuffix(t, ":") && !looksLikeCode(t)
}

// continuationLine reports whether the first line from i that is not
// blank goes on with an expression, starting (after its indentation) with
// a comma, a closer, an attribute or the % filling a format, and returns
// that line's start and where the expression goes on (for %, the space
// before it, which stands after the closer).
func continuationLine(src string, i int) (start, at int, ok bool) {
	k := i
	for k < len(src) && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r' || src[k] == '\n') {
		if src[k] == '\n' {
			i = k + 1
		}
		k++
	}
	if k+1 < len(src) && src[k] == '%' && src[k+1] == ' ' && k > i && src[k-1] == ' ' {
		return i, k - 1, true // a format filled, as in ''' % (a, b)
	}
	return i, k, k < len(src) && strings.IndexByte(",)]}", src[k]) >= 0 ||
		k+1 < len(src) && src[k] == '.' && isIdentStart(src[k+1])
}

// closerLine looks at the blank lines from from, the start of a line, for
// the one a closing quote on its own line was dropped from: the last one
// holding exactly the string's indentation (at least one space) when code
// at that indentation follows them, or the last one when only the end of
// the block does. It returns that line's start and end.
func closerLine(src string, from, indent int) (start, end int, ok bool) {
	last, lastEnd, own, ownEnd := -1, 0, -1, 0
	i := from
	for ; i < len(src); i = lastEnd + 1 {
		e := lineEndFrom(src, i)
		text := strings.TrimRight(src[i:e], "\r")
		if strings.Trim(text, " \t") != "" {
			break
		}
		if len(text) == indent && indent > 0 {
			own, ownEnd = i, e
		}
		last, lastEnd = i, e
	}
	switch {
	case last >= 0 && i >= len(src):
		return last, lastEnd, true
	case own >= 0 && nextLineIsCode(src, i, indent):
		return own, ownEnd, true
	}
	return 0, 0, false
}

// closersAtEnd returns where the closing brackets ending src[start:e],
// the last line of lit's text, start, when the text from lit.body leaves
// them unopened and as many brackets are open before lit; else e.
func closersAtEnd(src string, lit strLit, start, e int) int {
	t := e
	for t > start && strings.IndexByte(")]}", src[t-1]) >= 0 {
		t--
	}
	if t == e || !balanced(src[lit.body:t]) || bracketDepth(src, lit.start) < e-t {
		return e
	}
	return t
}

// indentOnlyLine returns the start and end of the first blank line from
// from, the start of a line, within maxTripleLines lines, when it holds
// exactly indent spaces (at least one) and code at that indentation
// follows it: the line a docstring's closer stood on alone. Editors strip
// such spaces from other blank lines.
func indentOnlyLine(src string, from, indent int) (start, end int, ok bool) {
	for i, n := from, 0; i < len(src) && n < maxTripleLines; n++ {
		e := lineEndFrom(src, i)
		text := strings.TrimRight(src[i:e], "\r")
		if strings.Trim(text, " \t") == "" {
			ok = indent > 0 && text == strings.Repeat(" ", indent) && e < len(src) && nextLineIsCode(src, e+1, indent)
			return i, i + len(text), ok
		}
		i = e + 1
	}
	return 0, 0, false
}

// farIndentOnlyLine returns the start and end of the first line from
// from, the start of a line, that holds exactly indent spaces (at least
// one) and is followed right away by code at that indentation, as
// indentOnlyLine does but over the rest of the block: each line is
// looked at once, and nextLineIsCode at the line after it only.
func farIndentOnlyLine(src string, from, indent int) (start, end int, ok bool) {
	if indent == 0 {
		return 0, 0, false
	}
	pad := strings.Repeat(" ", indent)
	for i := from; i < len(src); {
		e := lineEndFrom(src, i)
		if strings.TrimRight(src[i:e], "\r") == pad && e < len(src) && !blankLine(src, e+1) && nextLineIsCode(src, e+1, indent) {
			return i, i + indent, true
		}
		i = e + 1
	}
	return 0, 0, false
}

// endCloserLine returns the start and end of the last line of src, from
// from on, when it is blank, ends with a line break and follows text: the
// line a closer on its own line was dropped from at the end of the block.
func endCloserLine(src string, from int) (start, end int, ok bool) {
	if !strings.HasSuffix(src, "\n") {
		return 0, 0, false
	}
	end = len(src) - 1
	start = lineStartOf(src, end)
	if start < from || strings.Trim(src[start:end], " \t\r") != "" || strings.TrimSpace(src[from:start]) == "" {
		return 0, 0, false
	}
	return start, end, true
}

// swapTripleCloser proposes replacing the first closer of the other quote
// kind ending a line of the text, as in """Done.”', with the right one.
func swapTripleCloser(src string, lit strLit) []change {
	other := strings.Repeat(string(otherQuote(lit.q)), 3)
	k := strings.Index(src[lit.body:], other)
	if k < 0 {
		return nil
	}
	at := lit.body + k
	for at+3 < len(src) && src[at+3] == other[0] {
		at++ // the last three of a longer run, as in 'name''''
	}
	if at > lit.body && src[at-1] == '\\' {
		return nil
	}
	cost := 2
	if codeAfterCloser(src, at+3) {
		cost = 1
	}
	qqq := lit.quoteText()
	return []change{{cost: cost, edits: []edit{replace(at, at+3, qqq)}, notes: []note{{kind: "replace-quote", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("replaced the %s at column %d with %s to match the quotes that open the string", other, c, qqq)
		}}}}}
}

// codeAfterCloser reports whether what follows a closer at i on its line
// reads as code: nothing but closers, or a method call, a comma, the %
// filling a format or a comment after a space, as .split() or
// , re.VERBOSE) or % py_ver after a closer typed with the other quote.
func codeAfterCloser(src string, i int) bool {
	end := trimRightSpace(src, i, lineEndFrom(src, i))
	if onlyClosersAfter(src, i, end) {
		return true
	}
	rest := src[i:end]
	if strings.HasPrefix(rest, ".") {
		w := wordEnd(rest, 1)
		return w > 1 && w < len(rest) && rest[w] == '('
	}
	return strings.HasPrefix(rest, ", ") || strings.HasPrefix(rest, "  #") || strings.HasPrefix(rest, " % ")
}

// closeTripleAt closes lit at e, the end of the text of the line that
// starts at start. Quotes ending the text complete a closer typed too
// short, as in """Done."", unless they pair with a quote earlier in the
// text, as in """Say "hi"; then the last is escaped so it stays text.
func closeTripleAt(src string, lit strLit, start, e, cost int) (change, bool) {
	qqq := lit.quoteText()
	if oddBackslashes(src, start, e) {
		return change{}, false
	}
	k := 0
	for k < 2 && e-k-1 >= start && src[e-k-1] == lit.q {
		k++
	}
	if k > 0 && strings.Count(src[start:e-k], qqq[:1])%2 == 0 {
		add := qqq[k:]
		return change{cost: cost, edits: []edit{insert(e, add)}, notes: []note{{kind: "close-string", at: e,
			text: func(pos posFunc) string {
				_, c := pos(e)
				return fmt.Sprintf("added %s at column %d to complete the closing %s", add, c, qqq)
			}}}}, true
	}
	edits := []edit{insert(e, qqq)}
	if k > 0 {
		edits = []edit{insert(e-1, `\`), insert(e, qqq)}
	}
	return change{cost: cost, edits: edits, notes: []note{{kind: "close-string", at: e,
		text: func(pos posFunc) string {
			_, c := pos(e)
			if len(edits) == 2 {
				return fmt.Sprintf("added the missing closing %s at column %d, escaping the %c before it", qqq, c, lit.q)
			}
			return fmt.Sprintf("added the missing closing %s at column %d", qqq, c)
		}}}}, true
}

// nextLineIsCode reports whether the next non-blank line from i is
// indented no deeper than indent and starts like a statement.
func nextLineIsCode(src string, i, indent int) bool {
	for i < len(src) {
		end := lineEndFrom(src, i)
		line := strings.TrimRight(src[i:end], " \t\r")
		body := strings.TrimLeft(line, " \t")
		if body == "" {
			i = end + 1
			continue
		}
		if len(line)-len(body) > indent {
			return false
		}
		if body[0] == '#' {
			// Comments up to the end of the block may be the string's
			// text, as the "# unmapped parameters:" lines of a docstring
			// are; before other lines they are code.
			return !onlyCommentsFrom(src, i)
		}
		return looksLikeCode(body)
	}
	return false
}

// onlyCommentsFrom reports whether every line from i to the end of src
// is blank or a comment.
func onlyCommentsFrom(src string, i int) bool {
	for ; i < len(src); i = lineEndFrom(src, i) + 1 {
		if t := strings.TrimSpace(src[i:lineEndFrom(src, i)]); t != "" && t[0] != '#' {
			return false
		}
	}
	return true
}

// looksLikeCode tells a statement from prose: a statement keyword, or a
// name followed by a call, an assignment, an attribute or a subscript.
func looksLikeCode(line string) bool {
	if line[0] == '@' || line[0] == '#' {
		return true
	}
	if strings.HasSuffix(line, ".") && !strings.HasSuffix(line, "...") {
		return false // a sentence, as in "len(b) is less if not all was sent."
	}
	if strings.HasSuffix(line, ",") && balanced(line) {
		return false // a list of names in prose, as under "See Also": a statement rarely ends with a comma
	}
	w := line[:wordEnd(line, 0)]
	if statementKeywords[w] || colonKeywords[w] || w == "print" {
		return w != ""
	}
	if w == "" || keywords[w] {
		return false
	}
	rest := strings.TrimLeft(line[len(w):], " ")
	switch {
	case rest == "":
		return false
	case rest[0] == '(' || rest[0] == '[':
		return true
	case len(w) == 1 && len(rest) > 2 && rest[0] == '.' && rest[2] == '.' && (len(rest) == 3 || rest[3] == ' ' || rest[3] == ','):
		return false // an abbreviation, as "i.e. " and "e.g., " are
	case rest[0] == '.' && len(rest) > 1 && isIdentStart(rest[1]):
		return true
	case rest[0] == '=' && !strings.HasPrefix(rest, "=="):
		return true
	case rest[0] == ',' && strings.Contains(rest, " = "):
		return true // a, b = pair
	case len(rest) > 1 && rest[1] == '=' && strings.ContainsRune("+-*/%&|^", rune(rest[0])):
		return true
	}
	return false
}

// indentOf returns the indentation width, in bytes, of the line holding i.
func indentOf(src string, i int) int {
	start := lineStartOf(src, i)
	k := start
	for k < i && (src[k] == ' ' || src[k] == '\t') {
		k++
	}
	return k - start
}

// strayCloser reports whether text has a closing bracket before any
// opening one that matches it.
func strayCloser(text string) bool {
	_, stray := rawBracketDepth(text)
	return stray
}

// nextIsString reports whether the next token after i, past blank lines
// and comments, is a string literal.
func nextIsString(src string, i int) bool {
	for i < len(src) {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			i++
		case c == '#':
			i = lineEndFrom(src, i)
		case isQuote(c):
			return true
		default:
			e := wordEnd(src, i)
			return e > i && e-i <= 2 && e < len(src) && isQuote(src[e]) && strings.Trim(strings.ToLower(src[i:e]), "rbfu") == ""
		}
	}
	return false
}

// blankLine reports whether the line starting at i holds only spaces.
func blankLine(src string, i int) bool {
	return strings.Trim(src[i:lineEndFrom(src, i)], " \t\r") == ""
}
