// Command cmdbench times whole vis-agent commands side by side with their
// references, as a user would run them, and prints the median ratios that
// BENCHMARKS.md records. `make bench` runs it.
//
//   - start-up: python3 -c pass and a plain venv's python -c pass against
//     vis-agent python -c pass (which runs in the shared environment, a
//     venv of its own), on every CPython found, with the same library;
//
//   - uv pass-through: uv --version against vis-agent python uv --version;
//
//   - shared install: vis-agent python --shared uv sync against --shared -m
//     pip install of the same locked set of wheels, from one local
//     wheelhouse, into an empty shared environment.
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
	if err := uvPassthrough(*bin, *runs); err != nil {
		fmt.Fprintf(os.Stderr, "cmdbench: uv pass-through: %v\n", err)
		os.Exit(1)
	}
	if *installs < 1 {
		return // -installs 0: start-up and uv only
	}
	if err := sharedInstall(*bin, *installs); err != nil {
		fmt.Fprintf(os.Stderr, "cmdbench: shared install: %v\n", err)
		os.Exit(1)
	}
}

// startup times `-c pass` under python, a plain venv's python and
// vis-agent python, in a VIS_HOME of its own whose shared environment
// exists (made by a first run).
func startup(bin string, runs int) error {
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		return fmt.Errorf("no CPython 3.10+ shared library found")
	}
	tmp, err := os.MkdirTemp("", "cmdbench-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("start-up: median of %d runs each, taken alternately; vis-agent python runs in its shared environment\n", runs)
	fmt.Printf("%-14s %-40s %9s %9s %9s %7s %7s %11s\n", "cpython", "reference (vis-agent python: same library)", "python", "venv", "vis-agent", "/python", "/venv", "peak RSS +")
	for _, py := range pythons {
		venv := filepath.Join(tmp, "venv-"+py.Name)
		if out, err := exec.Command(py.Executable, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			return fmt.Errorf("%s -m venv: %w\n%s", py.Executable, err, out)
		}
		env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_HOME="+filepath.Join(tmp, "vis"), "VIS_PYTHON_PACKAGES=")
		ref := []string{py.Executable, "-c", "pass"}
		plain := []string{filepath.Join(venv, "bin", "python"), "-c", "pass"}
		vis := []string{bin, "python", "-c", "pass"}
		samples, err := alternate(runs, env, ref, plain, vis)
		if err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
		r, p, v := median(samples[0]), median(samples[1]), median(samples[2])
		fmt.Printf("%-14s %-40s %7.2fms %7.2fms %7.2fms %7.3f %7.3f %7d KiB\n", py.Name, py.Executable+" -c pass",
			ms(r.wall), ms(p.wall), ms(v.wall), float64(v.wall)/float64(r.wall), float64(v.wall)/float64(p.wall),
			v.maxRSS-r.maxRSS)
	}
	return nil
}

// uvPassthrough times uv --version run directly and through vis-agent
// python uv, which checks the pin once per uv binary. A python run comes
// first, as it would for a user, so vis-agent's folder holds what such a
// run leaves (the runtime record, the library to prefetch).
func uvPassthrough(bin string, runs int) error {
	uv := filepath.Join(filepath.Dir(bin), "vis-agent-python", "uv")
	tmp, err := os.MkdirTemp("", "cmdbench-uv-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "VIS_HOME="+tmp)
	if _, err := timeOne(env, []string{bin, "python", "-c", "pass"}); err != nil {
		return err
	}
	samples, err := alternate(runs, env, []string{uv, "--version"}, []string{bin, "python", "uv", "--version"})
	if err != nil {
		return err
	}
	u, v := median(samples[0]).wall, median(samples[1]).wall
	fmt.Printf("\nuv pass-through, median of %d runs each, taken alternately:\n", runs)
	fmt.Printf("  %-46s %8.2fms\n", "uv --version", ms(u))
	fmt.Printf("  %-46s %8.2fms\n", "vis-agent python uv --version", ms(v))
	fmt.Printf("  ratio %.3f\n", float64(v)/float64(u))
	return nil
}

// alternate runs the commands one after the other, n times after a
// warm-up, so all see the same machine load.
func alternate(n int, env []string, cmds ...[]string) ([][]sample, error) {
	out := make([][]sample, len(cmds))
	for i := 0; i < n+3; i++ {
		for j, argv := range cmds {
			s, err := timeOne(env, argv)
			if err != nil {
				return nil, err
			}
			if i >= 3 {
				out[j] = append(out[j], s)
			}
		}
	}
	return out, nil
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
