package repair

// TopLevelStarts returns the byte offsets, in order, of the lines of src
// that begin a logical line at indentation 0, as the tokenizer of CPython
// 3.minor reads src: not blank, not a comment, not inside a string, an
// open bracket or a backslash continuation. For source that compiles,
// these are where its top-level statements begin, and the clauses that
// continue one at indentation 0 (else, elif, except, finally) and the
// definitions that follow decorators. A line with an unterminated string
// before it may be missed or misplaced: use it on source known to compile.
func TopLevelStarts(src string, minor int) []int {
	starts := []int{}
	s := &scanner{src: src, minor: minor, specBudget: len(src) + 4096, starts: &starts}
	s.run()
	return starts
}
