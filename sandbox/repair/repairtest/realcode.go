package repairtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Broken is a statement of real code broken the way a model breaks code.
// Intended is the program the writer meant: the statement itself, or for an
// added quote or literal braces in an f-string, the statement with that
// quote escaped or those braces doubled.
type Broken struct {
	Name     string // file:segment:kind, to find the case again
	Kind     string
	Src      string // what the model wrote
	Intended string
}

// The ways Breaks breaks a statement.
const (
	DropQuote     = "drop-quote"     // the closing quote of a string left out
	SwapQuote     = "swap-quote"     // a string closed with the other quote
	DropBracket   = "drop-bracket"   // a closing bracket left out
	SwapBracket   = "swap-bracket"   // a bracket closed by the wrong kind
	EarlyQuote    = "early-quote"    // the string's own quote typed inside its text
	FStringBraces = "fstring-braces" // literal braces in an f-string not doubled
)

// Kinds lists every kind of break, in the order Breaks tries them.
var Kinds = []string{DropQuote, SwapQuote, DropBracket, SwapBracket, EarlyQuote, FStringBraces}

type segment struct {
	Src     string   `json:"src"`
	Strings [][2]int `json:"strings"`
	Closers []int    `json:"closers"`
}

// Breaks returns n broken statements taken from the standard library of
// w's CPython: its files in an order shuffled by seed, their statements
// and blocks (at most 25 lines) in order, each broken once by the kind of
// break made least so far among those that fit it, at a place picked by
// seed. The same seed and standard library give the same cases.
func Breaks(t testing.TB, w *Worker, n int, seed uint64) []Broken {
	t.Helper()
	files := struct{ Files []string }{w.Stdlib(t)}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rng.Shuffle(len(files.Files), func(i, j int) { files.Files[i], files.Files[j] = files.Files[j], files.Files[i] })
	var out []Broken
	seen := map[string]bool{}
	counts := make([]int, len(Kinds))
	for _, f := range files.Files {
		var segs struct {
			Segments []segment `json:"segments"`
		}
		w.callInto(t, map[string]string{"op": "segments", "src": f}, &segs)
		name := f[strings.LastIndexByte(f, '/')+1:]
		for i, s := range segs.Segments {
			if seen[s.Src] {
				continue
			}
			seen[s.Src] = true
			// The kinds made least so far come first, so the mix is as
			// even as the statements allow.
			kinds := rng.Perm(len(Kinds))
			slices.SortStableFunc(kinds, func(a, b int) int { return counts[a] - counts[b] })
			for _, k := range kinds {
				if b, ok := breakOne(s, Kinds[k], rng); ok {
					b.Name = fmt.Sprintf("%s:%d:%s", name, i, b.Kind)
					out = append(out, b)
					counts[k]++
					break
				}
			}
			if len(out) == n {
				return out
			}
		}
	}
	return out
}

