// Command sandboxbench times persistent sandbox sessions side by side with
// their references and prints the figures BENCHMARKS.md records. `make
// bench` runs it.
//
//   - warm block: `vis-agent sandbox run -c 'x = 1'` on a running session
//     against `python3 -c pass`, on every CPython found;
//
//   - cold block: the same in a new session (host and interpreter start);
//
//   - round trip of `x = 1` through the Go client API, and the same on a
//     Jupyter kernel (jupyter_client + ipykernel installed from PyPI into a
//     temporary folder, on the same CPython);
//
//   - snapshot cost when nothing changed;
//
//   - jail overhead: a warm `x = 1` block and an import-heavy block
//     (`import json, email, http.client`, their modules dropped from
//     sys.modules first) through the Go client API, in a jailed session
//     and in one started with the jail off, alternating, on every CPython;
//
//   - first block after a restart, with 4 MiB of pickled values and a 32
//     MiB spilled string, against one with an empty snapshot and against
//     Jupyter's kernel restart to ready.
//
//   - with -cold-against OTHER: only the cold first block, of -bin and of
//     another build, taking turns run by run, on every CPython.
//
//   - with -warm-against OTHER: only the warm `x = 1` block through the Go
//     client API, in a session of -bin and one of another build, block by
//     block in turn, on every CPython (what a change to every block's path
//     costs, such as the check of the files a block changed).
//
//   - with -data WHEELHOUSE: only issue 21's figures (data.go), with numpy
//     and pandas from that folder of wheels; with -rewind too, only issue
//     37's (rewind.go): a rewind past a destructive block on a 1M-row
//     frame against a Jupyter kernel running the setup again, and the cost
//     a history adds to a warm block.
//
//     go run ./bench/sandboxbench [-runs N] [-bin bin/vis-agent] [-jupyter=false] [-jail-only] [-blocks-only] [-cold-against OTHER] [-warm-against OTHER] [-data WHEELHOUSE [-rewind]] [-git]
//
// -git makes every workspace a git repository's top (a .git folder), as a
// user's project often is: a jailed session keeps it read-only.
package main

