package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

//go:embed data.py
var dataScript string

//go:embed jupyter_restart.py
var jupyterRestartScript string

//go:embed jupyter_data.py
var jupyterDataScript string

// day is an ordinary day's setup of a session, as blocks (and Jupyter
// cells), and check, the first result after a restart.
type day struct {
	name  string
	setup []string
	check string
}

// days: with pandas (a 100k-row CSV read, a derived column, a summary by
// group, two helpers), and the same with the csv module and plain Python.
var days = []day{
	{"pandas", []string{
		"import pandas as pd, numpy as np",
		"df = pd.read_csv(\"data.csv\")\ndf[\"total\"] = df.a * df.b\nsummary = df.groupby(\"k\").total.agg([\"sum\", \"mean\"])",
		"def top(n=5):\n    return summary.sort_values(\"sum\").tail(n)\n\ndef share(k):\n    return summary.loc[k, \"sum\"] / summary[\"sum\"].sum()",
	}, "print(len(df), round(share(3), 6))"},
	{"csv module", []string{
		"import csv\nfrom collections import defaultdict",
		"with open(\"data.csv\", newline=\"\") as f:\n    rows = list(csv.DictReader(f))\nfor r in rows:\n    r[\"total\"] = float(r[\"a\"]) * float(r[\"b\"])\n" +
			"summary = defaultdict(float)\nfor r in rows:\n    summary[int(r[\"k\"])] += r[\"total\"]\nsummary = dict(summary)",
		"def top(n=5):\n    return sorted(summary.items(), key=lambda kv: kv[1])[-n:]\n\ndef share(k):\n    return summary[k] / sum(summary.values())",
	}, "print(len(rows), round(share(3), 6))"},
}

// dataFigures prints issue 21's figures on CPython 3.13 (else the newest):
// data.py's snapshot and restore times, then restart-to-first-result of
// sessions holding each of days against a Jupyter kernel's restart with
// the setup run again, alternating, runs times each. numpy and pandas
// come from the wheelhouse, installed with their bytecode (the jail keeps
// the environment read-only: without it, every start compiles them);
// jupyter_client and ipykernel from PyPI.
// sandboxConfig, when set, is the [sandbox] table of the bench's
// config.toml; pause is the time both sides are idle before each restart.
func dataFigures(bin, wheels string, runs int, sandboxConfig string, pause time.Duration) error {
	b, py, err := dataBench(bin, wheels, sandboxConfig)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Printf("data figures on %s\n", py.Name)
	if err := dataScriptFigures(b, runs); err != nil {
		return err
	}
	if err := restartToResult(b, py, wheels, runs, pause); err != nil {
		return err
	}
	return agentBlocks(b, py, wheels, runs)
}

// dataBench is a bench on CPython 3.13 (else the newest) with numpy and
// pandas installed from the wheelhouse with their bytecode (the jail keeps
// the environment read-only: without it, every start compiles them), and
// sandboxConfig, when set, as the [sandbox] table of its config.toml.
func dataBench(bin, wheels, sandboxConfig string) (*bench, testenv.Python, error) {
	pythons := testenv.FindPythons()
	if len(pythons) == 0 {
		return nil, testenv.Python{}, fmt.Errorf("no CPython 3.10+ shared library found")
	}
	py := pythons[len(pythons)-1]
	for _, p := range pythons {
		if p.Version.Minor == 13 {
			py = p
		}
	}
	b, err := newBench(bin, py)
	if err != nil {
		return nil, py, err
	}
	if sandboxConfig != "" {
		if err := os.WriteFile(filepath.Join(b.home, "config.toml"), []byte("[sandbox]\n"+sandboxConfig+"\n"), 0o644); err != nil {
			b.close()
			return nil, py, err
		}
	}
	install := exec.Command(bin, "python", "--shared", "uv", "pip", "install", "--quiet", "--compile-bytecode", "--no-index", "--find-links", wheels, "numpy", "pandas")
	install.Env, install.Dir = b.env, b.ws
	if out, err := install.CombinedOutput(); err != nil {
		b.close()
		return nil, py, fmt.Errorf("install numpy and pandas from %s: %w\n%s", wheels, err, out)
	}
	return b, py, nil
}

