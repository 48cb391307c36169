package repair

import (
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// adversarialSize is the length of each adversarial input, in characters.
const adversarialSize = 200_000

// adversarial returns inputs built to make a naive scanner or search
// quadratic: deep brackets, runs of quotes, many broken lines.
func adversarial() map[string]string {
	fill := func(unit string) string {
		return strings.Repeat(unit, adversarialSize/len(unit))
	}
	return map[string]string{
		"parens":      fill("("),
		"quotes":      fill("'"),
		"escaped":     fill("x = \"abc\n"),
		"mismatch":    fill("(]"),
		"triple":      fill("'''a\n"),
		"fstring":     fill(`f"{`),
		"typographic": fill("“"),
	}
}

// failOriginal is a Compiler that refuses only the block under test, so
// benchmarks measure the engine itself: every candidate "compiles".
func failOriginal(orig string) Compiler {
	return func(src string) *SyntaxError {
		if src == orig {
			return &SyntaxError{Message: "invalid syntax", Line: 1, Column: 1}
		}
		return nil
	}
}

// TestAdversarialBound catches hangs and quadratic blow-ups; the bound is
// generous, the benchmarks give the real figures.
func TestAdversarialBound(t *testing.T) {
	const bound = 5 * time.Second
	for name, src := range adversarial() {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			scan(src, 12)
			Repair(src, Options{Minor: 11, Compile: failOriginal(src)})
			Repair(src, Options{Minor: 12, Compile: failOriginal(src)})
			if d := time.Since(start); d > bound {
				t.Errorf("took %v, bound %v", d, bound)
			}
		})
	}
}

func BenchmarkAdversarial(b *testing.B) {
	for name, src := range adversarial() {
		b.Run(name, func(b *testing.B) {
			opts := Options{Minor: 12, Compile: failOriginal(src)}
			for b.Loop() {
				Repair(src, opts)
			}
		})
	}
}

func BenchmarkAdversarialScan(b *testing.B) {
	for name, src := range adversarial() {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				scan(src, 12)
			}
		})
	}
}

// BenchmarkCorpus runs every corpus block through Repair and reports the
// slowest and mean time per block: "engine" with a compiler that accepts
// any candidate, "python" with the newest real CPython found.
func BenchmarkCorpus(b *testing.B) {
	cases := repairtest.Corpus(b)
	b.Run("engine", func(b *testing.B) {
		compilers := make([]Compiler, len(cases))
		for i, c := range cases {
			compilers[i] = failOriginal(c.In)
		}
		benchCases(b, cases, 12, func(i int) Compiler { return compilers[i] })
	})
	b.Run("python", func(b *testing.B) {
		w := repairtest.Newest(b)
		compile := compiler(w)
		benchCases(b, cases, w.Minor, func(int) Compiler { return compile })
	})
}

func benchCases(b *testing.B, cases []repairtest.Case, minor int, compiler func(int) Compiler) {
	total := make([]time.Duration, len(cases))
	n := 0
	for b.Loop() {
		for i, c := range cases {
			start := time.Now()
			Repair(c.In, Options{Minor: minor, Compile: compiler(i)})
			total[i] += time.Since(start)
		}
		n++
	}
	var worst, sum time.Duration
	slowest := ""
	for i, d := range total {
		sum += d
		if d > worst {
			worst, slowest = d, cases[i].Name
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/float64(n), "max-µs/case")
	b.ReportMetric(float64(sum.Microseconds())/float64(n*len(cases)), "mean-µs/case")
	b.Logf("slowest case: %s", slowest)
}

// TestCorpusSpeed checks that the engine repairs every corpus block well
// under the 1 ms target; the bound allows for slow, shared machines.
func TestCorpusSpeed(t *testing.T) {
	const bound = 20 * time.Millisecond
	for _, c := range repairtest.Corpus(t) {
		opts := Options{Minor: 12, Compile: failOriginal(c.In)}
		best := time.Hour
		for range 3 {
			start := time.Now()
			Repair(c.In, opts)
			best = min(best, time.Since(start))
		}
		if best > bound {
			t.Errorf("%s: %v, bound %v", c.Name, best, bound)
		}
	}
}