import (
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

//go:embed jupyter.py
var jupyterScript string

//go:embed snapshot.py
var snapshotScript string

func main() {
	runs := flag.Int("runs", 30, "runs of each command (after 3 warm-up runs)")
	bin := flag.String("bin", "bin/vis-agent", "the vis-agent binary")
	jupyter := flag.Bool("jupyter", true, "also time a Jupyter kernel (installs jupyter_client and ipykernel from PyPI)")
	jailOnly := flag.Bool("jail-only", false, "time the jail's overhead only")
	blocksOnly := flag.Bool("blocks-only", false, "time the warm and cold blocks only")
	against := flag.String("cold-against", "", "time only cold first blocks, of -bin and of this other build, run by run in turn")
	data := flag.String("data", "", "time only the data figures, with numpy and pandas from this folder of wheels")
	rewind := flag.Bool("rewind", false, "with -data: time only the rewind figures")
	sandboxConfig := flag.String("sandbox-config", "", `with -data: [sandbox] settings for the bench's config.toml ("jail = false\nwarm_restart = false")`)
	pause := flag.Duration("pause", 0, "with -data: the time both sides are left idle before each restart (an agent's time between calls)")
	warmAgainst := flag.String("warm-against", "", "time only warm blocks, of -bin and of this other build, block by block in turn")
	remote := flag.String("remote", "", "time only the round trip of x = 1 through the client API to session bench of -workspace: here, through this --host URL (the same session: ssh://localhost with the same VIS_HOME) with the multiplexer, and without it")
	workspace := flag.String("workspace", "", "with -remote: the workspace of session bench")
	gap := flag.Duration("gap", 0, "with -remote: the idle time before each round trip (10ms: a client process's start)")
	flag.BoolVar(&gitWorkspace, "git", false, "make each workspace a git repository's top (a .git folder)")
	flag.Parse()
	if abs, err := filepath.Abs(*bin); err == nil {
		*bin = abs
	}
	if abs, err := filepath.Abs(*against); err == nil && *against != "" {
		*against = abs
	}
	if abs, err := filepath.Abs(*data); err == nil && *data != "" {
		*data = abs
	}
	if abs, err := filepath.Abs(*warmAgainst); err == nil && *warmAgainst != "" {
		*warmAgainst = abs
	}
	var err error
	switch {
	case *remote != "":
		err = remoteRoundTrips(*bin, *remote, *workspace, *runs, *gap)
	case *data != "" && *rewind:
		err = rewindFigures(*bin, *data, *runs, *pause)
	case *data != "":
		err = dataFigures(*bin, *data, *runs, *sandboxConfig, *pause)
	case *warmAgainst != "":
		err = warmAgainstOther(*bin, *warmAgainst, *runs)
	case *against != "":
		err = coldAgainst(*bin, *against, *runs)
	case *jailOnly:
		err = jailOverheads(*bin, *runs)
	case *blocksOnly:
		err = blockFigures(*bin, *runs)
	default:
		err = run(*bin, *runs, *jupyter)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxbench: %v\n", err)
		os.Exit(1)
	}
}

// bench is one VIS_HOME with the sessions it started, all stopped at the end.
type bench struct {
	bin, home, ws string
	env           []string
	sessions      []string
}

// gitWorkspace: newBench's workspaces hold a .git folder.
var gitWorkspace bool

func newBench(bin string, py testenv.Python) (*bench, error) {
	home, err := os.MkdirTemp("", "sandboxbench-")
	if err != nil {
		return nil, err
	}
	// The workspace is not VIS_HOME itself, as a user's is not: a jailed
	// session may write in its workspace, and so in anything under it.
	b := &bench{bin: bin, home: home, ws: filepath.Join(home, "ws")}
	if err := os.Mkdir(b.ws, 0o755); err != nil {
		return nil, err
	}
	if gitWorkspace {
		if err := os.MkdirAll(filepath.Join(b.ws, ".git", "hooks"), 0o755); err != nil {
			return nil, err
		}
	}
	for _, kv := range os.Environ() {
		if len(kv) < 4 || kv[:4] != "VIS_" {
			b.env = append(b.env, kv)
		}
	}
	b.env = append(b.env, "VIS_HOME="+home, "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_ENV_IDLE_TTL_MS=600000")
	return b, nil
}

func (b *bench) cmd(args ...string) *exec.Cmd {
	c := exec.Command(b.bin, append([]string{"sandbox"}, args...)...)
	c.Env, c.Dir = b.env, b.ws
	return c
}

func (b *bench) timeRun(args ...string) (time.Duration, error) {
	c := b.cmd(args...)
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("vis-agent sandbox %v: %w\n%s", args, err, out)
	}
	return time.Since(start), nil
}

func (b *bench) block(session, code string) (time.Duration, error) {
	b.note(session)
	return b.timeRun("run", "--session", session, "-c", code)
}

func (b *bench) note(session string) {
	for _, s := range b.sessions {
		if s == session {
			return
		}
	}
	b.sessions = append(b.sessions, session)
}

func (b *bench) close() {
	for _, s := range b.sessions {
		b.cmd("stop", "--force", "--session", s).Run()
	}
	os.RemoveAll(b.home)
}

