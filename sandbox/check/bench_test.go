package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// BenchmarkDecideKnown is the host's own work in a checked patch() of a
// 2,000-line file known to compile, the compile of the edited statements
// answered: the statement boundaries and the span of the edit.
func BenchmarkDecideKnown(b *testing.B) {
	w := repairtest.Newest(b)
	var path string
	for _, f := range w.Stdlib(b) {
		if filepath.Base(f) == "argparse.py" {
			path = f
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skip("no argparse.py")
	}
	lines := strings.SplitAfter(string(data), "\n")
	src := strings.Join(lines[:min(len(lines), 2000)], "")
	old := "    return copy.copy(items)\n"
	if strings.Count(src, old) != 1 {
		b.Skip("argparse.py changed")
	}
	e := edit("big.py", src, old, "    return copy.copy(items)  # x\n", true)
	e.Starts = Starts(src, w.Minor) // as the host keeps them
	c := Checker{Minor: w.Minor, Compile: func(name, s string) (*protocol.SyntaxError, bool) { return nil, true }}
	b.ResetTimer()
	for range b.N {
		if d, _ := c.Decide(e); !d.Valid {
			b.Fatal(d)
		}
	}
}
