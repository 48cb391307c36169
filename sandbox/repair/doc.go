// Package repair fixes Python code blocks that fail to parse for one small
// reason (a string that never closes, a quote that ends a string early, a
// bracket closed by the wrong character or never closed, literal braces in
// an f-string, an escape Python rejects, indentation pasted in, mixing tabs
// with spaces or dedenting to no level) and explains each change. It scans
// the block with a tokenizer modelled on CPython's, proposes small edits,
// keeps only those that leave fewer problems, and accepts a repair only when
// Python compiles the result and no other place for the same closing quote
// or bracket compiles too, unless the block says which one was meant (for
// a bracket: the place where its statement ends, when no other place reads
// as deliberate); otherwise it refuses with a precise message, as a repair
// that runs but means something else is worse than a refusal.
package repair
