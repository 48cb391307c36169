// Command cmdbench times whole vis-agent commands side by side with their
// references, as a user would run them, and prints the median ratios that
// BENCHMARKS.md records. `make bench` runs it.
//
//   - start-up: python3 -c pass against vis-agent python -c pass, on every
//     CPython found, with the same library;
//
//   - shared install: vis-agent python --shared uv sync against --shared -m
//     pip install of the same locked set of wheels, from one local
//     wheelhouse, into an empty shared folder.
//
//     go run ./internal/cmdbench [-runs N] [-installs N] [-bin bin/vis-agent]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	runs := flag.Int("runs", 30, "start-up runs of each command (after 3 warm-up runs)")
	installs := flag.Int("installs", 7, "shared installs with each tool (after one warm-up)")
	bin := flag.String("bin", "bin/vis-agent", "the vis-agent binary")
	flag.Parse()
	if abs, err := filepath.Abs(*bin); err == nil {
		*bin = abs
	}
	if err := startup(*bin, *runs); err != nil {
		fmt.Fprintf(os.Stderr, "cmdbench: %v\n", err)
		os.Exit(1)
	}
	if err := sharedInstall(*bin, *installs); err != nil {
		fmt.Fprintf(os.Stderr, "cmdbench: shared install: %v\n", err)
		os.Exit(1)
	}
}

// startup times `-c pass` under python and vis-agent python.
func startup(bin string, runs int) error {
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		return fmt.Errorf("no CPython 3.10+ shared library found")
	}
	fmt.Printf("start-up: median of %d runs each, taken alternately\n", runs)
	fmt.Printf("%-14s %-46s %10s %10s %7s %12s\n", "cpython", "reference (vis-agent python: same library)", "python", "vis-agent", "ratio", "peak RSS +")
	for _, py := range pythons {
		env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+py.Library)
		ref := []string{py.Executable, "-c", "pass"}
		vis := []string{bin, "python", "-c", "pass"}
		r, v, err := alternate(runs, env, ref, vis)
		if err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
		fmt.Printf("%-14s %-46s %8.2fms %8.2fms %7.3f %8d KiB\n", py.Name, py.Executable+" -c pass",
			ms(median(r).wall), ms(median(v).wall), float64(median(v).wall)/float64(median(r).wall),
			median(v).maxRSS-median(r).maxRSS)
	}
	return nil
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
	return timeIn("", env, argv)
}

func timeIn(dir string, env, argv []string) (sample, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return sample{}, fmt.Errorf("%q: %w\n%s", argv, err, out)
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
