package jail

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// taskHeadroom is how many tasks past the cap the Go runtime under the
// interpreter may still start (a thread for a blocking call, the signal
// thread); Python's own threads reach the cap first.
const taskHeadroom = 8

// taskGroupDir is the folder, inside the caller's own pids cgroup, that
// holds one cgroup per jailed process, named by its pid.
const taskGroupDir = "vis-agent"

// limitTasks puts the calling thread (cgroup v1) or the whole process (v2)
// into a pids cgroup of its own whose pids.max lets it start maxThreads-1
// more threads than the one calling (plus taskHeadroom for the Go
// runtime): past it, clone fails with EAGAIN and CPython raises
// RuntimeError, whatever started the thread (threading, a C extension,
// ctypes). A thread starts in its creator's cgroup, so every thread the
// caller's thread starts, and theirs, is counted. On v1 only the calling
// thread moves, named "0", which is what makes the move cheap: moving a
// thread group, or a thread named by its id, waits for an RCU grace period
// (13–14 ms here, on a new session's way to its first block). The caller
// must be the thread that runs the untrusted code (the interpreter's main
// thread). It returns the pids.max in force.
//
// With whole (the jailed code may start processes, which the host ends
// with the group), every thread of the process is in the group, counted:
// a process forked by a thread outside it (the Go runtime's, started
// before the move, which a signal handler of the jailed code can run on)
// would start outside, uncounted and never ended. A jailed child's C
// constructor (early_linux.c) put the process in its group while it had
// one thread, which costs nothing; where it could not, the whole process
// moves here.
func limitTasks(maxThreads int, whole bool) (int, error) {
	base, v1, err := ownPidsCgroup()
	if err != nil {
		return 0, err
	}
	if v1 && filepath.Base(base) == strconv.Itoa(os.Getpid()) && filepath.Base(filepath.Dir(base)) == taskGroupDir {
		// Joined by early_linux.c.
		return joinTaskGroup(base, maxThreads, v1, whole)
	}
	parent := filepath.Join(base, taskGroupDir)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return 0, fmt.Errorf("make a pids cgroup under %s: %w", base, err)
	}
	sweepTaskGroups(parent)
	// cgroup v2 hands the pids controller down only when asked; v1 has no
	// such file, and a failure here shows as a missing pids.max below.
	os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0)
	// Another process's sweep may remove the group between its mkdir and
	// the join (it is empty until then): try again.
	var max int
	for try := 0; ; try++ {
		max, err = joinTaskGroup(filepath.Join(parent, strconv.Itoa(os.Getpid())), maxThreads, v1, whole)
		if err == nil || !errors.Is(err, os.ErrNotExist) || try == 2 {
			break
		}
	}
	return max, err
}

// joinTaskGroup makes the group, sets its pids.max and moves the calling
// thread (v1: its "tasks" file) or the process (v2: "cgroup.procs") in;
// with whole, on v1, then every thread of the process.
func joinTaskGroup(group string, maxThreads int, v1, whole bool) (int, error) {
	if err := os.Mkdir(group, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return 0, fmt.Errorf("make a pids cgroup: %w", err)
	}
	// "0" is the calling thread: the kernel then skips the lock that
	// waits for an RCU grace period (it does for a thread named by its id).
	file, id, members := "tasks", 0, 1
	if !v1 || whole {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			os.Remove(group)
			return 0, fmt.Errorf("count this process's threads: %w", err)
		}
		members = len(tasks)
	}
	if !v1 {
		file, id = "cgroup.procs", os.Getpid()
	}
	max := members + maxThreads - 1 + taskHeadroom
	if err := os.WriteFile(filepath.Join(group, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		os.Remove(group)
		return 0, fmt.Errorf("set pids.max in %s: %w", group, err)
	}
	if err := os.WriteFile(filepath.Join(group, file), []byte(strconv.Itoa(id)), 0); err != nil {
		os.Remove(group)
		return 0, fmt.Errorf("join the pids cgroup %s: %w", group, err)
	}
	if v1 && whole {
		if err := holdAllThreads(group); err != nil {
			return 0, err
		}
	}
	return max, nil
}

// holdAllThreads moves this process into group (v1) whole when a thread
// of it is outside: the Go runtime's threads, started before the calling
// thread joined. The kernel moves a thread group at once, holding off
// new threads meanwhile.
func holdAllThreads(group string) error {
	for try := 0; ; try++ {
		outside, err := threadOutside(group)
		switch {
		case err != nil:
			return err
		case !outside:
			return nil
		case try == 1:
			return fmt.Errorf("a thread of this process stays outside its pids cgroup %s", group)
		}
		if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("move this process into its pids cgroup %s: %w", group, err)
		}
	}
}

// threadOutside reports whether a thread of this process is in another
// pids cgroup than group.
func threadOutside(group string) (bool, error) {
	v1Mount, v2Mount, err := pidsMounts()
	if err != nil {
		return false, err
	}
	outside := false
	err = eachThreadFile("cgroup", func(data []byte) {
		dir, _, err := pidsCgroupIn(data, v1Mount, v2Mount)
		outside = outside || err != nil || dir != group
	})
	return outside, err
}

