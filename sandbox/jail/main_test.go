package jail

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv carries a childRequest into the re-executed test binary: the
// jail is applied there, in a process of its own, never in the test's.
const childEnv = "VIS_JAIL_TEST_CHILD"

// childRequest is what the test binary does when re-executed: apply
// Policy, then exec Argv (the kernel layer alone, no audit hook), or run
// the threads check when Argv is empty.
type childRequest struct {
	Policy Policy
	Argv   []string
	// Threads started before Apply, for the threads check.
	Threads int
	Secret  string
	// Report prints every thread's bounding set and no_new_privs, as the
	// process started (TestEarlyFlag), and nothing else.
	Report bool
	// TaskGroup makes the process's pids cgroup for processes (limitTasks
	// with whole) and prints every thread's pids cgroup, one a line
	// (TestTaskGroupHoldsEveryThread).
	TaskGroup bool
}

func TestMain(m *testing.M) {
	if req := os.Getenv(childEnv); req != "" {
		os.Exit(runChild(req))
	}
	os.Exit(m.Run())
}

func runChild(req string) int {
	var r childRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		return 3
	}
	os.Unsetenv(childEnv)
	if r.Report {
		err := eachThread(func(f map[string]string) { fmt.Printf("CapBnd=%s NoNewPrivs=%s\n", f["CapBnd"], f["NoNewPrivs"]) })
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		return 0
	}
	if r.TaskGroup {
		return taskGroupReport()
	}
	if len(r.Argv) == 0 {
		return threadsCheck(r)
	}
	// The thread cap takes the calling thread (cgroup v1), which must be
	// the one that execs.
	runtime.LockOSThread()
	st, err := Apply(r.Policy)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apply:", err)
		return 3
	}
	fmt.Fprintln(os.Stderr, "jail-status:", st)
	err = syscall.Exec(r.Argv[0], r.Argv, os.Environ())
	fmt.Fprintln(os.Stderr, "exec:", err)
	return 3
}

// threadsCheck starts OS threads, applies the policy from the main
// thread, then has every thread try what the jail refuses; it prints one
// line per thread and attempt.
func threadsCheck(r childRequest) int {
	type attempt struct{ start, done sync.WaitGroup }
	var a attempt
	var mu sync.Mutex
	var lines []string
	a.start.Add(1)
	for i := 0; i < r.Threads; i++ {
		a.done.Add(1)
		go func() {
			runtime.LockOSThread() // this thread exists before Apply and runs only this
			a.start.Wait()
			defer a.done.Done()
			tid := unix.Gettid()
			_, openErr := os.ReadFile(r.Secret)
			fd, sockErr := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
			if sockErr == nil {
				unix.Close(fd)
			}
			var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			capErr := unix.Capget(&hdr, &data[0])
			mu.Lock()
			lines = append(lines, fmt.Sprintf("thread %d open=%v socket=%v caps=%x/%v", tid, openErr != nil, sockErr != nil, data[0].Effective|data[0].Permitted, capErr))
			mu.Unlock()
		}()
	}
	st, err := Apply(r.Policy)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apply:", err)
		return 3
	}
	a.start.Done()
	a.done.Wait()
	fmt.Println("status:", st)
	fmt.Println(strings.Join(lines, "\n"))
	return 0
}

// taskGroupReport joins the process's pids cgroup, whole, and prints the
// pids cgroup of every thread.
func taskGroupReport() int {
	if _, err := limitTasks(16, true); err != nil {
		fmt.Println("no pids cgroup:", err)
		return 0
	}
	v1Mount, v2Mount, err := pidsMounts()
	if err == nil {
		err = eachThreadFile("cgroup", func(data []byte) {
			dir, _, err := pidsCgroupIn(data, v1Mount, v2Mount)
			fmt.Println(dir, err)
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}
