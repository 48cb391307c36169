package repair

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// fixBrace proposes fixes for an f-string brace: double a single '}',
// double both braces of a field holding text, and for a field never
// closed, either close it before the f-string's quote or double its '{'.
func fixBrace(p Problem) []change {
	at := p.off
	switch p.d.sub {
	case subSingleClose:
		return []change{{cost: 2, edits: []edit{insert(at, "}")}, notes: []note{{kind: "double-brace", at: at,
			text: func(pos posFunc) string {
				_, c := pos(at)
				return fmt.Sprintf("doubled the single '}' at column %d in the f-string", c)
			}}}}}
	case subTextField:
		end := p.d.end
		return []change{{cost: 1, edits: []edit{insert(at, "{"), insert(end, "}")}, notes: []note{{kind: "double-brace", at: at,
			text: func(pos posFunc) string {
				_, c := pos(at)
				return fmt.Sprintf("doubled the '{' at column %d and its closing '}' in the f-string, which held text rather than an expression", c)
			}}}}}
	}
	closeCost, doubleCost := 1, 3
	if p.d.text {
		closeCost, doubleCost = 3, 1
	}
	q := p.d.at
	return []change{
		{cost: closeCost, edits: []edit{insert(q, "}")}, notes: []note{{kind: fixInsertCloser, at: q,
			text: func(pos posFunc) string {
				_, c := pos(q)
				_, oc := pos(at)
				return fmt.Sprintf("added the missing '}' at column %d to close the f-string field opened at column %d", c, oc)
			}}}},
		{cost: doubleCost, edits: []edit{insert(at, "{")}, notes: []note{{kind: "double-brace", at: at,
			text: func(pos posFunc) string {
				_, c := pos(at)
				return fmt.Sprintf("doubled the '{' at column %d in the f-string, which never closed and held text", c)
			}}}},
	}
}

