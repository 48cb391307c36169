package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// The fourth red team's part of the escape corpus (after rewind, fork and
// one path resolver): attacks on what a session's history, its rewinds
// and its forks hand to unjailed readers, each run with the C audit hook
// and without it (the test-only binary), on the oldest and newest CPython.

// TestSandboxJailReplShowsSessionTextAsText: the REPL drew what a session
// set straight to the terminal wherever it was not a block's output: a
// rewind's notice (the names of the files the rewound blocks wrote, which
// a block chooses), /defs' answer and the defs panel (a variable's name is
// any string a block puts in globals(), a docstring any text), a
// traceback's message, a restart's notice (the names it restored) and the
// completions of a name, in the hint and in the input. A conceal (SGR 8)
// and a C1 CSI reached the terminal raw. Each shows as text, as the
// commands show it, and the input takes no control character.
func TestSandboxJailReplShowsSessionTextAsText(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("t", "H = "+hostilePy+"\ndef helper():\n    pass\nhelper.__doc__ = 'Doc ' + H\nglobals()[H] = 1\n"+
			"globals()['zq\\x1b[8mA'] = globals()['zq\\x1b[8mB'] = 2", 0)
		sb.block("t", "open(H.replace('\\r', '') + '.json', 'w').write('{}')", 0)
		term := startTerminal(t, sb.command("repl", "--session", "t"))
		term.waitFor(">>>")
		term.send("/rewind\r")
		term.waitFor("Files are not rewound")
		term.send("/defs\r")
		term.waitFor("sandbox rewind --to N")
		term.send("raise ValueError(H)\r")
		term.waitFor("ValueError")
		term.again("/restart\r", "Python process")
		term.send("print('done', 6 * 7)\r") // its notice names what was restored
		term.waitFor("done 42")
		term.send("zq")
		term.again("\t", "[8mB") // two completions, whose common start the input does not take
		repl := term.showsNoHostile(t)
		if !strings.Contains(repl, `\x1b[8m`) {
			t.Errorf("the hostile names are not shown as text:\n%q", repl)
		}
	})
}

// hostileHistory is a block that makes the child answer the host's
// history question (what a rewind asks first) with a line of blocks
// millions long: the driver's table of requests is the session's to
// change, as everything in its process.
const hostileHistory = `import sys
d = sys.modules["vis_sandbox.driver"]
LINE = [1] * 4_000_000
d.REQUESTS["history"] = lambda driver, req: {"ev": "history", "history": {"block": 1, "current": 2, "line": LINE, "blocks": LINE}}
print("patched")
`

// again sends keys until the terminal shows text: a REPL command sent
// while the block before it is still ending is refused (the status line,
// which says when it has, is redrawn only where it changed).
func (term *terminal) again(keys, text string) {
	term.t.Helper()
	off := term.mark()
	for start := time.Now(); !strings.Contains(term.since(off), text); time.Sleep(200 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			term.t.Fatalf("no %q on the terminal after %q; it shows:\n%s", text, keys, term.since(off))
		}
		term.send(keys)
	}
}

// TestSandboxJailRewindHostileHistory: the host took the child's answer
// to a rewind's history question as it came, and marked the journal with
// every block of its line: one SQL statement of millions of terms. 4M
// blocks (8 MB of the 64 MB a message may take) grew the host by about a
// gigabyte (the whole 64 MB: some 8 GB), a way for a block to have the
// machine's memory taken by a process outside its limits. The answer
// holds at most the blocks a history keeps, or the rewind fails in one
// line, and the session goes on.
func TestSandboxJailRewindHostileHistory(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("h", "x = 1", 0)
		contains(t, "the patch", sb.block("h", hostileHistory, 0).stdout, "patched")
		host := sb.record(sb.folder("h")).HostPID
		before := hostStatus(t, host, "VmHWM")
		r := sb.run("rewind", "--session", "h")
		grew := hostStatus(t, host, "VmHWM") - before
		t.Logf("figure: the host's peak grew %.0f MiB in the rewind (hook %v)", grew, hook)
		if grew > 300 {
			t.Errorf("the host's peak memory grew %.0f MiB with a hostile history answer", grew)
		}
		// Refused by the history's bound, or (4M values) by the child
		// link's (protocol.ChildBounds), which replaces the process.
		if r.code != 1 || !strings.Contains(r.stderr, "blocks, more than a history keeps") && !strings.Contains(r.stderr, "a message of more than") ||
			strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("rewind with a hostile history: %d %q, want one line of refusal", r.code, r.stderr)
		}
		contains(t, "the session after it", sb.block("h", "print(x + 1)", 0).stdout, "2\n")
	})
}

