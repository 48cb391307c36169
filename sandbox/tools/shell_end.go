package tools

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wait waits for the command, ending it at its timeout, and records how
// it ended.
func (s *shell) wait() {
	exited := make(chan struct{})
	if s.timeout > 0 {
		timer := time.AfterFunc(s.timeout, func() { s.end(StatusTimedOut, exited) })
		defer timer.Stop()
	}
	err := s.cmd.Wait()
	close(exited)
	// What the command left in its group goes with it.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	if s.proxyListener != nil {
		s.proxyListener.Close()
	}
	code := 0
	if st, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		code = 128 + int(st.Signal())
	} else if s.cmd.ProcessState != nil {
		code = s.cmd.ProcessState.ExitCode()
	} else if err != nil {
		code = -1
	}
	s.closeSpools()
	s.closeGroup()
	s.mu.Lock()
	s.exit, s.endTime = &code, time.Now()
	s.mu.Unlock()
	close(s.done)
}

// end ends a running command for reason: SIGTERM to the processes under
// it, then SIGKILL after stopGrace. exited is closed when the command's
// own process has ended.
//
// Without bubblewrap, the command's process group gets the signals too.
// Under bubblewrap, bubblewrap itself is spared SIGTERM, which would end it at
// once and leave what it runs to die a moment later: the command ends,
// and bubblewrap with it; the SIGKILL goes to the namespace's first
// process, whose end ends every process of the namespace before
// bubblewrap sees it.
func (s *shell) end(reason string, exited <-chan struct{}) {
	s.mu.Lock()
	if s.reason != "" || s.exit != nil {
		s.mu.Unlock()
		return
	}
	s.reason = reason
	s.mu.Unlock()
	pid := s.cmd.Process.Pid
	confined := s.confined == "bubblewrap"
	tree := descendants(pid)
	// A command started a moment ago may not have its processes yet.
	for i := 0; confined && len(tree) == 0 && i < 20; i++ {
		time.Sleep(10 * time.Millisecond)
		tree = descendants(pid)
	}
	signal(pid, tree, !confined, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
	}
	tree = append(tree, descendants(pid)...)
	signal(pid, tree, true, syscall.SIGKILL)
	// Processes that are not the host's children die a moment after
	// their signal: wait for that, so that a stopped command has no
	// process left.
	for deadline := time.Now().Add(stopGrace); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !anyRunning(tree) {
			break
		}
	}
}

// signal sends sig, when group is set, to the process group of pid (the
// shell first: a shell whose child dies first runs on), then to the
// processes of tree (the descendants of pid, which may have left its
// group).
func signal(pid int, tree []int, group bool, sig syscall.Signal) {
	if group {
		syscall.Kill(-pid, sig)
	}
	for _, p := range tree {
		syscall.Kill(p, sig)
	}
}

// anyRunning reports whether one of pids still runs: exists and is not
// a zombie.
func anyRunning(pids []int) bool {
	for _, p := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		if fields := procStatFields(stat); len(fields) > 0 && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// procStatFields returns the fields of /proc/PID/stat after the command
// name (which may hold spaces and parentheses): state, ppid, ...
func procStatFields(stat []byte) []string {
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// descendants lists the processes under pid, deepest last.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := procStatFields(stat)
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// waitGone waits until none of pids runs, at most stopGrace: processes
// that are not the host's children die a moment after their signal.
func waitGone(pids []int) {
	for deadline := time.Now().Add(stopGrace); anyRunning(pids) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// kill ends the command's processes at once, as stopped, and returns
// them. They are found before any is signalled: bubblewrap's first
// process in its pid namespace has a session of its own, and once
// bubblewrap is gone it is no longer found under it (it ends a moment
// later, by --die-with-parent, and the namespace with it).
func (s *shell) kill() []int {
	s.mu.Lock()
	if s.reason == "" && s.exit == nil {
		s.reason = StatusStopped
	}
	s.mu.Unlock()
	pid := s.cmd.Process.Pid
	tree := childTree(pid)
	signal(pid, tree, true, syscall.SIGKILL)
	return append(tree, pid)
}

// childTree lists the processes under pid from the kernel's lists of
// each task's children (a few small reads), all of /proc where the
// kernel keeps none.
func childTree(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			data, cerr := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			if errors.Is(cerr, os.ErrNotExist) && p == pid {
				return descendants(pid)
			}
			for _, f := range strings.Fields(string(data)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
		if err != nil && p == pid {
			return descendants(pid)
		}
	}
	return out
}

// stop ends the command and waits until it has.
func (s *shell) stop() {
	if s.ended() {
		return
	}
	s.end(StatusStopped, s.done)
	<-s.done
}
