package tools

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Shell statuses.
const (
	StatusRunning  = "running"
	StatusExited   = "exited"
	StatusTimedOut = "timed out"
	StatusStopped  = "stopped"
)

// Limits of shell commands.
const (
	// MaxRunning caps the commands of one session running at once.
	MaxRunning = 32
	// MaxKept is how many commands a session remembers: past it, the
	// oldest that ended are forgotten and their output deleted.
	MaxKept = 100
	// stopGrace is how long a command has between SIGTERM and SIGKILL.
	stopGrace = 2 * time.Second
	// pipeGrace bounds the wait for output after the command's own
	// process ended, when a process it left behind holds its pipes.
	pipeGrace = 2 * time.Second
)

// ShellState is what is known of a command at one moment.
type ShellState struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Cwd     string `json:"cwd"`
	// Status is "running", "exited", "timed out" or "stopped".
	Status string `json:"status"`
	// Exit is the exit code once the command ended, 128+N when signal N
	// ended it (137: SIGKILL), as a shell's $? says; nil while it runs.
	Exit *int `json:"exit"`
	// Out and Err are the command's output: all of it when short, its
	// first StateHeadBytes and last StateTailBytes with a marker between
	// when long. OutCut and ErrCut count the bytes left out.
	Out    string `json:"out"`
	Err    string `json:"err"`
	OutCut int64  `json:"out_cut"`
	ErrCut int64  `json:"err_cut"`
	// OutBytes and ErrBytes count every byte written.
	OutBytes int64 `json:"out_bytes"`
	ErrBytes int64 `json:"err_bytes"`
	// Spool says what of the command's output is not kept on disk for
	// logs(), and whose output was deleted to make room for it ("" when
	// all of it is there and none was): see Spools.
	Spool string `json:"spool,omitempty"`
	// Seconds is how long the command ran, or has run so far.
	Seconds float64 `json:"seconds"`
	// Timeout is the timeout in seconds, 0 for none.
	Timeout float64 `json:"timeout"`
	// Confined names what confines the command: "bubblewrap" (and the
	// kernel layer in it), "kernel" (the kernel layer alone: a session
	// without the jail, for its network and caps) or "none".
	Confined string `json:"confined"`
	// Kernel is the kernel layer the command runs under, as it reported
	// it before running anything (with what this kernel lacks); nil when
	// none was asked.
	Kernel *protocol.KernelStatus `json:"kernel,omitempty"`
	// Hint is one line on what to do instead, when the command failed on
	// what the jail keeps read-only (the host words it).
	Hint string `json:"hint,omitempty"`
}

// Limits are what the kernel bounds a session's commands by, beyond
// their files and network: applied in each command by `vis-agent sandbox
// confine` (sandbox/jail's Confine), which every command but an
// unbounded session's runs through.
type Limits struct {
	// Exe is the vis-agent binary whose hidden confine command applies
	// the kernel layer.
	Exe string
	// MemoryBytes caps the address space of each of a command's
	// processes (0: no cap).
	MemoryBytes uint64
	// MaxTasks caps the processes and threads of one command together,
	// through a pids cgroup of its own (0: no cap).
	MaxTasks int
}

// confineHelper is where a confined command finds the vis-agent binary:
// bubblewrap mounts it there, read-only, apart from the roots.
const confineHelper = "/run/vis-agent/vis-agent"

// statusTimeout bounds the wait for a command's report of its kernel
// layer (bubblewrap's set-up, the helper's start).
const statusTimeout = 30 * time.Second

// Shells runs the commands of one session and keeps their states and
// output; the host makes one per session and closes it when it exits.
type Shells struct {
	dir    string
	access Access
	limits Limits
	spools *Spools
	mu     sync.Mutex
	shells map[string]*shell
	order  []string // the ids in m.shells, oldest first
	next   int
	// starting counts the commands reserved but not yet in shells.
	starting int
	closed   bool
	// halts counts the calls of Halt: a command reserved before the last
	// one is ended as soon as it started.
	halts int
}

// shell is one command.
type shell struct {
	id, command, cwd, confined string
	kernel                     *protocol.KernelStatus
	// proxyListener is the command's listener for the session's proxy,
	// closed when it ends (it keeps the command's namespace alive).
	proxyListener net.Listener
	group         *jail.TaskGroup // nil: no pids cgroup
	timeout       time.Duration
	started       time.Time
	cmd           *exec.Cmd
	out, err, log *spool
	done          chan struct{} // closed when the command ended

	mu      sync.Mutex
	reason  string // StatusTimedOut or StatusStopped once asked to end
	exit    *int
	endTime time.Time
}