func timePython(py testenv.Python) (time.Duration, error) {
	start := time.Now()
	if out, err := exec.Command(py.Executable, "-c", "pass").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s -c pass: %w\n%s", py.Executable, err, out)
	}
	return time.Since(start), nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func run(bin string, runs int, jupyter bool) error {
	pythons := testenv.FindPythons()
	if err := blockFigures(bin, runs); err != nil {
		return err
	}
	if err := jailOverheads(bin, runs); err != nil {
		return err
	}
	py := pythons[0]
	for _, p := range pythons {
		if p.Version.Minor == 11 && p.Name != "3.11-usr" {
			py = p // the CPython Jupyter's anchor figures were taken on
		}
	}
	fmt.Printf("\non %s:\n", py.Name)
	rt, err := roundTrip(bin, py, 20*runs)
	if err != nil {
		return err
	}
	fmt.Printf("Go client round trip of x = 1: median %.3f ms over %d\n", ms(rt), 20*runs)
	if err := snapshotCost(py); err != nil {
		return err
	}
	full, empty, err := restarts(bin, py, 7)
	if err != nil {
		return err
	}
	fmt.Printf("first block after restart: 4 MiB pickled + 32 MiB spill %.1f ms, empty snapshot %.1f ms, ratio %.2f\n",
		ms(full), ms(empty), float64(full)/float64(empty))
	if jupyter {
		j, err := jupyterFigures(py, 20*runs)
		if err != nil {
			return err
		}
		fmt.Printf("Jupyter kernel: round trip median %.3f ms (p90 %.3f), restart to ready %.1f ms\n", j.Roundtrip, j.RoundtripP90, j.Restart)
		fmt.Printf("ours/Jupyter: round trip %.2f, restart (with 36 MiB restored) %.2f\n", ms(rt)/j.Roundtrip, ms(full)/j.Restart)
	}
	return nil
}

func coldRuns(runs int) int { return max(5, runs/3) }

// blockFigures prints the warm and cold rows of every CPython.
func blockFigures(bin string, runs int) error {
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		return fmt.Errorf("no CPython 3.10+ shared library found")
	}
	fmt.Printf("sandbox blocks: median of %d runs each, alternating with python3 -c pass (cold: %d)\n", runs, coldRuns(runs))
	fmt.Printf("%-14s %10s %10s %7s %10s %7s\n", "cpython", "python", "warm run", "ratio", "cold run", "ratio")
	for _, py := range pythons {
		if err := blocks(bin, py, runs); err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
	}
	return nil
}

// blocks prints the warm and cold rows of one CPython.
func blocks(bin string, py testenv.Python, runs int) error {
	b, err := newBench(bin, py)
	if err != nil {
		return err
	}
	defer b.close()
	if _, err := b.block("warm", "x = 1"); err != nil {
		return err
	}
	var pys, warm, cold, pys2 []time.Duration
	for i := 0; i < runs+3; i++ {
		p, err := timePython(py)
		if err != nil {
			return err
		}
		w, err := b.block("warm", "x = 1")
		if err != nil {
			return err
		}
		if i >= 3 {
			pys, warm = append(pys, p), append(warm, w)
		}
	}
	for i := 0; i < coldRuns(runs); i++ {
		p, err := timePython(py)
		if err != nil {
			return err
		}
		c, err := b.block(fmt.Sprintf("cold%d", i), "x = 1")
		if err != nil {
			return err
		}
		pys2, cold = append(pys2, p), append(cold, c)
		b.cmd("stop", "--session", fmt.Sprintf("cold%d", i)).Run()
	}
	fmt.Printf("%-14s %8.2fms %8.2fms %7.3f %8.2fms %7.3f\n", py.Name, ms(median(pys)), ms(median(warm)),
		float64(median(warm))/float64(median(pys)), ms(median(cold)), float64(median(cold))/float64(median(pys2)))
	return nil
}

// coldAgainst prints, for every CPython, the cold first block of bin and
// of other (each in a VIS_HOME of its own), taking turns run by run with
// each other and with python3 -c pass, so that a shared machine's load
// weighs on both alike.
func coldAgainst(bin, other string, runs int) error {
	fmt.Printf("cold first blocks: median of %d runs each, in turn with python3 -c pass\n", runs)
	fmt.Printf("%-14s %10s %10s %7s %10s %7s %7s\n", "cpython", "python", "cold -bin", "ratio", "other", "ratio", "÷ other")
	for _, py := range testenv.FindPythons() {
		if err := coldPair(bin, other, py, runs); err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
	}
	return nil
}

