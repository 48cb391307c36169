package repairtest

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// Broken is a statement of real code broken the way a model breaks code.
// Intended is the program the writer meant: the statement itself, or for an
// added quote or literal braces in an f-string, the statement with that
// quote escaped or those braces doubled.
type Broken struct {
	Name     string // file:segment:kind, to find the case again
	Kind     string
	Source   string // the group its file comes from: "stdlib", "numpy", ...
	Src      string // what the model wrote
	Intended string
}

// The ways the mix breaks a statement.
const (
	DropCloserEOL = "drop-closer-eol" // the closing bracket that ends a line left out
	EarlyQuote    = "early-quote"     // the string's own quote typed as an apostrophe in its text
	FStringBraces = "fstring-braces"  // literal braces in an f-string not doubled
	DropQuote     = "drop-quote"      // the closing quote of a string left out
	DropBracket   = "drop-bracket"    // a closing bracket inside a line left out
	SwapBracket   = "swap-bracket"    // a bracket closed by the wrong kind
	SwapQuote     = "swap-quote"      // a string closed with the other quote
	PasteIndent   = "paste-indent"    // the block pasted with a common leading indent
	TabIndent     = "tab-indent"      // a line indented with tabs among spaces
	BadDedent     = "bad-dedent"      // a dedent landing between indentation levels
)

// Kinds lists every kind of break with its share of the mix, most frequent
// first: the proportions in which a model makes them. A model most often
// loses count of the closers at a line's end, then types a quote its
// string also uses, then leaves an f-string's literal braces single; the
// rest are rarer, indentation (a pasted block, tabs, a dedent off by a
// column or two) the most frequent of them, and a closer lost inside a
// line, where the writer's attention is, the least. Real code holds few
// strings with literal braces, so f-string braces fall short of their
// share and the other kinds make up for it (see maxOver).
var Kinds = []struct {
	Name  string
	Share float64
}{
	{DropCloserEOL, 0.38}, {EarlyQuote, 0.20}, {FStringBraces, 0.12},
	{PasteIndent, 0.07}, {TabIndent, 0.05}, {BadDedent, 0.05},
	{DropQuote, 0.04}, {SwapQuote, 0.04}, {SwapBracket, 0.04}, {DropBracket, 0.01},
}

type segment struct {
	Src     string   `json:"src"`
	Strings [][2]int `json:"strings"`
	Closers []int    `json:"closers"`
	Lines   []int    `json:"lines"` // byte offsets of the line starts of its logical lines
}

// perFile is how many statements the mix takes from one file at most, so
// that a few long files do not make up the mix.
const perFile = 8

// maxOver is how far above its share a kind may go while kinds that
// fit few statements (f-string braces need literal braces in a string)
// fall short of theirs.
const maxOver = 1.5

// Mix returns n broken statements taken from real code: the standard
// library of w's CPython and the packages of the test wheelhouse (see
// Sources), a file at a time from each source in turn, in an order
// shuffled by seed. From each file it takes up to perFile statements and
// blocks (at most 25 lines), picked by seed, and breaks each once by the
// kind furthest below its share among those that fit it and leave code
// Python refuses, at a place picked by seed. The same seed and files give
// the same cases.
func Mix(t testing.TB, w *Worker, n int, seed uint64) []Broken {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sources := Sources(t, w)
	for _, s := range sources {
		rng.Shuffle(len(s.Files), func(i, j int) { s.Files[i], s.Files[j] = s.Files[j], s.Files[i] })
	}
	var out []Broken
	seen := map[string]bool{}
	counts := make([]int, len(Kinds))
	next := make([]int, len(sources))
	for round := 0; len(out) < n; round++ {
		progress := false
		for si, s := range sources {
			if next[si] >= len(s.Files) {
				continue
			}
			progress = true
			f := s.Files[next[si]]
			next[si]++
			var segs struct {
				Segments []segment `json:"segments"`
			}
			w.callInto(t, map[string]string{"op": "segments", "src": f}, &segs)
			name := f[strings.LastIndexByte(f, '/')+1:]
			taken := 0
			for _, i := range rng.Perm(len(segs.Segments)) {
				sg := segs.Segments[i]
				if taken == perFile || len(out) == n {
					break
				}
				if seen[sg.Src] {
					continue
				}
				seen[sg.Src] = true
				for _, k := range byDeficit(counts, len(out)) {
					if float64(counts[k]) >= maxOver*Kinds[k].Share*float64(len(out)+1) {
						continue // a kind that fits most statements stays near its share
					}
					if b, ok := breakOne(sg, Kinds[k].Name, rng); ok && w.Compile(b.Src) != nil {
						b.Name = fmt.Sprintf("%s:%d:%s", name, i, b.Kind)
						b.Source = s.Name
						out = append(out, b)
						counts[k]++
						taken++
						break
					}
				}
			}
		}
		if !progress {
			break
		}
	}
	return out
}

