package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// A run is what a user sees of one command: its output and how it ended.
type run struct {
	stdout, stderr string
	status         string // "exit N" or "signal NAME"
}

func (r run) String() string {
	return fmt.Sprintf("%s\n--- stdout ---\n%s--- stderr ---\n%s", r.status, r.stdout, r.stderr)
}

// hangBound stops a command that hangs; it says nothing about speed.
const hangBound = 2 * time.Minute

// pyCase is one python command line to run under vis-agent python and the
// reference python of the same CPython.
type pyCase struct {
	name  string
	args  []string
	stdin string
	// files are created in the working directory first; a name ending in
	// "/" is a folder.
	files map[string]string
	env   []string
	// combined sends stdout and stderr to one pipe, to compare ordering.
	combined bool
	minMinor int // skip on older CPythons
	// statusOnly compares how the commands ended, not what they printed:
	// for command lines python refuses with its usage text and vis-agent
	// with one line.
	statusOnly bool
	// scrub removes what differs between any two runs of python itself.
	scrub *regexp.Regexp
	// drive, when set, runs the started command instead of a plain wait:
	// for signals and early-closing readers.
	drive func(t *testing.T, cmd *exec.Cmd) run
	// inherit, when set, starts both commands with every catchable signal
	// in this disposition (inheritIgnored or inheritDefault), or default
	// and blocked (inheritBlocked), or default with a low limit of open
	// files (inheritFewFiles).
	inherit string
}

// The dispositions a command can inherit, and the variable that asks the
// test binary to set them and exec the command in its arguments: how
// `trap ” TERM; exec prog`, nohup or a background job starts a program.
const (
	inheritEnv     = "VIS_TEST_INHERIT_SIGNALS"
	inheritIgnored = "ignored"
	inheritDefault = "default"
	inheritBlocked = "blocked"
	// inheritFewFiles: default dispositions, and a soft limit of 256 open
	// files under a higher hard one, as `ulimit -Sn 256` leaves.
	inheritFewFiles = "few-files"
)

// init is the exec helper: it runs before any test when inheritEnv is set.
func init() {
	mode := os.Getenv(inheritEnv)
	if mode == "" {
		return
	}
	if err := execInheriting(mode, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "signal exec helper:", err)
		os.Exit(127)
	}
}

// userEnv is the environment both commands get: the test's own, minus
// anything that would change python's behaviour, plus vis-agent's
// selection of the CPython under test (python ignores VIS_*).
func userEnv(py testenv.Python, home string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PYTHON") || strings.HasPrefix(kv, "VIS_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_HOME="+home)
	return append(env, extra...)
}

// compare runs c with both commands in the same fresh folder and fails on
// any difference a user could see. vis-agent runs in the shared
// environment of py's version in home, and the reference is that
// environment's python (see referenceHome).
func compare(t *testing.T, bin string, py testenv.Python, home, reference string, c pyCase) {
	t.Helper()
	if c.minMinor > py.Version.Minor {
		t.Skipf("needs CPython 3.%d+", c.minMinor)
	}
	work := filepath.Join(t.TempDir(), "work")
	ref := execIn(t, work, c, py, home, append([]string{reference}, c.args...))
	got := execIn(t, work, c, py, home, append([]string{bin, "python"}, c.args...))
	sameRuns(t, c, reference, ref, got)
}

// sameRuns fails when got, vis-agent's run of c, differs from ref, the run
// of the reference python.
func sameRuns(t *testing.T, c pyCase, reference string, ref, got run) {
	t.Helper()
	if c.scrub != nil {
		for _, r := range []*run{&ref, &got} {
			r.stdout = c.scrub.ReplaceAllString(r.stdout, "<scrubbed>")
			r.stderr = c.scrub.ReplaceAllString(r.stderr, "<scrubbed>")
		}
	}
	if c.statusOnly {
		ref.stdout, ref.stderr, got.stdout, got.stderr = "", "", "", ""
	}
	if ref != got {
		t.Errorf("vis-agent python %q differs from %s\n=== python ===\n%s\n=== vis-agent ===\n%s", c.args, reference, ref, got)
	}
}