// coldPair prints coldAgainst's row of one CPython.
func coldPair(bin, other string, py testenv.Python, runs int) error {
	var benches [2]*bench
	for i, b := range []string{bin, other} {
		bb, err := newBench(b, py)
		if err != nil {
			return err
		}
		defer bb.close()
		benches[i] = bb
		// The first session installs the driver (and its bytecode).
		if _, err := bb.block("first", "x = 1"); err != nil {
			return err
		}
	}
	var pys []time.Duration
	var cold [2][]time.Duration
	for i := 0; i < runs; i++ {
		p, err := timePython(py)
		if err != nil {
			return err
		}
		pys = append(pys, p)
		for k := range 2 {
			j := (i + k) % 2 // who goes first alternates
			name := fmt.Sprintf("cold%d", i)
			c, err := benches[j].block(name, "x = 1")
			if err != nil {
				return err
			}
			cold[j] = append(cold[j], c)
			benches[j].cmd("stop", "--session", name).Run()
		}
	}
	p, a, o := median(pys), median(cold[0]), median(cold[1])
	fmt.Printf("%-14s %8.2fms %8.2fms %7.3f %8.2fms %7.3f %7.3f\n", py.Name, ms(p), ms(a), float64(a)/float64(p),
		ms(o), float64(o)/float64(p), float64(a)/float64(o))
	return nil
}

// warmAgainstOther prints, for every CPython, the medians of 10 × runs
// warm `x = 1` blocks through the Go client API in a session of bin and
// one of other, block by block in turn, and their difference.
func warmAgainstOther(bin, other string, runs int) error {
	n := 10 * runs
	fmt.Printf("warm x = 1 blocks: median of %d blocks each through the Go client, in turn\n", n)
	fmt.Printf("%-14s %10s %10s %10s\n", "cpython", "-bin", "other", "-bin − other")
	for _, py := range testenv.FindPythons() {
		a, o, err := warmInTurn([2]string{bin, other}, [2]string{}, py, "x = 1", n)
		if err != nil {
			return err
		}
		fmt.Printf("%-14s %8.3fms %8.3fms %+9.1fµs\n", py.Name, ms(a), ms(o), float64((a-o).Nanoseconds())/1000)
	}
	return nil
}

// warmInTurn is the median time of n warm blocks of code through the Go
// client in a session of each of two benches (a binary, and the [sandbox]
// settings of its config.toml), block by block in turn, after 20 each.
func warmInTurn(bins, sandboxConfig [2]string, py testenv.Python, code string, n int) (time.Duration, time.Duration, error) {
	var sessions [2]*client.Session
	for i, b := range bins {
		bb, err := newBench(b, py)
		if err != nil {
			return 0, 0, err
		}
		defer bb.close()
		if sandboxConfig[i] != "" {
			if err := os.WriteFile(filepath.Join(bb.home, "config.toml"), []byte("[sandbox]\n"+sandboxConfig[i]+"\n"), 0o644); err != nil {
				return 0, 0, err
			}
		}
		if sessions[i], err = bb.open("warm", nil); err != nil {
			return 0, 0, err
		}
	}
	var times [2][]time.Duration
	for i := 0; i < n+20; i++ {
		for k := range 2 {
			j := (i + k) % 2 // who goes first alternates
			d, err := timeBlock(sessions[j], code)
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %w", py.Name, err)
			}
			if i >= 20 {
				times[j] = append(times[j], d)
			}
		}
	}
	return median(times[0]), median(times[1]), nil
}

