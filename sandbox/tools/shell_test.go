package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// needBwrap fails the test when bubblewrap cannot confine commands here,
// unless VIS_TEST_NO_BWRAP=1 says this machine cannot have it.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := bwrapPath(); err != nil {
		if os.Getenv("VIS_TEST_NO_BWRAP") == "1" {
			t.Skipf("VIS_TEST_NO_BWRAP=1: %v", err)
		}
		t.Fatalf("%v (set VIS_TEST_NO_BWRAP=1 to skip the confined tests)", err)
	}
}

// shells returns the commands of a fixture's session, closed by the test:
// through the kernel layer of the vis-agent binary under test (the
// network off applies one also to the unconfined commands).
func shells(t *testing.T, a Access) *Shells {
	t.Helper()
	return shellsIn(t, filepath.Join(t.TempDir(), "shells"), a, Limits{Exe: testenv.Binary(t)})
}

func shellsIn(t *testing.T, dir string, a Access, lim Limits) *Shells {
	t.Helper()
	m := NewShells(dir, a, lim, NewSpools(MaxSpoolsBytes))
	t.Cleanup(m.Close)
	return m
}

// run starts cmd and waits for it to end (at most a minute).
func run(t *testing.T, m *Shells, cmd string) ShellState {
	t.Helper()
	st, err := m.Start(cmd, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return waitEnd(t, m, st.ID)
}

func waitEnd(t *testing.T, m *Shells, id string) ShellState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := m.Wait(id, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != StatusRunning {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still running after a minute: %+v", id, st)
		}
	}
}

// modes runs a test unconfined and confined.
func modes(t *testing.T, test func(t *testing.T, f fixture)) {
	for _, confined := range []bool{false, true} {
		name := map[bool]string{false: "unconfined", true: "confined"}[confined]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			if confined {
				needBwrap(t)
			} else {
				f.a.Unconfined = true
			}
			test(t, f)
		})
	}
}

func TestShellRuns(t *testing.T) {
	modes(t, func(t *testing.T, f fixture) {
		m := shells(t, f.a)
		st := run(t, m, "echo out; echo err >&2; pwd; exit 3")
		if st.Status != StatusExited || st.Exit == nil || *st.Exit != 3 || st.Out != "out\n"+f.ws+"\n" || st.Err != "err\n" || st.OutCut != 0 {
			t.Fatalf("state: %+v", st)
		}
		if st.ID != "sh1" || st.Command == "" || st.Seconds <= 0 {
			t.Fatalf("state: %+v", st)
		}
		os.Mkdir(filepath.Join(f.ws, "sub"), 0o755)
		st, err := m.Start("pwd", "sub", 0)
		if err != nil {
			t.Fatal(err)
		}
		if st = waitEnd(t, m, st.ID); st.Out != filepath.Join(f.ws, "sub")+"\n" {
			t.Fatalf("cwd: %+v", st)
		}
		if got, err := m.State(st.ID); err != nil || got.Out != st.Out {
			t.Fatalf("State: %+v %v", got, err)
		}
		_, err = m.Start("pwd", "missing", 0)
		wantErr(t, err, "cwd missing is not a folder")
		_, err = m.Start("  ", "", 0)
		wantErr(t, err, "the command is empty")
		_, err = m.Start("true", "", -time.Second)
		wantErr(t, err, "negative")
		_, err = m.State("sh99")
		wantErr(t, err, `no command "sh99" (there are sh1, sh2)`)
	})
	f := newFixture(t)
	_, err := shells(t, f.a).Start("pwd", f.secret+"/..", 0)
	wantErr(t, err, "outside the session's roots")
}

// alive reports whether a process whose command line holds marker runs.
func alive(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			return true
		}
	}
	return false
}