// referenceHome makes a Vis home with the shared environment of py, which
// vis-agent python runs in outside a project, settled by a first vis-agent
// run (the test makes it with the version without its micro number), and
// returns the home and that environment's python, the reference. The cases
// of one CPython share it one after another, as a user's runs do: each
// runs in a fresh working folder, so no case replays the plan another
// saved (plans are per working folder), and making the environment once,
// not per case, was most of a case's time.
func referenceHome(t *testing.T, bin string, py testenv.Python) (home, reference string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "vishome")
	reference = sharedPython(t, py, home)
	runIn(t, t.TempDir(), userEnv(py, home, nil), bin, "python", "-c", "pass")
	return home, reference
}

// sharedPython makes the shared environment under home and returns its
// python, which vis-agent python then runs as.
func sharedPython(t *testing.T, py testenv.Python, home string) string {
	t.Helper()
	inst, err := findpython.Locate(py.Library, py.Version, "")
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := packages.SharedEnvironment(paths.New(func(k string) string { return map[string]string{"VIS_HOME": home}[k] }).SharedEnvironment(py.Version.Short()), inst, py.Version)
	if err != nil {
		t.Fatal(err)
	}
	return env.Python
}

// execIn recreates the working folder and runs argv there.
func execIn(t *testing.T, work string, c pyCase, py testenv.Python, home string, argv []string) run {
	t.Helper()
	if err := os.RemoveAll(work); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, work, c.files)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	env := c.env
	if c.inherit != "" {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		argv = append([]string{self}, argv...)
		env = append(env[:len(env):len(env)], inheritEnv+"="+c.inherit)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = userEnv(py, home, env)
	if c.drive != nil {
		return c.drive(t, cmd)
	}
	cmd.Stdin = strings.NewReader(c.stdin)
	return runToEnd(t, ctx, cmd, c.combined)
}

// runToEnd runs cmd, made with ctx, with its output captured (stderr into
// stdout when combined) and returns what a user would see of it.
func runToEnd(t *testing.T, ctx context.Context, cmd *exec.Cmd, combined bool) run {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if combined {
		cmd.Stderr = &out
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q hung (killed after %s)", cmd.Args, hangBound)
	}
	return run{out.String(), errb.String(), status(t, cmd, err)}
}

