package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestJailHostParsesBounded: the data files a block writes are parsed in
// a worker process the kernel bounds, never in the host. A 50 KB dotted
// TOML key (which took the host past 2 GiB) is not parsed, saying why; a
// TOML file of inline tables 30 deep, within the bounds of size and
// depth (the host's own parse took seconds and 500 MiB), ends its worker
// at its CPU bound or the check's deadline, saying so; patch() refuses to
// write the dotted key; a broken file is still found. Each block answers
// at once (20 s bounds a hang: the check's deadline is 2 s), and the
// host's peak memory stays under 256 MiB.
func TestJailHostParsesBounded(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("p", "print('up')", 0)
		host := sb.record(sb.folder("p")).HostPID
		timed := func(what, code string) result {
			t.Helper()
			start := time.Now()
			r := sb.run("run", "--session", "p", "-c", code)
			d := time.Since(start)
			t.Logf("%s (%s): %s%s", what, d.Round(time.Millisecond), r.stdout, r.stderr)
			if d > 20*time.Second {
				t.Errorf("%s: the block took %s", what, d)
			}
			return r
		}
		r := timed("a 50 KB dotted key", `open("deep.toml", "w").write("x." * 25000 + "x = 1\n")`)
		contains(t, "a 50 KB dotted key", r.stderr,
			"[file check] deep.toml: not checked (toml): TOML keys, arrays or inline tables nested more than 32 deep\n")
		r = timed("inline tables 30 deep", `open("wide.toml", "w").write("".join("a%d = %s1%s\n" % (i, "{a = " * 30, "}" * 30) for i in range(5400)))`)
		contains(t, "inline tables 30 deep", r.stderr, "[file check] wide.toml: not checked (toml): its parse passed the")
		r = timed("a patch writing a dotted key", `open("p.toml", "w").write("a = 1\n")
try:
    patch("p.toml", "a = 1", "x." * 25000 + "x = 1")
except ValueError as e:
    print("refused:", e)`)
		contains(t, "a patch writing a dotted key", r.stdout, "refused:", "cannot be checked (TOML keys, arrays or inline tables nested more than 32 deep); nothing was written")
		r = timed("broken files", `open("bad.toml", "w").write("a = \n"); open("bad.json", "w").write("[1,")`)
		contains(t, "broken files", r.stderr, "[file check] bad.json:1:3: unexpected end of JSON input (json)", "[file check] bad.toml:1:")
		hostPeakUnder(t, host, 256)
		if strings.Contains(r.stderr, "deep.toml") {
			t.Errorf("an unchanged file was checked again: %s", r.stderr)
		}
	})
}

// TestJailHostDiskBudget: the host keeps a session's shell() output on
// disk within its budget, whatever the commands print. Three commands
// printing 200 MB each leave at most 256 MiB in the session's folder
// (before: each command's stdout, stderr and merged log, 64 MiB each,
// for the last 100 commands), and their handles say what is not kept.
// With sandbox.max_disk_mb = 64, the output takes 16 MiB: a command takes
// the place of the one before (its handle names it, the older one's
// logs() give its last lines); once the session's folder holds 64 MiB
// (the block filled its temp folder), shell() and install() raise a clear
// OSError; `sandbox rm` deletes it all.
func TestJailHostDiskBudget(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("d", `hs = [shell("yes | head -c 200000000", wait=300) for _ in range(3)]
print([(h.status, h.out_bytes) for h in hs])
print(hs[2])
print(hs[2].logs(-2))`, 0)
		contains(t, "three commands of 200 MB", r.stdout, "[('exited', 200000000), ('exited', 200000000), ('exited', 200000000)]",
			"spool: its output past 64 MiB was not kept on disk (a session keeps 256 MiB of shell output, 64 MiB of one command's)", "y\ny\n")
		if n := diskBytes(t, filepath.Join(sb.folder("d"), "shells")); n > 256<<20 {
			t.Errorf("the shell output takes %d MiB of the session's folder, over 256 MiB", n>>20)
		} else {
			t.Logf("the shell output takes %d MiB", n>>20)
		}

		testenv.WriteTree(t, sb.home, map[string]string{"config.toml": "[sandbox]\nmax_disk_mb = 64\n"})
		r = sb.run("run", "--session", "e", "-c", `h1 = shell("yes | head -c 20000000; echo end1", wait=60)
h2 = shell("yes | head -c 20000000; echo end2", wait=60)
print("h1:", h1.refresh().spool)
print("h2:", h2.spool)
print("logs:", h1.logs(2))`)
		contains(t, "a command past a small budget", r.stdout,
			"h1: its output was deleted from disk to make room for newer commands' (a session keeps 16 MiB of shell output)",
			"h2: its output past 16 MiB was not kept on disk (a session keeps 16 MiB of shell output, 64 MiB of one command's)",
			"the output of sh1 was deleted from disk to make room",
			"logs: … [its output was deleted from disk to make room for newer commands'; its last 2 lines, kept in memory:]\ny\nend1")
		if n := diskBytes(t, filepath.Join(sb.folder("e"), "shells")); n > 16<<20 {
			t.Errorf("the shell output takes %d MiB of the session's folder, over 16 MiB", n>>20)
		}
		r = sb.run("run", "--session", "e", "-c", `import os, tempfile, time
with open(os.path.join(tempfile.gettempdir(), "fill"), "wb") as f:
    for i in range(70):
        f.write(os.urandom(1 << 20))
time.sleep(2.5)  # the host trusts a measure of the folder for 2 s
for call in (lambda: shell("true"), lambda: install("six")):
    try:
        call()
    except OSError as e:
        print("refused:", e)`)
		contains(t, "past the disk budget", r.stdout, "refused: shell: the session's disk budget is spent: its folder ",
			"refused: install: the session's disk budget is spent", "past sandbox.max_disk_mb = 64", "(tmp 70")
		if strings.Count(r.stdout, "refused:") != 2 {
			t.Errorf("past the disk budget: %s", r.stdout)
		}
		folder := sb.folder("e")
		sb.ok("rm", "--session", "e")
		if _, err := os.Stat(folder); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after rm, the session's folder: %v", err)
		}
	})
}

// diskBytes is what the files under dir hold.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
