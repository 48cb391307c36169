package tui

import (
	"fmt"
	"strings"
	"testing"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

func block(lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "    x%d = some_function(argument, other_argument) + %d\n", i, i)
	}
	return b.String()
}

// BenchmarkTextareaKey is a key typed into bubbles' textarea holding a
// block, and its repaint: why the REPL has its own editor.
func BenchmarkTextareaKey(b *testing.B) {
	for _, n := range []int{5, 500} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			ta := textarea.New()
			ta.SetWidth(100)
			ta.SetHeight(10)
			ta.MaxHeight, ta.CharLimit = 0, 0
			ta.Focus()
			ta.SetValue(block(n))
			for b.Loop() {
				ta, _ = ta.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
				_ = ta.View()
			}
		})
	}
}

// BenchmarkReplKey is a key typed into the REPL's input holding a block,
// and the whole frame's repaint, with a transcript of 200 blocks; with
// stream, each key comes after a 64 KiB chunk of a block's output (as
// while a block prints 10 MB).
func BenchmarkReplKey(b *testing.B) {
	for _, c := range []struct {
		lines  int
		stream bool
	}{{5, false}, {500, false}, {5, true}} {
		b.Run(fmt.Sprintf("lines=%d/stream=%v", c.lines, c.stream), func(b *testing.B) {
			m := newModel(&testing.T{}, 120, 40)
			for i := 0; i < 200; i++ {
				m.tr.add(kindBlock, fmt.Sprintf("print(%d)", i))
				m.tr.print(kindStdout, fmt.Sprintf("%d\n", i))
			}
			m.Update(defsMsg{data: defsJSON})
			m.input.ed.SetValue(block(c.lines))
			chunk := protocol.Event{Ev: "out", Stream: "stdout", Data: strings.Repeat(strings.Repeat("y", 99)+"\n", 655)}
			if c.stream {
				m.s.running, m.runID = true, 1
			}
			k := tea.KeyPressMsg{Code: 'a', Text: "a"}
			for b.Loop() {
				if c.stream {
					m.Update(runEventMsg{1, chunk})
				}
				m.Update(k)
				_ = m.View()
			}
		})
	}
}
