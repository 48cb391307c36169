package main

import (
	"strings"
	"testing"
	"time"
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
		if peak := hostStatus(t, host, "VmHWM"); peak > 256 {
			t.Errorf("the host's peak memory was %.0f MiB, over 256 MiB", peak)
		} else {
			t.Logf("the host's peak memory: %.0f MiB", peak)
		}
		if strings.Contains(r.stderr, "deep.toml") {
			t.Errorf("an unchanged file was checked again: %s", r.stderr)
		}
	})
}