// agentBlocks runs jupyter_data.py: a data agent's blocks (a look at a
// 1M-row frame, a groupby, the same through a helper) as whole `sandbox
// run` commands against a Jupyter kernel's round trips (issue 32).
func agentBlocks(b *bench, py testenv.Python, wheels string, runs int) error {
	venv, err := jupyterVenv(py, wheels)
	if err != nil {
		return err
	}
	defer os.RemoveAll(venv)
	script := filepath.Join(venv, "jupyter_data.py")
	if err := os.WriteFile(script, []byte(jupyterDataScript), 0o644); err != nil {
		return err
	}
	b.sessions = append(b.sessions, "jb")
	// Back to back, then with a second of an agent's thinking before each
	// block (vis-agent saves in it).
	for _, pause := range []string{"0", "1"} {
		fmt.Printf("a data agent's blocks, %ss before each, vis-agent (whole sandbox run commands) against a Jupyter kernel, medians:\n", pause)
		cmd := exec.Command(filepath.Join(venv, "venv", "bin", "python"), script, b.bin, fmt.Sprint(min(runs, 15)), pause)
		cmd.Env, cmd.Dir = b.env, b.ws
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("jupyter_data.py: %w", err)
		}
	}
	return nil
}

// dataScriptFigures runs data.py in the bench's shared environment.
func dataScriptFigures(b *bench, runs int) error {
	dir, err := os.MkdirTemp("", "sandboxbench-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "data.py")
	os.WriteFile(script, []byte(dataScript), 0o644)
	pkg, _ := filepath.Abs(filepath.Join("sandbox", "child", "py"))
	cmd := exec.Command(b.bin, "python", "--shared", script, pkg, filepath.Join(dir, "sessions"), fmt.Sprint(max(runs, 9)))
	cmd.Env, cmd.Dir = b.env, dir
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("data.py: %w", err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("data.py: %w: %s", err, out)
	}
	f := func(k string) float64 { x, _ := v[k].(float64); return x }
	fmt.Printf("numpy %v, pandas %v; import numpy, pandas %.0f ms\n", v["numpy"], v["pandas"], f("import_numpy_pandas_ms"))
	fmt.Printf("save after a block that binds a name (snapshot written again): with a 200 MB array it does not name %.3f ms, empty session %.3f ms, difference %.3f ms\n",
		f("changed_save_big_ms"), f("changed_save_empty_ms"), f("changed_save_big_ms")-f("changed_save_empty_ms"))
	fmt.Printf("save after a block that changed nothing: with the array %.3f ms, empty session %.3f ms\n", f("unchanged_save_big_ms"), f("unchanged_save_empty_ms"))
	fmt.Printf("restore of a %.1f MB frame (100k rows), pandas imported: %.2f ms; pickle.loads of its in-band pickle %.2f ms\n",
		f("frame_mb"), f("restore_frame_ms"), f("pickle_loads_ms"))
	return nil
}

// writeDayCSV writes the days' data.csv: rows rows (100k for the days).
func writeDayCSV(path string, rows int) error {
	var sb strings.Builder
	sb.WriteString("k,a,b,name\n")
	r := rand.New(rand.NewSource(21))
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&sb, "%d,%.6f,%.6f,item %06d\n", r.Intn(100), r.Float64()*100, r.Float64(), i)
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// restartToResult times, for each of days, `sandbox restart` then the
// first block in a session that ran the setup, against
// jupyter_restart.py, in turn, each after pause.
func restartToResult(b *bench, py testenv.Python, wheels string, runs int, pause time.Duration) error {
	if err := writeDayCSV(filepath.Join(b.ws, "data.csv"), 100_000); err != nil {
		return err
	}
	venv, err := jupyterVenv(py, wheels)
	if err != nil {
		return err
	}
	defer os.RemoveAll(venv)
	fmt.Printf("restart to first result, median of %d in turn with Jupyter (restart, setup again, the same cell), each after %s idle:\n", runs, pause)
	for i, d := range days {
		name := fmt.Sprintf("day%d", i)
		for _, cell := range d.setup {
			if _, err := b.block(name, cell); err != nil {
				return err
			}
		}
		j, err := startJupyterRestart(venv, b.ws, d, "")
		if err != nil {
			return err
		}
		var ours, theirs, restartOnly []time.Duration
		for run := 0; run < runs+1; run++ {
			var o, r, jt time.Duration
			for k := range 2 {
				time.Sleep(pause)
				if (run+k)%2 == 0 {
					start := time.Now()
					if r, err = b.timeRun("restart", "--session", name); err != nil {
						break
					}
					out, rerr := b.cmd("run", "--session", name, "-c", d.check).CombinedOutput()
					if rerr != nil || !strings.Contains(string(out), "100000 ") {
						err = fmt.Errorf("the first block after restart: %w\n%s", rerr, out)
						break
					}
					o = time.Since(start)
				} else if jt, err = j.restart(); err != nil {
					break
				}
			}
			if err != nil {
				j.close()
				return err
			}
			if run > 0 { // the first of each warms the caches
				ours, theirs, restartOnly = append(ours, o), append(theirs, jt), append(restartOnly, r)
			}
		}
		j.close()
		fmt.Printf("  %s: vis-agent sandbox restart + run %.1f ms (restart alone %.1f ms); Jupyter %.1f ms; ratio %.2f (goal <= 0.3)\n",
			d.name, ms(median(ours)), ms(median(restartOnly)), ms(median(theirs)), float64(median(ours))/float64(median(theirs)))
	}
	return nil
}

// jupyterRestart is jupyter_restart.py running on a kernel that ran a
// day's setup.
type jupyterRestart struct {
	dir string
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Reader
}

// jupyterVenv makes a folder with a venv of py holding jupyter_client,
// ipykernel (PyPI) and numpy, pandas (the wheelhouse).
func jupyterVenv(py testenv.Python, wheels string) (string, error) {
	dir, err := os.MkdirTemp("", "sandboxbench-jupyter-")
	if err != nil {
		return "", err
	}
	venv := filepath.Join(dir, "venv")
	vpy := filepath.Join(venv, "bin", "python")
	for _, argv := range [][]string{
		{py.Executable, "-m", "venv", venv},
		{vpy, "-m", "pip", "install", "-q", "jupyter_client==8.10.0", "ipykernel==7.4.0"},
		{vpy, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "numpy", "pandas"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return dir, nil
}

// startJupyterRestart starts jupyter_restart.py of the venv folder in ws,
// on day d; with destroy, each round runs destroy, then the setup again
// without a restart (what an agent does after a destructive cell).
func startJupyterRestart(venvDir, ws string, d day, destroy string) (*jupyterRestart, error) {
	dir, err := os.MkdirTemp("", "sandboxbench-jupyter-run-")
	if err != nil {
		return nil, err
	}
	j := &jupyterRestart{dir: dir}
	script, setup := filepath.Join(dir, "jupyter_restart.py"), filepath.Join(dir, "setup.py")
	os.WriteFile(script, []byte(jupyterRestartScript), 0o644)
	os.WriteFile(setup, []byte(strings.Join(d.setup, "\n# %%\n")), 0o644)
	j.cmd = exec.Command(filepath.Join(venvDir, "venv", "bin", "python"), script, setup, d.check, destroy)
	j.cmd.Dir = ws
	j.cmd.Env = append(os.Environ(), "JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "IPYTHONDIR="+filepath.Join(dir, "ipython"))
	in, err := j.cmd.StdinPipe()
	if err != nil {
		j.close()
		return nil, err
	}
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		j.close()
		return nil, err
	}
	if err := j.cmd.Start(); err != nil {
		j.close()
		return nil, err
	}
	j.in, j.out = in.(*os.File), bufio.NewReader(out)
	if line, err := j.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		j.close()
		return nil, fmt.Errorf("jupyter_restart.py did not start: %w %q", err, line)
	}
	return j, nil
}

// restart has the kernel restarted and the setup run again, and returns
// how long that took, as the script measured it.
func (j *jupyterRestart) restart() (time.Duration, error) {
	if _, err := j.in.WriteString("go\n"); err != nil {
		return 0, err
	}
	line, err := j.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("jupyter_restart.py: %w", err)
	}
	var v struct{ MS float64 }
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return 0, fmt.Errorf("jupyter_restart.py: %w: %q", err, line)
	}
	return time.Duration(v.MS * float64(time.Millisecond)), nil
}

func (j *jupyterRestart) close() {
	if j.in != nil {
		j.in.Close()
	}
	if j.cmd != nil && j.cmd.Process != nil {
		done := make(chan struct{})
		go func() { j.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			j.cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(j.dir)
}
