// Command cmdbench times whole vis-agent commands side by side with their
// references, as a user would run them, and prints the median ratios that
// BENCHMARKS.md records. `make bench` runs it.
//
//   - start-up: python3 -c pass and a plain venv's python -c pass against
//     vis-agent python -c pass (which runs in the shared environment, a
//     venv of its own), on every CPython found, with the same library: as
//     a user's repeated runs start, replaying the first one's plan
//     (pyembed/fastpath.c), and with VIS_PYTHON_FASTPATH=0, as every run
//     that cannot replay one starts (through Go);
//
//   - uv pass-through: uv --version against vis-agent python uv --version,
//     replayed and through Go;
//
//   - shared install: vis-agent python --shared uv sync against --shared -m
//     pip install of the same locked set of wheels, from one local
//     wheelhouse, into an empty shared environment.
//
//     go run ./bench/cmdbench [-runs N] [-installs N] [-bin bin/vis-agent]
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

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
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
	fmt.Printf("start-up: median of %d runs each, taken alternately; vis-agent python runs in its shared environment;\n", runs)
	fmt.Printf("replayed: the run repeated (its plan saved), go: VIS_PYTHON_FASTPATH=0\n")
	fmt.Printf("%-14s %9s %9s %9s %7s %7s %11s %9s %7s %7s %11s\n", "cpython", "python", "venv",
		"replayed", "/python", "/venv", "peak RSS +", "go", "/python", "/venv", "peak RSS +")
	for _, py := range pythons {
		venv := filepath.Join(tmp, "venv-"+py.Name)
		if out, err := exec.Command(py.Executable, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			return fmt.Errorf("%s -m venv: %w\n%s", py.Executable, err, out)
		}
		env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_HOME="+filepath.Join(tmp, "vis"), "VIS_PYTHON_PACKAGES=")
		ref := []string{py.Executable, "-c", "pass"}
		plain := []string{filepath.Join(venv, "bin", "python"), "-c", "pass"}
		vis := []string{bin, "python", "-c", "pass"}
		// The first run makes the shared environment; the plan of a run is
		// saved once what it observed has been still for a while.
		if err := settle(env, vis); err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
		samples, err := alternate(runs, env, command{argv: ref}, command{argv: plain}, command{argv: vis}, goStart(vis))
		if err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
		r, p, v, g := median(samples[0]), median(samples[1]), median(samples[2]), median(samples[3])
		fmt.Printf("%-14s %7.2fms %7.2fms %7.2fms %7.3f %7.3f %7d KiB %7.2fms %7.3f %7.3f %7d KiB\n", py.Name,
			ms(r.wall), ms(p.wall), ms(v.wall), ratio(v, r), ratio(v, p), v.maxRSS-r.maxRSS,
			ms(g.wall), ratio(g, r), ratio(g, p), g.maxRSS-r.maxRSS)
	}
	return nil
}

// settleTime outlasts the time a run's observed files must be still before
// its plan is saved (pyembed's racyWindow).
const settleTime = 2100 * time.Millisecond

// settle runs argv once, as a user's first run, and waits until the next
// run can save its plan.
func settle(env, argv []string) error {
	if _, err := timeOne(env, argv); err != nil {
		return err
	}
	time.Sleep(settleTime)
	return nil
}

// command is a command line, and the variables it gets besides the run's.
type command struct {
	argv, env []string
}

// goStart is argv run through Go, as a run that has no plan to replay.
func goStart(argv []string) command {
	return command{argv: argv, env: []string{"VIS_PYTHON_FASTPATH=0"}}
}

func ratio(a, b sample) float64 { return float64(a.wall) / float64(b.wall) }

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
	vis := []string{bin, "python", "uv", "--version"}
	if err := settle(env, vis); err != nil {
		return err
	}
	samples, err := alternate(runs, env, command{argv: []string{uv, "--version"}}, command{argv: vis}, goStart(vis))
	if err != nil {
		return err
	}
	u, v, g := median(samples[0]), median(samples[1]), median(samples[2])
	fmt.Printf("\nuv pass-through, median of %d runs each, taken alternately:\n", runs)
	fmt.Printf("  %-56s %8.2fms\n", "uv --version", ms(u.wall))
	fmt.Printf("  %-56s %8.2fms  ratio %.3f\n", "vis-agent python uv --version (replayed)", ms(v.wall), ratio(v, u))
	fmt.Printf("  %-56s %8.2fms  ratio %.3f\n", "VIS_PYTHON_FASTPATH=0 vis-agent python uv --version", ms(g.wall), ratio(g, u))
	return nil
}

// alternate runs the commands one after the other, n times after a
// warm-up, so all see the same machine load.
func alternate(n int, env []string, cmds ...command) ([][]sample, error) {
	out := make([][]sample, len(cmds))
	for i := 0; i < n+3; i++ {
		for j, c := range cmds {
			s, err := timeOne(append(env[:len(env):len(env)], c.env...), c.argv)
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