// silentChild is a block that makes the child never answer the host's
// questions (defs, a rewind's history), deaf to interrupts.
const silentChild = `import signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
d = sys.modules["vis_sandbox.driver"]
def never(driver, req):
    while True:
        time.sleep(1)
d.REQUESTS["history"] = d.REQUESTS["defs"] = never
print("patched")
`

// TestSandboxJailSilentChild: the host waited for the child's answer to a
// question with no bound, holding the session's turn: a block that made
// the child keep silent hung sandbox rewind and sandbox defs, and every
// later command of the session (run, stop, even stop --force) waited
// behind them for good. A question has a time limit
// (VIS_ENV_ANSWER_TIMEOUT_MS, here 2 s): past it the child is stopped, the
// command fails in one line, and the next block runs in a new child
// restored from the snapshot.
func TestSandboxJailSilentChild(t *testing.T) {
	t.Parallel()
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		sb := hookSandbox(t, py, hook, "VIS_ENV_ANSWER_TIMEOUT_MS=2000")
		sb.block("s", "x = 1", 0)
		t.Cleanup(func() { // before stopAll, which a host that never answers would hang
			if pid := sb.record(sb.folder("s")).HostPID; pid > 0 && strings.Contains(cmdline(pid), "sandbox") {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		for _, args := range [][]string{{"rewind"}, {"defs"}} {
			contains(t, "the patch", sb.block("s", silentChild, 0).stdout, "patched")
			start := time.Now()
			r := sb.runFor(time.Minute, append(args, "--session", "s")...)
			took := time.Since(start)
			if r.code != 1 || !strings.Contains(r.stderr, "did not answer within 2 seconds") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("%v with a silent child (%s): %d %q, want one line saying it did not answer", args, took.Round(time.Millisecond), r.code, r.stderr)
			}
			r = sb.block("s", "print(x + 1)", 0)
			contains(t, "the next block", r.stdout, "did not answer within 2 seconds", "2\n")
		}
	})
}

// swapVault is a block that leaves a process exchanging the names of
// the folder vault, which the jail may not enter, and decoy, which it
// may (renameat2 RENAME_EXCHANGE needs no access to either folder), as
// fast as it can.
const swapVault = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
try:
    os.listdir("vault")
except PermissionError:
    print("the vault is closed to the jail")
if os.fork() == 0:
    swap = libc.renameat2
    while True:
        swap(-100, b"decoy", -100, b"vault", 2)
