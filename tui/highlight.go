package tui

import (
	"strings"
	"unicode"

	"charm.land/lipgloss/v2"
)

// The REPL colours Python itself, with the few token kinds below: chroma,
// the kept Go highlighter, registers every one of its lexers when the
// binary starts, which cost every `vis-agent python` 11 ms here.

var keywords = set("False None True and as assert async await break class continue def del elif else except finally " +
	"for from global if import in is lambda nonlocal not or pass raise return try while with yield match case type")

var builtins = set("abs all any bool bytes callable chr dict dir divmod enumerate filter float format getattr " +
	"hasattr hash id input int isinstance issubclass iter len list map max min next object open ord pow print " +
	"range repr reversed round set setattr slice sorted str sum super tuple type vars zip defs session self")

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// highlight is src as coloured lines, one per line of src: keywords,
// names being defined, builtins and decorators, strings (also across
// lines), numbers, comments and operators.
func (t *theme) highlight(src string) []string {
	rs := []rune(src)
	var lines []string
	var cur strings.Builder
	emit := func(st lipgloss.Style, text string) {
		for i, part := range strings.Split(text, "\n") {
			if i > 0 {
				lines = append(lines, cur.String())
				cur.Reset()
			}
			if part != "" {
				cur.WriteString(st.Render(part))
			}
		}
	}
	defining := false // the name after def or class
	for i := 0; i < len(rs); {
		r := rs[i]
		j := i + 1
		switch {
		case r == '#':
			for j < len(rs) && rs[j] != '\n' {
				j++
			}
			emit(t.comment, string(rs[i:j]))
		case r == '"' || r == '\'' || isPrefix(rs, i):
			j = stringEnd(rs, i)
			emit(t.str, string(rs[i:j]))
		case unicode.IsDigit(r) || r == '.' && j < len(rs) && unicode.IsDigit(rs[j]):
			for j < len(rs) && (isWordRune(rs[j]) || rs[j] == '.' || (rs[j] == '+' || rs[j] == '-') && (rs[j-1] == 'e' || rs[j-1] == 'E')) {
				j++
			}
			emit(t.num, string(rs[i:j]))
		case isWordRune(r):
			for j < len(rs) && isWordRune(rs[j]) {
				j++
			}
			word := string(rs[i:j])
			switch {
			case defining:
				emit(t.fn, word)
			case keywords[word]:
				emit(t.keyword, word)
			case builtins[word]:
				emit(t.fn, word)
			default:
				emit(t.name, word)
			}
			defining = word == "def" || word == "class"
			i = j
			continue
		case r == '@' && (i == 0 || rs[i-1] == '\n' || rs[i-1] == ' '):
			for j < len(rs) && (isWordRune(rs[j]) || rs[j] == '.') {
				j++
			}
			emit(t.fn, string(rs[i:j]))
		case unicode.IsSpace(r):
			for j < len(rs) && unicode.IsSpace(rs[j]) {
				j++
			}
			emit(t.name, string(rs[i:j]))
			i = j
			continue
		default:
			emit(t.op, string(r))
		}
		defining = false
		i = j
	}
	return append(lines, cur.String())
}

// isPrefix is whether a string literal's prefix (r, b, f, u, rb, ...)
// starts at i.
func isPrefix(rs []rune, i int) bool {
	if i > 0 && isWordRune(rs[i-1]) {
		return false
	}
	j := i
	for j < len(rs) && j-i < 2 && strings.ContainsRune("rRbBfFuUtT", rs[j]) {
		j++
	}
	return j > i && j < len(rs) && (rs[j] == '"' || rs[j] == '\'')
}

// stringEnd is the end of the string literal starting at i (its prefix
// included): its closing quote, or the line's end for an unclosed one.
func stringEnd(rs []rune, i int) int {
	for rs[i] != '"' && rs[i] != '\'' {
		i++
	}
	q := rs[i]
	triple := i+2 < len(rs) && rs[i+1] == q && rs[i+2] == q
	j := i + 1
	if triple {
		j = i + 3
	}
	for j < len(rs) {
		switch {
		case rs[j] == '\\':
			j += 2
			continue
		case rs[j] == '\n' && !triple:
			return j
		case rs[j] == q && (!triple || j+2 < len(rs) && rs[j+1] == q && rs[j+2] == q):
			if triple {
				return j + 3
			}
			return j + 1
		}
		j++
	}
	return len(rs)
}
