package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// dataPackages are what a data session imports; the tests install them
// offline from the wheelhouse of `make test-wheels`.
var dataPackages = []string{"numpy", "pandas", "matplotlib"}

// installData installs dataPackages from the wheelhouse into sb's shared
// environment of its CPython.
func (sb *sandbox) installData(wheels string) {
	sb.t.Helper()
	sb.installShared(wheels, dataPackages...)
}

// installShared installs packages from the wheelhouse into sb's shared
// environment of its CPython, with the bundled uv, offline, with their
// bytecode (the jail keeps the environment read-only: without it, every
// start of a session compiles them again).
func (sb *sandbox) installShared(wheels string, packages ...string) {
	sb.t.Helper()
	cmd := exec.Command(sb.bin, append([]string{"python", "--shared", "uv", "pip", "install", "--quiet", "--compile-bytecode", "--no-index", "--find-links", wheels}, packages...)...)
	cmd.Env, cmd.Dir = sb.env, sb.ws
	if out, err := cmd.CombinedOutput(); err != nil {
		sb.t.Fatalf("install %s from %s: %v\n%s", strings.Join(packages, ", "), wheels, err, out)
	}
}

// spillFiles are the names of session name's spill files.
func (sb *sandbox) spillFiles(name string) []string {
	// after the save that follows the last block's answer, as the log
	// and export wait for it
	sb.run("log", "--session", name, "-n", "1")
	entries, _ := os.ReadDir(filepath.Join(sb.folder(name), "state", "spill"))
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestSandboxDataAndPlots, with real numpy, pandas and matplotlib on the
// oldest and newest CPython: arrays and frames (a 200 MB array, a 100k-row
// frame with text) come back after a restart, writable, with a sys.path
// entry a block added in the workspace; their spill files go with del and
// rm; figures left open or shown are attached as PNG and closed (the
// --json result and MCP's image content), pyplot restores without a word
// under the jail, and sandbox.attach_figures = false turns it off.
func TestSandboxDataAndPlots(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			sb := newSandbox(t, py)
			sb.installData(wheels)
			// A history of one block: a spill file goes with the last
			// snapshot that names it (a longer one keeps it for a rewind:
			// TestSandboxRewindFrame).
			if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nhistory_blocks = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(sb.ws, "lib"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sb.ws, "lib", "mylib.py"), []byte("VALUE = 42\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sb.block("d", `import sys
sys.path.insert(0, "lib")
import mylib
import numpy as np, pandas as pd
small = np.zeros(20000)
big = np.arange(25_000_000, dtype=np.float64)
df = pd.DataFrame({"n": np.arange(100_000), "x": np.linspace(0, 1, 100_000), "s": [f"row {i}" for i in range(100_000)]})
print(big.nbytes, df.memory_usage(deep=True).sum() > 5_000_000)`, 0)
			contains(t, "defs", sb.ok("defs", "--session", "d").stdout, "big: numpy.ndarray, 190.7 MiB | saved", "df: pandas.",
				"small: numpy.ndarray, 156.4 KiB | saved")
			if files := sb.spillFiles("d"); len(files) != 2 {
				t.Errorf("spill files of big and df: %v", files)
			}
			sb.ok("restart", "--session", "d")
			r := sb.block("d", `print(small.shape, big[-1], df.shape, df.s.iloc[-1], df.x.iloc[-1], mylib.VALUE, sys.path[0])
big[0] = 7.0
df.loc[0, "n"] = -1
print(big[:2], df.n.iloc[0])`, 0)
			contains(t, "after restart", r.stdout, "Restored variables (3): big, df, small;", "sys.path entries (1): lib.",
				"(20000,) 24999999.0 (100000, 3) row 99999 1.0 42 lib\n", "[7. 1.] -1\n")
			if strings.Contains(r.stdout, "Did not come back") {
				t.Errorf("lost values: %s", r.stdout)
			}
			sb.ok("restart", "--session", "d")
			contains(t, "the changes were saved", sb.block("d", "print(big[0], df.n.iloc[0])", 0).stdout, "\n7.0 -1\n")
			// A frame a block only reads keeps its spill file (its save
			// probes the text's element pointers instead of pickling it),
			// and a change to its text, through the frame or in place
			// through another name, then an element replaced twice (its
			// first replacement freed, the second may take its address),
			// is saved all the same.
			sb.block("d", "df.shape", 0)
			before := sb.spillFiles("d")
			sb.block("d", "df.shape\nlen(df.s)", 0)
			if after := sb.spillFiles("d"); strings.Join(after, " ") != strings.Join(before, " ") {
				t.Errorf("a frame only read was written again: %v, then %v", before, after)
			}
			sb.block("d", "df.loc[1, 's'] = 'edited'", 0)
			sb.block("d", "col = df['s'].values\ncol[2] = 'in ' + 'place'\ndel col", 0)
			sb.block("d", "df.loc[3, 's'] = 'first ' + str(3)\ndf.loc[3, 's'] = 'row ' + str(3)\ndf.loc[4, 's'] = 'x'", 0)
			sb.ok("restart", "--session", "d")
			contains(t, "text changes saved", sb.block("d", "print(list(df.s.iloc[1:5]))", 0).stdout,
				"['edited', 'in place', 'row 3', 'x']")
			sb.block("d", "del big", 0)
			if files := sb.spillFiles("d"); len(files) != 1 {
				t.Errorf("spill files after del big: %v", files)
			}

			// figures: left open, and shown
			v := sb.jsonBlock("d", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nfig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nprint(plt.get_backend())")
			atts, _ := v["attachments"].([]any)
			if !strings.HasSuffix(v["stdout"].(string), "Agg\n") && !strings.HasSuffix(v["stdout"].(string), "agg\n") || len(atts) != 2 {
				t.Fatalf("a block with two figures: %v", v)
			}
			for i, a := range atts {
				m := a.(map[string]any)
				if m["kind"] != "figure" || m["media_type"] != "image/png" || !strings.HasSuffix(m["filename"].(string), []string{"-1.png", "-2.png"}[i]) {
					t.Errorf("figure %d: %v", i, m)
				}
			}
			contains(t, "figures closed", sb.block("d", "print(plt.get_fignums())", 0).stdout, "[]\n")
			r = sb.block("d", "plt.figure()\nplt.plot([3, 1])", 0)
			contains(t, "a figure attached, on stderr", r.stderr, "[attached figure-", "-1.png version 1: image/png")
			fonts, _ := filepath.Glob(filepath.Join(sb.folder("d"), "state", "matplotlib", "fontlist-*.json"))
			if len(fonts) != 1 {
				t.Errorf("matplotlib's font cache in the state folder: %v", fonts)
			}
			sb.ok("restart", "--session", "d")
			r = sb.block("d", "print(len(df))", 0)
			contains(t, "pyplot restored", r.stdout, "plt", "\n100000\n")
			if strings.Contains(r.stdout, "Restoring printed") {
				t.Errorf("matplotlib printed while restoring under the jail:\n%s", r.stdout)
			}

			// the MCP python tool returns the figures as images
			c := connectMCP(t, sb, "--session", "d")
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "python", Arguments: map[string]any{"code": "plt.plot([1, 4])\nplt.show()"}})
			if err != nil || res.IsError {
				t.Fatalf("python with a figure through MCP: %v %+v", err, res)
			}
			var images int
			for _, ct := range res.Content {
				if img, ok := ct.(*mcp.ImageContent); ok {
					images++
					if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil || img.MIMEType != "image/png" {
						t.Errorf("the figure's image: %v %s", err, img.MIMEType)
					}
				}
			}
			if images != 1 {
				t.Errorf("MCP result with %d images: %+v", images, res.Content)
			}

			// the REPL's attachments tab shows a figure its block attached
			tm := newTerm(t, sb.env, sb.ws, 120, 32, "sh", "-c", sb.bin+" sandbox repl --session d; sleep 600")
			tm.waitFor(">>>", "Python 3.")
			tm.typed("plt.plot([2, 1]); plt.title('from the REPL')")
			tm.waitFor("attachments (5)")
			tm.keys("F3")
			tm.waitFor("▶ figure-", "figure · ")
			tm.keys("Escape")

			// sandbox.attach_figures = false
			if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nattach_figures = false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			sb.ok("restart", "--session", "d")
			v = sb.jsonBlock("d", "plt.plot([1, 2])\nplt.show()\nprint(plt.get_fignums())")
			if atts, _ := v["attachments"].([]any); len(atts) != 0 || !strings.HasSuffix(v["stdout"].(string), "[1]\n") {
				t.Errorf("with attach_figures = false: %v", v)
			}

			sb.ok("rm", "--session", "d")
			if _, err := os.Stat(filepath.Join(sb.home, "sandbox", "sessions")); err == nil {
				if m, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "sessions", "d-*")); len(m) != 0 {
					t.Errorf("rm left %v", m)
				}
			}
		})
	}
}

// TestMCPRestartFreshAndDrop: restart_session's drop and fresh.
func TestMCPRestartFreshAndDrop(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := connectMCP(t, sb, "--session", "r")
	c.python("a = 1\nb = 2", false)
	contains(t, "restart_session drop", c.tool("restart_session", map[string]any{"drop": []string{"b"}}), "Restarted without b")
	text, _ := c.python("print(a, 'b' in globals())", false)
	contains(t, "after drop", text, "Left out on request (1): b.", "\n1 False\n")
	contains(t, "restart_session fresh", c.tool("restart_session", map[string]any{"fresh": true}), "Restarted fresh")
	text, _ = c.python("print('a' in globals())", false)
	contains(t, "after fresh", text, "The snapshot was discarded", "It held (1): a.", "\nFalse\n")
	text, _, isErr, err := c.call(context.Background(), "restart_session", map[string]any{"fresh": true, "drop": []string{"a"}}, false)
	if err != nil || !isErr || !strings.Contains(text, "not both") {
		t.Errorf("fresh and drop: %v %v %q", err, isErr, text)
	}
}