// byDeficit orders the kinds by how far each falls below its share of the
// total+1 cases made so far, furthest first.
func byDeficit(counts []int, total int) []int {
	order := make([]int, len(Kinds))
	for i := range order {
		order[i] = i
	}
	deficit := func(k int) float64 { return Kinds[k].Share*float64(total+1) - float64(counts[k]) }
	slices.SortStableFunc(order, func(a, b int) int {
		switch da, db := deficit(a), deficit(b); {
		case da > db:
			return -1
		case da < db:
			return 1
		}
		return 0
	})
	return order
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
	case DropCloserEOL, DropBracket:
		// A closer ends its line when only closers, a colon and a
		// comment follow it there.
		var fit []int
		for _, at := range s.Closers {
			if endsLine(src, at+1) == (kind == DropCloserEOL) {
				fit = append(fit, at)
			}
		}
		if len(fit) == 0 {
			return b, false
		}
		at := fit[rng.IntN(len(fit))]
		b.Src = src[:at] + src[at+1:]
	case SwapBracket:
		if len(s.Closers) == 0 {
			return b, false
		}
		at := s.Closers[rng.IntN(len(s.Closers))]
		others := strings.Replace(")]}", string(src[at]), "", 1)
		b.Src = src[:at] + string(others[rng.IntN(2)]) + src[at+1:]
	case PasteIndent:
		// Every line of the block, string lines too, as a paste does.
		pad := strings.Repeat(" ", 2+2*rng.IntN(3))
		var sb strings.Builder
		for _, line := range strings.SplitAfter(src, "\n") {
			if strings.TrimSpace(line) != "" {
				sb.WriteString(pad)
			}
			sb.WriteString(line)
		}
		b.Src = sb.String()
	case TabIndent:
		// One line's indentation typed as tabs of four columns each.
		var fit []int
		for _, at := range s.Lines {
			if n := indentWidth(src, at); n > 0 && n%4 == 0 && src[at] == ' ' {
				fit = append(fit, at)
			}
		}
		if len(fit) == 0 {
			return b, false
		}
		at := fit[rng.IntN(len(fit))]
		n := indentWidth(src, at)
		b.Src = src[:at] + strings.Repeat("\t", n/4) + src[at+n:]
	case BadDedent:
		// A line that dedents, off by one or two columns.
		var fit []int
		for i := 1; i < len(s.Lines); i++ {
			if at := s.Lines[i]; src[at] == ' ' && indentWidth(src, at) < indentWidth(src, s.Lines[i-1]) {
				fit = append(fit, at)
			}
		}
		if len(fit) == 0 {
			return b, false
		}
		at := fit[rng.IntN(len(fit))]
		n := indentWidth(src, at)
		m := n + []int{-2, -1, 1, 2}[rng.IntN(4)]
		if m < 0 {
			m = n + 1
		}
		b.Src = src[:at] + strings.Repeat(" ", m) + src[at+n:]
	case EarlyQuote:
		// An apostrophe inside a word of a plain one-line string, as in
		// 'It's' or "don"t": the writer meant the quote as text.
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

// endsLine reports whether only closers, a colon, spaces and a comment
// follow offset i on its line.
func endsLine(src string, i int) bool {
	for ; i < len(src) && src[i] != '\n'; i++ {
		switch c := src[i]; {
		case c == '#':
			return true
		case !strings.ContainsRune(")]}: \t\r", rune(c)):
			return false
		}
	}
	return true
}

// indentWidth is the length of the spaces and tabs starting at i.
func indentWidth(src string, i int) int {
	n := 0
	for i+n < len(src) && (src[i+n] == ' ' || src[i+n] == '\t') {
		n++
	}
	return n
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

// apostrophes lists the offsets in the text of l, outside its escapes (as
// the c and d of \xcd), where an apostrophe goes in English: inside a word,
// before its ending s, t, d, m, ll, re or ve, as in it's, don't, we'll.
func apostrophes(src string, l literal) []int {
	var out []int
	text := l.body // where the text after the last escape starts
	for i := l.body; i < l.close; i++ {
		if src[i] == '\\' {
			i += escapeLen(src[i+1 : l.close])
			text = i + 1
			continue
		}
		if i <= text || !isLetter(src[i-1]) || !isLetter(src[i]) {
			continue
		}
		e := i
		for e < l.close && isLetter(src[e]) {
			e++
		}
		switch src[i:e] {
		case "s", "t", "d", "m", "ll", "re", "ve":
			out = append(out, i)
		}
	}
	return out
}

// escapeLen is how many bytes of text, which follows a backslash, belong
// to its escape.
func escapeLen(text string) int {
	n := 1
	switch {
	case text == "":
		return 0
	case text[0] == 'x':
		n = 3
	case text[0] == 'u':
		n = 5
	case text[0] == 'U':
		n = 9
	case text[0] == 'N':
		n = strings.IndexByte(text, '}') + 1
	case '0' <= text[0] && text[0] <= '7':
		for n < 3 && n < len(text) && '0' <= text[n] && text[n] <= '7' {
			n++
		}
	}
	return min(max(n, 1), len(text))
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// hasBraces reports whether text holds literal braces: doubled ones in an
// f-string, as many {{ as }} and none run into a field's own brace (a }}
// alone may end a nested field and its field, as in {x:>{w}}), or any in
// a plain string without backslashes (whose \N{...} escapes must keep
// single braces).
func hasBraces(text string, fmt bool) bool {
	if fmt {
		n := strings.Count(text, "{{")
		return n > 0 && n == strings.Count(text, "}}") && !strings.Contains(text, "{{{") && !strings.Contains(text, "}}}")
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

// Source is a group of files of real code the mix draws from.
type Source struct {
	Name  string
	Files []string
}

// ownSources are the projects of the wheelhouse reported on their own;
// the other projects (their dependencies and the test tools) make up one
// more source, "other packages".
var ownSources = []string{"numpy", "pandas", "matplotlib", "scipy", "scikit_learn"}

// mixProjects are the projects of the wheelhouse the mix reads: those it
// held when the mix was made (issue 36), so that the mix, and the figures
// measured on it, stay the same when wheels are added for other tests.
var mixProjects = []string{"black", "cffi", "click", "contourpy", "cycler", "exceptiongroup",
	"execnet", "fonttools", "iniconfig", "joblib", "kiwisolver", "matplotlib", "mypy_extensions",
	"numpy", "packaging", "pandas", "pathspec", "pillow", "platformdirs", "pluggy", "psutil",
	"pycparser", "pyparsing", "pytest", "pytest_xdist", "python_dateutil", "pytz", "ruff",
	"scikit_learn", "scipy", "six", "threadpoolctl", "tomli", "typing_extensions", "tzdata"}

// Sources lists the files of real code the mix draws from: the standard
// library of w's CPython, and the .py files of one wheel per project of
// mixProjects in the test wheelhouse (the one built for w's CPython when
// there is one, so each version reads the code it would run), unpacked
// into a temporary folder.
func Sources(t testing.TB, w *Worker) []Source {
	t.Helper()
	out := []Source{{Name: "stdlib", Files: w.Stdlib(t)}}
	wheels, err := filepath.Glob(filepath.Join(testwheel.Wheelhouse(t), "*.whl"))
	if err != nil {
		t.Fatal(err)
	}
	byProject := map[string]string{}
	tag := fmt.Sprintf("-cp3%d-", w.Minor)
	for _, whl := range wheels {
		project := strings.ToLower(filepath.Base(whl)[:strings.IndexByte(filepath.Base(whl), '-')])
		if old, ok := byProject[project]; slices.Contains(mixProjects, project) &&
			(!ok || strings.Contains(whl, tag) && !strings.Contains(old, tag)) {
			byProject[project] = whl
		}
	}
	dir := t.TempDir()
	others := Source{Name: "other packages"}
	for _, project := range mixProjects {
		if byProject[project] == "" {
			t.Fatalf("the wheelhouse has no wheel of %s, which the mix reads: run `make test-wheels`", project)
		}
		files := unpackPython(t, byProject[project], filepath.Join(dir, project))
		if slices.Contains(ownSources, project) {
			out = append(out, Source{Name: project, Files: files})
		} else {
			others.Files = append(others.Files, files...)
		}
	}
	return append(out, others)
}

// unpackPython writes the .py files of the wheel whl under dir and
// returns their paths, sorted.
func unpackPython(t testing.TB, whl, dir string) []string {
	t.Helper()
	zr, err := zip.OpenReader(whl)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".py") || !filepath.IsLocal(f.Name) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