`

// TestSandboxJailForkCopyRace: sandbox fork --copy-workspace leaves out
// what the session's jail could not read by the mode bits, which a copy
// made as root passes over; it judged a folder by its status before it
// opened it by name, and a process of the session exchanging a closed
// folder with an open one in between had the copy enter the closed one
// and hand its files to the fork. What is opened is judged.
func TestSandboxJailForkCopyRace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only a copy made as root reads past the modes the jail obeys")
	}
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		write(t, filepath.Join(sb.ws, "vault", "inner.txt"), "the secret")
		write(t, filepath.Join(sb.ws, "decoy", "inner.txt"), "decoy")
		if err := os.Chmod(filepath.Join(sb.ws, "vault"), 0); err != nil {
			t.Fatal(err)
		}
		contains(t, "the swap", sb.block("a", swapVault, 0).stdout, "the vault is closed to the jail")
		t.Cleanup(sb.stopAll) // its swapping process ends with the session, before the folders go
		parent := t.TempDir()
		for i := range 40 {
			dest := filepath.Join(parent, strconv.Itoa(i))
			r := sb.run("fork", "b"+strconv.Itoa(i), "--session", "a", "--new-workspace", dest, "--copy-workspace")
			if r.code != 0 {
				t.Fatalf("fork --copy-workspace: %d %s", r.code, r.stderr)
			}
			for _, name := range []string{"vault", "decoy"} {
				if data, err := os.ReadFile(filepath.Join(dest, name, "inner.txt")); err == nil && string(data) == "the secret" {
					t.Fatalf("copy %d: the fork's workspace holds the closed folder's file, as %s/inner.txt", i, name)
				}
			}
		}
	})
}

// TestSandboxImportSizesPastTheLimit: sandbox import held the sum of an
// archive's state file sizes to sandbox.max_snapshot_mb, and four sizes
// of 2^62 sum to 0 in an int64: the archive passed, and its entries were
// written out until their data ended (a deflate stream of zeros grows a
// thousandfold: a small archive fills the disk) before the size check
// refused them. Sizes past the limit are refused before anything is
// written.
func TestSandboxImportSizesPastTheLimit(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte("[sandbox]\nmax_snapshot_mb = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var zeros bytes.Buffer // 100 MiB of zeros, deflated
	zw, _ := flate.NewWriter(&zeros, flate.BestCompression)
	zw.Write(make([]byte, 100<<20))
	zw.Close()
	path := filepath.Join(sb.ws, "bomb.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(f)
	var files []string
	for _, name := range []string{"a", "b", "c", "d"} {
		files = append(files, fmt.Sprintf(`{"path": "state/spill/%s", "size": %d, "sha256": "00"}`, name, int64(1)<<62))
		raw, err := w.CreateRaw(&zip.FileHeader{Name: "state/spill/" + name, Method: zip.Deflate,
			CompressedSize64: uint64(zeros.Len()), UncompressedSize64: 1 << 62})
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(zeros.Bytes())
	}
	m, _ := w.Create("manifest.json")
	fmt.Fprintf(m, `{"format": 1, "vis_agent": "x", "session": {"name": "s"}, "files": [%s], "attachments": []}`, strings.Join(files, ", "))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	start := time.Now()
	r := sb.run("import", "--session", "i", path)
	t.Logf("figure: the import of a %d KiB archive answered in %s", zeros.Len()*4>>10, time.Since(start).Round(time.Millisecond))
	if r.code != 1 || !strings.Contains(r.stderr, "over the limit") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("import of sizes summing past int64: %d %q, want one line refusing them as over the limit", r.code, r.stderr)
	}
}

// TestSandboxJailReplHugeNames: a name of a session is any string a
// block puts in globals(), a docstring any text; the REPL wrapped such a
// line by measuring what was left of it after each row (quadratic: a
// 20 MB name took it past any bound) and drew it whole in the defs
// panel. After a block set both, the next block took 7 s to show, a
// rewind's notice (which names the variables restored) never showed.
// What the REPL shows of one line a session set is cut at a bound; a
// completion longer than one is not typed into the input.
func TestSandboxJailReplHugeNames(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("t", "globals()['a' * 20_000_000] = 1\ndef f():\n    pass\nf.__doc__ = 'D' * 20_000_000", 0)
		sb.block("t", "x = 2", 0)
		term := startTerminal(t, sb.command("repl", "--session", "t"))
		term.waitFor(">>>")
		for _, step := range []struct{ send, shows string }{
			{"print(6 * 8)\r", "48"},
			{"", "last "}, // the status line, once the block has ended
			{"/rewind\r", "Files are not rewound"},
			{"/defs\r", "sandbox rewind --to N"},
			{"aaa\t", "bytes)"},                  // the one completion, cut, in the hint
			{"\x7f\x7f\x7fprint(6 * 9)\r", "54"}, // the input held aaa only
		} {
			start := time.Now()
			term.send(step.send)
			term.waitFor(step.shows)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("%q took %s to show %q", step.send, took.Round(time.Millisecond), step.shows)
			}
		}
	})
}
