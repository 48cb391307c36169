package tools

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/proxy"
)

// launch starts command number n: under bubblewrap when the session is
// jailed, through the confine helper when it has a kernel layer, and
// waits for the helper's report of that layer.
func (m *Shells) launch(s *shell, n int) error {
	argv, env := []string{"/bin/sh", "-c", s.command}, os.Environ()
	var prefix []string
	// The shield as the roots are now, for each command: a .git the user
	// made since the last one is kept read-only (jail.Shield.Now).
	a := m.access
	a.Shield = a.Shield.Now()
	if !a.Unconfined {
		bwrap, err := bwrapPath()
		if err != nil {
			return err
		}
		hidden := append([]string{m.dir}, a.Hidden...)
		prefix = append(append([]string{bwrap}, bwrapArgs(a, s.cwd, hidden, m.limits.Exe)...), confineHelper)
		env, s.confined = confinedEnv(s.cwd, m.access.Python), "bubblewrap"
	}
	policy, bounded := m.policy()
	var extra []*os.File
	var report *os.File
	var proxyConn *net.UnixConn // the host's end of the proxy's link
	var proxyEnd *os.File       // the helper's
	var missing []string
	if bounded {
		if m.limits.Exe == "" {
			return failure(errRefused, "shell: no vis-agent binary to apply the kernel layer with; nothing ran")
		}
		if prefix == nil {
			prefix, s.confined = []string{m.limits.Exe}, "kernel"
		}
		pj, err := json.Marshal(policy)
		if err != nil {
			return fmt.Errorf("shell: %w", err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("shell: %w", err)
		}
		defer r.Close()
		defer w.Close() // also right after the start, below
		report, extra = r, []*os.File{w}
		// The report on descriptor 3, then the pids cgroup and the
		// proxy's link.
		prefix = append(prefix, "sandbox", "confine", "--policy", string(pj), "--status-fd", "3")
		if m.limits.MaxTasks > 0 {
			if s.group, err = jail.NewTaskGroup(n, m.limits.MaxTasks); err != nil {
				missing = append(missing, fmt.Sprintf("tasks: the kernel does not cap the command's processes (%v)", err))
			} else {
				prefix, extra = append(prefix, "--group-fd", strconv.Itoa(3+len(extra))), append(extra, s.group.Join())
			}
		}
		if policy.ProxyPort > 0 {
			if proxyConn, proxyEnd, err = proxyLink(); err != nil {
				return err
			}
			defer proxyConn.Close()
			defer proxyEnd.Close()
			prefix, extra = append(prefix, "--proxy-fd", strconv.Itoa(3+len(extra))), append(extra, proxyEnd)
			env = append(env, proxy.Environ(policy.ProxyPort)...)
			if m.access.Unconfined {
				// No bubblewrap to make the namespace: the helper's C
				// constructor makes it.
				env = append(env, protocol.NetworkEnv+"=1")
			}
		}
		argv = append(append(prefix, "--"), argv...)
	} else if prefix != nil {
		argv = append(prefix, argv...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env, c.ExtraFiles = s.cwd, env, extra
	c.Stdout, c.Stderr = s.out, s.err
	c.WaitDelay = pipeGrace
	// Its own process group, so that ending it ends what it started; and
	// killed if the host dies without closing.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.cmd = c
	s.started = time.Now()
	// Started from a goroutine of its own, which no LockOSThread holds:
	// Pdeathsig fires when the starting thread exits, and the runtime
	// ends only threads that a locked goroutine leaves.
	started := make(chan error, 1)
	go func() { started <- c.Start() }()
	if err := <-started; err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	if report == nil {
		return nil
	}
	// Only the command holds the report's write end now: its early end
	// (bubblewrap's failure) is an end of file here.
	extra[0].Close()
	var proxyErr error
	if proxyConn != nil {
		// The helper hands its listener over before it reports; when it
		// does not, its report says why.
		proxyEnd.Close()
		proxyConn.SetReadDeadline(time.Now().Add(statusTimeout))
		var l net.Listener
		if l, proxyErr = jail.ReceiveListener(proxyConn); proxyErr == nil {
			m.access.Proxy.Serve(l)
			s.proxyListener = l
		}
	}
	kernel, err := readReport(report)
	if err == nil && proxyErr != nil {
		err = proxyErr
	}
	if err != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		if s.proxyListener != nil {
			s.proxyListener.Close()
		}
		if why, _ := s.err.text(); strings.TrimSpace(why) != "" {
			err = fmt.Errorf("%w: %s", err, firstLine(why))
		}
		return failure(errRefused, "shell: the command's kernel layer: %v; nothing ran", err)
	}
	if s.group != nil {
		kernel.MaxTasks = m.limits.MaxTasks
	}
	if s.confined == "bubblewrap" {
		// bubblewrap's mounts: nothing writable but the roots, the
		// shield's paths read-only, the sessions folder covered.
		kernel.ReadOnlyMounts, kernel.ReadOnly, kernel.HiddenSessions = true, a.Shield.ReadOnly, a.Shield.Sessions
	}
	kernel.Missing = append(kernel.Missing, missing...)
	s.kernel = kernel
	return nil
}

// proxyLink is the unix socket pair a command's helper hands its
// listener for the proxy over.
func proxyLink() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("shell: the proxy's link: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "proxy link")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("shell: the proxy's link: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "proxy link"), nil
}

// readReport reads the helper's one-line report (jail.ConfineReport):
// the layers in force, or why it ran nothing. bubblewrap holds the pipe
// open for its whole life, so the line, not the end, is waited for.
func readReport(r *os.File) (*protocol.KernelStatus, error) {
	r.SetReadDeadline(time.Now().Add(statusTimeout))
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("no report from the helper (%w)", err)
	}
	var rep jail.ConfineReport
	if err := json.Unmarshal(line, &rep); err != nil {
		return nil, fmt.Errorf("a bad report from the helper: %w", err)
	}
	if rep.Error != "" || rep.Status == nil {
		return nil, fmt.Errorf("the helper could not apply it: %s", rep.Error)
	}
	return rep.Status, nil
}

// firstLine is s up to its first line end.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
