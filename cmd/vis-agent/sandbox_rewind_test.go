package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// TestSandboxRewind, on the oldest and newest CPython: a value cut down
// and a helper redefined come back as they were after an earlier block;
// a rewind of a rewind (the undo); a rewind across a restart and across a
// kill of the Python process; the journal marks the rewound blocks; the
// notice says files are not rewound; blocks past the history's count are
// refused with a clear error, as is bad input.
func TestSandboxRewind(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("r", "rows = list(range(1000))\ndef f():\n    return 'old'", 0)                            // block 1
			sb.block("r", "rows = rows[:10]\ndef f():\n    return 'new'\nopen('out.json', 'w').write('{}')", 0) // block 2
			sb.block("r", "y = 3", 0)                                                                           // block 3

			r := sb.run("rewind", "--session", "r", "--back", "2")
			if r.code != 0 {
				t.Fatalf("rewind --back 2: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			contains(t, "rewind --back 2", r.stdout, "[Sandbox rewound] The session was rewound to block 1 (vis-agent sandbox rewind).",
				"Restored helpers (1): f; variables (1): rows.", "Files are not rewound; the blocks rewound wrote out.json: they stay as they are",
				"Rewound in place, without a new process: 1 value from memory, unchanged.")
			r = sb.block("r", "print(len(rows), f(), 'y' in globals())", 0) // block 4
			contains(t, "after the rewind", r.stdout, "1000 old False\n")
			if strings.Contains(r.stdout, "[Sandbox") {
				t.Errorf("the rewind's notice came again with the next block:\n%s", r.stdout)
			}
			if data, err := os.ReadFile(filepath.Join(sb.ws, "out.json")); err != nil || string(data) != "{}" {
				t.Errorf("a file a rewound block wrote: %q %v", data, err)
			}

			contains(t, "defs", sb.run("defs", "--session", "r").stdout, "Rewind can go to blocks 1-4 (the state is block 4's)")

			// the undo: back to block 3, the rewound line; block 4 named
			// globals(), which may reach what a snapshot does not hold: the
			// rewind past it restarts on the snapshot
			r = sb.run("rewind", "--session", "r", "--to", "3")
			contains(t, "rewind --to 3", r.stdout, "rewound to block 3")
			if strings.Contains(r.stdout, "Rewound in place") {
				t.Errorf("a rewind past a block that named globals() was in place:\n%s", r.stdout)
			}
			contains(t, "after the undo", sb.block("r", "print(len(rows), f(), y)", 0).stdout, "10 new 3\n") // block 5
			log := sb.run("log", "--session", "r").stdout
			contains(t, "the log", log, "· block 4 · rewound\n", "· block 3\n", "· block 5\n")

			// across a restart, and across a kill of the Python process
			sb.run("restart", "--session", "r")
			contains(t, "rewind after a restart", sb.run("rewind", "--session", "r", "--to", "1").stdout, "rewound to block 1")
			contains(t, "after it", sb.block("r", "print(len(rows), f())", 0).stdout, "1000 old\n")
			if pid := sb.record(sb.folder("r")).ChildPID; pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(100 * time.Millisecond)
			contains(t, "rewind after a kill", sb.run("rewind", "--session", "r", "--to", "2").stdout, "rewound to block 2")
			contains(t, "after it", sb.block("r", "print(len(rows), f())", 0).stdout, "10 new\n")

			r = sb.run("rewind", "--session", "r", "--to", "99")
			if r.code != 1 || !strings.Contains(r.stderr, "block 99 has not run") {
				t.Errorf("rewind --to 99: %d %q", r.code, r.stderr)
			}
			r = sb.run("rewind", "--session", "r", "--to", "1", "--back", "1")
			if r.code != 2 || !strings.Contains(r.stderr, "not both") {
				t.Errorf("--to and --back: %d %q", r.code, r.stderr)
			}
		})
	}
}

// TestSandboxRewindHostile: a value whose own code ends the Python
// process when a rewind in place looks at it again does not cost the
// rewind: the next process restores the block's snapshot; values whose
// __eq__, __hash__ and __getattr__ raise come back all the same.
func TestSandboxRewindHostile(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("h", `class Odd:
    def __eq__(self, other): raise RuntimeError('eq')
    def __hash__(self): raise RuntimeError('hash')
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise RuntimeError(name)
class Later:
    __module__ = 'elsewhere'
    pickled = []
    def __reduce__(self):
        self.pickled.append(1)
        if len(self.pickled) > 1:
            import os
            os._exit(3)
        return (list, ())
odd = [Odd()]
later = Later()
keep = [1, 2]`, 0) // block 1
			sb.block("h", "keep = 0", 0) // block 2
			r := sb.run("rewind", "--session", "h")
			if r.code != 0 {
				t.Fatalf("rewind: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			contains(t, "rewind", r.stdout, "[Sandbox rewound] The session was rewound to block 1")
			if strings.Contains(r.stdout, "Rewound in place") {
				t.Errorf("the process that ended was said to rewind in place:\n%s", r.stdout)
			}
			contains(t, "after it", sb.block("h", "print(keep, later, type(odd[0]).__name__)", 0).stdout, "[1, 2] [] Odd\n")
		})
	}
}

