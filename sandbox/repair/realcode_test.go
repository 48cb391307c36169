package repair

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// The measurement on real code, the development mix: statements of the
// standard library and of the packages of the test wheelhouse, broken as a
// model breaks code. make test runs a few hundred on the newest CPython;
// make bench runs thousands (-realcode.n) and prints the figures.
var (
	realN    = flag.Int("realcode.n", 400, "broken statements of real code to repair in TestRealCode")
	realSeed = flag.Uint64("realcode.seed", 1, "seed of the statements picked and the breaks")
	realList = flag.Bool("realcode.list", false, "list every refused case and every case repaired to a different program")
	realPy   = flag.String("realcode.python", "", "CPython version to measure on, as 3.10 or 3.11.7 (default: the newest found)")
)

// The bounds of the measurement: a repair that changes what the code
// means is far worse than a refusal. Issue 36 asks for at most 0.2%
// different programs; the engine gives 0.08% to 0.15% on seed 1's
// 4,000-statement runs, but up to 0.45% on seeds its rules were not made
// from (see BENCHMARKS.md, "Repair on real code"). make test repairs 400
// statements of seed 1, where one case is 0.25%: the bound lets that one
// through, not two.
const (
	maxDifferent = 0.0025
	minExact     = 0.95
)

// TestRealCode repairs the statements of the development mix (see
// repairtest.Mix) and compares each repair with the intended program by
// AST. It fails when more than 0.25% become a different program, or fewer
// than 95% the intended one, and lists those cases.
func TestRealCode(t *testing.T) {
	w := repairtest.Newest(t)
	if *realPy != "" {
		w = nil
		for _, o := range repairtest.Workers(t) {
			if o.Version == *realPy || strings.HasPrefix(o.Version, *realPy+".") {
				w = o
			}
		}
		if w == nil {
			t.Fatalf("no CPython %s found", *realPy)
		}
	}
	cases := repairtest.Mix(t, w, *realN, *realSeed)
	if len(cases) < *realN/2 {
		t.Fatalf("only %d cases from the code python %s reads", len(cases), w.Version)
	}
	// Python's answers are kept, so the engine can be timed again without
	// it: each block's time is the best of five runs, less the time spent
	// asking Python (through a pipe here, not the embedded CPython).
	answers := map[string]*protocol.SyntaxError{}
	var inPython time.Duration
	calls := 0
	timed := func(src string) *protocol.SyntaxError {
		start := time.Now()
		defer func() { inPython += time.Since(start) }()
		calls++
		e, ok := answers[src]
		if !ok {
			e = compiler(w)(src)
			answers[src] = e
		}
		return e
	}
	var all tally
	byKind, bySource := map[string]*tally{}, map[string]*tally{}
	var engine []time.Duration
	var compiles []int
	var slowest string
	var slowestTime time.Duration
	var different, refusedNames []string
	for _, c := range cases {
		if w.Compile(c.Src) == nil {
			continue // the break left valid code: nothing to repair
		}
		want, err := w.Dump(c.Intended)
		if err != nil {
			t.Fatalf("%s: the intended program does not parse: %v\n%s", c.Name, err, c.Intended)
		}
		var res Result
		best := time.Hour
		for run := range 5 {
			inPython, calls = 0, 0
			start := time.Now()
			res = Repair(c.Src, Options{Minor: w.Minor, Compile: timed})
			best = min(best, time.Since(start)-inPython)
			if run == 0 {
				compiles = append(compiles, calls)
			}
		}
		engine = append(engine, best)
		if best > slowestTime {
			slowestTime, slowest = best, c.Name
		}
		for _, tl := range []*tally{&all, tallyOf(byKind, c.Kind), tallyOf(bySource, c.Source)} {
			switch {
			case !res.Repaired:
				tl.refused++
			case dumpOf(w, res.Source) == want:
				tl.exact++
			default:
				tl.different++
			}
		}
		switch {
		case !res.Repaired:
			refusedNames = append(refusedNames, fmt.Sprintf("%s\n%s--- %s", c.Name, c.Src, res.Error()))
		case dumpOf(w, res.Source) != want:
			different = append(different, fmt.Sprintf("%s\n--- broken\n%s--- repaired\n%s--- intended\n%s", c.Name, c.Src, res.Source, c.Intended))
		}
	}
	n := all.exact + all.refused + all.different
	if n == 0 {
		t.Fatal("no case broke the code")
	}
	slices.Sort(engine)
	slices.Sort(compiles)
	t.Logf("python %s, seed %d: %d broken statements (of %d picked; the rest still compiled)", w.Version, *realSeed, n, len(cases))
	t.Logf("repaired to the intended program %s, refused %s, repaired to a different program %s",
		pct(all.exact, n), pct(all.refused, n), pct(all.different, n))
	t.Logf("engine time per block (best of 5, without CPython's compiles): median %v, max %v (%s); compiles per block: median %d, max %d",
		engine[len(engine)/2], engine[len(engine)-1], slowest, compiles[len(compiles)/2], compiles[len(compiles)-1])
	t.Logf("| kind | cases | exact | refused | different |")
	for _, k := range repairtest.Kinds {
		if tl := byKind[k.Name]; tl != nil {
			t.Logf("%s", tl.row(k.Name))
		}
	}
	t.Logf("%s", all.row("all"))
	t.Logf("| source | cases | exact | refused | different |")
	for _, name := range slices.Sorted(maps.Keys(bySource)) {
		t.Logf("%s", bySource[name].row(name))
	}
	if *realList {
		for _, r := range refusedNames {
			t.Logf("refused: %s", r)
		}
	}
	if float64(all.different) > maxDifferent*float64(n) {
		t.Errorf("%d of %d repairs (%s) changed the program, more than %.2f%%:\n%s",
			all.different, n, pct(all.different, n), 100*maxDifferent, strings.Join(different, "\n"))
	} else if *realList {
		for _, d := range different {
			t.Logf("different: %s", d)
		}
	}
	if float64(all.exact) < minExact*float64(n) {
		t.Errorf("only %s of the repairs give the intended program, want %.0f%%", pct(all.exact, n), 100*minExact)
	}
}

// tally counts the outcomes of a group of cases.
type tally struct{ exact, refused, different int }

func tallyOf(m map[string]*tally, key string) *tally {
	if m[key] == nil {
		m[key] = &tally{}
	}
	return m[key]
}

// row is the group's line of a Markdown table.
func (tl *tally) row(name string) string {
	n := tl.exact + tl.refused + tl.different
	return fmt.Sprintf("| %s | %d | %s | %s | %s |", name, n, pct(tl.exact, n), pct(tl.refused, n), pct(tl.different, n))
}

func pct(x, of int) string { return fmt.Sprintf("%.1f%%", 100*float64(x)/float64(of)) }

func dumpOf(w *repairtest.Worker, src string) string {
	d, err := w.Dump(src)
	if err != nil {
		return "error: " + err.Error()
	}
	return d
}