// sweepTaskGroups removes the groups of processes that have ended (named
// PID) and those of the commands of hosts that have ended (PID-N; a live
// host's may be empty for a moment, before its command joins): the kernel
// refuses to remove a group that still has tasks, so a live one stays.
func sweepTaskGroups(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		name, n, command := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(name)
		if err != nil || !e.IsDir() {
			continue
		}
		if command {
			if _, err := strconv.Atoi(n); err != nil {
				continue
			}
			if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
				continue // the host lives
			}
		}
		os.Remove(filepath.Join(parent, e.Name()))
	}
}

// TaskGroup is the pids cgroup of one command: every process and thread
// the command starts counts, past MaxTasks none starts, whatever starts
// it. The host makes it; the command's first process (Confine) joins it
// through the file Join returns, before it runs anything of the command's.
// (cgroup v2's CLONE_INTO_CGROUP would put the process in at its start,
// but v1, this machine's pids hierarchy, has nothing like it.)
type TaskGroup struct {
	dir  string
	join *os.File
}

// NewTaskGroup makes the group of this process's command number n, with
// pids.max = maxTasks.
func NewTaskGroup(n, maxTasks int) (*TaskGroup, error) {
	base, v1, err := ownPidsCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(base, taskGroupDir)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make a pids cgroup under %s: %w", base, err)
	}
	os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0)
	dir := filepath.Join(parent, fmt.Sprintf("%d-%d", os.Getpid(), n))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make a pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(maxTasks)), 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("set pids.max in %s: %w", dir, err)
	}
	// v1 moves the joining thread alone ("0" in tasks), v2 its process.
	file := "cgroup.procs"
	if v1 {
		file = "tasks"
	}
	join, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open the pids cgroup %s: %w", dir, err)
	}
	return &TaskGroup{dir: dir, join: join}, nil
}

// Join is the file the command's first process writes "0" to, to join.
func (g *TaskGroup) Join() *os.File { return g.join }

// Close ends what the command left in the group (a process it started in
// the background, in a session of its own, which its process group does
// not hold), then removes the group; a task that does not end at once is
// left to a later sweep.
func (g *TaskGroup) Close() {
	g.join.Close()
	endGroup(g.dir)
}

// EndTaskGroup ends every process left in the pids cgroup of the jailed
// process pid (limitTasks made it, in this process's own cgroup, which a
// child it started shares): what that process started, in whatever
// session or process group, once it has ended. The caller has reaped pid.
func EndTaskGroup(pid int) {
	base, _, err := ownPidsCgroup()
	if err != nil {
		return
	}
	endGroup(filepath.Join(base, taskGroupDir, strconv.Itoa(pid)))
}

// GuardTaskGroup is `vis-agent sandbox guard`: it waits until the
// process whose pidfd is descriptor 3 (the host's child) has ended, then
// ends what is left in that process's pids cgroup (EndTaskGroup). The
// host does the same when it reaps its child; the guard, which the host
// starts beside each child in a session of its own, does it when the host
// died first (the child dies with its host, what it started does not).
func GuardTaskGroup(pid int) error {
	if pid <= 0 {
		return errors.New("guard: --pid names the Python process")
	}
	const pidfd = 3
	fds := []unix.PollFd{{Fd: pidfd, Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return fmt.Errorf("guard: watch process %d: %w", pid, err)
		}
	}
	EndTaskGroup(pid)
	return nil
}

// endGroup kills the processes of the cgroup at dir until none is left
// (a fork under way may add one), then removes it.
func endGroup(dir string) {
	for try := 0; try < 20; try++ {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(data))
		if err != nil || len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	os.Remove(dir)
}

// ownPidsCgroup is the folder of the current process's cgroup in the
// hierarchy that has the pids controller: a cgroup v1 "pids" mount (v1
// true), or the v2 unified one.
func ownPidsCgroup() (dir string, v1 bool, err error) {
	v1Mount, v2Mount, err := pidsMounts()
	if err != nil {
		return "", false, err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, fmt.Errorf("read this process's cgroups: %w", err)
	}
	return pidsCgroupIn(data, v1Mount, v2Mount)
}

// pidsCgroupIn is ownPidsCgroup's answer from a /proc/…/cgroup file's
// data and the hierarchies' mount points.
func pidsCgroupIn(data []byte, v1Mount, v2Mount string) (dir string, v1 bool, err error) {
	var unified string
	for _, line := range strings.Split(string(data), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v1Mount != "" && hasWord(parts[1], "pids") {
			return filepath.Join(v1Mount, parts[2]), true, nil
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	if v2Mount != "" && unified != "" {
		return filepath.Join(v2Mount, unified), false, nil
	}
	return "", false, errors.New("no pids cgroup is mounted")
}

// pidsMounts finds where the cgroup v1 pids controller and the cgroup v2
// hierarchy are mounted ("" when not).
func pidsMounts() (v1, v2 string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional...] - type source super-options
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		switch rf[0] {
		case "cgroup":
			if v1 == "" && hasWord(rf[2], "pids") {
				v1 = lf[4]
			}
		case "cgroup2":
			if v2 == "" {
				v2 = lf[4]
			}
		}
	}
	return v1, v2, sc.Err()
}

func hasWord(list, word string) bool {
	for _, w := range strings.Split(list, ",") {
		if w == word {
			return true
		}
	}
	return false
}