func TestShellTimeoutAndStop(t *testing.T) {
	modes(t, func(t *testing.T, f fixture) {
		m := shells(t, f.a)
		marker := fmt.Sprintf("%d.%d", 400+len(t.Name()), time.Now().UnixNano()%1000)
		start := time.Now()
		st, err := m.Start("echo started; sleep "+marker+" & sleep "+marker+"; echo never", "", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		st = waitEnd(t, m, st.ID)
		if st.Status != StatusTimedOut || st.Exit == nil || *st.Exit != 128+15 || st.Out != "started\n" || st.Timeout != 0.3 {
			t.Fatalf("timeout: %+v", st)
		}
		if time.Since(start) > 10*time.Second || alive("sleep "+marker) {
			t.Fatalf("the timed-out command's processes live on (%v)", time.Since(start))
		}

		// A command that ignores SIGTERM is killed after the grace.
		st, err = m.Start("trap '' TERM; sleep "+marker, "", 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if st = waitEnd(t, m, st.ID); st.Status != StatusTimedOut || st.Exit == nil || *st.Exit != 128+9 || alive("sleep "+marker) {
			t.Fatalf("SIGTERM ignored: %+v", st)
		}

		st, err = m.Start("sleep "+marker, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != StatusRunning || st.Exit != nil {
			t.Fatalf("started: %+v", st)
		}
		if st, err = m.Wait(st.ID, 100*time.Millisecond); err != nil || st.Status != StatusRunning {
			t.Fatalf("wait returned early: %+v %v", st, err)
		}
		if st, err = m.Stop(st.ID); err != nil || st.Status != StatusStopped || st.Exit == nil || alive("sleep "+marker) {
			t.Fatalf("stop: %+v %v", st, err)
		}
		// Stopping again, or a command that ended, changes nothing.
		done := run(t, m, "true")
		if again, err := m.Stop(done.ID); err != nil || again.Status != StatusExited || *again.Exit != 0 {
			t.Fatalf("stop after the end: %+v %v", again, err)
		}

		// Close ends what still runs and refuses new commands.
		for range 2 {
			if _, err := m.Start("sleep "+marker, "", 0); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
		if alive("sleep " + marker) {
			t.Fatal("Close left a command running")
		}
		_, err = m.Start("true", "", 0)
		wantErr(t, err, "closing")
	})
}

func TestShellHugeOutput(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	m := shells(t, f.a)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := run(t, m, "yes | head -c 100000000; echo done; echo err >&2")
	runtime.ReadMemStats(&after)
	if st.Status != StatusExited || *st.Exit != 0 || st.OutBytes != 100000005 || st.Err != "err\n" {
		t.Fatalf("state: %v %v %d %q", st.Status, st.Exit, st.OutBytes, st.Err)
	}
	if len(st.Out) > StateHeadBytes+StateTailBytes+200 || st.OutCut != 100000005-StateHeadBytes-StateTailBytes ||
		!strings.Contains(st.Out, "bytes cut; logs(n) reads lines") || !strings.HasPrefix(st.Out, "y\ny\n") {
		t.Fatalf("out: %d bytes shown, %d cut", len(st.Out), st.OutCut)
	}
	t.Logf("100 MB of output: %.1fs, %d KiB allocated in the host", st.Seconds, (after.TotalAlloc-before.TotalAlloc)>>10)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 20<<20 {
		t.Fatalf("100 MB of output allocated %d MiB in the host", grew>>20)
	}
	// The log alone is on disk, up to its cap, which the state tells.
	entries, _ := os.ReadDir(filepath.Join(m.dir, st.ID))
	if info, err := os.Stat(filepath.Join(m.dir, st.ID, "log")); err != nil || info.Size() != MaxSpoolBytes || len(entries) != 1 {
		t.Fatalf("spool: %v %v, %d files", info, err, len(entries))
	}
	if st.Spool != "its output past 64 MiB was not kept on disk (a session keeps 256 MiB of shell output, 64 MiB of one command's); logs(-n) reads its last lines" {
		t.Errorf("spool note: %q", st.Spool)
	}
	last, err := m.Logs(st.ID, -20)
	if err != nil {
		t.Fatal(err)
	}
	// The two streams' last bytes come in either order: stdout's alone
	// end with done.
	var outLines []string
	for _, l := range last {
		if l != "err" {
			outLines = append(outLines, l)
		}
	}
	if len(last) != 20 || last[0] != "y" || !strings.HasSuffix(strings.Join(outLines, ","), "y,y,done") {
		t.Fatalf("logs(-20): %q", last)
	}
	first, err := m.Logs(st.ID, 3)
	if err != nil || strings.Join(first, ",") != "y,y,y" {
		t.Fatalf("logs(3): %q %v", first, err)
	}
	all, err := m.Logs(st.ID, 0)
	if err != nil || len(all) != MaxLogLines+1 || !strings.Contains(all[MaxLogLines], "more lines") {
		t.Fatalf("logs(0): %d lines, last %q, %v", len(all), all[len(all)-1], err)
	}
}

// TestShellSpools: the logs of a session's commands together stay within
// their budget: the oldest ended commands' go first, saying so in the
// state of the command that took their place and in their own logs(),
// which then give their last lines; a command that finds no room (the
// others still run) keeps its first bytes and says why.
func TestShellSpools(t *testing.T) {
	f := newFixture(t)
	f.a.Unconfined = true
	m := shells(t, f.a)
	m.spools = NewSpools(5 << 20)
	const twoMiB = "yes | head -c 2097152; echo end"
	var states []ShellState
	for range 3 {
		states = append(states, run(t, m, twoMiB))
	}
	if states[0].Spool != "" || states[1].Spool != "" || !strings.Contains(states[2].Spool, "the output of sh1 was deleted from disk to make room (a session keeps 5 MiB") {
		t.Errorf("spool notes: %q %q %q", states[0].Spool, states[1].Spool, states[2].Spool)
	}
	if du := spoolBytes(t, m.dir); du > 5<<20 {
		t.Errorf("the logs hold %d bytes, past the budget", du)
	}
	st, _ := m.State("sh1")
	lines, err := m.Logs("sh1", 2)
	if err != nil || !strings.Contains(st.Spool, "its output was deleted from disk") || len(lines) != 3 ||
		!strings.Contains(lines[0], "deleted from disk") || lines[2] != "end" {
		t.Errorf("the deleted log: %q; logs(2): %q %v", st.Spool, lines, err)
	}
	// Two that run hold the budget: the third keeps what fits.
	slow := "yes | head -c 2097152; sleep 30"
	for range 2 {
		if _, err := m.Start(slow, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	st = run(t, m, twoMiB)
	if !strings.Contains(st.Spool, "its output past 1 MiB was not kept on disk (a session keeps 5 MiB of shell output") {
		t.Errorf("no room: %q", st.Spool)
	}
	if lines, err := m.Logs(st.ID, -1); err != nil || strings.Join(lines, ",") != "end" {
		t.Errorf("logs(-1) past the room: %q %v", lines, err)
	}
	if lines, err := m.Logs(st.ID, 2); err != nil || strings.Join(lines, ",") != "y,y" {
		t.Errorf("logs(2) past the room: %q %v", lines, err)
	}
	if du := spoolBytes(t, m.dir); du > 5<<20 {
		t.Errorf("the logs hold %d bytes, past the budget", du)
	}
}

// spoolBytes is what the files under dir hold.
func spoolBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func TestShellLogs(t *testing.T) {
	f := newFixture(t)
	f.a.Unconfined = true
	m := shells(t, f.a)
	st := run(t, m, "seq 1 1000; printf 'no newline'")
	last, err := m.Logs(st.ID, -3)
	if err != nil || strings.Join(last, ",") != "999,1000,no newline" {
		t.Fatalf("logs(-3): %q %v", last, err)
	}
	if first, err := m.Logs(st.ID, 2); err != nil || strings.Join(first, ",") != "1,2" {
		t.Fatalf("logs(2): %q %v", first, err)
	}
	if all, err := m.Logs(st.ID, 0); err != nil || len(all) != 1001 {
		t.Fatalf("logs(0): %d %v", len(all), err)
	}
	if all, err := m.Logs(st.ID, -5000); err != nil || len(all) != 1001 || all[0] != "1" {
		t.Fatalf("logs(-5000): %d %v", len(all), err)
	}
	st = run(t, m, "true")
	if none, err := m.Logs(st.ID, -20); err != nil || len(none) != 0 {
		t.Fatalf("logs of no output: %q %v", none, err)
	}
	_, err = m.Logs("nope", 1)
	wantErr(t, err, `no command "nope"`)
}

func TestShellConfined(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	home, _ := os.UserHomeDir()
	outside := filepath.Dir(f.secret)
	hostTmp, err := os.CreateTemp("", "vis-host-tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	hostTmp.Close()
	defer os.Remove(hostTmp.Name())
	tcp, _ := testenv.Loopback(t, "LOOPBACK-ANSWER")
	m := shells(t, f.a)
	script := strings.Join([]string{
		"id -u",
		"grep CapEff /proc/self/status",
		"cat " + f.secret,
		"cat escape",
		"ls -A " + home,
		"ls " + hostTmp.Name(),
		"echo x > " + filepath.Join(outside, "made"),
		"echo x > " + filepath.Join(f.ro, "lib.txt"),
		"echo x > /usr/local/made",
		"echo x > /made",
		"chroot / /bin/true",
		"echo inside > made-inside",
		"echo tmp > /tmp/t && cat /tmp/t",
		"ls /proc | grep -c '^[0-9]'",
		fmt.Sprintf("bash -c 'cat < /dev/tcp/127.0.0.1/%d'", tcp),
		"echo end",
	}, "\n")
	st := run(t, m, script)
	t.Logf("out:\n%s\nerr:\n%s", st.Out, st.Err)
	all := st.Out + st.Err
	for _, bad := range []string{"TOPSECRET", "LOOPBACK-ANSWER", "go\n"} {
		if strings.Contains(all, bad) {
			t.Errorf("a confined command got %q", bad)
		}
	}
	if k := st.Kernel; st.Confined != "bubblewrap" || k == nil || !k.Files || !k.Seccomp || !k.NoCaps || !k.NoUnixSockets || !k.NoOtherProcesses || !k.ReadOnlyMounts {
		t.Errorf("the kernel layer the command reported: %s %+v", st.Confined, st.Kernel)
	}
	for _, want := range []string{"0\nCapEff:\t0000000000000000\n", "tmp\n", "end\n"} {
		if !strings.Contains(st.Out, want) {
			t.Errorf("out lacks %q", want)
		}
	}
	for _, p := range []string{filepath.Join(outside, "made"), "/usr/local/made", "/made"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("a confined command wrote %s", p)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(f.ro, "lib.txt")); string(data) != "read only\n" {
		t.Errorf("a confined command wrote the read-only root: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "made-inside")); string(data) != "inside\n" {
		t.Errorf("the workspace is not writable: %q", data)
	}
	if strings.Count(st.Err, "Permission denied")+strings.Count(st.Err, "Read-only file system") < 3 {
		t.Errorf("expected refusals in stderr")
	}

	// With the network on, the same server answers.
	f.a.Network = true
	st = run(t, shells(t, f.a), fmt.Sprintf("bash -c 'cat < /dev/tcp/127.0.0.1/%d'", tcp))
	if st.Out != "LOOPBACK-ANSWER" {
		t.Fatalf("network on: %+v", st)
	}
}

func TestShellHidden(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	session := filepath.Join(f.ws, ".vis")
	testenv.WriteTree(t, session, map[string]string{"host.sock": "not a socket here", "store/db": "rows"})
	f.a.Hidden = []string{filepath.Join(session, "host.sock"), filepath.Join(session, "store")}
	m := shellsIn(t, filepath.Join(session, "shells"), f.a, Limits{Exe: testenv.Binary(t)})
	st := run(t, m, "cat .vis/host.sock; ls -A .vis/store .vis/shells; touch .vis/store/x; echo end")
	if strings.Contains(st.Out, "not a socket") || strings.Contains(st.Out, "db") || strings.Contains(st.Out, "sh1") || !strings.Contains(st.Out, "end") {
		t.Fatalf("hidden files seen: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(session, "store", "x")); err == nil {
		t.Fatal("a hidden folder was written")
	}
	_, err := Cat(context.Background(), f.a, ".vis/store/db", 0, 0)
	wantErr(t, err, "hidden from the session: .vis/store/db")
	if r, err := Grep(context.Background(), f.a, "rows|socket", "", "", 0); err != nil || r.Total != 0 {
		t.Fatalf("grep read hidden files: %s %v", r.Text, err)
	}
}

// TestShellNeedsHelper: without the vis-agent binary that applies the
// kernel layer, a jailed session's command (and an unjailed one's
// without the network) does not run.
func TestShellNeedsHelper(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	for _, unconfined := range []bool{false, true} {
		f.a.Unconfined = unconfined
		_, err := shellsIn(t, filepath.Join(t.TempDir(), "shells"), f.a, Limits{}).Start("touch ran", "", 0)
		wantErr(t, err, "no vis-agent binary to apply the kernel layer with; nothing ran")
		// A helper that ends without its report: at once, not at the
		// report's time-out.
		start := time.Now()
		_, err = shellsIn(t, filepath.Join(t.TempDir(), "shells"), f.a, Limits{Exe: "/bin/false"}).Start("touch ran", "", 0)
		wantErr(t, err, "the command's kernel layer: no report from the helper (EOF); nothing ran")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the refusal took %v", d)
		}
		if _, err := os.Stat(filepath.Join(f.ws, "ran")); err == nil {
			t.Fatal("the command ran")
		}
	}
}

func TestShellWithoutBwrap(t *testing.T) {
	f := newFixture(t)
	saved := bwrapName
	bwrapName = "bwrap-not-installed-here"
	defer func() { bwrapName = saved }()
	_, err := shells(t, f.a).Start("touch ran", "", 0)
	wantErr(t, err, "apt-get install bubblewrap", "--no-jail")
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("the refusal %v is not a permission error", err)
	}
	wantErr(t, CanConfine(), "apt-get install bubblewrap")
	if _, err := os.Stat(filepath.Join(f.ws, "ran")); err == nil {
		t.Fatal("the command ran unconfined")
	}
}

func TestShellLimits(t *testing.T) {
	f := newFixture(t)
	f.a.Unconfined = true
	m := shells(t, f.a)
	for range MaxKept + 3 {
		run(t, m, "true")
	}
	_, err := m.State("sh3")
	wantErr(t, err, `no command "sh3"`)
	if _, err := os.Stat(filepath.Join(m.dir, "sh3")); err == nil {
		t.Fatal("the output of a forgotten command is left")
	}
	if st, err := m.State("sh4"); err != nil || st.Status != StatusExited {
		t.Fatalf("sh4: %+v %v", st, err)
	}
	data, err := json.Marshal(run(t, m, "exit 4"))
	if err != nil || !strings.Contains(string(data), `"status":"exited","exit":4,`) {
		t.Fatalf("json: %s %v", data, err)
	}

	for range MaxRunning {
		if _, err := m.Start("sleep 60", "", 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err = m.Start("sleep 60", "", 0)
	wantErr(t, err, "32 commands are running")
}

func TestShellBwrapRefused(t *testing.T) {
	f := newFixture(t)
	fake := filepath.Join(t.TempDir(), "bwrap")
	write(t, fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	saved := bwrapName
	bwrapName = fake
	defer func() { bwrapName = saved }()
	_, err := shells(t, f.a).Start("touch ran", "", 0)
	wantErr(t, err, "bubblewrap cannot confine commands here (bwrap: No permissions to create new namespace)", "--no-jail")
	if _, err := os.Stat(filepath.Join(f.ws, "ran")); err == nil {
		t.Fatal("the command ran unconfined")
	}
}

// BenchmarkShellRun is the time from Start to the end of `true`,
// unconfined and under bubblewrap.
func BenchmarkShellRun(b *testing.B) {
	for _, confined := range []bool{false, true} {
		b.Run(map[bool]string{false: "unconfined", true: "confined"}[confined], func(b *testing.B) {
			ws := b.TempDir()
			a := Access{Workspace: ws, ReadWrite: []string{ws}, Unconfined: !confined}
			m := NewShells(filepath.Join(b.TempDir(), "shells"), a, Limits{Exe: testenv.Binary(b)}, NewSpools(MaxSpoolsBytes))
			defer m.Close()
			if confined {
				if err := CanConfine(); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				st, err := m.Start("true", "", 0)
				if err != nil {
					b.Fatal(err)
				}
				if st, err = m.Wait(st.ID, time.Minute); err != nil || st.Status != StatusExited {
					b.Fatalf("%+v %v", st, err)
				}
			}
		})
	}
}
