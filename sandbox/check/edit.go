package check

import (
	"fmt"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// Edit is one replacement patch() is about to write: After is Before with
// OldLen bytes at At replaced by NewLen bytes.
type Edit struct {
	Name               string // the file, as the caller named it
	Before, After      string
	At, OldLen, NewLen int
	// BeforeValid says Before is known to parse (this session checked
	// that very text), which spares compiling it, and lets a Python edit
	// be checked on the top-level statements it touches alone.
	BeforeValid bool
	// Starts are Before's Starts when the caller kept them (nil: the
	// check scans Before).
	Starts []repair.LineStart
}

// Decision is what patch() does with an Edit.
type Decision struct {
	Checked string // the checker, "" when the file is not checked
	// Write is whether to write Text (After, or its repair); Refused says
	// why not, for people (the parser's message, the line and a caret).
	Write   bool
	Text    string
	Refused string
	// Fixes are the repair engine's changes to After, when Text is its
	// repair.
	Fixes []string
	// Valid says Text parses. Written, a text that does not parse is the
	// edit of a file that did not parse before either; Invalid is then
	// its problem, for people.
	Valid   bool
	Invalid string
	// Starts are Text's Starts when the check found them without a scan
	// of the whole text (a Python edit checked on its statements), for
	// the next edit of the file; else nil.
	Starts []repair.LineStart
}

// Decide checks an edit: a text that parses is written; one that does
// not is written when Before did not parse either (the edit may be
// part of the fix), else, for Python, replaced by the repair engine's
// exact repair, else refused. need is the source to compile first, as
// for Text.
func (c Checker) Decide(e Edit) (d Decision, need string) {
	kind := KindOf(e.Name)
	if kind == "" || kind == Python && c.Compile == nil {
		return Decision{Write: true, Text: e.After}, ""
	}
	d.Checked = c.Label(kind)
	if kind != Python {
		p, unchecked := c.parse(kind, e.After)
		switch {
		case unchecked != "":
			d.Refused = fmt.Sprintf("the edit cannot be checked (%s); nothing was written (check=False writes it unchecked)", unchecked)
		case p == nil:
			d.Write, d.Text, d.Valid = true, e.After, true
		case !e.BeforeValid && !c.parsed(kind, e.Before):
			d.Write, d.Text, d.Invalid = true, e.After, caretError(e.After, p)
		default:
			d.Refused = fmt.Sprintf("the edit would make the file invalid %s (it parsed before); nothing was written:\n%s",
				strings.ToUpper(string(kind)), caretError(e.After, p))
		}
		return d, ""
	}
	r := &pyRun{c: c, name: e.Name}
	var sp span
	chunked := false
	if e.BeforeValid {
		if e.Starts == nil {
			e.Starts = Starts(e.Before, c.Minor)
		}
		sp, chunked = spanOf(e, c.Minor)
	}
	if chunked {
		err, ok := r.compile(sp.source(e.After))
		if !ok {
			return d, r.need
		}
		if err == nil {
			d.Write, d.Text, d.Valid, d.Starts = true, e.After, true, sp.startsAfter(e, c.Minor)
			return d, ""
		}
	}
	full, ok := r.compile(e.After)
	if !ok {
		return d, r.need
	}
	if full == nil {
		d.Write, d.Text, d.Valid = true, e.After, true
		return d, ""
	}
	if !e.BeforeValid {
		before, ok := r.compile(e.Before)
		if !ok {
			return d, r.need
		}
		if before != nil {
			d.Write, d.Text = true, e.After
			d.Invalid = "SyntaxError: " + caretError(e.After, &Problem{Line: full.Line, Column: full.Column, Message: full.Message})
			return d, ""
		}
	}
	// It compiled before: the edit broke it.
	var fixed string
	var rep repair.Result
	if chunked {
		if fixed, rep = r.repairSpan(e.After, sp); fixed == "" {
			// Python's own message is the whole file's, with the first
			// wrong delimiter the repair found in the chunk (on the
			// file's lines).
			rep = repair.Result{Source: e.After, PythonError: full, Problems: rep.Problems}
		}
	} else {
		fixed, rep = r.repair(e.After)
	}
	if r.need != "" {
		return d, r.need
	}
	if fixed != "" {
		d.Write, d.Text, d.Valid, d.Fixes = true, fixed, true, fixNotes(rep)
		return d, ""
	}
	d.Refused = fmt.Sprintf("the edit would make the file invalid Python (it compiled before), and the repair engine has no exact fix; nothing was written:\n%s",
		rep.Error())
	return d, ""
}

// parsed reports whether the data text src is known to parse.
func (c Checker) parsed(kind Kind, src string) bool {
	p, unchecked := c.parse(kind, src)
	return p == nil && unchecked == ""
}
