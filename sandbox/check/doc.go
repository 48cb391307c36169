// Package check tells whether the text of a file parses, for the edits
// vis-agent's sandbox makes or sees: patch() checks the text it is about to
// write, the host checks the files a block changed, and `vis-agent sandbox
// check` checks files named on its command line.
//
// The kind of check follows the file's name (KindOf): Python (.py, .pyi),
// compiled by a CPython the caller provides (the session's own, so its
// grammar and version), with the repair engine's exact fix when it does
// not compile (sandbox/repair); JSON; TOML (github.com/BurntSushi/toml,
// the parser of vis-agent's own settings); YAML (go.yaml.in/yaml/v3, the
// YAML organisation's continuation of go-yaml v3, every document of a
// stream). Other files are not checked. A data text past a bound of size
// or depth (OverBounds) is not parsed, and the check says why: a parser's
// cost on a crafted text is the writer's to choose. A session's host has
// the data texts parsed in a worker process the kernel bounds (ServeTexts,
// Checker.Parse), never in its own.
//
// The Python compiler may not have an answer at hand: patch() asks the
// session's interpreter, which is busy running the block that called
// patch, so the host answers the call with the source to compile and
// the block's Python calls again with the verdicts (see sandbox/host).
// Each check therefore runs from the start with the verdicts known so
// far, and stops at the first source it needs compiled (Need).
package check
