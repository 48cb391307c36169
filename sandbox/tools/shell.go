package tools

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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
	// Exit is the exit code once the command ended, negative for the
	// signal that ended it (-9: SIGKILL); nil while it runs.
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
	// Seconds is how long the command ran, or has run so far.
	Seconds float64 `json:"seconds"`
	// Timeout is the timeout in seconds, 0 for none.
	Timeout float64 `json:"timeout"`
	// Confined names what confines the command: "bubblewrap" or "none".
	Confined string `json:"confined"`
}

// Shells runs the commands of one session and keeps their states and
// output; the host makes one per session and closes it when it exits.
type Shells struct {
	dir    string
	access Access
	mu     sync.Mutex
	shells map[string]*shell
	next   int
	closed bool
}

// shell is one command.
type shell struct {
	id, command, cwd, confined string
	timeout                    time.Duration
	started                    time.Time
	cmd                        *exec.Cmd
	out, err, log              *spool
	logPath                    string
	done                       chan struct{} // closed when the command ended

	mu     sync.Mutex
	reason string // StatusTimedOut or StatusStopped once asked to end
	exit   *int
	ended  time.Time
}

// NewShells returns the commands of a session whose output is spooled
// under dir (created when missing), confined by a unless it is
// Unconfined. A confined command never sees dir.
func NewShells(dir string, a Access) *Shells {
	return &Shells{dir: dir, access: a, shells: map[string]*shell{}}
}

// Start runs `/bin/sh -c cmd` in cwd (the workspace when empty) and
// returns its first state. timeout 0 means none; past a timeout the
// command's processes are ended and its status is "timed out". Confined
// (a not Unconfined), it runs under bubblewrap, which must work here:
// where it does not, Start refuses rather than run it unconfined.
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
	var argv, env []string
	confined := "none"
	if m.access.Unconfined {
		argv, env = []string{"/bin/sh", "-c", cmd}, os.Environ()
	} else {
		bwrap, err := bwrapPath()
		if err != nil {
			return ShellState{}, err
		}
		hidden := append([]string{m.dir}, m.access.Hidden...)
		argv = append(append([]string{bwrap}, bwrapArgs(m.access, dir.Real, hidden)...), "/bin/sh", "-c", cmd)
		env, confined = confinedEnv(dir.Real), "bubblewrap"
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ShellState{}, errors.New("shell: the session is closing")
	}
	running := 0
	for _, s := range m.shells {
		if s.state().Status == StatusRunning {
			running++
		}
	}
	if running >= MaxRunning {
		return ShellState{}, fmt.Errorf("shell: %d commands are running, the most a session may run at once; stop one first", running)
	}
	m.next++
	s := &shell{id: "sh" + strconv.Itoa(m.next), command: cmd, cwd: dir.Real, confined: confined,
		timeout: timeout, done: make(chan struct{})}
	if err := s.spool(filepath.Join(m.dir, s.id)); err != nil {
		return ShellState{}, fmt.Errorf("shell: output folder: %w", err)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env = dir.Real, env
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
		s.closeSpools()
		return ShellState{}, fmt.Errorf("shell: %w", err)
	}
	m.shells[s.id] = s
	go s.wait()
	return s.state(), nil
}

// spool creates the command's output files in dir: out, err and log
// (both streams as they came).
func (s *shell) spool(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var err error
	s.logPath = filepath.Join(dir, "log")
	if s.log, err = newSpool(s.logPath, nil); err != nil {
		return err
	}
	if s.out, err = newSpool(filepath.Join(dir, "out"), s.log); err != nil {
		s.log.close()
		return err
	}
	if s.err, err = newSpool(filepath.Join(dir, "err"), s.log); err != nil {
		s.out.close()
		s.log.close()
		return err
	}
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
	code := 0
	if st, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		code = -int(st.Signal())
	} else if s.cmd.ProcessState != nil {
		code = s.cmd.ProcessState.ExitCode()
	} else if err != nil {
		code = -1
	}
	s.closeSpools()
	s.mu.Lock()
	s.exit, s.ended = &code, time.Now()
	s.mu.Unlock()
	close(s.done)
}

// end ends a running command for reason: SIGTERM to its process group
// and to every process under it (a confined command's are in their own
// session), then SIGKILL after stopGrace. exited is closed when the
// command's own process has ended.
func (s *shell) end(reason string, exited <-chan struct{}) {
	s.mu.Lock()
	if s.reason != "" || s.exit != nil {
		s.mu.Unlock()
		return
	}
	s.reason = reason
	s.mu.Unlock()
	pid := s.cmd.Process.Pid
	tree := descendants(pid)
	signal(pid, tree, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
	}
	signal(pid, append(tree, descendants(pid)...), syscall.SIGKILL)
	// Processes that are not the host's children (those of bubblewrap's
	// namespace) die a moment after their signal: wait for that, so that
	// a stopped command has no process left.
	for deadline := time.Now().Add(stopGrace); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !anyRunning(tree) {
			break
		}
	}
}

// signal sends sig to the process group of pid and to the processes of
// tree (the descendants of pid, which may have left its group).
func signal(pid int, tree []int, sig syscall.Signal) {
	for _, p := range tree {
		syscall.Kill(p, sig)
	}
	syscall.Kill(-pid, sig)
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
	st := ShellState{ID: s.id, Command: s.command, Cwd: s.cwd, Confined: s.confined,
		Status: StatusRunning, Timeout: s.timeout.Seconds()}
	st.Out, st.OutCut = s.out.text()
	st.Err, st.ErrCut = s.err.text()
	st.OutBytes, st.ErrBytes = s.out.written(), s.err.written()
	s.mu.Lock()
	defer s.mu.Unlock()
	end := time.Now()
	if s.exit != nil {
		code := *s.exit
		st.Exit, end = &code, s.ended
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
	return logLines(s.log, s.logPath, n)
}

// Stop ends a running command (SIGTERM, then SIGKILL after a grace; in a
// confined command SIGTERM ends bubblewrap and with it, at once, what it
// runs) and returns its final state; a command that already ended is
// left as it is.
func (m *Shells) Stop(id string) (ShellState, error) {
	s, err := m.get(id)
	if err != nil {
		return ShellState{}, err
	}
	s.stop()
	return s.state(), nil
}

// stop ends the command and waits until it has.
func (s *shell) stop() {
	select {
	case <-s.done:
		return
	default:
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