// swapNestedQuotes gives a string nested in an f-string field the other
// quote, as Python before 3.12 requires.
func swapNestedQuotes(src string, p Problem, minor int) []change {
	lit, end := p.d.lit, p.d.other
	alt := otherQuote(lit.q)
	if lit.triple || strings.ContainsAny(src[lit.body:end], string(alt)+`\`) {
		return nil
	}
	// A field that is a string alone, as the ", " of f"{", "}", is no
	// field anyone writes: the { was more likely meant as text ({{) and
	// the quote after it ended the f-string, so the swap is not offered.
	if strings.HasSuffix(strings.TrimRight(src[:lit.start], " "), "{") && strings.HasPrefix(strings.TrimLeft(src[end+1:], " "), "}") {
		return nil
	}
	q := string(alt)
	return []change{{cost: 1, edits: []edit{replace(lit.quote, lit.quote+1, q), replace(end, end+1, q)},
		notes: []note{{kind: "replace-quote", at: lit.quote, text: func(pos posFunc) string {
			_, c := pos(lit.quote)
			return fmt.Sprintf("changed the quotes of the string at column %d to %s, since Python 3.%d does not allow the f-string's own quote inside its fields", c, q, minor)
		}}}}}
}

// doubleBackslash makes the backslash of an invalid escape plain text.
func doubleBackslash(src string, p Problem) change {
	at := p.off
	letter := src[at+1]
	return change{cost: 1, edits: []edit{insert(at, `\`)}, notes: []note{{kind: "escape-backslash", at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf(`doubled the backslash at column %d so '\%c' is kept as text rather than read as an invalid escape`, c, letter)
		}}}}
}

// wholeString makes every backslash of a string text when one of them is
// an invalid escape and the string reads as a Windows path or a regular
// expression ("C:\Users\name\x", "\d+\x"): doubling the bad escapes alone
// would leave "\n" in "\name" a newline. The string becomes raw, or, when
// it holds escaped backslashes or quotes or ends in a backslash, each lone
// backslash is doubled.
func wholeString(src string, lit strLit) (change, bool) {
	end := literalEnd(src, lit)
	text := src[lit.body:end]
	if lit.raw || !strings.Contains(text, ":\\") && !unknownEscape(text) {
		return change{}, false
	}
	at := lit.start
	if strings.Contains(text, `\\`) || strings.Contains(text, `\`+string(lit.q)) || oddBackslashes(src, lit.body, end) {
		var edits []edit
		for k := lit.body; k < end; k++ {
			if src[k] == '\\' {
				if k+1 < end && (src[k+1] == '\\' || src[k+1] == lit.q) {
					k++
					continue
				}
				edits = append(edits, insert(k, `\`))
			}
		}
		return change{cost: 1, edits: edits, notes: []note{{kind: "escape-backslash", at: at, text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("doubled each lone backslash in the string at column %d so all of them stay text, as in a Windows path or a regular expression", c)
		}}}}, true
	}
	e := insert(lit.start, "r")
	if u := strings.IndexAny(src[lit.start:lit.quote], "uU"); u >= 0 {
		e = replace(lit.start+u, lit.start+u+1, "r")
	}
	return change{cost: 1, edits: []edit{e}, notes: []note{{kind: "raw-string", at: at, text: func(pos posFunc) string {
		_, c := pos(at)
		return fmt.Sprintf("made the string at column %d raw so all its backslashes stay text, as in a Windows path or a regular expression", c)
	}}}}, true
}

// literalEnd returns the offset of the quote closing lit, or where its
// text stops: the line end for a one-line string, else the end of src.
func literalEnd(src string, lit strLit) int {
	for k := lit.body; k < len(src); k++ {
		switch {
		case src[k] == '\\':
			k++
		case src[k] == '\n' && !lit.triple:
			return trimRightSpace(src, lit.body, k)
		case lit.closesAt(src, k):
			return k
		}
	}
	return len(src)
}

// unknownEscape reports whether text holds a backslash before a character
// that starts no escape, as \d in a regular expression or \D in a path do.
func unknownEscape(text string) bool {
	for k := 0; k+1 < len(text); k++ {
		if text[k] == '\\' {
			if !strings.ContainsRune("\n\r\\'\"abfnrtv01234567xNuU", rune(text[k+1])) {
				return true
			}
			k++
		}
	}
	return false
}

// asciiQuotes replaces a typographic quote, alone or with a later one of
// the same family on its line, by the ASCII quote that does not clash with
// the text between them.
func asciiQuotes(src string, p Problem) []change {
	a := p.off
	double := typographicDouble(src, a)
	q := byte('\'')
	if double {
		q = '"'
	}
	one := string(q)
	out := []change{{cost: 2, edits: []edit{replace(a, p.d.end, one)}, notes: []note{{kind: "replace-quote", at: a,
		text: func(pos posFunc) string {
			_, c := pos(a)
			return fmt.Sprintf("replaced the typographic quote %s at column %d with %s", src[a:a+3], c, one)
		}}}}}
	// Pair it with the nearest later quote of its family on the line,
	// skipping apostrophes inside words, as in ‘It’s here’.
	eol := lineEndFrom(src, a)
	for b := p.d.end; b < eol; b++ {
		if typographicAt(src, b) == 0 || typographicDouble(src, b) != double || isApostrophe(src, b) {
			continue
		}
		inner := src[a+3 : b]
		use := q
		if strings.IndexByte(inner, use) >= 0 {
			use = otherQuote(q)
		}
		if strings.IndexByte(inner, use) < 0 {
			s := string(use)
			out = append(out, change{cost: 1, edits: []edit{replace(a, a+3, s), replace(b, b+3, s)}, notes: []note{{kind: "replace-quote", at: a,
				text: func(pos posFunc) string {
					_, c := pos(a)
					_, c2 := pos(b)
					return fmt.Sprintf("replaced the typographic quotes %s at column %d and %s at column %d with %s", src[a:a+3], c, src[b:b+3], c2, s)
				}}}})
		}
		break
	}
	return out
}

// asciiQuotesAll replaces every typographic quote in one change, pairing
// each with the nearest later one of its family on its line. Replacing
// them one by one would favour a first quote left to swallow the rest of
// its line, which hides the other typographic quotes.
func asciiQuotesAll(src string, probs []Problem) (change, bool) {
	var all change
	used := map[int]bool{}
	for _, p := range probs {
		if p.Kind != KindTypographicQuote || used[p.off] {
			continue
		}
		cands := asciiQuotes(src, p)
		c := cands[len(cands)-1] // the pair when there is one
		if len(c.edits) == 2 && used[c.edits[1].off] {
			c = cands[0]
		}
		for _, e := range c.edits {
			used[e.off] = true
		}
		all.edits = append(all.edits, c.edits...)
		all.notes = append(all.notes, c.notes...)
	}
	if len(all.notes) < 2 {
		return change{}, false
	}
	slices.SortFunc(all.edits, func(a, b edit) int { return cmp.Compare(a.off, b.off) })
	all.cost = 1
	return all, true
}

// escapeEarlyQuote escapes a quote that ended a string inside its text,
// alone ('It\'s') or with the next one that ends the quoted word
// ("say \"hi\" now"), or gives a raw string the other quote instead, since
// a backslash stays in a raw string's value.
func escapeEarlyQuote(src string, p Problem) []change {
	lit, at, next := p.d.lit, p.off, p.d.other
	if lit.triple {
		return tripleEndsEarly(src, lit, at+1)
	}
	escCost := 1
	if lit.raw {
		escCost = 4
	}
	escNote := func(off int) note {
		return note{kind: "escape-quote", at: off, text: func(pos posFunc) string {
			_, c := pos(off)
			return fmt.Sprintf("escaped the %c at column %d, which ended the string early", lit.q, c)
		}}
	}
	// A quote after a space or an opening bracket or separator opens the
	// next string: the string before it lost its own closing quote, or
	// was closed with the other quote.
	var out []change
	pre, _ := prefixBefore(src, at) // the prefix of that string, as the b of b'O
	if opensString(src, at) {
		escCost += 3
		if k := swappedQuote(src, lit, at-pre); k >= 0 {
			out = append(out, swapQuote(k, lit.q))
		} else if e := trimRightSpace(src, lit.body, at-pre); e > lit.body && strings.IndexByte(",:", src[e-1]) >= 0 {
			c := closeStringAt(e-1, lit.q)
			c.place = &place{lit: &lit, end: at, inBrkt: true}
			out = append(out, c)
		} else if e > lit.body+1 && strings.IndexByte(binaryOps, src[e-1]) >= 0 {
			// Text ending with an operator before a string, as "doc / "src"
			// or "_+"x": the operator joins two strings.
			c := closeStringAt(trimRightSpace(src, lit.body, e-1), lit.q)
			c.place = &place{lit: &lit, end: at, inBrkt: true}
			out = append(out, c)
		} else if src[lit.body] == ' ' {
			// An empty string lost a quote: "" if n == 1 else "s".
			c := closeStringAt(lit.body, lit.q)
			c.place = &place{lit: &lit, end: at, inBrkt: true}
			out = append(out, c)
		}
	}
	// A quote that opens a string after text holding code, as the
	// ', "c after "b: [3, 4] does, or after an operator or a comma ending
	// the text, as the "source after "doc / and the "x after "_+ do (a
	// prefix aside: the b'O after b'01, too), is code's own: escaping it
	// would make that code text.
	if text := strings.TrimRight(src[lit.body:at-pre], " \t"); opensString(src, at) &&
		(strings.ContainsAny(text, "()[]{}=") || text != "" && strings.IndexByte(binaryOps+",", text[len(text)-1]) >= 0 ||
			endsCode(text)) {
		return out
	}
	out = append(out, change{cost: escCost, edits: []edit{insert(at, `\`)}, notes: []note{escNote(at)}})
	if next < 0 {
		return out
	}
	out = append(out, change{cost: escCost, edits: []edit{insert(at, `\`), insert(next, `\`)}, notes: []note{escNote(at), escNote(next)}})
	alt := otherQuote(lit.q)
	if strings.IndexByte(src[lit.body:next], alt) < 0 {
		cost := 2
		if lit.raw {
			cost = 1
		}
		if opensString(src, at) {
			cost += 3
		}
		a := string(alt)
		out = append(out, change{cost: cost, edits: []edit{replace(lit.quote, lit.quote+1, a), replace(next, next+1, a)},
			notes: []note{{kind: "replace-quote", at: lit.quote, text: func(pos posFunc) string {
				_, c := pos(lit.quote)
				_, c2 := pos(at)
				return fmt.Sprintf("changed the quotes of the string at column %d to %s so the %c at column %d no longer ends it", c, a, lit.q, c2)
			}}}})
	}
	return out
}

// endsCode reports whether text, a string's text up to a quote that
// opens a string, ends with code: a dict's key after a comma, as the
// "b, 16: of {8: "b, 16: "h"} does, or a conditional's else, as in
// "I if flags & 1 else "H", or an or or and after one word, as in
// '_le or '_be'.
func endsCode(text string) bool {
	if k := strings.LastIndex(text, ", "); k >= 0 && strings.HasSuffix(text, ":") {
		key := text[k+2 : len(text)-1]
		return key != "" && !strings.ContainsAny(key, " \t")
	}
	if strings.HasSuffix(text, " else") {
		return strings.Contains(text, " if ")
	}
	for _, op := range []string{" or", " and"} {
		if w, ok := strings.CutSuffix(text, op); ok {
			return w != "" && !strings.ContainsAny(w, " \t")
		}
	}
	return false
}

// tripleEndsEarly gives a triple-quoted string that a quoted word inside
// it closed early, as in """Say """hi""" now""", the other quotes, when
// its line ends it with the same quotes and holds none of the other kind.
func tripleEndsEarly(src string, lit strLit, early int) []change {
	qqq := lit.quoteText()
	eol := lineEndFrom(src, early)
	k := strings.LastIndex(src[early:eol], qqq)
	if k < 0 {
		return nil
	}
	last := early + k
	other := strings.Repeat(string(otherQuote(lit.q)), 3)
	if strings.Contains(src[lit.body:last], other) || strings.Count(src[early:last+3], qqq)%2 == 1 {
		return nil
	}
	return []change{{cost: 1, edits: []edit{replace(lit.quote, lit.quote+3, other), replace(last, last+3, other)},
		notes: []note{{kind: "replace-quote", at: lit.quote, text: func(pos posFunc) string {
			_, c := pos(lit.quote)
			_, c2 := pos(last)
			return fmt.Sprintf("changed the quotes at columns %d and %d to %s so the %s inside the text no longer end the string", c, c2, other, qqq)
		}}}}}
}

// removeBOM deletes the byte order mark that starts the block.
func removeBOM() change {
	return change{cost: 1, edits: []edit{replace(0, len(bom), "")}, notes: []note{{kind: "remove-bom", at: 0,
		text: func(posFunc) string { return "removed the byte order mark (U+FEFF) that starts the block" }}}}
}

// binaryOps are the operators that join two strings or a string and a
// value, as "a" + "b", path / "x" and "%s" % v do.
const binaryOps = "+-*/%"

// stringPrefixes are the prefixes a string literal may have, lowercased.
var stringPrefixes = setOf("r", "b", "f", "u", "rb", "br", "fr", "rf")

// opensString reports whether the quote at i follows a space, an opening
// bracket, a separator or an operator, as the quote opening a string does,
// or a prefix after a space, a comma, a parenthesis or an =, as in
// [b'1", b'M'] or message=f"The (a letter after a square bracket is more
// often text, as the u of "M8[u"s]" is).
func opensString(src string, i int) bool {
	if n, ok := prefixBefore(src, i); n > 0 {
		return ok
	}
	return i > 0 && strings.IndexByte(" \t([{,=:+%", src[i-1]) >= 0
}

// prefixBefore returns the length of the letters before the quote at i
// that follow a space, a comma, a parenthesis or an =, as a prefix would,
// and whether they are a string prefix.
func prefixBefore(src string, i int) (n int, ok bool) {
	for k := i - 1; k > 0 && k >= i-2 && strings.IndexByte("rbfuRBFU", src[k]) >= 0; k-- {
		if strings.IndexByte(" \t,(=", src[k-1]) >= 0 {
			return i - k, stringPrefixes[strings.ToLower(src[k:i])]
		}
	}
	return 0, false
}

// isApostrophe reports whether the typographic quote at i sits between
// two letters, as in It’s.
func isApostrophe(src string, i int) bool {
	return i > 0 && i+3 < len(src) && isIdentChar(src[i-1]) && isIdentChar(src[i+3])
}
