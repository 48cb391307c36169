package host

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Bodies of fakeChildExe: what a child does once started.
const (
	// killedOnInfo is killed as the host hands it the session's
	// description, before it answers anything.
	killedOnInfo = "read -r info <&3\nkill -9 $$\n"
	// killedAtOnce is killed before the host hands it anything.
	killedAtOnce = "kill -9 $$\n"
	// killedRestoring is killed once it has begun to restore the snapshot.
	killedRestoring = "read -r info <&3\nprintf '{\"ev\":\"restoring\"}\\n' >&3\nkill -9 $$\n"
	// brokenRuntime finds no CPython: it says so and exits.
	brokenRuntime = "read -r info <&3\necho no CPython here >&2\nexit 1\n"
)

// readyChild is a child with no snapshot to restore: it is ready at once,
// and runs every block by noting "run" in log.
func readyChild(log string) string {
	return `read -r info <&3
printf '{"ev":"ready","data":"3.12.0","line":12}\n' >&3
while read -r req <&3; do
	echo run >>'` + log + `'
	printf '{"ev":"running"}\n{"ev":"result","result":{"error":null,"saved":1}}\n' >&3
done
`
}

// fakeChildExe writes a stand-in for vis-agent: `sandbox child` notes
// "start" in log and runs body; anything else (the guard) ends at once.
func fakeChildExe(t *testing.T, body func(log string) string) (exe, log string) {
	t.Helper()
	dir := t.TempDir()
	exe, log = filepath.Join(dir, "vis-agent"), filepath.Join(dir, "log")
	script := "#!/bin/sh\n[ \"$2\" = child ] || exit 0\necho start >>'" + log + "'\n" + body(log)
	// Written by another process: a file this one had open for writing
	// may still be open in a child another test forks meanwhile, and its
	// exec would fail ("text file busy").
	cmd := exec.Command("/bin/sh", "-c", `cat >"$1" && chmod 700 "$1"`, "sh", exe)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v %s", exe, err, out)
	}
	return exe, log
}

func fixed(body string) func(string) string { return func(string) string { return body } }

// lines reads what a fake child noted, one word a line.
func lines(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestStartChildAfterAnUnansweredDeath: a child killed before its first
// answer had not begun to restore the snapshot and was sent no block, so
// the block runs, once, in a fresh child started in its place: here the early
// child killed as the host hands it the session's description (the kill
// of TestSandboxEarlyChildDies landing at the hand-off), or before. The
// fresh one is started once only: a runtime that cannot start fails at
// once with its own message, and a child killed again is reported. One
// killed after it answered is not started again this way: its restore
// may be what killed it (startFor starts the next without the snapshot).
func TestStartChildAfterAnUnansweredDeath(t *testing.T) {
	const killed = "the Python process did not start: the Python process was killed by signal 9 (killed)"
	for _, tc := range []struct {
		name    string
		early   string // the early child's body ("": there is none)
		fresh   func(log string) string
		starts  int    // fresh children started
		retried int    // unanswered deaths the host's log tells of
		err     string // the block's error ("": it ran)
	}{
		{"early killed on its description", killedOnInfo, readyChild, 1, 1, ""},
		{"early killed before", killedAtOnce, readyChild, 1, 1, ""},
		{"early killed, runtime broken", killedOnInfo, fixed(brokenRuntime), 1, 1, "the Python process did not start: no CPython here"},
		{"early killed restoring", killedRestoring, readyChild, 1, 0, ""},
		{"no early, runtime broken", "", fixed(brokenRuntime), 1, 0, "the Python process did not start: no CPython here"},
		{"no early, killed twice", "", fixed(killedOnInfo), 2, 1, killed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, out, _ := fakeHost(t, nil)
			// A file, as a host's log is: its goroutines write it at once.
			hostLog, err := os.Create(filepath.Join(t.TempDir(), "host.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer hostLog.Close()
			h.cfg.Log = hostLog
			var log string
			h.cfg.Exe, log = fakeChildExe(t, tc.fresh)
			t.Cleanup(func() {
				if h.child != nil {
					h.child.end()
				}
				// As a host that exits: a record write still on its way
				// (ensureChild's) waits, out of the temp folders' removal.
				h.recordMu.Lock()
			})
			earlyPID := 0
			if tc.early != "" {
				cfg := h.cfg
				cfg.Exe, _ = fakeChildExe(t, fixed(tc.early))
				s, err := spawnChild(cfg, h.policy)
				if err != nil {
					t.Fatal(err)
				}
				earlyPID = s.process.Pid
				if tc.early == killedAtOnce {
					// Dead once its end of the link is closed.
					io.Copy(io.Discard, s.link)
				}
				h.early = &earlyChild{s: s}
			}
			_, res, _ := runFake(h, out, "x = 1", 0)
			switch {
			case tc.err == "" && res.Error != nil:
				t.Errorf("the block did not run: %+v", res.Error)
			case tc.err != "" && (res.Error == nil || res.Error.Message != tc.err):
				t.Errorf("the block's error %+v, want %q", res.Error, tc.err)
			}
			noted := strings.Join(lines(t, log), " ")
			wantRuns := 0
			if tc.err == "" {
				wantRuns = 1
			}
			if starts, runs := strings.Count(noted, "start"), strings.Count(noted, "run"); starts != tc.starts || runs != wantRuns {
				t.Errorf("%d fresh children started and %d blocks ran (%q), want %d and %d", starts, runs, noted, tc.starts, wantRuns)
			}
			if tc.err == "" && (h.child == nil || h.child.pid() == earlyPID) {
				t.Errorf("the session's child is not a fresh one (early %d)", earlyPID)
			}
			logged, _ := os.ReadFile(hostLog.Name())
			if retried := strings.Count(string(logged), "did not start: the Python process was killed by signal 9 (killed); starting a new one"); retried != tc.retried {
				t.Errorf("the host's log tells of %d retries, want %d: %q", retried, tc.retried, logged)
			}
		})
	}
}
