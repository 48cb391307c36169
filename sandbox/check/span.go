package check

import (
	"sort"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// An edit of a Python file known to compile is checked on the statements
// it touches: the top-level statements around it, or, inside a class at
// the top level, the statements of the class's body around it, compiled
// under a stand-in "class _:" line. For a file that compiled before the
// edit, the file compiles after it exactly when those statements compile
// alone, as long as the edit leaves them on lines of their own, at their
// indentation, and the file has none of the things that tie statements
// together (see chunkable). TestChunkSound breaks the standard library's
// files thousands of ways to hold that to CPython's verdict.

// Starts are src's logical lines outside brackets (repair.LineStarts),
// which an Edit of src may carry to spare the scan of a file checked
// before.
func Starts(src string, minor int) []repair.LineStart { return repair.LineStarts(src, minor) }

// chunkable reports whether src's validity is that of its statements
// checked apart. It is not when src has a coding declaration (a chunk
// would lose it), a __future__ import (which must come first, and one
// changes the grammar) or a global statement (in a module or class body,
// an assignment before one is an error), looked for conservatively.
func chunkable(src string) bool {
	if strings.HasPrefix(src, bom) || strings.Contains(src, "__future__") || hasGlobalStatement(src) {
		return false
	}
	head := strings.SplitN(src, "\n", 3)
	for i := 0; i < len(head) && i < 2; i++ {
		if hasCodingCookie(head[i]) {
			return false
		}
	}
	return true
}

// hasCodingCookie reports whether line declares the file's encoding, as
// PEP 263 reads it (on one of the first two lines).
func hasCodingCookie(line string) bool {
	t := strings.TrimLeft(line, " \t\f")
	if !strings.HasPrefix(t, "#") {
		return false
	}
	for {
		i := strings.Index(t, "coding")
		if i < 0 || i+6 >= len(t) {
			return false
		}
		if t[i+6] == ':' || t[i+6] == '=' {
			return true
		}
		t = t[i+6:]
	}
}

// hasGlobalStatement reports whether a line of src starts with "global"
// followed by a blank or a backslash, in code or not.
func hasGlobalStatement(src string) bool {
	for at := 0; ; {
		i := strings.Index(src[at:], "global")
		if i < 0 {
			return false
		}
		i += at
		at = i + len("global")
		start := strings.LastIndexByte(src[:i], '\n') + 1
		if strings.Trim(src[start:i], " \t") == "" && at < len(src) && strings.IndexByte(" \t\\", src[at]) >= 0 {
			return true
		}
	}
}

// continuation reports whether text starts with a keyword that continues
// the statement before it (else, elif, except, finally), never a
// statement of its own.
func continuation(text string) bool {
	for _, kw := range []string{"else", "elif", "except", "finally"} {
		if rest, ok := strings.CutPrefix(text, kw); ok && (rest == "" || !isNameChar(rest[0])) {
			return true
		}
	}
	return false
}

func isNameChar(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80
}

// boundaries are the offsets of the lines of the starts at indentation
// indent at which a new statement begins: not a clause continuing the
// one before, nor the definition after a decorator.
func boundaries(src string, starts []repair.LineStart, indent int) []int {
	out := make([]int, 0, len(starts)/4)
	prevDecorator := false
	for _, s := range starts {
		if s.Indent != indent {
			continue
		}
		if !prevDecorator && !continuation(src[s.Off:min(len(src), s.Off+8)]) {
			out = append(out, lineBegin(src, s.Off))
		}
		prevDecorator = src[s.Off] == '@'
	}
	return out
}

// around is the span from the last of bounds at or before at to the
// first at or after end (or last).
func around(bounds []int, at, end, last, first int) (int, int) {
	from := first
	if i := sort.SearchInts(bounds, at+1) - 1; i >= 0 {
		from = max(from, bounds[i])
	}
	to := last
	if j := sort.SearchInts(bounds, end); j < len(bounds) && bounds[j] < last {
		to = bounds[j]
	}
	return from, to
}

// span is the part of an edited file its check compiles: After[from:to],
// under header (the stand-in for the statement whose body it is, "" at
// the top level), on the file's line numbers.
type span struct {
	from, to int // in After
	header   string
}

// source is what is compiled for the span.
func (sp span) source(after string) string {
	pad := lineOf(after, sp.from) - 1
	if sp.header != "" {
		pad--
	}
	return strings.Repeat("\n", pad) + sp.header + after[sp.from:sp.to]
}

// spanOf is the span of e to check, and whether there is one.
func spanOf(e Edit, minor int) (span, bool) {
	if !chunkable(e.Before) || !chunkable(e.After) {
		return span{}, false
	}
	end := e.At + e.OldLen
	from, to := around(boundaries(e.Before, e.Starts, 0), e.At, end, len(e.Before), 0)
	sp := span{from: from}
	if body, ok := classBody(e, from, to); ok {
		w := body[0].Indent
		in, out := around(boundaries(e.Before, body, w), e.At, end, to, lineBegin(e.Before, body[0].Off))
		if e.At >= in && inBody(e.After[in:max(in, out-e.OldLen+e.NewLen)], w, minor) {
			sp, to = span{from: in, header: "class _:\n"}, out
		}
	}
	sp.to = to - e.OldLen + e.NewLen
	if sp.to < sp.from || sp.to < len(e.After) && (sp.to == 0 || e.After[sp.to-1] != '\n') {
		return span{}, false
	}
	return sp, true
}

// inBody reports whether the logical lines of text, the statements of a
// class's body after an edit, stay in it: the first at the body's
// indentation w, none to the left of it.
func inBody(text string, w, minor int) bool {
	starts := Starts(text, minor)
	if len(starts) == 0 || starts[0].Indent != w {
		return false
	}
	for _, s := range starts {
		if s.Indent < w {
			return false
		}
	}
	return true
}

// lineBegin is the offset of the line holding off.
func lineBegin(src string, off int) int { return strings.LastIndexByte(src[:off], '\n') + 1 }

// classBody is the starts of the body of the class statement that
// e.Before[from:to] holds (decorators and all), when that is one class
// statement with a body on lines of its own; ok is false otherwise.
func classBody(e Edit, from, to int) (body []repair.LineStart, ok bool) {
	i := sort.Search(len(e.Starts), func(i int) bool { return e.Starts[i].Off >= from })
	for i < len(e.Starts) && e.Starts[i].Off < to && e.Before[e.Starts[i].Off] == '@' {
		i++ // its decorators
	}
	if i >= len(e.Starts) || e.Starts[i].Indent != 0 || !strings.HasPrefix(e.Before[e.Starts[i].Off:], "class") ||
		len(e.Before) <= e.Starts[i].Off+5 || isNameChar(e.Before[e.Starts[i].Off+5]) {
		return nil, false
	}
	j := i + 1
	for j < len(e.Starts) && e.Starts[j].Off < to {
		if e.Starts[j].Indent == 0 {
			return nil, false // another top-level statement
		}
		j++
	}
	if j == i+1 {
		return nil, false // a body on the class's line
	}
	return e.Starts[i+1 : j], true
}

// startsAfter are e.After's Starts: Before's outside the span, and a scan
// of the span alone (it starts a statement, outside any bracket or
// string, and compiles, so the text after it reads as before).
func (sp span) startsAfter(e Edit, minor int) []repair.LineStart {
	end := sp.to - e.NewLen + e.OldLen // the span's end in Before
	out := make([]repair.LineStart, 0, len(e.Starts)+8)
	for _, s := range e.Starts {
		if s.Off < sp.from {
			out = append(out, s)
		}
	}
	for _, s := range Starts(e.After[sp.from:sp.to], minor) {
		out = append(out, repair.LineStart{Off: sp.from + s.Off, Indent: s.Indent})
	}
	for _, s := range e.Starts {
		if s.Off >= end {
			out = append(out, repair.LineStart{Off: s.Off - e.OldLen + e.NewLen, Indent: s.Indent})
		}
	}
	return out
}

// repairSpan repairs the span's statements alone and returns src with
// them repaired ("" when there is no repair).
func (r *pyRun) repairSpan(src string, sp span) (string, repair.Result) {
	text := sp.source(src)
	head := text[:len(text)-(sp.to-sp.from)]
	fixed, rep := r.repair(text)
	if fixed == "" || !strings.HasPrefix(fixed, head) || sp.to < len(src) && !strings.HasSuffix(fixed, "\n") {
		return "", rep
	}
	return src[:sp.from] + fixed[len(head):] + src[sp.to:], rep
}

// lineOf is the 1-based line of byte offset off in src.
func lineOf(src string, off int) int { return 1 + strings.Count(src[:off], "\n") }