// breakOne breaks s by kind at a site picked by rng, or reports that s has
// no site for that kind.
func breakOne(s segment, kind string, rng *rand.Rand) (Broken, bool) {
	src := s.Src
	b := Broken{Kind: kind, Intended: src}
	var lits []literal
	for _, sp := range s.Strings {
		lits = append(lits, parseLiteral(src, sp[0], sp[1]))
	}
	pick := func(ok func(literal) bool) (literal, bool) {
		var fit []literal
		for _, l := range lits {
			if ok(l) {
				fit = append(fit, l)
			}
		}
		if len(fit) == 0 {
			return literal{}, false
		}
		return fit[rng.IntN(len(fit))], true
	}
	switch kind {
	case DropQuote, SwapQuote:
		l, ok := pick(func(literal) bool { return true })
		if !ok {
			return b, false
		}
		if kind == DropQuote {
			b.Src = src[:l.close] + src[l.end:]
		} else {
			other := strings.Repeat(string(otherQuote(src[l.close])), l.end-l.close)
			b.Src = src[:l.close] + other + src[l.end:]
		}
	case DropBracket, SwapBracket:
		if len(s.Closers) == 0 {
			return b, false
		}
		at := s.Closers[rng.IntN(len(s.Closers))]
		if kind == DropBracket {
			b.Src = src[:at] + src[at+1:]
		} else {
			others := strings.Replace(")]}", string(src[at]), "", 1)
			b.Src = src[:at] + string(others[rng.IntN(2)]) + src[at+1:]
		}
	case EarlyQuote:
		// An apostrophe inside a word of a plain one-line string, as in
		// 'It's': the writer meant the quote as text.
		l, ok := pick(func(l literal) bool { return !l.raw && !l.fmt && !l.triple && len(apostrophes(src, l)) > 0 })
		if !ok {
			return b, false
		}
		sites := apostrophes(src, l)
		at := sites[rng.IntN(len(sites))]
		q := string(src[l.close])
		b.Src = src[:at] + q + src[at:]
		b.Intended = src[:at] + `\` + q + src[at:]
	case FStringBraces:
		// Text with literal braces in an f-string, written single: the
		// writer meant them as text. An f-string's doubled braces are
		// undone; a plain string with braces is made an f-string.
		l, ok := pick(func(l literal) bool { return !l.bytes && hasBraces(src[l.body:l.close], l.fmt) })
		if !ok {
			return b, false
		}
		text := src[l.body:l.close]
		if l.fmt {
			b.Src = src[:l.body] + strings.NewReplacer("{{", "{", "}}", "}").Replace(text) + src[l.close:]
		} else {
			b.Src = src[:l.start] + "f" + src[l.start:l.body] + text + src[l.close:]
			b.Intended = src[:l.start] + "f" + src[l.start:l.body] +
				strings.NewReplacer("{", "{{", "}", "}}").Replace(text) + src[l.close:]
		}
	default:
		panic("unknown kind " + kind)
	}
	return b, true
}

// literal is a string literal of a statement, by byte offsets: its start
// (prefix), its text, its closing quote and its end.
type literal struct {
	start, body, close, end int
	triple, raw, fmt, bytes bool
}

func parseLiteral(src string, start, end int) literal {
	l := literal{start: start, end: end}
	q := strings.IndexAny(src[start:end], `'"`) + start
	for _, c := range strings.ToLower(src[start:q]) {
		switch c {
		case 'r':
			l.raw = true
		case 'f':
			l.fmt = true
		case 'b':
			l.bytes = true
		}
	}
	l.triple = end-q >= 6 && src[q:q+3] == strings.Repeat(src[q:q+1], 3)
	d := 1
	if l.triple {
		d = 3
	}
	l.body, l.close = q+d, end-d
	return l
}

// apostrophes lists the offsets between two letters in the text of l.
func apostrophes(src string, l literal) []int {
	var out []int
	for i := l.body + 1; i < l.close; i++ {
		if isLetter(src[i-1]) && isLetter(src[i]) && src[i-1] != '\\' && (i < 2 || src[i-2] != '\\') {
			out = append(out, i)
		}
	}
	return out
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// hasBraces reports whether text holds literal braces: doubled ones in an
// f-string, or any in a plain string without backslashes (whose \N{...}
// escapes must keep single braces).
func hasBraces(text string, fmt bool) bool {
	if fmt {
		return strings.Contains(text, "{{") || strings.Contains(text, "}}")
	}
	return strings.ContainsAny(text, "{}") && !strings.Contains(text, `\`)
}

func otherQuote(q byte) byte {
	if q == '"' {
		return '\''
	}
	return '"'
}

func (w *Worker) callInto(t testing.TB, req map[string]string, v any) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	data, _ := json.Marshal(req)
	if _, err := w.in.Write(append(data, '\n')); err != nil {
		t.Fatalf("python %s: %v", w.Version, err)
	}
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("python %s: %v", w.Version, err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		t.Fatalf("python %s: %v", w.Version, err)
	}
}

// Stdlib lists the standard library's top-level .py files of w's CPython,
// sorted.
func (w *Worker) Stdlib(t testing.TB) []string {
	t.Helper()
	var files struct {
		Files []string `json:"files"`
	}
	w.callInto(t, map[string]string{"op": "stdlib"}, &files)
	return files.Files
}
