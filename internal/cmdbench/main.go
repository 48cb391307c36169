// Command cmdbench times whole vis-agent commands side by side with their
// references, as a user would run them, and prints the median ratios that
// BENCHMARKS.md records. `make bench` runs it.
//
//	go run ./internal/cmdbench [-runs N] [-bin bin/vis-agent]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/testenv"
)

type sample struct {
	wall   time.Duration
	maxRSS int64 // KiB
}

func main() {
	runs := flag.Int("runs", 30, "runs of each command (after 3 warm-up runs)")
	bin := flag.String("bin", "bin/vis-agent", "the vis-agent binary")
	flag.Parse()
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		fmt.Fprintln(os.Stderr, "cmdbench: no CPython 3.10+ shared library found")
		os.Exit(1)
	}
	fmt.Printf("start-up: median of %d runs each, taken alternately\n", *runs)
	fmt.Printf("%-14s %-26s %12s %12s %7s %12s\n", "cpython", "reference", "python", "vis-agent", "ratio", "peak RSS +")
	for _, py := range pythons {
		env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+py.Library)
		ref := []string{py.Executable, "-c", "pass"}
		vis := []string{*bin, "python", "-c", "pass"}
		r, v, err := alternate(*runs, env, ref, vis)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cmdbench: %s: %v\n", py.Name, err)
			os.Exit(1)
		}
		fmt.Printf("%-14s %-26s %10.2fms %10.2fms %7.3f %9d KiB\n", py.Name, py.Executable+" -c pass",
			ms(median(r).wall), ms(median(v).wall), float64(median(v).wall)/float64(median(r).wall),
			median(v).maxRSS-median(r).maxRSS)
	}
}

// alternate runs a and b one after the other, n times after a warm-up, so
// both see the same machine load.
func alternate(n int, env []string, a, b []string) (as, bs []sample, err error) {
	for i := 0; i < n+3; i++ {
		sa, err := timeOne(env, a)
		if err != nil {
			return nil, nil, err
		}
		sb, err := timeOne(env, b)
		if err != nil {
			return nil, nil, err
		}
		if i >= 3 {
			as, bs = append(as, sa), append(bs, sb)
		}
	}
	return as, bs, nil
}

func timeOne(env, argv []string) (sample, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%q: %w", argv, err)
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall, ru.Maxrss}, nil
}

// median takes the median wall time and, separately, the median peak RSS.
func median(s []sample) sample {
	walls := make([]time.Duration, len(s))
	rss := make([]int64, len(s))
	for i, x := range s {
		walls[i], rss[i] = x.wall, x.maxRSS
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	sort.Slice(rss, func(i, j int) bool { return rss[i] < rss[j] })
	return sample{walls[len(walls)/2], rss[len(rss)/2]}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