// TestSandboxRewindHistoryDropped: past sandbox.history_blocks the oldest
// blocks go, and a rewind to one says so and where it can go.
func TestSandboxRewindHistoryDropped(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nhistory_blocks = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		sb.block("h", "x = "+str(i), 0)
	}
	r := sb.run("rewind", "--session", "h", "--to", "1")
	contains(t, "rewind past the history", r.stderr, "block 1 is no longer in the history: the history keeps the snapshots of the last 3 blocks (sandbox.history_blocks)",
		"a rewind can go to blocks 3-5")
	if r.code != 1 {
		t.Errorf("status %d", r.code)
	}
	r = sb.run("rewind", "--session", "h", "--back", "3")
	contains(t, "rewind --back past the history", r.stderr, "the history does not reach back 3 blocks from block 5: it goes back to block 3")
	contains(t, "rewind --back 2", sb.run("rewind", "--session", "h", "--back", "2").stdout, "rewound to block 3")
	contains(t, "x", sb.block("h", "print(x)", 0).stdout, "2\n")
}

// TestSandboxRewindFrame: a 1M-row pandas frame with a text column
// filtered destructively comes back whole with a rewind, in place (the
// Python process still holds it, unchanged), on the oldest and newest
// CPython; the frame's spill file is stored once across the blocks that
// did not change it. Values changed in place (a frame's drop(inplace=True),
// a list's append) are read back from the snapshot instead; a rewind of
// that rewind is in place too, and one after a restart restores the
// snapshot in the new process.
func TestSandboxRewindFrame(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	const inPlace = "Rewound in place, without a new process"
	const frame = "import numpy as np, pandas as pd\n" +
		"df = pd.DataFrame({'x': np.arange(1_000_000) - 500_000, 'y': np.arange(1_000_000) * 0.5})\ndf['s'] = df.x.astype(str)"
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			sb := newSandbox(t, py)
			sb.installShared(wheels, "numpy", "pandas")
			sb.block("f", frame, 0)                       // block 1
			sb.block("f", "n = len(df)\nlst = [1, 2]", 0) // block 2
			spills := len(sb.spillFiles("f"))
			sb.block("f", "df = df[df.x > 0]", 0) // block 3
			start := time.Now()
			r := sb.run("rewind", "--session", "f")
			took := time.Since(start)
			contains(t, "rewind", r.stdout, "[Sandbox rewound] The session was rewound to block 2", "df", "Files are not rewound",
				inPlace+": 3 values from memory, unchanged.\n")
			contains(t, "the frame", sb.block("f", "print(len(df), n, int(df.x.sum()), df.s.iloc[-1])", 0).stdout, // block 4
				"1000000 1000000 -500000 499999\n")
			t.Logf("figure: rewind of a 1M-row frame (%s), the command's wall time: %s", py.Name, took.Round(time.Millisecond))
			if spills != 1 {
				t.Errorf("spill files after two blocks: %d, want 1 (the frame, once)", spills)
			}

			// changed in place: read back from block 4's snapshot
			sb.block("f", "df.drop(columns=['y'], inplace=True)\nlst.append(3)", 0) // block 5
			contains(t, "rewind past changes in place", sb.run("rewind", "--session", "f").stdout, "rewound to block 4",
				inPlace+": 1 value from memory, unchanged; 2 read back from the snapshot.\n")
			contains(t, "after it", sb.block("f", "print(list(df.columns), lst, len(df))", 0).stdout, "['x', 'y', 's'] [1, 2] 1000000\n") // block 6

			// the undo, back to block 5's state, which the process still holds
			contains(t, "rewind of a rewind", sb.run("rewind", "--session", "f", "--to", "5").stdout, "rewound to block 5",
				inPlace+": 3 values from memory, unchanged.\n")
			contains(t, "after the undo", sb.block("f", "print(list(df.columns), lst, len(df))", 0).stdout, "['x', 's'] [1, 2, 3] 1000000\n")
			// block 6's frame was read back from the snapshot, and probed then
			contains(t, "rewind to a read-back frame", sb.run("rewind", "--session", "f", "--to", "6").stdout, "rewound to block 6",
				inPlace+": 3 values from memory, unchanged.\n")
			contains(t, "after it", sb.block("f", "print(list(df.columns), lst)", 0).stdout, "['x', 'y', 's'] [1, 2]\n")

			// a new process holds none of the blocks before it: the snapshot
			sb.run("restart", "--session", "f")
			r = sb.run("rewind", "--session", "f", "--to", "3")
			contains(t, "rewind after a restart", r.stdout, "rewound to block 3")
			if strings.Contains(r.stdout, inPlace) {
				t.Errorf("a rewind after a restart was in place:\n%s", r.stdout)
			}
			contains(t, "after it", sb.block("f", "print(list(df.columns), len(df), lst)", 0).stdout, "['x', 'y', 's'] 499999 [1, 2]\n")
		})
	}
}

