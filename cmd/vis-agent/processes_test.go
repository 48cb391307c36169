package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// TestSandboxProcessesInTheJail (issue 33): a jailed session's code starts
// processes, inside its jail: sys.executable is a python that imports
// what install() added, multiprocessing (fork, spawn, forkserver),
// ProcessPoolExecutor, joblib's loky and os.fork work; a fork bomb stops
// at the session's cap with a hint; the session's own interpreter cannot
// exec itself away; and what the session started ends with it at stop.
// With the audit hook and without, on the oldest and newest CPython.
func TestSandboxProcessesInTheJail(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	index := installIndex(t)
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		writeUserConfig(t, sb, "[python]\nindex_url = \"file://"+index+"\"\n")
		sb.installShared(wheels, "joblib")
		r := sb.block("pr", `import subprocess, sys, os
install("vis-tiny")
out = subprocess.run([sys.executable, "-c", "import vis_tiny; print(vis_tiny.VALUE)"], capture_output=True, text=True)
print("sys.executable:", out.stdout.strip(), out.returncode, out.stderr[-300:])
import multiprocessing as mp
for method in ("fork", "spawn", "forkserver"):
    with mp.get_context(method).Pool(2) as pool:
        print(method, pool.map(abs, [-1, -2, -3]))
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor(2) as ex:
    print("executor", list(ex.map(abs, [-4, -5])))
from joblib import Parallel, delayed
print("joblib", Parallel(n_jobs=2)(delayed(abs)(i) for i in (-6, -7)))
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(subprocess.run("echo from a shell", shell=True, capture_output=True, text=True).stdout.strip())
print(subprocess.run("python -c 'import vis_tiny; print(vis_tiny.VALUE, 2)'", shell=True, capture_output=True, text=True).stdout.strip())`, 0, "--timeout", "5m")
		contains(t, "processes", r.stdout, "sys.executable: tiny dep 0", "fork [1, 2, 3]", "spawn [1, 2, 3]",
			"forkserver [1, 2, 3]", "executor [4, 5]", "joblib [6, 7]", "fork 7\n", "from a shell", "tiny dep 2")
		// A fork bomb stops at the session's cap.
		r = sb.block("pr", `import os, time
kids = []
try:
    while len(kids) < 500:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
finally:
    for k in kids:
        os.kill(k, 9)
        os.waitpid(k, 0)
    print("started", len(kids))`, 1)
		contains(t, "a fork bomb", r.stdout+r.stderr, "BlockingIOError", "Hint: the session's processes and threads reached its cap")
		if m := regexp.MustCompile(`started (\d+)`).FindStringSubmatch(r.stdout); m == nil || atoi(m[1]) >= 100 {
			t.Errorf("the fork bomb was not stopped near the cap:\n%s", r.stdout)
		}
		// The session's interpreter does not exec itself away (the hook
		// says so; without it the program runs in its place, in the jail).
		if hook {
			r = sb.block("pr", `os.execv("/bin/true", ["true"])`, 1)
			contains(t, "exec of the interpreter", r.stderr, "it would replace the session's own Python process")
		}
		// What the session started ends with it.
		r = sb.block("pr", `import subprocess
p = subprocess.Popen(["sleep", "600"], start_new_session=True)
print("pid", p.pid)`, 0)
		m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no pid: %s", r.stdout)
		}
		sleeper, _ := strconv.Atoi(m[1])
		if !processAlive(sleeper) {
			t.Fatalf("the background process %d did not start", sleeper)
		}
		sb.ok("stop", "--session", "pr")
		for i := 0; i < 100 && processAlive(sleeper); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if processAlive(sleeper) {
			t.Errorf("a process the session started (in a session of its own) outlived sandbox stop: %s", strings.TrimSpace(cmdline(sleeper)))
		}
	})
}
