package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawLink is block code that writes line (Python bytes expression) to the
// descriptor of its link to the host, as hostile code can with or without
// the audit hook, and then waits.
func rawLink(line string) string {
	return fmt.Sprintf(`import os, time
line = %s
v = memoryview(line)
while v:
    v = v[os.write(3, v):]
del v
time.sleep(20)
print("not replaced")`, line)
}

// TestJailHostLinkBounded: what a block writes on its link to the host
// costs the host a bounded decode. A 60 MB line of empty strings (which
// took the host past 1 GiB), 10 MB of empty objects (16 bytes of line
// decoded into 100 each) and arrays 100 deep each replace the Python
// process with a one-line error saying why, and the session goes on (the
// next block, a restart). What users send still works: a 10 MB block, the
// same block raising an error that repeats its 10 MB line (the child cuts
// it), the defs of a module of 3000 functions. The host's peak memory
// stays under 160 MiB.
func TestJailHostLinkBounded(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("l", "print('up')", 0)
		host := sb.record(sb.folder("l")).HostPID
		for _, tc := range []struct{ what, line, want string }{
			{"a 60 MB line", `b'{"ev":"result","result":{"written":[' + b'"",' * (20 << 20) + b'""]}}\n'`, "a message longer than 16 MiB"},
			{"10 MB of empty objects", `b'{"ev":"result","result":{"checks":[' + b'{},' * (3 << 20) + b'{}]}}\n'`,
				"a message of more than 65536 values (JSON array elements and object members)"},
			{"arrays 100 deep", `b'{"ev":"out","x":' + b'[' * 100 + b']' * 100 + b'}\n'`, "a message nested more than 32 deep"},
		} {
			r := sb.block("l", rawLink(tc.line), 1)
			contains(t, tc.what, r.stderr, "SandboxRestarted: the Python process sent its host "+tc.want+
				", which only a block that changed the session's own code or wrote to its link sends, so it was replaced; the next block runs in a new Python process")
			if strings.Contains(r.stdout, "not replaced") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("%s: stdout %q, stderr %q", tc.what, r.stdout, r.stderr)
			}
			contains(t, tc.what+": the next block", sb.block("l", "print(6 * 7)", 0).stdout, "42\n")
		}
		sb.ok("restart", "--session", "l")
		contains(t, "after a restart", sb.block("l", "print(6 * 7)", 0).stdout, "42\n")

		big := "s = '" + strings.Repeat("a", 10_000_000) + "'"
		sb.writeFile("big_block.py", big+"\nprint(len(s))\n")
		contains(t, "a 10 MB block", sb.ok("run", "--session", "l", filepath.Join(sb.ws, "big_block.py")).stdout, "10000000\n")
		sb.writeFile("big_error.py", big+"; raise ValueError(s)\n")
		r := sb.run("run", "--session", "l", filepath.Join(sb.ws, "big_error.py"))
		contains(t, "a 10 MB error", r.stderr, "ValueError: aaaa", "characters cut] … aaaa")
		if r.code != 1 || strings.Contains(r.stderr, "SandboxRestarted") || len(r.stderr) > 2<<20 {
			t.Errorf("a 10 MB error: status %d, %d bytes of stderr: %.300s", r.code, len(r.stderr), r.stderr)
		}

		var mod strings.Builder
		for i := range 3000 {
			fmt.Fprintf(&mod, "def helper_%d(a, b=%d):\n    \"Helper number %d.\"\n    return a + b\n\n", i, i, i)
		}
		sb.writeFile("many.py", mod.String())
		sb.block("l", "from many import *", 0)
		defs := sb.ok("defs", "--session", "l", "--json")
		contains(t, "the defs of 3000 functions", defs.stdout, "helper_0", "helper_2999")

		hostPeakUnder(t, host, 160)
	})
}

// TestJailListBoundedWalk: the session's state folder is the jail's to
// write; a block that fills it with 150000 files, a tree 40 deep and a
// link to / does not make `sandbox list` walk them all: it answers within
// seconds and shows the snapshot's size as at least what it counted ("≥
// N B"; in --json, snapshot_at_least: true).
func TestJailListBoundedWalk(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("w", "print('up')", 0)
		state := filepath.Join(sb.folder("w"), "state")
		sb.block("w", fmt.Sprintf(`import os
state = %q
os.makedirs(os.path.join(state, "many"), exist_ok=True)
for i in range(150_000):
    os.close(os.open(os.path.join(state, "many", str(i)), os.O_CREAT | os.O_WRONLY, 0o600))
os.makedirs(os.path.join(state, *["d"] * 40), exist_ok=True)
os.symlink("/", os.path.join(state, "root"))
print("made")`, state), 0)
		start := time.Now()
		text := sb.ok("list")
		d := time.Since(start)
		rows := sb.ok("list", "--json")
		if d > 10*time.Second {
			t.Errorf("sandbox list took %s", d)
		}
		t.Logf("sandbox list: %s", d.Round(time.Millisecond))
		contains(t, "the table", text.stdout, "≥ ")
		contains(t, "the JSON", rows.stdout, `"snapshot_at_least": true`)
	})
}
