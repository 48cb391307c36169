//go:build !linux

package jail

import (
	"errors"
	"net"
	"os"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Apply restricts nothing outside Linux, and says so.
func Apply(p Policy) (protocol.KernelStatus, error) {
	var st protocol.KernelStatus
	if p.ConfineFiles || p.NoNetwork || p.ProxyPort > 0 || p.NoNewProcesses || p.DropPrivileges || p.ScopeIPC || p.MemoryBytes > 0 || p.MaxThreads > 0 || !p.Shield.Empty() {
		st.Missing = append(st.Missing, "this system has no kernel layer (Landlock and seccomp are Linux's)")
	}
	return st, nil
}

// Confine refuses outside Linux: there is no kernel layer to apply.
func Confine(policyJSON string, groupFD, statusFD, proxyFD int, argv []string) error {
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

// EndTaskGroup has nothing to end: no process starts others in a jail here.
func EndTaskGroup(pid int) {}

// GuardTaskGroup has nothing to guard.
func GuardTaskGroup(pid int) error { return nil }

// errNoNamespaces: an allow list needs a network namespace, which only
// Linux has.
var errNoNamespaces = errors.New("the allow list needs a network namespace, which this system does not have: run with the network on or off")

// HandListener refuses: see errNoNamespaces.
func HandListener(link, port int) (int, error) { return 0, errNoNamespaces }

// ReceiveListener refuses: see errNoNamespaces.
func ReceiveListener(conn *net.UnixConn) (net.Listener, error) { return nil, errNoNamespaces }

// NetworkNamespaceErr says there is none.
func NetworkNamespaceErr() error { return errNoNamespaces }
