package repair

import (
	"strings"
)

// maxProposed is how many problems, earliest first, get edits proposed in a
// round; later ones are most often cascades of the first.
const maxProposed = 4

// propose lists candidate changes for the problems of src.
func propose(src string, probs []Problem, minor int) []change {
	var out []change
	var unclosed []Problem
	for i, p := range probs {
		if p.Kind == KindUnclosedBracket {
			unclosed = append(unclosed, p)
		}
		if i >= maxProposed {
			continue
		}
		switch p.Kind {
		case KindUnterminatedString:
			out = append(out, closeString(src, p)...)
		case KindUnterminatedTriple:
			out = append(out, closeTriple(src, p)...)
		case KindUnclosedBracket:
			out = append(out, closeOnOpenerLine(src, p)...)
		case KindMismatchedCloser:
			out = append(out, fixMismatch(src, p)...)
		case KindUnmatchedCloser:
			out = append(out, removeCloser(p))
		case KindStatementInBracket:
			out = append(out, closeBeforeStatement(src, p)...)
		case KindFStringBrace:
			out = append(out, fixBrace(p)...)
		case KindFStringQuote:
			out = append(out, swapNestedQuotes(src, p, minor)...)
		case KindInvalidEscape:
			if c, ok := wholeString(src, p.d.lit); ok {
				out = append(out, c)
			} else {
				out = append(out, doubleBackslash(src, p))
			}
		case KindTypographicQuote:
			out = append(out, asciiQuotes(src, p)...)
		case KindStringEndsEarly:
			out = append(out, escapeEarlyQuote(src, p)...)
		case KindByteOrderMark:
			out = append(out, removeBOM())
		}
	}
	if len(unclosed) > 0 {
		out = append(out, closeAllAtEnd(src, unclosed))
	}
	if c, ok := asciiQuotesAll(src, probs); ok {
		out = append(out, c)
	}
	return out
}

// trimRightSpace returns end moved left past spaces, tabs and a '\r'.
func trimRightSpace(src string, start, end int) int {
	for end > start && (src[end-1] == ' ' || src[end-1] == '\t' || src[end-1] == '\r') {
		end--
	}
	return end
}

// oddBackslashes reports whether src[start:end] ends in an odd run of
// backslashes, which would escape a quote inserted at end.
func oddBackslashes(src string, start, end int) bool {
	n := 0
	for k := end - 1; k >= start && src[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// onlyClosersAfter reports whether src[i:end] holds nothing but closers,
// separators and spaces, as after the real end of a string.
func onlyClosersAfter(src string, i, end int) bool {
	for ; i < end; i++ {
		if !strings.ContainsRune(")]}:,; \t", rune(src[i])) {
			return false
		}
	}
	return true
}

func otherQuote(q byte) byte {
	if q == '"' {
		return '\''
	}
	return '"'
}
