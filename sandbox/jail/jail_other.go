//go:build !linux

package jail

import (
	"errors"
	"os"
)

// Apply restricts nothing outside Linux, and says so.
func Apply(p Policy) (Status, error) {
	var st Status
	if p.ConfineFiles || p.NoNetwork || p.NoNewProcesses || p.DropPrivileges || p.ScopeIPC || p.MemoryBytes > 0 || p.MaxThreads > 0 || !p.Shield.Empty() {
		st.Missing = append(st.Missing, "this system has no kernel layer (Landlock and seccomp are Linux's)")
	}
	return st, nil
}

// Confine refuses outside Linux: there is no kernel layer to apply.
func Confine(policyJSON string, groupFD, statusFD int, argv []string) error {
	return errors.New("confine: this system has no kernel layer")
}

// TaskGroup is a command's pids cgroup, which only Linux has.
type TaskGroup struct{}

// NewTaskGroup says there is none.
func NewTaskGroup(n, maxTasks int) (*TaskGroup, error) {
	return nil, errors.New("this system has no pids cgroup")
}

// Join is never called: NewTaskGroup makes no group.
func (g *TaskGroup) Join() *os.File { return nil }

// Close has nothing to do.
func (g *TaskGroup) Close() {}