// TestReplRewind: /rewind goes back one block, /rewind N to block N (an
// undo), and a malformed /rewind says how to write it.
func TestReplRewind(t *testing.T) {
	t.Parallel()
	_, tm := replIn(t, 120, 30)
	tm.typed("v = 'first'")
	tm.waitFor("v: str")
	tm.typed("v = 'second'")
	tm.waitForIdle()
	tm.typed("/rewind")
	tm.waitFor("[Sandbox rewound] The session was rewound to block 1 (by repl", "Files are not rewound")
	tm.typed("print('now', v)")
	tm.waitFor("now first")
	tm.typed("/rewind 2")
	tm.waitFor("rewound to block 2")
	tm.typed("print('then', v)")
	tm.waitFor("then second")
	tm.typed("/rewind back")
	tm.waitFor("use /rewind, /rewind BLOCK or /rewind --back N")
}

// TestMCPRewind: rewind_session brings the state back and answers with
// the notice; to and back together are refused.
func TestMCPRewind(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	c := connectMCP(t, sb, "--session", "m")
	c.python("a = 1", false)
	c.python("a = [2]\ndef g():\n    return a", false)
	contains(t, "rewind_session", c.tool("rewind_session", nil), "[Sandbox rewound] The session was rewound to block 1 (by mcp",
		"Restored variables (1): a.", "Files are not rewound")
	text, _ := c.python("print(a, 'g' in globals())", false)
	contains(t, "after the rewind", text, "1 False")
	if strings.Contains(text, "[Sandbox") {
		t.Errorf("the notice came again: %q", text)
	}
	text, _, isErr, err := c.call(context.Background(), "rewind_session", map[string]any{"to": 1, "back": 1}, false)
	if err != nil || !isErr || !strings.Contains(text, "not both") {
		t.Errorf("to and back: %v %v %q", err, isErr, text)
	}
}

// TestSandboxFork: a fork of the last state and one at an earlier block,
// each going its own way while the original is unchanged; sandbox list
// says where they came from; an existing name and a block out of the
// history are refused in one line.
func TestSandboxFork(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.block("a", "x = [1, 2, 3]\nbig = 'q' * (2 << 20)", 0)
			sb.block("a", "x.append(4)", 0)
			contains(t, "fork", sb.run("fork", "b", "--session", "a", "--at", "1").stdout, "Forked session b from a after block 1")
			r := sb.block("b", "x.append(99)\nprint(x, len(big))", 0)
			contains(t, "the fork", r.stdout, "[Sandbox restarted] The session was forked from session a after block 1 (vis-agent sandbox fork).",
				"[1, 2, 3, 99] 2097152\n")
			contains(t, "the original", sb.block("a", "print(x)", 0).stdout, "[1, 2, 3, 4]\n")
			contains(t, "fork of the last", sb.run("fork", "c", "--session", "a").stdout, "Forked session c from a after its last block")
			contains(t, "the second fork", sb.block("c", "print(x)", 0).stdout, "[1, 2, 3, 4]\n")
			contains(t, "sandbox list", sb.run("list").stdout, "forked from a at block 1 (b)\n", "forked from a (c)\n")
			r = sb.run("fork", "b", "--session", "a")
			if r.code != 1 || !strings.Contains(r.stderr, `session "b" of workspace`) || !strings.Contains(r.stderr, "exists") {
				t.Errorf("fork onto an existing session: %d %q", r.code, r.stderr)
			}
			r = sb.run("fork", "d", "--session", "a", "--at", "42")
			if r.code != 1 || !strings.Contains(r.stderr, "block 42 is not in its history") {
				t.Errorf("fork at a block not in the history: %d %q", r.code, r.stderr)
			}
		})
	}
}
