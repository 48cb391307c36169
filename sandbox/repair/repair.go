package repair

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Compiler compiles src as a module (top-level await allowed) and returns
// nil when it compiles, or Python's SyntaxError.
type Compiler func(src string) *protocol.SyntaxError

// Options configure Repair.
type Options struct {
	Minor   int      // CPython 3.x minor version in use (10..13+); selects the f-string grammar
	Compile Compiler // required
}

// Fix is one change made to the block, placed at a 1-based line and
// character column of the original block.
type Fix struct {
	Kind    string `json:"kind"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"` // one sentence, starting "line L: "
}

// Result is the outcome of Repair. Source is the code to run: the
// repaired block when Repaired, else the block as given. A block that
// compiled is neither Changed nor Repaired and has no PythonError; a
// refused block is neither, and lists its Problems.
type Result struct {
	Changed     bool                  `json:"changed"`
	Repaired    bool                  `json:"repaired"`
	Source      string                `json:"source"`
	Fixes       []Fix                 `json:"fixes"`
	Problems    []Problem             `json:"problems"`     // left after the repair, or found in a refused block (at most maxListed)
	PythonError *protocol.SyntaxError `json:"python_error"` // the original block's error, nil when it compiled
}

// maxListed caps the problems a Result lists; a block with more is far
// from one small mistake, and the first ones say what is wrong.
const maxListed = 20

// Repair returns src unchanged when it compiles. Otherwise it looks for a
// small repair of its quotes, brackets, f-string braces, escapes or
// indentation that Python compiles, and returns it with a note for every
// change; when there is none it refuses, leaving src unchanged, with the
// problems found.
func Repair(src string, opts Options) (res Result) {
	defer func() {
		// The sandbox must never crash on a block: refuse instead.
		if r := recover(); r != nil {
			res = Result{Source: src, Fixes: []Fix{}, Problems: []Problem{{
				Kind: "internal", Line: 1, Column: 1, Message: fmt.Sprint("repair failed: ", r)}}}
		}
	}()
	return repair(src, opts)
}

// repair is Repair without the guard against panics, so tests see them.
func repair(src string, opts Options) Result {
	res := Result{Source: src, Fixes: []Fix{}, Problems: []Problem{}} // lists, never null in JSON
	if opts.Compile == nil {
		res.Problems = listed(scanRaw(src, opts.Minor, maxListed), src, opts.Minor)
		return res
	}
	perr := opts.Compile(src)
	if perr == nil {
		return res
	}
	e := *perr
	e.Text = strings.TrimRight(e.Text, "\r\n")
	res.PythonError = &e
	// maxListed > maxProblems, so this finds out whether there are too
	// many to try, and enough to list if so.
	probs := scanRaw(src, opts.Minor, maxListed)
	var refusal *Problem
	if len(probs) > 0 && len(probs) <= maxProblems {
		s := newSearcher(src, opts)
		if s.search(src, probs, 0) && s.result != src && s.noted() {
			refusal = s.settle(src)
			fixes := s.fixes(src)
			if refusal == nil {
				refusal = implausible(fixes)
			}
			if refusal == nil {
				refusal = joinsEmptyString(src, s.result)
			}
			if refusal == nil {
				refusal = stringOperand(src, s.result)
			}
			if refusal == nil {
				refusal = introduced(src, s.result, unpackedString, "unpacks a string into names of another count than its characters",
					"which fails when run")
			}
			if refusal == nil {
				res.Changed, res.Repaired = true, true
				res.Source, res.Fixes = s.result, fixes
				return res
			}
		}
	}
	if len(probs) == 0 {
		// Quotes and brackets are fine: an unknown character name or the
		// indentation may be what Python refused.
		fixed, fixes := repairNames(src, e, opts)
		if fixes == nil {
			var fix *Fix
			if fixed, fix, refusal = indentRepair(src, e, opts); fix != nil {
				fixes = []Fix{*fix}
			}
		}
		if fixes != nil {
			res.Changed, res.Repaired = true, true
			res.Source, res.Fixes = fixed, fixes
			return res
		}
	}
	res.Problems = listed(probs, src, opts.Minor)
	if refusal != nil {
		// Why a repair that Python would run was not made comes first.
		res.Problems = append([]Problem{*refusal}, res.Problems[:min(len(res.Problems), maxListed-1)]...)
	}
	return res
}