// roundTrip times `x = 1` through the client API on a warm session.
func roundTrip(bin string, py testenv.Python, n int) (time.Duration, error) {
	b, err := newBench(bin, py)
	if err != nil {
		return 0, err
	}
	defer b.close()
	s, err := b.open("rt", nil)
	if err != nil {
		return 0, err
	}
	var times []time.Duration
	for i := 0; i < n+20; i++ {
		d, err := timeBlock(s, "x = 1")
		if err != nil {
			return 0, err
		}
		if i >= 20 {
			times = append(times, d)
		}
	}
	return median(times), nil
}

// open is a Go client of session name, whose host starts its child under
// policy (nil: the settings').
func (b *bench) open(name string, policy *protocol.Policy) (*client.Session, error) {
	// The host the client starts keeps this process's VIS_* settings
	// (session.Environ).
	for _, kv := range b.env {
		if k, v, ok := cut(kv); ok {
			os.Setenv(k, v)
		}
	}
	root := filepath.Join(b.home, "sandbox", "sessions")
	m := session.Meta{Name: name, Workspace: b.ws}
	b.note(name)
	return client.Open(root, m, append([]string{b.bin}, protocol.HostArgs(session.Find(root, m).Dir, policy)...))
}

// timeBlock runs code through s and times the round trip.
func timeBlock(s *client.Session, code string) (time.Duration, error) {
	start := time.Now()
	res, err := s.Run(code, client.RunOptions{}, nil)
	if err != nil {
		return 0, err
	}
	if res.Error != nil {
		return 0, fmt.Errorf("%q raised %s: %s", code, res.Error.Type, res.Error.Message)
	}
	return time.Since(start), nil
}

// importBlock imports json, email and http.client afresh each time: the
// files are found, opened and read again, which is what the jail checks.
const importBlock = `import sys
for _m in [m for m in sys.modules if m.split(".")[0] in ("json", "email", "http")]:
    del sys.modules[_m]
import json, email, http.client`

// jailOverheads prints, for every CPython, the jailed/unjailed ratio of a
// warm `x = 1` block and of the import-heavy block, timed alternately in
// two sessions of the same CPython.
func jailOverheads(bin string, runs int) error {
	n := 10 * runs
	fmt.Printf("\njail overhead: median of %d blocks through the Go client, alternating jailed and unjailed sessions\n", n)
	fmt.Printf("%-14s %10s %10s %7s %12s %12s %7s\n", "cpython", "x=1 jail", "x=1 free", "ratio", "import jail", "import free", "ratio")
	for _, py := range testenv.FindPythons() {
		b, err := newBench(bin, py)
		if err != nil {
			return err
		}
		row, err := jailOverhead(b, n)
		b.close()
		if err != nil {
			return fmt.Errorf("%s: %w", py.Name, err)
		}
		fmt.Printf("%-14s %8.3fms %8.3fms %7.3f %10.2fms %10.2fms %7.3f\n", py.Name, ms(row[0]), ms(row[1]),
			float64(row[0])/float64(row[1]), ms(row[2]), ms(row[3]), float64(row[2])/float64(row[3]))
	}
	return nil
}

