package repair

import (
	"hash/maphash"
	"sort"
)

// Bounds on the repair search. A block that fails for one small reason
// has few problems and needs few edits; anything beyond these is refused.
const (
	maxProblems = 16 // problems in the original block
	maxRounds   = 8  // changes on one path
	maxBranch   = 3  // alternatives tried after each change
	maxCompiles = 10 // compiler calls on candidate repairs
	scanFactor  = 64 // scanning budget, in multiples of the block size
	scanFloor   = 1 << 16
)

// searcher looks for a sequence of changes, each leaving strictly fewer
// problems (by weight), that ends with a block Python compiles. It walks
// depth first, best change first, so when the best repair does not
// compile the next best ones are tried.
type searcher struct {
	minor    int
	compile  Compiler
	budget   int // bytes left to scan
	compiles int // compiler calls left
	seed     maphash.Seed
	seen     map[uint64]bool
	path     []change
	result   string
}

func newSearcher(src string, opts Options) *searcher {
	seed := maphash.MakeSeed()
	return &searcher{
		minor:    opts.Minor,
		compile:  opts.Compile,
		budget:   scanFactor*len(src) + scanFloor,
		compiles: maxCompiles,
		seed:     seed,
		seen:     map[uint64]bool{maphash.String(seed, src): true},
	}
}

type candidate struct {
	src   string
	probs []Problem
	c     change
}

// search reports whether a repair was found from src, whose problems are
// probs; the changes are then in s.path and the repaired text in s.result.
func (s *searcher) search(src string, probs []Problem, depth int) bool {
	if len(probs) == 0 {
		if s.compiles == 0 {
			return false
		}
		s.compiles--
		if s.compile(src) != nil {
			return false
		}
		s.result = src
		return true
	}
	if depth == maxRounds {
		return false
	}
	w := weight(probs)
	var kids []candidate
	for _, c := range propose(src, probs, s.minor) {
		if s.budget <= 0 {
			break
		}
		next := apply(src, c.edits)
		h := maphash.String(s.seed, next)
		if s.seen[h] {
			continue
		}
		s.seen[h] = true
		s.budget -= len(next)
		if ps := scanRaw(next, s.minor, w); weight(ps) < w {
			kids = append(kids, candidate{next, ps, c})
		}
	}
	sort.SliceStable(kids, func(i, j int) bool {
		if wi, wj := weight(kids[i].probs), weight(kids[j].probs); wi != wj {
			return wi < wj
		}
		return kids[i].c.cost < kids[j].c.cost
	})
	for i, k := range kids {
		// Every finished repair is worth a compile; unfinished ones only
		// get a few tries each.
		if i >= maxBranch && len(k.probs) > 0 {
			break
		}
		s.path = append(s.path, k.c)
		if s.search(k.src, k.probs, depth+1) {
			return true
		}
		s.path = s.path[:len(s.path)-1]
	}
	return false
}

// weight counts problems for the search. An unterminated triple-quoted
// string counts twice: it hides whatever is wrong in the code it swallows,
// so closing it may rightly reveal a problem there.
func weight(probs []Problem) int {
	n := len(probs)
	for _, p := range probs {
		if p.Kind == KindUnterminatedTriple {
			n++
		}
	}
	return n
}

// noted reports whether every change on the path explains itself.
func (s *searcher) noted() bool {
	for _, c := range s.path {
		if len(c.notes) == 0 {
			return false
		}
	}
	return true
}

// fixes renders the notes of the changes on the path, with positions in
// the original block: each note's offsets are mapped back through the
// changes made before its own.
func (s *searcher) fixes(orig string) []Fix {
	idx := newLineIndex(orig)
	var out []Fix
	for k, c := range s.path {
		pos := func(off int) (int, int) {
			for j := k - 1; j >= 0; j-- {
				off = mapBack(off, s.path[j].edits)
			}
			return idx.pos(off)
		}
		for _, n := range c.notes {
			l, col := pos(n.at)
			out = append(out, Fix{Kind: n.kind, Line: l, Column: col,
				Message: lineMessage(l, n.text(pos))})
		}
	}
	return out
}
