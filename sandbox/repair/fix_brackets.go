package repair

import (
	"fmt"
	"strings"
)

// The kinds of the fixes that move brackets.
const (
	fixInsertCloser  = "insert-closer"
	fixReplaceCloser = "replace-closer"
	fixRemoveCloser  = "remove-closer"
)

// closerNote explains a closer inserted at at for the bracket at opener.
func closerNote(at, opener int, src string) note {
	o := src[opener]
	return note{kind: fixInsertCloser, at: at, text: func(pos posFunc) string {
		_, c := pos(at)
		l, _ := pos(opener)
		return fmt.Sprintf("added '%c' at column %d to close '%c' from line %d", closerOf(o), c, o, l)
	}}
}

// closeAllAtEnd closes every bracket left open at the end of the block.
func closeAllAtEnd(src string, unclosed []Problem) change {
	at := unclosed[0].d.at
	var text []byte
	var notes []note
	for i := len(unclosed) - 1; i >= 0; i-- {
		o := unclosed[i].off
		text = append(text, closerOf(src[o]))
		notes = append(notes, closerNote(at, o, src))
	}
	c := change{cost: 2, edits: []edit{insert(at, string(text))}, notes: notes}
	if len(unclosed) == 1 {
		c.place = &place{opener: unclosed[0].off, end: at}
	}
	return c
}

// closeOnOpenerLine closes a bracket at the end of the line that opened
// it, before that line's final colon, as in "if f(x:", or before an "as",
// as in "with open(name as f:".
func closeOnOpenerLine(src string, p Problem) []change {
	e := codeEnd(src, p.off)
	if e <= p.off {
		return nil
	}
	closer := string(closerOf(p.d.ch))
	at := []int{e}
	if src[e-1] == ':' || src[e-1] == ',' {
		at = append(at, e-1)
	}
	if k := strings.Index(src[p.off:e], " as "); k > 0 {
		at = append(at, p.off+k)
	}
	// Before the colon of a compound statement, as in class E(Exception: pass,
	// or the = of an assignment, as in table[6 = "six".
	line := src[lineStartOf(src, p.off):p.off]
	if w := strings.TrimLeft(line, " \t"); statementKeywords[w[:wordEnd(w, 0)]] || colonKeywords[w[:wordEnd(w, 0)]] {
		if k := strings.IndexByte(src[p.off:e], ':'); k > 0 && p.off+k != e-1 {
			at = append(at, trimRightSpace(src, p.off, p.off+k))
		}
	}
	if k := strings.Index(src[p.off:e], " = "); k > 0 && !strings.ContainsAny(line, "=(") {
		at = append(at, p.off+k)
	}
	var out []change
	for _, a := range at {
		out = append(out, change{cost: 3, edits: []edit{insert(a, closer)}, notes: []note{closerNote(a, p.off, src)},
			place: &place{opener: p.off, end: a}})
	}
	return out
}

// closeBeforeStatement closes the brackets a new statement cut off, at the
// end of the code before it (or before that code's final colon).
func closeBeforeStatement(src string, p Problem) []change {
	at := p.d.at
	build := func(at, cost int) change {
		var text []byte
		var notes []note
		for i := len(p.d.closers) - 1; i >= 0; i-- {
			o := p.d.closers[i]
			text = append(text, closerOf(src[o]))
			notes = append(notes, closerNote(at, o, src))
		}
		c := change{cost: cost, edits: []edit{insert(at, string(text))}, notes: notes}
		if len(p.d.closers) == 1 {
			c.place = &place{opener: p.d.closers[0], end: at}
		}
		return c
	}
	out := []change{build(at, 2)}
	if at > 0 && src[at-1] == ':' && at-1 > p.d.closers[len(p.d.closers)-1] {
		out = append(out, build(at-1, 2))
	}
	if len(p.d.closers) == 1 {
		// Or on the bracket's own line, as in def f(: before a docstring.
		o := p.d.closers[0]
		if lineEndFrom(src, o) < at {
			out = append(out, closeOnOpenerLine(src, Problem{off: o, d: detail{ch: src[o]}})...)
		}
	}
	return out
}

// fixMismatch proposes replacing a wrong closer with the right one,
// inserting the right one before it (its own opener is further out), or
// removing it.
func fixMismatch(src string, p Problem) []change {
	at, o := p.off, p.d.other
	want := closerOf(src[o])
	replaceIt := change{cost: 2, edits: []edit{replace(at, at+1, string(want))}, notes: []note{{kind: fixReplaceCloser, at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			l, _ := pos(o)
			return fmt.Sprintf("replaced '%c' at column %d with '%c' to match '%c' from line %d", p.d.ch, c, want, src[o], l)
		}}}}
	insertIt := change{cost: 2, edits: []edit{insert(at, string(want))}, notes: []note{closerNote(at, o, src)},
		place: &place{opener: o, end: at}}
	var out []change
	if lineEndFrom(src, o) < at {
		// The inner bracket may close on its own line, as in
		// b=[1, 2, / c=3, / ): at its end, before a trailing comma.
		out = closeOnOpenerLine(src, Problem{off: o, d: detail{ch: src[o]}})
	}
	removeIt := change{cost: 3, edits: []edit{replace(at, at+1, "")}, notes: []note{{kind: fixRemoveCloser, at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			l, _ := pos(o)
			return fmt.Sprintf("removed the '%c' at column %d, which did not match '%c' from line %d", p.d.ch, c, src[o], l)
		}}}}
	return append(out, replaceIt, insertIt, removeIt)
}

// removeCloser proposes deleting a closer that has no opener.
func removeCloser(p Problem) change {
	at := p.off
	return change{cost: 2, edits: []edit{replace(at, at+1, "")}, notes: []note{{kind: fixRemoveCloser, at: at,
		text: func(pos posFunc) string {
			_, c := pos(at)
			return fmt.Sprintf("removed the unmatched '%c' at column %d", p.d.ch, c)
		}}}}
}