// jailOverhead is the medians of x = 1 jailed, unjailed, then of the
// import block jailed, unjailed.
func jailOverhead(b *bench, n int) ([4]time.Duration, error) {
	var medians [4]time.Duration
	jailed, err := b.open("jailed", &protocol.Policy{Jail: true, Network: true, MaxThreads: 64, MemoryMB: 4096})
	if err != nil {
		return medians, err
	}
	free, err := b.open("free", &protocol.Policy{Jail: false, Network: true, MaxThreads: 64, MemoryMB: 4096})
	if err != nil {
		return medians, err
	}
	times := make([][]time.Duration, 4)
	cases := []struct {
		s    *client.Session
		code string
	}{{jailed, "x = 1"}, {free, "x = 1"}, {jailed, importBlock}, {free, importBlock}}
	for i := 0; i < n+20; i++ {
		// Each pair in turn first, so neither gains from going second.
		order := []int{0, 1, 2, 3}
		if i%2 == 1 {
			order = []int{1, 0, 3, 2}
		}
		for _, k := range order {
			c := cases[k]
			d, err := timeBlock(c.s, c.code)
			if err != nil {
				return medians, err
			}
			if i >= 20 {
				times[k] = append(times[k], d)
			}
		}
	}
	for k := range medians {
		medians[k] = median(times[k])
	}
	return medians, nil
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// snapshotCost runs snapshot.py with the state module of this tree.
func snapshotCost(py testenv.Python) error {
	dir, err := os.MkdirTemp("", "sandboxbench-snapshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "snapshot.py")
	os.WriteFile(script, []byte(snapshotScript), 0o644)
	pkg, _ := filepath.Abs(filepath.Join("sandbox", "child", "py"))
	folder := filepath.Join(dir, "session")
	os.Mkdir(folder, 0o700)
	out, err := exec.Command(py.Executable, script, pkg, folder, "200").Output()
	if err != nil {
		return fmt.Errorf("snapshot.py: %w", err)
	}
	var v struct {
		UnchangedSaveMS float64 `json:"unchanged_save_ms"`
		Bytes           int64   `json:"bytes"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("snapshot.py: %w: %s", err, out)
	}
	fmt.Printf("snapshot when nothing changed (%.1f MiB saved): median %.3f ms over 200\n", float64(v.Bytes)/(1<<20), v.UnchangedSaveMS)
	return nil
}

// restarts times the first block after `sandbox restart` of a session
// holding 4 MiB of pickled values and 32 MiB of spill, and of one holding
// almost nothing.
func restarts(bin string, py testenv.Python, n int) (full, empty time.Duration, err error) {
	b, err := newBench(bin, py)
	if err != nil {
		return 0, 0, err
	}
	defer b.close()
	// Eight lists of about 0.5 MiB pickled each, and one 32 MiB string.
	if _, err := b.block("full", "vals = {f'v{i}': list(range(i, i + 100000)) for i in range(8)}\nbig = 's' * (32 << 20)"); err != nil {
		return 0, 0, err
	}
	if _, err := b.block("empty", "y = 1"); err != nil {
		return 0, 0, err
	}
	var fs, es []time.Duration
	for i := 0; i < n; i++ {
		for _, s := range []string{"full", "empty"} {
			if _, err := b.timeRun("restart", "--session", s); err != nil {
				return 0, 0, err
			}
			d, err := b.block(s, "x = 1")
			if err != nil {
				return 0, 0, err
			}
			if s == "full" {
				fs = append(fs, d)
			} else {
				es = append(es, d)
			}
		}
	}
	return median(fs), median(es), nil
}

type jupyterResult struct {
	Roundtrip    float64 `json:"roundtrip_ms"`
	RoundtripP90 float64 `json:"roundtrip_p90_ms"`
	Restart      float64 `json:"restart_ms"`
}

// jupyterFigures installs jupyter_client and ipykernel into a temporary
// virtual environment of py and runs jupyter.py there.
func jupyterFigures(py testenv.Python, n int) (jupyterResult, error) {
	var r jupyterResult
	dir, err := os.MkdirTemp("", "sandboxbench-jupyter-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command(py.Executable, "-m", "venv", venv).CombinedOutput(); err != nil {
		return r, fmt.Errorf("make a venv for Jupyter: %w\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := exec.Command(vpy, "-m", "pip", "install", "-q", "jupyter_client==8.10.0", "ipykernel==7.4.0").CombinedOutput(); err != nil {
		return r, fmt.Errorf("install jupyter_client and ipykernel: %w\n%s", err, out)
	}
	script := filepath.Join(dir, "jupyter.py")
	os.WriteFile(script, []byte(jupyterScript), 0o644)
	cmd := exec.Command(vpy, script, fmt.Sprint(n), "5")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "IPYTHONDIR="+filepath.Join(dir, "ipython"))
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("jupyter.py: %w", err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("jupyter.py: %w: %s", err, out)
	}
	return r, nil
}
