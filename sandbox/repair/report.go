package repair

import (
	"fmt"
	"strings"
)

// maxNoted is how many fixes the note spells out before summing up.
const maxNoted = 5

// Note says what was repaired: "Repaired this block.", Python's refusal
// and each fix; "" when the block was not repaired.
func (r Result) Note() string { return r.NoteWhen("") }

// NoteWhen is Note with when, such as "before running it", added to its
// first sentence: "Repaired this block before running it." The caller
// says when, as only it knows what it does with the block.
func (r Result) NoteWhen(when string) string {
	if !r.Repaired {
		return ""
	}
	var b strings.Builder
	b.WriteString("Repaired this block")
	if when != "" {
		b.WriteString(" " + when)
	}
	b.WriteString(".")
	if r.PythonError != nil {
		fmt.Fprintf(&b, " Python refused it with %s", r.PythonError.Message)
	}
	for i, f := range r.Fixes {
		if i == maxNoted {
			fmt.Fprintf(&b, "\n  and %d more", len(r.Fixes)-maxNoted)
			break
		}
		fmt.Fprintf(&b, "\n  %s", f.Message)
	}
	return b.String()
}

// Error is the message for a block that will not run: Python's own
// message, then the first wrong quote, bracket or escape (else Python's
// place) with its line and a caret under its column. It is "" for a block that can run.
func (r Result) Error() string {
	if r.Repaired || r.PythonError == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SyntaxError: %s", r.PythonError.Message)
	line, col, text := r.PythonError.Line, r.PythonError.Column, r.PythonError.Text
	if len(r.Problems) > 0 {
		p := r.Problems[0]
		line, col = p.Line, p.Column
		text = sourceLine(r.Source, line)
		fmt.Fprintf(&b, "\nline %d, column %d: %s", line, col, p.Message)
	} else if line > 0 {
		// Nothing the repair handles: Python's own message and where.
		fmt.Fprintf(&b, "\nline %d, column %d", line, col)
		if src := sourceLine(r.Source, line); src != "" {
			text = src
		}
	}
	text = strings.TrimRight(text, "\r\n")
	if text != "" && col > 0 {
		fmt.Fprintf(&b, "\n    %s\n    %s^", text, caretPad(text, col))
	}
	return b.String()
}

// sourceLine returns line n (1-based) of src, or "".
func sourceLine(src string, n int) string {
	idx := newLineIndex(src)
	if n < 1 || n > len(idx.starts) {
		return ""
	}
	return idx.text(n - 1)
}

// caretPad is the indentation that puts a caret under column col of text,
// keeping tabs so the caret lines up however tabs are shown.
func caretPad(text string, col int) string {
	var b strings.Builder
	n := 0
	for _, r := range text {
		if n == col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		n++
	}
	for ; n < col-1; n++ {
		b.WriteByte(' ')
	}
	return b.String()
}