// A repair that moves brackets around more than this is guesswork about a
// block that is far from one small mistake (x = (]][[( compiles as
// ()[[()]] after five such edits), so the block is refused instead: a wrong
// program that runs is worse than a clear refusal. Other fixes (quotes,
// escapes, braces) are local and may repeat over a whole block, as smart
// quotes do.
const (
	maxBracketFixes        = 4
	maxBracketFixesPerLine = 3
)

// implausible returns the problem that refuses a repair going beyond
// those bounds, or nil when it stays within them.
func implausible(fixes []Fix) *Problem {
	total := 0
	perLine := map[int]int{}
	for _, f := range fixes {
		switch f.Kind {
		case fixInsertCloser, fixReplaceCloser, fixRemoveCloser:
			total++
			if perLine[f.Line]++; perLine[f.Line] > maxBracketFixesPerLine {
				return &Problem{Kind: KindTooManyBracketChanges, Line: f.Line, Column: f.Column,
					Message: fmt.Sprintf("more than %d bracket changes needed on one line; not repaired", maxBracketFixesPerLine)}
			}
			if total > maxBracketFixes {
				return &Problem{Kind: KindTooManyBracketChanges, Line: f.Line, Column: f.Column,
					Message: fmt.Sprintf("more than %d bracket changes needed; not repaired", maxBracketFixes)}
			}
		}
	}
	return nil
}

// listed finishes the problems a Result shows, at most maxListed, as a
// list even when there are none.
func listed(probs []Problem, src string, minor int) []Problem {
	if len(probs) > maxListed {
		probs = probs[:maxListed]
	}
	return append([]Problem{}, finish(probs, newLineIndex(src), minor)...)
}

func lineMessage(line int, text string) string {
	return fmt.Sprintf("line %d: %s", line, text)
}

// joinsEmptyString returns the problem that refuses a repair leaving an
// empty string right after another string, as in ('") and x.endswith('""),
// where a quote was moved rather than restored: nobody writes 'a'"".
// Blocks that held such a pair already keep them.
func joinsEmptyString(orig, repaired string) *Problem {
	return introduced(orig, repaired, emptyAfterString, "leaves an empty string right after another string", "which nobody writes")
}

// introduced returns the problem that refuses a repair when find finds in
// the repaired block what it does not find in the original one, or finds
// it on a line the repair changed: what the repair does there (saying
// where) and why that is wrong.
func introduced(orig, repaired string, find func(string) int, does, why string) *Problem {
	at := find(repaired)
	if at < 0 {
		return nil
	}
	if find(orig) >= 0 {
		line := repaired[lineStartOf(repaired, at):lineEndFrom(repaired, at)]
		if strings.Contains("\n"+orig+"\n", "\n"+line+"\n") {
			return nil // a line the repair left as it was
		}
	}
	p := Problem{Kind: KindAmbiguous, off: at}
	p.Line, p.Column = newLineIndex(repaired).pos(at)
	p.Message = fmt.Sprintf("the only repair found %s at line %d, column %d of the repaired block, %s; a quote is missing elsewhere; not repaired", does, p.Line, p.Column, why)
	return &p
}

// emptyAfterString returns the offset of the first empty string literal
// that directly follows another string literal in src, or -1.
func emptyAfterString(src string) int {
	for k := 0; k < len(src); k++ {
		switch c := src[k]; {
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case isQuote(c):
			e := skipString(src, k, len(src))
			if e+1 < len(src) && isQuote(src[e]) && src[e+1] == src[e] && !hasTriple(src, e, src[e]) && e > k && src[e-1] == c {
				return e
			}
			k = e - 1
		}
	}
	return -1
}

