package repair

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// FuzzRepair checks, on any input: no panic, no hang, a block that
// compiles is left alone, and a repaired block rescans clean and compiles.
// It uses the newest CPython found, and the engine alone with the
// pre-3.12 f-string grammar.
func FuzzRepair(f *testing.F) {
	for _, c := range repairtest.Corpus(f) {
		f.Add(c.In)
	}
	w := repairtest.Newest(f)
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		scan(src, 10)
		scan(src, 12)
		checkFuzzed(t, src, 11, failOriginal(src))
		if utf8.ValidString(src) {
			checkFuzzed(t, src, w.Minor, compiler(w))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})
}

func checkFuzzed(t *testing.T, src string, minor int, compile Compiler) {
	t.Helper()
	res := repair(src, Options{Minor: minor, Compile: compile})
	if compile(src) == nil {
		if res.Changed || res.Repaired || res.Source != src {
			t.Fatalf("changed a block that compiles: %q -> %q", src, res.Source)
		}
		return
	}
	if !res.Repaired {
		if res.Changed || res.Source != src || res.Error() == "" {
			t.Fatalf("refused block changed or without error: %+v", res)
		}
		return
	}
	if res.Source == src || len(res.Fixes) == 0 {
		t.Fatalf("repair without change or notes: %+v", res)
	}
	if ps := scan(res.Source, minor); len(ps) != 0 {
		t.Fatalf("repair of %q rescans with problems %v", src, ps)
	}
	if err := compile(res.Source); err != nil {
		t.Fatalf("repair of %q does not compile: %v", src, err.Message)
	}
	lines := strings.Count(src, "\n") + 1
	for _, f := range res.Fixes {
		if f.Line < 1 || f.Line > lines || f.Column < 1 {
			t.Fatalf("fix outside the block: %+v", f)
		}
	}
}
