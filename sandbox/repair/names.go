package repair

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// msgUnknownName ends Python's message for a \N{NAME} escape naming no
// character.
const msgUnknownName = "unknown Unicode character name"

// maxNames bounds the \N{NAME} escapes checked, a compile each.
const maxNames = 8

// nameEscapes returns the offsets of the backslashes of the well-formed
// \N{NAME} escapes of src, in strings where they are escapes (not raw
// ones or bytes), in order.
func nameEscapes(src string, minor int) []int {
	var out []int
	s := &scanner{src: src, minor: minor, specBudget: len(src) + 4096, names: &out}
	s.run()
	slices.Sort(out)
	return slices.Compact(out)
}

// repairNames repairs a block Python refused for a \N{NAME} escape naming
// no character, as in "\N{NOT A REAL NAME}": the writer meant the text,
// and a doubled backslash keeps it. Python says whether each name exists.
// It returns the repaired block and its fixes, or "" when that does not
// compile.
func repairNames(src string, perr protocol.SyntaxError, opts Options) (string, []Fix) {
	if !strings.HasSuffix(perr.Message, msgUnknownName) {
		return "", nil
	}
	offs := nameEscapes(src, opts.Minor)
	if len(offs) > maxNames {
		return "", nil
	}
	var edits []edit
	var fixes []Fix
	idx := newLineIndex(src)
	for _, i := range offs {
		end := nameEscapeEnd(src, i+2)
		if opts.Compile(`"`+src[i:end]+`"`) == nil {
			continue // a name Python knows
		}
		edits = append(edits, insert(i, `\`))
		l, c := idx.pos(i)
		fixes = append(fixes, Fix{Kind: "escape-backslash", Line: l, Column: c,
			Message: lineMessage(l, fmt.Sprintf(`doubled the backslash at column %d so '%s' is kept as text, as no character has that name`, c, src[i:end]))})
	}
	if len(edits) == 0 {
		return "", nil
	}
	fixed := apply(src, edits)
	if opts.Compile(fixed) != nil {
		return "", nil
	}
	return fixed, fixes
}
