package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"golang.org/x/sys/unix"
)

// ConfineReport is what Confine writes, one JSON line, on its status
// descriptor before it runs the command: the layers in force, or why
// it could not apply them (then it runs nothing).
type ConfineReport struct {
	Status *protocol.KernelStatus `json:"status,omitempty"`
	Error  string                 `json:"error,omitempty"`
}

// Confine is `vis-agent sandbox confine`, the small helper a command of a
// session runs through (inside bubblewrap when jailed): it joins the
// command's pids cgroup (groupFD, the cgroup's tasks or cgroup.procs file
// opened for writing by the host, or -1), applies policyJSON (a Policy),
// reports on statusFD (-1: none), marks every descriptor but 0-2
// close-on-exec, so that the command inherits none it was not meant to
// (a descriptor leaked to the host, the cgroup's), and execs argv. It
// returns only on failure, after reporting it.
//
// The kernel layer is applied here, not by the host: Landlock,
// capabilities and no_new_privs restrict the process that applies them
// and its descendants, and the host must stay free.
//
// Under a proxied network (Policy.ProxyPort) it first makes its listener
// for the proxy in its network namespace (bubblewrap's, or its own) and
// hands it to the host over proxyFD.
func Confine(policyJSON string, groupFD, statusFD, proxyFD int, argv []string) error {
	err := confine(policyJSON, groupFD, &statusFD, proxyFD, argv)
	if statusFD >= 0 {
		report(statusFD, ConfineReport{Error: err.Error()})
	}
	return err
}

// confine does Confine's work; once it has reported the layers it sets
// *statusFD to -1 (an exec that fails then is the command's error).
func confine(policyJSON string, groupFD int, statusFD *int, proxyFD int, argv []string) error {
	if len(argv) == 0 {
		return errors.New("confine: no command")
	}
	var p Policy
	if err := json.Unmarshal([]byte(policyJSON), &p); err != nil {
		return fmt.Errorf("confine: the policy: %w", err)
	}
	// The thread that joins the cgroup (cgroup v1: this thread only,
	// without the wait a whole process's move costs) is the one that execs.
	runtime.LockOSThread()
	if groupFD >= 0 {
		if _, err := unix.Write(groupFD, []byte("0")); err != nil {
			return fmt.Errorf("confine: join the command's pids cgroup: %w", err)
		}
		unix.Close(groupFD)
	}
	if proxied(p) {
		if proxyFD < 0 {
			return errors.New("confine: a proxied network needs --proxy-fd")
		}
		if _, err := HandListener(proxyFD, p.ProxyPort); err != nil {
			return fmt.Errorf("confine: %w", err)
		}
		unix.Close(proxyFD)
	}
	st, err := Apply(p)
	if err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	if *statusFD >= 0 {
		report(*statusFD, ConfineReport{Status: &st})
		unix.Close(*statusFD)
		*statusFD = -1
	}
	// Close-on-exec rather than closed now: the Go runtime may hold a
	// descriptor of its own until the exec.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		for fd := 3; fd < 1<<16; fd++ {
			unix.CloseOnExec(fd)
		}
	}
	path := argv[0]
	err = syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("confine: run %s: %w", path, err)
}

func report(fd int, r ConfineReport) {
	data, _ := json.Marshal(r)
	unix.Write(fd, append(data, '\n'))
}
