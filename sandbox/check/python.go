package check

import (
	"fmt"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
)

// Compile compiles src as the Python file name (a module, not a block:
// no top-level await) with the caller's CPython: nil when it compiles,
// else Python's error. known is false when the answer is not at hand
// yet: the check then stops and returns that source as the one it needs.
type Compile func(name, src string) (err *protocol.SyntaxError, known bool)

// Parse parses src as the data kind (JSON, TOML or YAML), as ParseData
// does: nil when it parses; unchecked says why it was not parsed.
type Parse func(kind Kind, src string) (p *Problem, unchecked string)

// Checker checks texts by their file's kind. Python files need Compile;
// without it they are not checked. Data files are parsed by Parse, or
// ParseData in this process when it is nil.
type Checker struct {
	Compile Compile
	Parse   Parse
	Minor   int    // the CPython's 3.minor: the repair engine's grammar
	Version string // "3.13", for Checked
}

// Verdict is one text's check.
type Verdict struct {
	// Checked names the checker: "python 3.13", "json", "toml", "yaml";
	// "" when the file is not checked.
	Checked string
	Problem *Problem // nil: it parses
	// Unchecked says why the text was not parsed (too large, nested too
	// deep, past the parse's bounds); Problem is then nil.
	Unchecked string
	// Error is Problem for people, as for a block: the message, the
	// place (for Python, the first wrong quote or bracket the repair
	// engine found) and the line with a caret.
	Error string
	// Fixed is the repair engine's exact repair of a Python text that
	// does not compile (Python compiles it), "" when there is none; Fixes
	// are its changes, one sentence each ("line 3: added ')' ...").
	Fixed string
	Fixes []string
}

// Label is the Checked name of kind.
func (c Checker) Label(kind Kind) string {
	if kind == Python && c.Version != "" {
		return "python " + c.Version
	}
	return string(kind)
}

// Text checks src, the text of the file name; fix also looks for the
// repair of a Python text that does not compile. need is the source the
// check needs compiled first ("" when it is done).
func (c Checker) Text(name, src string, fix bool) (v Verdict, need string) {
	kind := KindOf(name)
	if kind == "" || kind == Python && c.Compile == nil {
		return Verdict{}, ""
	}
	v.Checked = c.Label(kind)
	if kind != Python {
		if v.Problem, v.Unchecked = c.parse(kind, src); v.Problem != nil {
			v.Error = caretError(src, v.Problem)
		}
		return v, ""
	}
	r := &pyRun{c: c, name: name}
	e, ok := r.compile(src)
	if !ok {
		return v, r.need
	}
	if e == nil {
		return v, ""
	}
	v.Problem = &Problem{Line: e.Line, Column: e.Column, Message: e.Message}
	v.Error = caretError(src, v.Problem)
	if !fix {
		return v, ""
	}
	fixed, rep := r.repair(src)
	if r.need != "" {
		return v, r.need
	}
	if fixed == "" {
		v.Error = rep.Error()
		return v, ""
	}
	v.Fixed, v.Fixes = fixed, fixNotes(rep)
	return v, ""
}

// parse parses a data text with c.Parse, else ParseData.
func (c Checker) parse(kind Kind, src string) (*Problem, string) {
	if c.Parse != nil {
		return c.Parse(kind, src)
	}
	return ParseData(kind, src)
}

// pyRun is one Python check: the compiles it asks for, and the first one
// not answered yet.
type pyRun struct {
	c    Checker
	name string
	need string
}

func (r *pyRun) compile(src string) (*protocol.SyntaxError, bool) {
	e, ok := r.c.Compile(r.name, src)
	if !ok && r.need == "" {
		r.need = src
	}
	return e, ok
}

// repair asks the repair engine for an exact repair of src: the repaired
// text, "" when there is none (or a compile is needed first). A byte
// order mark, which a file may start with, is kept out of its way.
func (r *pyRun) repair(src string) (string, repair.Result) {
	mark := ""
	if strings.HasPrefix(src, bom) {
		mark, src = bom, src[len(bom):]
	}
	rep := repair.Repair(src, repair.Options{Minor: r.c.Minor, Compile: func(s string) *protocol.SyntaxError {
		e, ok := r.compile(mark + s)
		if !ok {
			return &protocol.SyntaxError{Message: "not compiled yet"}
		}
		return e
	}})
	if r.need != "" || !rep.Repaired {
		return "", rep
	}
	return mark + rep.Source, rep
}

// fixNotes are a repair's changes as its note lists them.
func fixNotes(rep repair.Result) []string {
	notes := make([]string, 0, len(rep.Fixes))
	for _, f := range rep.Fixes {
		notes = append(notes, f.Message)
	}
	return notes
}

// caretError is a parser's problem for people: the place and message,
// then the line with a caret under the column.
func caretError(src string, p *Problem) string {
	if p.Line <= 0 {
		return p.Message
	}
	msg := fmt.Sprintf("line %d", p.Line)
	if p.Column > 0 {
		msg += fmt.Sprintf(", column %d", p.Column)
	}
	msg += ": " + p.Message
	lines := strings.SplitN(src, "\n", p.Line+1)
	if p.Line > len(lines) {
		return msg
	}
	text := strings.TrimRight(lines[p.Line-1], "\r")
	if strings.TrimSpace(text) == "" {
		return msg
	}
	msg += "\n    " + text
	if p.Column > 0 {
		var pad strings.Builder
		n := 0
		for _, ch := range text {
			if n == p.Column-1 {
				break
			}
			if ch == '\t' {
				pad.WriteByte('\t')
			} else {
				pad.WriteByte(' ')
			}
			n++
		}
		msg += "\n    " + pad.String() + "^"
	}
	return msg
}
