package repair

import "fmt"

// SyntaxError is Python's report on source that does not compile.
type SyntaxError struct {
	Message string `json:"message"` // e.g. "unterminated string literal (detected at line 1)"
	Line    int    `json:"line"`
	Column  int    `json:"column"` // 1-based, characters
	Text    string `json:"text"`   // the offending line, may be empty
}

// Compiler compiles src as a module (top-level await allowed) and returns
// nil when it compiles, or Python's SyntaxError.
type Compiler func(src string) *SyntaxError

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
	Changed     bool         `json:"changed"`
	Repaired    bool         `json:"repaired"`
	Source      string       `json:"source"`
	Fixes       []Fix        `json:"fixes"`
	Problems    []Problem    `json:"problems"`     // left after the repair, or found in a refused block (at most maxListed)
	PythonError *SyntaxError `json:"python_error"` // the original block's error, nil when it compiled
}

// maxListed caps the problems a Result lists; a block with more is far
// from one small mistake, and the first ones say what is wrong.
const maxListed = 20

// Repair returns src unchanged when it compiles. Otherwise it looks for a
// small repair of its quotes, brackets, f-string braces and escapes that
// Python compiles, and returns it with a note for every change; when there
// is none it refuses, leaving src unchanged, with the problems found.
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
	res := Result{Source: src, Fixes: []Fix{}, Problems: []Problem{}}
	if opts.Compile == nil {
		res.Problems = listed(scanRaw(src, opts.Minor, maxListed), src, opts.Minor)
		return res
	}
	res.PythonError = opts.Compile(src)
	if res.PythonError == nil {
		return res
	}
	// maxListed > maxProblems, so this finds out whether there are too
	// many to try, and enough to list if so.
	probs := scanRaw(src, opts.Minor, maxListed)
	if len(probs) > 0 && len(probs) <= maxProblems {
		s := newSearcher(src, opts)
		if s.search(src, probs, 0) && s.result != src && s.noted() && s.settle(src) {
			if fixes := s.fixes(src); plausible(fixes) {
				res.Changed, res.Repaired = true, true
				res.Source, res.Fixes = s.result, fixes
				return res
			}
		}
	}
	res.Problems = listed(probs, src, opts.Minor)
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

// plausible reports whether a repair stays within those bounds.
func plausible(fixes []Fix) bool {
	total := 0
	perLine := map[int]int{}
	for _, f := range fixes {
		switch f.Kind {
		case fixInsertCloser, fixReplaceCloser, fixRemoveCloser:
			total++
			if perLine[f.Line]++; perLine[f.Line] > maxBracketFixesPerLine {
				return false
			}
		}
	}
	return total <= maxBracketFixes
}

// listed finishes the problems a Result shows, at most maxListed.
func listed(probs []Problem, src string, minor int) []Problem {
	if len(probs) > maxListed {
		probs = probs[:maxListed]
	}
	return finish(probs, newLineIndex(src), minor)
}

func lineMessage(line int, text string) string {
	return fmt.Sprintf("line %d: %s", line, text)
}
