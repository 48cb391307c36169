package repair

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
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
		"nobody":      "x = f(" + fill("float[0] + g(y for y in z) + np.newaxis - "),
		"rows":        "x = f(" + fill("[[1, True], [None, 'a']], "),
		"fails":       "a, b = f(" + fill("t - u, (1, 2).count(1), os.fstat(d).st_size, [x % (y for y in z)], str(p) + 'q', [[1, 2], [3]], "),
		"fields":      `x = f(f"` + fill("{a}, {b[1, 2]}, "),
		"assigns":     "x = f(\n" + fill("a = 1\n"),
		"keywords":    "x = f(" + fill("a = 1, "),
		"quote run":   `x = ('` + fill(`"`) + ")",
		"docstring":   "def f():\n    \"\"\"" + fill("    text, more\n    \n    x.y\n"),
	}
}

// failOriginal is a Compiler that refuses only the block under test, so
// benchmarks measure the engine itself: every candidate "compiles".
func failOriginal(orig string) Compiler {
	return func(src string) *protocol.SyntaxError {
		if src == orig {
			return &protocol.SyntaxError{Message: "invalid syntax", Line: 1, Column: 1}
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

// adversarialIndent returns blocks built to make the indentation repair
// slow, each with the message Python gives it: a staircase of levels
// ending in a dedent to none of them, a long pasted block, a long block
// mixing tabs and spaces.
func adversarialIndent() map[string]protocol.SyntaxError {
	var stair strings.Builder
	for n := 0; stair.Len() < adversarialSize; n++ {
		stair.WriteString(strings.Repeat(" ", n) + "if x:\n")
	}
	stair.WriteString(" y = 1\n")
	lines := strings.Count(stair.String(), "\n")
	return map[string]protocol.SyntaxError{
		stair.String(): {Message: msgUnindent, Line: lines},
		strings.Repeat("    x = (1,\n    2)\n", adversarialSize/18):           {Message: msgUnexpectedIndent, Line: 1},
		strings.Repeat("if x:\n\ty = 1\n        z = 2\n", adversarialSize/27): {Message: msgTabs, Line: 3},
		strings.Repeat("s = \"\\N{NO SUCH NAME}\"\n", adversarialSize/24):     {Message: "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-15: " + msgUnknownName, Line: 1},
	}
}

// TestAdversarialIndentBound is TestAdversarialBound for the repairs that
// run when quotes and brackets are fine, with a compiler that accepts
// every candidate.
func TestAdversarialIndentBound(t *testing.T) {
	const bound = 5 * time.Second
	for src, perr := range adversarialIndent() {
		start := time.Now()
		Repair(src, Options{Minor: 12, Compile: failWith(src, perr)})
		if d := time.Since(start); d > bound {
			t.Errorf("%s: took %v, bound %v", perr.Message, d, bound)
		}
	}
}

// hundredLines returns 100-line blocks of ordinary code, each broken one
// way, with the message Python gives it: a closer lost at a line's end
// halfway down, the block pasted with an indent, a dedent to no level.
func hundredLines() map[string]protocol.SyntaxError {
	var b strings.Builder
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&b, "def step_%d(values, scale=2):\n", i)
		fmt.Fprintf(&b, "    total = sum(v * scale for v in values if v > %d)\n", i)
		fmt.Fprintf(&b, "    print(f\"step %d: {total}\", max(len(values), 1))\n", i)
		b.WriteString("    return total\n")
	}
	block := b.String()
	dropped := strings.Replace(block, "step 12: {total}\", max(len(values), 1))", "step 12: {total}\", max(len(values), 1)", 1)
	pasted := "    " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n    ") + "\n"
	dedent := strings.Replace(block, "    return total\n\ndef step_13", "   return total\ndef step_13", 1)
	return map[string]protocol.SyntaxError{
		dropped: {Message: "'(' was never closed", Line: 51},
		pasted:  {Message: msgUnexpectedIndent, Line: 1},
		dedent:  {Message: msgUnindent, Line: 52},
	}
}

// failWith is a Compiler that refuses only orig, with perr.
func failWith(orig string, perr protocol.SyntaxError) Compiler {
	return func(src string) *protocol.SyntaxError {
		if src == orig {
			return &perr
		}
		return nil
	}
}

// TestHundredLinesSpeed checks that the engine repairs a 100-line block
// well under the 1 ms target; the bound allows for slow, shared machines.
func TestHundredLinesSpeed(t *testing.T) {
	const bound = 20 * time.Millisecond
	for src, perr := range hundredLines() {
		opts := Options{Minor: 12, Compile: failWith(src, perr)}
		best := time.Hour
		for range 3 {
			start := time.Now()
			res := Repair(src, opts)
			best = min(best, time.Since(start))
			if !res.Repaired {
				t.Fatalf("%s: not repaired:\n%s", perr.Message, res.Error())
			}
		}
		if best > bound {
			t.Errorf("%s: %v, bound %v", perr.Message, best, bound)
		}
	}
}

func BenchmarkHundredLines(b *testing.B) {
	for src, perr := range hundredLines() {
		b.Run(strings.Fields(perr.Message)[0], func(b *testing.B) {
			opts := Options{Minor: 12, Compile: failWith(src, perr)}
			for b.Loop() {
				Repair(src, opts)
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