// stringOperand returns the problem that refuses a repair leaving a
// string literal called, as in '...['\n (np.nan, 1, 1), where a quote
// closed a string before the argument list it names (Python warns that
// str is not callable), or the left operand of an operator str lacks, as
// in r"\[Errno 2] .*"/foo, where a quote meant as text was taken as the
// closer. Blocks that held such a use already keep them.
func stringOperand(orig, repaired string) *Problem {
	return introduced(orig, repaired, oddStringUse, "calls a string, or uses it with an operator strings lack,", "which fails when run")
}

// unpackedString returns the offset after the first string literal in
// src that is the whole value assigned to several names and holds another
// number of characters, as '0, True in trim, unique = '0, True closed at
// the line's end does, or -1. Only strings without escapes are counted.
func unpackedString(src string) int {
	for i := 0; i < len(src); i = lineEndFrom(src, i) + 1 {
		line := src[i:lineEndFrom(src, i)]
		eq := strings.Index(line, " = ")
		if eq < 0 {
			continue
		}
		names := plainNames(line[:eq])
		v := strings.TrimRight(line[eq+3:], " \t\r")
		if names < 2 || len(v) < 2 || !isQuote(v[0]) || v[len(v)-1] != v[0] || hasTriple(v, 0, v[0]) ||
			strings.ContainsAny(v[1:len(v)-1], `\'"`) {
			continue
		}
		if names != utf8.RuneCountInString(v[1:len(v)-1]) {
			return i + eq + 3 + len(v)
		}
	}
	return -1
}

// numberAdded reports whether src from n on adds a number literal, a
// whole operand, to what comes before, as + 1 does after "v".
func numberAdded(src string, n int) bool {
	m := plusOperand(src, n, len(src))
	return m >= 0 && isDigit(src[m]) && wholeOperandAfter(src, numberEnd(src, m), len(src))
}

// strOperators are the binary operators str does not implement (+, *
// and % it does; comparisons work on any object).
var strOperators = []string{"-", "/", "@", "&", "|", "^", "**", "<<", ">>"}

// oddStringUse returns the offset after the first closed string literal
// in src that is called, is the left operand of one of strOperators or
// has a number literal added to it, or -1. Inside brackets the call's
// parenthesis may stand on a later line.
func oddStringUse(src string) int {
	depth := 0
	for k := 0; k < len(src); k++ {
		switch c := src[k]; {
		case c == '#':
			k = lineEndFrom(src, k) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
		case isQuote(c):
			e := skipString(src, k, len(src))
			if e <= k+1 || src[e-1] != c {
				k = e - 1
				continue
			}
			n := e
			for n < len(src) && (src[n] == ' ' || src[n] == '\t' || depth > 0 && (src[n] == '\n' || src[n] == '\r')) {
				n++
			}
			if n < len(src) && src[n] == '(' {
				return e
			}
			// After an operator of the same precedence, as in
			// tmp_path / "dist" / name, the string is the right operand
			// of the one before.
			b := k
			for b > 0 && isIdentChar(src[b-1]) {
				b-- // the prefix, as r in r"..."
			}
			for b > 0 && (src[b-1] == ' ' || src[b-1] == '\t') {
				b--
			}
			if b > 0 && strings.IndexByte("*/%@", src[b-1]) >= 0 {
				k = e - 1
				continue
			}
			for _, op := range strOperators {
				if strings.HasPrefix(src[n:], op) && !strings.HasPrefix(src[n:], "->") {
					return e
				}
			}
			if numberAdded(src, n) {
				return e // as in "2013T00:00"+0000 for "2013T00:00+0000"
			}
			k = e - 1
		}
	}
	return -1
}
