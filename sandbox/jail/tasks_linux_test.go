package jail

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestTaskGroupHoldsEveryThread: a process that may start processes has
// every thread in its pids cgroup, the Go runtime's too (a process one of
// them forks would start outside it, uncounted, and outlive the group's
// end), whether its C constructor put it there while it had one thread (a
// child given protocol.DropPrivilegesFlag) or limitTasks moved it whole.
func TestTaskGroupHoldsEveryThread(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(childRequest{TaskGroup: true})
	for _, args := range [][]string{protocol.ChildArgs("/nowhere", true, false), {"-test.run", "^$"}} {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), childEnv+"="+string(req))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.HasPrefix(string(out), "no pids cgroup:") {
			t.Skipf("%s", out)
		}
		t.Cleanup(func() { EndTaskGroup(cmd.Process.Pid) })
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) < 2 {
			t.Fatalf("%v: want a line per thread of the Go runtime, got %q", args, out)
		}
		for _, l := range lines {
			dir := strings.TrimSuffix(l, " <nil>")
			if filepath.Base(dir) != strconv.Itoa(cmd.Process.Pid) || filepath.Base(filepath.Dir(dir)) != taskGroupDir {
				t.Errorf("%v: a thread is in the pids cgroup %q, not in the process's group:\n%s", args, l, out)
			}
		}
	}
}
