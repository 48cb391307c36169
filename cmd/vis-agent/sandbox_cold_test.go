package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// driverBytecode prints how many of the session's runtime modules (package
// vis_sandbox) are loaded and which lack a valid bytecode file beside
// their source: with one, CPython imported the module from it.
const driverBytecode = `import importlib.util, os, sys
mods = [m for n, m in sys.modules.items() if n.split(".")[0] == "vis_sandbox" and getattr(m, "__file__", None)]
bad = []
for m in mods:
    st = os.stat(m.__file__)
    try:
        with open(m.__cached__, "rb") as f:
            head = f.read(16)
    except OSError as e:
        bad.append(f"{m.__name__}: {type(e).__name__}")
        continue
    if (head[:4] != importlib.util.MAGIC_NUMBER or head[4:8] != bytes(4)
            or int.from_bytes(head[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(head[12:16], "little") != st.st_size & 0xFFFFFFFF):
        bad.append(f"{m.__name__}: stale")
print(len(mods) >= 7, bad)
`

// TestSandboxDriverBytecode: the session's runtime is imported from
// bytecode files, also under the jail (which keeps their folder
// read-only): a new session's interpreter does not compile it again.
func TestSandboxDriverBytecode(t *testing.T) {
	t.Parallel()
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			for _, name := range []string{"first", "second"} {
				if r := sb.block(name, driverBytecode, 0); r.stdout != "True []\n" {
					t.Errorf("session %s: %q (want every module from valid bytecode)\nstderr: %s", name, r.stdout, r.stderr)
				}
			}
		})
	}
}

// childrenOf lists the session children (`vis-agent sandbox child`) whose
// parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	return processesOf(pid, func(cmdline string) bool { return strings.Contains(cmdline, "sandbox\x00child\x00") })
}

// processesOf lists the processes whose parent is pid and whose command
// line (NUL-separated) matches.
func processesOf(pid int, match func(cmdline string) bool) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		n, _ := strconv.Atoi(filepath.Base(p))
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && match(cmdline(n)) {
			out = append(out, n)
		}
	}
	return out
}

// startedBeforeGo reports whether child was started by host before the
// host's Go runtime: its pid is lower than those of all the host's
// threads but the main one (pids only grow here, short of a wrap of
// pid_max during the test).
func startedBeforeGo(t *testing.T, host, child int) bool {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", host))
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	for _, task := range tasks {
		if tid, _ := strconv.Atoi(task.Name()); tid != host && (first == 0 || tid < first) {
			first = tid
		}
	}
	return child < first
}

// TestSandboxEarlyChild: the child a new host starts before the first
// block arrives is the one that runs it; no second one is started. It was
// started by the host's C constructor, before the host's Go runtime, and
// with VIS_SANDBOX_EARLY_CHILD=0 from Go, like every later child; a
// session without the jail gets an early child without the jail's
// privilege drop. The default network (an allow list) and the network on
// both get one, each with its network.
func TestSandboxEarlyChild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		env   []string
		flags []string
		early bool
	}{
		{"jailed", nil, nil, true},
		{"network on", nil, []string{"--network", "on"}, true},
		{"unjailed", nil, []string{"--no-jail"}, true},
		{"off", []string{"VIS_SANDBOX_EARLY_CHILD=0"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t, testenv.First(t), tc.env...)
			v := sb.jsonBlock("e", "import os\nprint(os.getpid(), os.getppid(), session.access[\"kernel\"][\"no_caps\"], session.access.hosts is None)", tc.flags...)
			var pid, ppid int
			var noCaps, noHosts string
			if _, err := fmt.Sscan(v["stdout"].(string), &pid, &ppid, &noCaps, &noHosts); err != nil || v["restarted"] != false {
				t.Fatalf("first block: %v %v", v, err)
			}
			rec := sb.record(sb.folder("e"))
			if rec.ChildPID != pid || rec.HostPID != ppid {
				t.Errorf("the block ran in %d (parent %d); the host record says child %d of host %d", pid, ppid, rec.ChildPID, rec.HostPID)
			}
			if kids := childrenOf(t, ppid); len(kids) != 1 || kids[0] != pid {
				t.Errorf("the host's children: %v, want only %d", kids, pid)
			}
			if early := startedBeforeGo(t, ppid, pid); early != tc.early {
				t.Errorf("the child started before the host's Go runtime: %t, want %t", early, tc.early)
			}
			if want := pyBool(!slices.Contains(tc.flags, "--no-jail")); noCaps != want {
				t.Errorf("session.access.no_caps = %s under %v", noCaps, tc.flags)
			}
			if want := pyBool(slices.Contains(tc.flags, "on")); noHosts != want {
				t.Errorf("session.access.hosts is None: %s under %v", noHosts, tc.flags)
			}
		})
	}
}

// TestSandboxEarlyChildDies: when the child a new host starts early dies
// before it is ready (killed here as soon as it shows, before it
// answers), the first block still runs, in a new child restored from the
// snapshot, started in its place whether the host's start-up or the block
// was handed the early child.
func TestSandboxEarlyChildDies(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	// On a loaded machine the kill may land after the child answered, as
	// it restores the snapshot: the host then rightly discards it (a
	// restore killed is one that may kill again). That is not this case:
	// it is tried again.
	for try := 1; ; try++ {
		if !earlyChildDies(t, sb) {
			return
		}
		if try == 3 {
			t.Fatal("the kill landed after the child answered three times in a row")
		}
		t.Logf("try %d: the kill landed after the child answered; again", try)
	}
}

// earlyChildDies runs TestSandboxEarlyChildDies once; it reports whether
// the kill came too late to test the case.
func earlyChildDies(t *testing.T, sb *sandbox) (late bool) {
	sb.block("d", slowRestore, 0)
	sb.run("stop", "--session", "d")
	folder := sb.folder("d")
	cmd := sb.command("run", "--session", "d", "-c", "print(s.a)")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	killed := 0
	for deadline := time.Now().Add(20 * time.Second); killed == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			n, _ := strconv.Atoi(filepath.Base(p))
			if strings.Contains(cmdline(n), "sandbox\x00child\x00--dir\x00"+folder+"\x00") {
				syscall.Kill(n, syscall.SIGKILL)
				killed = n
			}
		}
	}
	if killed == 0 {
		t.Fatal("no child of the new host was found to kill")
	}
	select {
	case err := <-done:
		if strings.Contains(out.String(), "restoring it stopped the Python process (it was killed by signal 9") {
			sb.run("stop", "--session", "d")
			return true
		}
		if err != nil || out.String() == "" {
			t.Fatalf("block after the early child died: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the block hung after the early child died")
	}
	contains(t, "block after the early child died", out.String(), "[Sandbox restarted]", "1\n")
	if rec := sb.record(folder); rec.ChildPID == killed || rec.ChildPID == 0 {
		t.Errorf("host record's child %d (killed %d)", rec.ChildPID, killed)
	}
	log, _ := os.ReadFile(filepath.Join(folder, "host.log"))
	contains(t, "host log", string(log), "the Python process did not start", "; starting a new one")
	return false
}

// pyBool is b as Python prints it.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