// NewShells returns the commands of a session whose output is spooled
// under dir (created when missing) within spools, confined by a unless it
// is Unconfined, and bounded by lim. A confined command never sees dir.
func NewShells(dir string, a Access, lim Limits, spools *Spools) *Shells {
	return &Shells{dir: dir, access: a, limits: lim, spools: spools, shells: map[string]*shell{}}
}

// policy is the kernel layer of the session's commands; ok is false when
// they run with none (a session without the jail, the network on and no
// caps).
func (m *Shells) policy() (p jail.Policy, ok bool) {
	proxyPort := 0
	if m.access.Network && m.access.Proxy != nil {
		proxyPort = m.access.Proxy.Port()
	}
	if m.access.Unconfined {
		p = jail.Policy{NoNetwork: !m.access.Network, ProxyPort: proxyPort, MemoryBytes: m.limits.MemoryBytes}
		return p, p.NoNetwork || p.ProxyPort > 0 || p.MemoryBytes > 0 || m.limits.MaxTasks > 0
	}
	// Inside bubblewrap: the roots, and what bubblewrap mounts around them.
	rw := append(append([]string(nil), m.access.ReadWrite...), "/tmp", "/dev")
	// With the system's (jail.Command's), what bubblewrap mounts of /etc
	// for the network (resolver, certificates) too.
	ro := append(append(append([]string(nil), m.access.ReadOnly...), jail.NetworkEtc...), "/proc")
	p = jail.Command(rw, ro, m.access.Network, m.limits.MemoryBytes)
	p.ProxyPort = proxyPort
	return p, true
}

// Start runs `/bin/sh -c cmd` in cwd (the workspace when empty) and
// returns its first state. timeout 0 means none; past a timeout the
// command's processes are ended and its status is "timed out". Confined
// (a not Unconfined), it runs under bubblewrap, which must work here, and
// the kernel layer (jail.Command, through `vis-agent sandbox confine`):
// where either fails, Start refuses rather than run it unconfined.
func (m *Shells) Start(cmd, cwd string, timeout time.Duration) (ShellState, error) {
	if strings.TrimSpace(cmd) == "" {
		return ShellState{}, errors.New("shell: the command is empty")
	}
	if timeout < 0 {
		return ShellState{}, fmt.Errorf("shell: timeout %v is negative (0 means none)", timeout)
	}
	if cwd == "" {
		cwd = "."
	}
	dir, err := m.access.resolve(cwd, false)
	if err != nil {
		return ShellState{}, fmt.Errorf("shell: cwd: %w", err)
	}
	if st, err := os.Stat(dir.Real); err != nil || !st.IsDir() {
		return ShellState{}, fmt.Errorf("shell: cwd %s is not a folder", dir.Shown)
	}
	// The folder exists before bubblewrap is told to hide it.
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return ShellState{}, fmt.Errorf("shell: output folder: %w", err)
	}
	s, n, halts, err := m.reserve(cmd, dir.Real, timeout)
	if err != nil {
		return ShellState{}, err
	}
	err = m.launch(s, n)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starting--
	if err == nil && m.halts != halts {
		// Halted while it started: its mounts may be older than the
		// change that halted the others.
		waitGone(s.kill())
		s.cmd.Wait()
		if s.proxyListener != nil {
			s.proxyListener.Close()
		}
		err = failure(errRefused, "shell: the workspace changed while the command started (a .git appeared), so it was stopped; run it again")
	}
	if err != nil {
		s.closeSpools()
		m.spools.release(s.log.disk)
		os.RemoveAll(filepath.Join(m.dir, s.id))
		s.closeGroup()
		return ShellState{}, err
	}
	m.shells[s.id] = s
	m.order = append(m.order, s.id)
	m.prune()
	go s.wait()
	return s.state(), nil
}

// reserve numbers a new command, within MaxRunning, and makes its output
// files; the caller launches it and decrements m.starting. halts is
// m.halts now.
func (m *Shells) reserve(cmd, cwd string, timeout time.Duration) (s *shell, n, halts int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, 0, 0, errors.New("shell: the session is closing")
	}
	running := m.starting
	for _, s := range m.shells {
		if !s.ended() {
			running++
		}
	}
	if running >= MaxRunning {
		return nil, 0, 0, fmt.Errorf("shell: %d commands are running, the most a session may run at once; stop one first", running)
	}
	m.next++
	s = &shell{id: "sh" + strconv.Itoa(m.next), command: cmd, cwd: cwd, confined: "none",
		timeout: timeout, done: make(chan struct{})}
	if err := s.spool(filepath.Join(m.dir, s.id), m.spools); err != nil {
		return nil, 0, 0, fmt.Errorf("shell: output folder: %w", err)
	}
	m.starting++
	return s, m.next, m.halts, nil
}

