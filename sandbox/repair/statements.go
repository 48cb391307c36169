package repair

// LineStart is where a logical line begins: the byte offset of its first
// character and its indentation's width (a tab to the next multiple of 8,
// as CPython counts).
type LineStart struct {
	Off, Indent int
}

// LineStarts returns, in order, the logical lines of src outside brackets
// as the tokenizer of CPython 3.minor reads src: lines that are not
// blank, not a comment, not inside a string, an open bracket or a
// backslash continuation. For source that compiles, each begins a
// statement or a clause of one (else, except, ...), or is the definition
// after a decorator. A line after an unterminated string may be missed or
// misplaced: use it on source known to compile.
func LineStarts(src string, minor int) []LineStart {
	starts := []LineStart{}
	s := &scanner{src: src, minor: minor, specBudget: len(src) + 4096, starts: &starts}
	s.run()
	return starts
}
