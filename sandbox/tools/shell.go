package tools

import (
	"bufio"
	"encoding/json"
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
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/proxy"
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
	Kernel *jail.Status `json:"kernel,omitempty"`
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
	kernel                     *jail.Status
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

// readReport reads the helper's one-line report (jail.ConfineReport):
// the layers in force, or why it ran nothing. bubblewrap holds the pipe
// open for its whole life, so the line, not the end, is waited for.
func readReport(r *os.File) (*jail.Status, error) {
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