// status describes how a finished command ended.
func status(t *testing.T, cmd *exec.Cmd, err error) string {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", cmd.Args, err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

// startPiped starts cmd with its stdout on a pipe and its stderr kept.
func startPiped(t *testing.T, cmd *exec.Cmd) (io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdout, &errb
}

// interruptWhenReady waits for the program's first line on stdout, sends
// SIGINT, and collects the rest: Ctrl-C while the program sleeps or reads.
func interruptWhenReady(t *testing.T, cmd *exec.Cmd) run {
	t.Helper()
	stdin, err := cmd.StdinPipe() // open and silent: a blocked read
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, errb := startPiped(t, cmd)
	r := bufio.NewReader(stdout)
	first, _ := r.ReadString('\n')
	// The program printed "ready" just before it blocks: wait until its
	// main thread sleeps in that call (a busy loop never does; it gets a
	// moment instead), so both programs are interrupted at the same line.
	waitSleeping(cmd.Process.Pid, 500*time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	return run{first + string(rest), errb.String(), status(t, cmd, err)}
}

// waitSleeping waits until the main thread of process pid is in an
// interruptible sleep, or for at most bound.
func waitSleeping(pid int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// The state follows the command name in parentheses: "pid (comm) S ...".
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i+2 < len(stat) && stat[i+2] == 'S' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closeAfterFirstLine is `| head -1` whose reader is slower than the
// program: it waits until the program is blocked writing to the full pipe,
// reads one line (one read, which frees a page of room), waits until the
// program has written into that room and is blocked again, and only then
// closes the pipe.
//
// Closing at a moment the program is in no known state makes the result a
// matter of scheduling, for python itself: it ends with status 1 if the
// reader leaves between two of its writes, and with status 120 and a second
// BrokenPipeError ("Exception ignored in: <_io.TextIOWrapper
// name='<stdout>' ...>") if the reader leaves while a write is half done:
// the rest of that write stays in the buffer and the flush at exit fails
// too. Here both commands are in the same write, with the same bytes
// written, when the reader leaves.
func closeAfterFirstLine(t *testing.T, cmd *exec.Cmd) run {
	t.Helper()
	stdout, errb := startPiped(t, cmd)
	pid := cmd.Process.Pid
	sleeps := waitBlockedWriting(t, pid, -1)
	first, _ := bufio.NewReader(stdout).ReadString('\n')
	waitBlockedWriting(t, pid, sleeps)
	stdout.Close()
	err := cmd.Wait()
	return run{first, errb.String(), status(t, cmd, err)}
}

// closeBeforeOutput is a pipe whose reader left before the program wrote:
// the program waits for a line on stdin before it prints, and gets it once
// nobody can read its stdout.
func closeBeforeOutput(t *testing.T, cmd *exec.Cmd) run {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd.Stdout = w
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Start()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A child another test forks at this moment holds a copy of r until it
	// execs; a write reaches the pipe until then. Probe with a byte (nobody
	// reads it) until the write fails.
	for deadline := time.Now().Add(hangBound); ; time.Sleep(5 * time.Millisecond) {
		if _, err := w.Write([]byte{0}); errors.Is(err, syscall.EPIPE) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read end of the pipe stayed open (waited %s)", hangBound)
		}
	}
	io.WriteString(stdin, "go\n")
	stdin.Close()
	err = cmd.Wait()
	return run{"", errb.String(), status(t, cmd, err)}
}

// waitBlockedWriting waits until the main thread of process pid sleeps in a
// write to its stdout, which for a pipe means waiting for room, after it
// has gone to sleep more than after times; it returns how many times it
// has. A thread woken but not yet run still reads as asleep in its write,
// with the old count: a later wait passes only once the thread has run and
// gone to sleep again. It returns at once when the process has ended, and
// gives up after hangBound.
func waitBlockedWriting(t *testing.T, pid int, after int) int {
	t.Helper()
	thread := fmt.Sprintf("/proc/%d/task/%d/", pid, pid)
	for deadline := time.Now().Add(hangBound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		// The count read on both sides of the state: equal, it is the
		// count of the sleep seen in between.
		before, err1 := sleepCount(thread)
		call, err2 := os.ReadFile(thread + "syscall")
		stat, err3 := os.ReadFile(thread + "stat")
		now, err4 := sleepCount(thread)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				return 0
			}
			t.Fatal(err)
		}
		// "pid (comm) S ...": the state follows the command name.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			t.Fatalf("unexpected %sstat: %q", thread, stat)
		}
		if stat[i+2] == 'Z' {
			return 0
		}
		// "NR ARG1 ..." while in a system call.
		f := strings.Fields(string(call))
		inWrite := len(f) >= 2 && f[0] == strconv.Itoa(syscall.SYS_WRITE) && f[1] == "0x1"
		if inWrite && stat[i+2] == 'S' && before == now && now > after {
			return now
		}
	}
	t.Fatalf("process %d never blocked writing to its stdout pipe (waited %s)", pid, hangBound)
	return 0
}

// sleepCount reads how many times the thread whose /proc folder is thread
// has gone to sleep (voluntary context switches).
func sleepCount(thread string) (int, error) {
	status, err := os.ReadFile(thread + "status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no voluntary_ctxt_switches in %sstatus", thread)
}
