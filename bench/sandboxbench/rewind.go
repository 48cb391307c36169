package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// rewindDay is a session holding a 1M-row frame with a text column, read
// from a CSV, and destroy the block an agent regrets.
var (
	rewindDay = day{"1M-row frame", []string{
		"import pandas as pd, numpy as np",
		"df = pd.read_csv(\"rows.csv\")\ndf[\"total\"] = df.a * df.b",
	}, "print(len(df))"}
	rewindDestroy = "df = df[df.k == 3]"
)

// rewindFigures prints issue 37's figures: the way back from a
// destructive block, `sandbox rewind` then the next block as whole
// commands, against a Jupyter kernel running the setup cells again and
// the same cell (no restart: the kernel still lives), in turn, runs times
// each after a first round; then the cost a history adds to a block.
func rewindFigures(bin, wheels string, runs int, pause time.Duration) error {
	b, py, err := dataBench(bin, wheels, "")
	if err != nil {
		return err
	}
	defer b.close()
	csv := filepath.Join(b.ws, "rows.csv")
	if err := writeDayCSV(csv, 1_000_000); err != nil {
		return err
	}
	st, _ := os.Stat(csv)
	for _, cell := range rewindDay.setup {
		if _, err := b.block("rw", cell); err != nil {
			return err
		}
	}
	venv, err := jupyterVenv(py, wheels)
	if err != nil {
		return err
	}
	defer os.RemoveAll(venv)
	j, err := startJupyterRestart(venv, b.ws, rewindDay, rewindDestroy)
	if err != nil {
		return err
	}
	defer j.close()
	var ours, rewinds, theirs []time.Duration
	for run := 0; run < runs+1; run++ {
		var o, r, jt time.Duration
		for k := range 2 {
			if (run+k)%2 == 0 {
				o, r, err = b.rewindBack(pause)
			} else {
				jt, err = j.restart()
			}
			if err != nil {
				return err
			}
		}
		if run > 0 { // the first warms the caches
			ours, rewinds, theirs = append(ours, o), append(rewinds, r), append(theirs, jt)
		}
	}
	fmt.Printf("rewind to the previous block on %s, a 1M-row frame (a %.0f MB CSV read, a text column), %s after the destructive block, median of %d in turn:\n",
		py.Name, float64(st.Size())/1e6, pause, runs)
	fmt.Printf("  vis-agent sandbox rewind + run %.1f ms (rewind alone %.1f ms); Jupyter setup cells again + the same cell %.1f ms; ratio %.3f (goal <= 0.1)\n",
		ms(median(ours)), ms(median(rewinds)), ms(median(theirs)), float64(median(ours))/float64(median(theirs)))
	return historyCost(bin, py, runs)
}

// rewindBack runs the destructive block (untimed), waits pause (the
// agent reading its result), then times `sandbox rewind` and the next
// block, which must see the whole frame: both, and the rewind alone.
func (b *bench) rewindBack(pause time.Duration) (time.Duration, time.Duration, error) {
	if _, err := b.block("rw", rewindDestroy); err != nil {
		return 0, 0, err
	}
	time.Sleep(pause)
	start := time.Now()
	r, err := b.timeRun("rewind", "--session", "rw")
	if err != nil {
		return 0, 0, err
	}
	out, err := b.cmd("run", "--session", "rw", "-c", rewindDay.check).CombinedOutput()
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("the block after the rewind: %w\n%s", err, out)
	case !strings.Contains(string(out), "1000000\n"):
		return 0, 0, fmt.Errorf("the block after the rewind did not see the whole frame:\n%s", out)
	}
	return time.Since(start), r, nil
}

// historyCost prints the cost a history adds to a warm block: sessions
// with sandbox.history_blocks = 50 (the default) and 0 (none), block by
// block in turn, for a block that changes nothing and one that changes a
// value (a save, then the history's link), after two sessions with 50
// (what the machine's noise alone makes of the ratio); each figure is the
// mean of the medians of two rounds, the sessions' places swapped.
func historyCost(bin string, py testenv.Python, runs int) error {
	n := 10 * runs
	fmt.Printf("the cost of a history (sandbox.history_blocks = 50 against 0) on %s, median of %d warm blocks each through the Go client, in turn:\n", py.Name, n)
	for _, c := range []struct{ code, other string }{
		{"x = 1", "history_blocks = 50"}, // two like sessions: the noise floor
		{"x = 1", "history_blocks = 0"},
		{"n = globals().get('n', 0) + 1", "history_blocks = 0"},
	} {
		// Each twice, the sessions' places swapped: the first-made
		// session of a pair is not alike the second on a loaded machine.
		with, other, err := warmInTurn([2]string{bin, bin}, [2]string{"history_blocks = 50", c.other}, py, c.code, n)
		if err != nil {
			return err
		}
		other2, with2, err := warmInTurn([2]string{bin, bin}, [2]string{c.other, "history_blocks = 50"}, py, c.code, n)
		if err != nil {
			return err
		}
		with, other = (with+with2)/2, (other+other2)/2
		fmt.Printf("  %-30s 50: %.3f ms, %s: %.3f ms, ratio %.3f (%+.1f µs)\n", c.code, ms(with), c.other, ms(other),
			float64(with)/float64(other), float64((with-other).Nanoseconds())/1000)
	}
	return nil
}