// prune forgets the oldest ended commands past MaxKept, and deletes
// their output.
func (m *Shells) prune() {
	extra := len(m.order) - MaxKept
	kept := m.order[:0]
	for _, id := range m.order {
		if s := m.shells[id]; extra > 0 && s.ended() {
			delete(m.shells, id)
			m.spools.release(s.log.disk)
			os.RemoveAll(filepath.Join(m.dir, id))
			extra--
			continue
		}
		kept = append(kept, id)
	}
	m.order = kept
}

// closeGroup lets the command's pids cgroup go.
func (s *shell) closeGroup() {
	if s.group != nil {
		s.group.Close()
	}
}

// ended reports whether the command has ended.
func (s *shell) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// spool creates the command's output in dir: its log (both streams as
// they came) on disk within spools, out and err in memory.
func (s *shell) spool(dir string, spools *Spools) error {
	// A folder of the same name is a previous host's: its states are gone.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var err error
	if s.log, err = newLog(s.id, filepath.Join(dir, "log"), spools); err != nil {
		return err
	}
	s.out, s.err = &spool{also: s.log}, &spool{also: s.log}
	return nil
}

func (s *shell) closeSpools() {
	s.out.close()
	s.err.close()
	s.log.close()
}

// state is the command's state now.
func (s *shell) state() ShellState {
	st := ShellState{ID: s.id, Command: s.command, Cwd: s.cwd, Confined: s.confined, Kernel: s.kernel,
		Status: StatusRunning, Timeout: s.timeout.Seconds()}
	st.Out, st.OutCut = s.out.text()
	st.Err, st.ErrCut = s.err.text()
	st.OutBytes, st.ErrBytes = s.out.written(), s.err.written()
	st.Spool = s.log.budget.note(s.log.disk, s.log.written())
	s.mu.Lock()
	defer s.mu.Unlock()
	end := time.Now()
	if s.exit != nil {
		code := *s.exit
		st.Exit, end = &code, s.endTime
		st.Status = StatusExited
		if s.reason != "" {
			st.Status = s.reason
		}
	}
	st.Seconds = end.Sub(s.started).Seconds()
	return st
}

func (m *Shells) get(id string) (*shell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.shells[id]
	if !ok {
		ids := make([]string, 0, len(m.shells))
		for k := range m.shells {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		if len(ids) == 0 {
			return nil, fmt.Errorf("shell: no command %q: none was started", id)
		}
		return nil, fmt.Errorf("shell: no command %q (there are %s)", id, strings.Join(ids, ", "))
	}
	return s, nil
}

// State returns a command's state now.
func (m *Shells) State(id string) (ShellState, error) {
	s, err := m.get(id)
	if err != nil {
		return ShellState{}, err
	}
	return s.state(), nil
}

// Wait returns a command's state once it ended, or after max, whichever
// comes first; the caller loops, so that an interrupt between two calls
// is seen.
func (m *Shells) Wait(id string, max time.Duration) (ShellState, error) {
	s, err := m.get(id)
	if err != nil {
		return ShellState{}, err
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	}
	return s.state(), nil
}

// Logs returns lines of a command's output, stdout and stderr as they
// came: the first n when n > 0, the last -n when n < 0, all when n is 0,
// at most MaxLogLines.
func (m *Shells) Logs(id string, n int) ([]string, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	return logLines(s.log, n)
}

// Stop ends a running command (SIGTERM to its processes, then SIGKILL
// after a grace) and returns its final state; a command that already
// ended is left as it is.
func (m *Shells) Stop(id string) (ShellState, error) {
	s, err := m.get(id)
	if err != nil {
		return ShellState{}, err
	}
	s.stop()
	return s.state(), nil
}

// Halt ends every running command at once (SIGKILL, no grace) and
// waits until its processes are gone, and ends a command still starting
// as soon as it has started. The host calls it when the roots changed
// under the commands' mounts (a .git appeared): a running command's
// namespace cannot be given the new mount, and a descriptor it opened in
// the new .git would outlive any mount put there.
func (m *Shells) Halt() {
	m.mu.Lock()
	m.halts++
	var running []*shell
	for _, s := range m.shells {
		if !s.ended() {
			running = append(running, s)
		}
	}
	m.mu.Unlock()
	var trees []int
	for _, s := range running {
		trees = append(trees, s.kill()...)
	}
	waitGone(trees)
}

// Close stops every running command; the host calls it when it exits.
func (m *Shells) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*shell, 0, len(m.shells))
	for _, s := range m.shells {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
		}()
	}
	wg.Wait()
}
