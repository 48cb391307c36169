package repair

import "fmt"

// Problem kinds reported by Scan.
const (
	KindUnterminatedString = "unterminated-string"
	KindUnterminatedTriple = "unterminated-triple-string"
	KindUnclosedBracket    = "unclosed-bracket"
	KindUnmatchedCloser    = "unmatched-closer"
	KindMismatchedCloser   = "mismatched-closer"
	KindStatementInBracket = "statement-in-bracket"
	KindFStringBrace       = "fstring-brace"
	KindFStringQuote       = "fstring-nested-quote"
	KindFStringBackslash   = "fstring-backslash"
	KindInvalidEscape      = "invalid-escape"
	KindTypographicQuote   = "typographic-quote"
	KindStringEndsEarly    = "string-ends-early"
	KindTooDeep            = "nesting-too-deep"
	KindByteOrderMark      = "byte-order-mark"

	// Kinds that say why a repair Python would run was not made.
	KindTooManyBracketChanges = "too-many-bracket-changes"
	KindAmbiguous             = "ambiguous-repair"
)

// Problem is one wrong quote, bracket, brace or escape found by Scan.
// Line and Column are 1-based; Column counts characters.
type Problem struct {
	Kind    string `json:"kind"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`

	off int    // byte offset the problem points at
	d   detail // what the repair needs to propose edits
}

// detail holds the byte offsets a repair proposal works from. Which fields
// are set depends on the problem kind; see the scanner code that adds it.
type detail struct {
	sub     subKind // finer kind within an f-string or escape problem
	lit     strLit  // the string literal involved
	end     int     // end of the offending span (line end, closing brace or quote)
	at      int     // insertion point for a closer
	other   int     // a second offset: opener, later quote, next quote
	ch      byte    // bracket character the problem is about
	closers []int   // offsets of the open brackets a statement cut off, outermost first
	inBrkt  bool    // the string sits inside brackets, so strings on later lines concatenate
	joined  bool    // the string follows another string, continuing an implicit concatenation
	text    bool    // an f-string field's content reads as text, not code
}

type subKind uint8

const (
	subNone subKind = iota // no finer kind
	subSingleClose
	subTextField
	subUnclosedField
	subHex2 // \x
	subHex4 // \u
	subHex8 // \U
	subName // \N{...}
)

// finish fills in Line, Column and Message, which the repair search does
// not need and so are only computed for problems that are shown.
func finish(probs []Problem, idx *lineIndex, minor int) []Problem {
	for i := range probs {
		p := &probs[i]
		p.Line, p.Column = idx.pos(p.off)
		p.Message = describe(*p, idx, minor)
	}
	return probs
}

// describe says what is wrong, in a sentence without the position prefix.
func describe(p Problem, idx *lineIndex, minor int) string {
	lineOf := func(off int) int { l, _ := idx.pos(off); return l }
	switch p.Kind {
	case KindUnterminatedString:
		return fmt.Sprintf("the string opened by %s here is not closed before the end of the line", p.d.lit.quoteText())
	case KindUnterminatedTriple:
		return fmt.Sprintf("the triple-quoted string opened by %s here is never closed", p.d.lit.quoteText())
	case KindUnclosedBracket:
		return fmt.Sprintf("'%c' is never closed", p.d.ch)
	case KindUnmatchedCloser:
		return fmt.Sprintf("'%c' has no opening bracket to close", p.d.ch)
	case KindMismatchedCloser:
		return fmt.Sprintf("'%c' does not match '%c' from line %d", p.d.ch, idx.src[p.d.other], lineOf(p.d.other))
	case KindStatementInBracket:
		o := p.d.closers[0]
		return fmt.Sprintf("a new statement starts here while '%c' from line %d is still open", idx.src[o], lineOf(o))
	case KindFStringBrace:
		switch p.d.sub {
		case subSingleClose:
			return "single '}' in an f-string; a literal brace must be written '}}'"
		case subTextField:
			return "the f-string field '{…}' holds text rather than an expression; literal braces must be doubled"
		default:
			return "the f-string field opened by '{' here is never closed by '}'"
		}
	case KindFStringQuote:
		return fmt.Sprintf("this string inside an f-string field reuses the f-string's own quote %c, which Python 3.%d does not allow", p.d.lit.q, minor)
	case KindFStringBackslash:
		return fmt.Sprintf("Python 3.%d does not allow a backslash inside an f-string expression", minor)
	case KindInvalidEscape:
		switch p.d.sub {
		case subHex2:
			return `'\x' must be followed by two hex digits`
		case subHex4:
			return `'\u' must be followed by four hex digits`
		case subHex8:
			return `'\U' must be followed by eight hex digits no greater than 0010FFFF`
		default:
			return `'\N' must be followed by a character name in braces, like \N{BULLET}`
		}
	case KindTypographicQuote:
		return fmt.Sprintf("'%s' is a typographic quote, which Python does not accept as a string delimiter", idx.src[p.off:p.d.end])
	case KindStringEndsEarly:
		return fmt.Sprintf("the string ends at this %c right before %q; a quote inside the text probably ended it early", p.d.lit.q, idx.src[p.off+1:p.d.end])
	case KindByteOrderMark:
		return "the block starts with a byte order mark (U+FEFF), which Python skips at the start of a file but refuses in source text"
	case KindTooDeep:
		return "brackets or f-strings are nested too deeply to check"
	}
	return p.Kind
}
