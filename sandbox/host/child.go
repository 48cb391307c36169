package host

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"golang.org/x/sys/unix"
)

// readyTimeout bounds a child's start, snapshot restore included.
const readyTimeout = 2 * time.Minute

// proc is one interpreter child process.
type proc struct {
	process *os.Process
	state   *os.ProcessState // once exited is closed
	link    net.Conn
	conn    *protocol.Conn
	version string
	minor   int
	// policy is the jail it was started under; kernelMissing is what
	// that jail could not enforce.
	policy        protocol.Policy
	kernelMissing string
	started       time.Time
	// gitGen is the count of git changes its shield protects against
	// (gitState.changes when it started): it serves no block once
	// another came.
	gitGen int
	stacks *tail
	stdout *forwarder
	stderr *forwarder
	exited chan struct{}
	// calls serves its host calls.
	calls *hostcalls.Server

	mu      sync.Mutex
	retired string // why the host killed it, when it did
	// callsBroken: why the host closed its tool link (garbage on it); the
	// child is replaced before the next block.
	callsBroken string
}

// spawned is a child process just started: the host's ends of its links
// (protocol and host calls) and of its pipes (stacks, stdout, stderr).
type spawned struct {
	process                *os.Process
	link, calls            net.Conn
	stacks, stdout, stderr *os.File
}

// discard ends a child the host does not use.
func (s *spawned) discard() {
	syscall.Kill(-s.process.Pid, syscall.SIGKILL)
	s.process.Kill()
	s.process.Wait()
	s.close()
}

func (s *spawned) close() {
	s.link.Close()
	s.calls.Close()
	s.stacks.Close()
	s.stdout.Close()
	s.stderr.Close()
}

// spawnChild starts `Exe protocol.ChildArgs(...)` for a child under policy.
func spawnChild(cfg Config, policy protocol.Policy) (*spawned, error) {
	calls, callsEnd, err := hostcalls.Link()
	if err != nil {
		return nil, fmt.Errorf("start the Python process: %w", err)
	}
	defer callsEnd.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		calls.Close()
		return nil, fmt.Errorf("start the Python process: %w", err)
	}
	hostEnd, childEnd := os.NewFile(uintptr(fds[0]), "link"), os.NewFile(uintptr(fds[1]), "link")
	link, err := net.FileConn(hostEnd)
	hostEnd.Close()
	if err != nil {
		childEnd.Close()
		calls.Close()
		return nil, fmt.Errorf("start the Python process: %w", err)
	}
	var closeAfterStart []*os.File
	pipe := func() (*os.File, *os.File) {
		r, w, perr := os.Pipe()
		if perr != nil {
			err = perr
			return nil, nil
		}
		closeAfterStart = append(closeAfterStart, w)
		return r, w
	}
	stacksR, stacksW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	if err != nil {
		link.Close()
		childEnd.Close()
		calls.Close()
		for _, f := range closeAfterStart {
			f.Close()
		}
		return nil, fmt.Errorf("start the Python process: %w", err)
	}
	args := protocol.ChildArgs(cfg.Folder.Dir, policy.Jail, policy.Proxied())
	cmd := exec.Command(cfg.Exe, args...)
	cmd.Dir = cfg.Meta.Workspace
	cmd.Stdout, cmd.Stderr = outW, errW                      // stdin stays /dev/null: input() gets EOFError
	cmd.ExtraFiles = []*os.File{childEnd, stacksW, callsEnd} // protocol.LinkFD, StacksFD, CallsFD
	// Its own process group, so a retire also ends what the block
	// started; and it dies with the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	// The child has its ends now; without the host's copies, its death is
	// an EOF on the link and the pipes.
	childEnd.Close()
	for _, f := range closeAfterStart {
		f.Close()
	}
	s := &spawned{link: link, calls: calls, stacks: stacksR, stdout: outR, stderr: errR}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("start the Python process: %w", err)
	}
	s.process = cmd.Process
	return s, nil
}

// startOptions say what a new child does with the snapshot.
type startOptions struct {
	discard string   // why it starts empty, deleting the snapshot ("": it restores it)
	drop    []string // names it leaves out of the restore
	rewind  int      // the block whose snapshot in the history it restores (0: the last snapshot)
}

// restoreError is a child that died, or did not answer in time, while it
// restored the snapshot: the next one starts with the snapshot discarded.
type restoreError struct{ why string }

func (e *restoreError) Error() string {
	return "the Python process stopped while it restored the snapshot (" + e.why + ")"
}

// startChild starts an interpreter child for the session and waits until it
// has restored the snapshot. reason is why the previous one stopped. The
// host's first child is early, the one its C constructor started, when
// that one was started for this policy.
//
// A child killed by a signal before its first answer had not begun to
// restore the snapshot (it says so first) and was sent no block, so a
// fresh one starts in its place, once, with the same description: the
// early child lives from the host's start, and a kill that lands as it is
// handed over must not fail the block waiting for it. A second such death
// is the error, as is a child that exits on its own before it is ready (a
// runtime that cannot start says why), at once.
//
// A child whose network is an allow list (np not nil) hands the host its
// listener for the proxy on its host-call link first; np serves it until
// the child ends.
func startChild(cfg Config, policy protocol.Policy, early *earlyChild, reason string, opts startOptions, newCalls func(net.Conn) *hostcalls.Server, np *netProxy) (*proc, error) {
	var s *spawned
	if early != nil {
		if early.dropsPrivileges == policy.Jail && early.ownNetwork == policy.Proxied() {
			s = early.s
		} else {
			early.s.discard()
		}
	}
	info := protocol.ChildInfo{
		Session:       sessionInfo(cfg),
		RestartReason: reason,
		Policy:        policy,
		Discard:       opts.discard,
		Drop:          opts.drop,
		Rewind:        opts.rewind,
	}
	c, err := launchChild(cfg, policy, s, info, newCalls, np)
	if se, ok := errors.AsType[*startError](err); ok && se.killedUnanswered {
		fmt.Fprintf(cfg.Log, "vis-agent sandbox host: %v; starting a new one\n", err)
		c, err = launchChild(cfg, policy, nil, info, newCalls, np)
	}
	return c, err
}

// launchChild hands s (a new child when nil) the session's description
// info and waits until it is ready.
func launchChild(cfg Config, policy protocol.Policy, s *spawned, info protocol.ChildInfo, newCalls func(net.Conn) *hostcalls.Server, np *netProxy) (*proc, error) {
	if s == nil {
		var err error
		if s, err = spawnChild(cfg, policy); err != nil {
			return nil, err
		}
	}
	c := newProc(cfg, s, newCalls)
	return c.awaitReady(c.introduce(s, info, np), policy)
}

func sessionInfo(cfg Config) protocol.SessionInfo {
	return protocol.SessionInfo{Name: cfg.Meta.Name, Workspace: cfg.Meta.Workspace, Access: protocol.Access{Host: cfg.limits()}}
}

// newProc watches a child just started: its exit and its output.
func newProc(cfg Config, s *spawned, newCalls func(net.Conn) *hostcalls.Server) *proc {
	c := &proc{process: s.process, link: s.link, conn: protocol.NewConn(s.link, s.link).Bound(protocol.ChildBounds), started: time.Now(), exited: make(chan struct{}),
		stacks: newTail(s.stacks, 1<<20), stdout: newForwarder(s.stdout, protocol.StreamStdout, cfg.Log), stderr: newForwarder(s.stderr, protocol.StreamStderr, cfg.Log),
		calls: newCalls(s.calls)}
	startGuard(cfg, s.process.Pid)
	go func() {
		c.state, _ = s.process.Wait()
		// What its code started ends with it (and lets go of the output
		// pipes it inherited).
		jail.EndTaskGroup(s.process.Pid)
		close(c.exited)
	}()
	return c
}

// startGuard starts `vis-agent sandbox guard` for the child pid, in a
// session of its own and given only the child's pidfd (opened here, before
// the child can be reaped, so no other process can take its pid): should
// the host die first (the child dies with it), the guard ends what the
// child's code started (jail.GuardTaskGroup). Off the child's start: the
// guard's own start runs beside it.
func startGuard(cfg Config, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fmt.Fprintf(cfg.Log, "vis-agent sandbox host: the guard of process %d: %v\n", pid, err)
		return
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	go func() {
		cmd := exec.Command(cfg.Exe, "sandbox", "guard", "--pid", strconv.Itoa(pid))
		cmd.ExtraFiles = []*os.File{pidfd}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err := cmd.Start()
		pidfd.Close()
		if err != nil {
			fmt.Fprintf(cfg.Log, "vis-agent sandbox host: the guard of process %d: %v\n", pid, err)
			return
		}
		cmd.Wait()
	}()
}

// introduce sends the child its session's description (which it reads
// before it is jailed), takes its proxy listener when np is not nil, and
// serves its host calls.
func (c *proc) introduce(s *spawned, info protocol.ChildInfo, np *netProxy) error {
	err := c.conn.Send(info)
	if err == nil && np != nil {
		var l net.Listener
		if l, err = np.receive(s.calls); err == nil && l != nil {
			go func() {
				<-c.exited
				l.Close()
			}()
		}
	}
	go func() {
		if err := c.calls.Serve(); err != nil {
			c.mu.Lock()
			c.callsBroken = err.Error()
			c.mu.Unlock()
		}
	}()
	return err
}

// startError is a child that ended before it was ready, saying msg.
// killedUnanswered: a signal ended it before it answered anything.
type startError struct {
	msg              string
	killedUnanswered bool
}

func (e *startError) Error() string { return "the Python process did not start: " + e.msg }

// staleError is a standby whose imported modules changed on disk since it
// imported them: it ended, and a new child starts instead.
type staleError struct{ why string }

func (e *staleError) Error() string { return "the standby Python process is stale: " + e.why }

// awaitReady waits for the child's "ready" after the host sent what it
// starts with (sendErr: that send failed), and ends a child that does not
// get there.
func (c *proc) awaitReady(sendErr error, policy protocol.Policy) (*proc, error) {
	err := sendErr
	var ev protocol.Event
	restoring, answered := false, false
	if err == nil {
		c.link.SetReadDeadline(time.Now().Add(readyTimeout))
		for {
			ev = protocol.Event{}
			if err = c.receive(&ev); err != nil {
				break
			}
			answered = true
			if ev.Ev != protocol.EvRestoring && ev.Ev != protocol.EvOut {
				break
			}
			if ev.Ev == protocol.EvRestoring {
				restoring = true
			} else {
				// a thread the restore started, printing already
				c.stderr.logStray(ev.Data)
			}
		}
		c.link.SetReadDeadline(time.Time{})
	}
	if err != nil || ev.Ev != protocol.EvReady {
		c.kill()
		<-c.exited
		c.link.Close()
		if ev.Ev == protocol.EvStale {
			return nil, &staleError{ev.Message}
		}
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		if restoring {
			why := "it " + strings.TrimPrefix(c.exitReason(), "the Python process ")
			if timedOut {
				why = fmt.Sprintf("it did not finish within %s", humanDuration(readyTimeout))
			} else if last := lastLine(c.stderr.lastLines()); last != "" {
				why += ": " + last
			}
			return nil, &restoreError{why}
		}
		msg := c.stderr.lastLines()
		if ev.Ev == protocol.EvError {
			msg = ev.Message
		}
		if msg == "" {
			msg = c.exitReason()
		}
		return nil, &startError{msg: msg, killedUnanswered: !answered && !timedOut && c.signaled()}
	}
	c.version, c.minor, c.kernelMissing, c.policy = ev.Data, ev.Line, ev.Message, policy
	return c, nil
}

func (c *proc) pid() int { return c.process.Pid }

// receive reads the child's next message. One past the link's bounds
// (protocol.ChildBounds: only code that wrote to the link's descriptor
// sends one) leaves the stream unreadable: the child is killed, and its
// exit reason says why.
func (c *proc) receive(ev *protocol.Event) error {
	err := c.conn.Receive(ev)
	var be *protocol.BoundsError
	if errors.As(err, &be) {
		c.mu.Lock()
		if c.retired == "" {
			c.retired = "the Python process sent its host " + be.Error() + ", which only a block that changed the session's own code or wrote to its link sends, so it was replaced"
		}
		c.mu.Unlock()
		c.kill()
	}
	return err
}

func (c *proc) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// interrupt sends SIGINT: KeyboardInterrupt at the block's next bytecode.
// A host call the block waits on is abandoned by the child at once, and
// its work is stopped a moment later (after the child had its chance to
// raise the KeyboardInterrupt rather than the call's cancellation).
func (c *proc) interrupt() {
	syscall.Kill(c.pid(), syscall.SIGINT)
	c.calls.CancelAfter(callGrace)
}

// callGrace is how long after an interrupt the calls under way stop.
const callGrace = 200 * time.Millisecond

// kill ends the child and its process group at once.
func (c *proc) kill() {
	syscall.Kill(-c.pid(), syscall.SIGKILL)
	syscall.Kill(c.pid(), syscall.SIGKILL)
}

// pingTimeout bounds how long a child between blocks may take to answer.
const pingTimeout = 10 * time.Second

// ping asks whether the child answers, in time: nil when it does.
func (c *proc) ping() error {
	if err := c.conn.Send(protocol.Request{V: protocol.Version, Op: protocol.OpPing}); err != nil {
		return err
	}
	c.link.SetReadDeadline(time.Now().Add(pingTimeout))
	defer c.link.SetReadDeadline(time.Time{})
	ev, err := c.answer()
	if err == nil && ev.Ev != protocol.EvPong {
		err = fmt.Errorf("the Python process answered %q to ping", ev.Ev)
	}
	return err
}

// answer reads the child's answer to a request made between blocks,
// passing over output that threads of an earlier block printed since (it
// goes to the host's log).
func (c *proc) answer() (protocol.Event, error) {
	for {
		var ev protocol.Event
		if err := c.receive(&ev); err != nil {
			return ev, err
		}
		if ev.Ev != protocol.EvOut {
			return ev, nil
		}
		c.stderr.logStray(ev.Data)
	}
}

// exit asks the child to save and end, and kills it if it does not;
// full: its save checks every value again (else only what its blocks
// named: a rewind's, whose state is replaced at once).
func (c *proc) exit(full bool) {
	if c.alive() {
		c.conn.Send(protocol.Request{V: protocol.Version, Op: protocol.OpExit, Force: !full})
		select {
		case <-c.exited:
		case <-time.After(unwindGrace):
			c.kill()
			<-c.exited
		}
	}
	c.link.Close()
}

// exitReason says why the child ended, for the restart notice.
func (c *proc) exitReason() string {
	exited := true
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		exited = false
	}
	c.mu.Lock()
	retired := c.retired
	c.mu.Unlock()
	switch {
	case retired != "":
		return retired
	case !exited:
		return "the Python process stopped responding"
	}
	st := c.state
	if st == nil {
		return "the Python process ended"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("the Python process was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("the Python process exited with status %d", st.ExitCode())
}

// signaled reports whether a signal ended the child, once it has ended.
func (c *proc) signaled() bool {
	if c.state == nil {
		return false
	}
	ws, ok := c.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// setSink sends the child's own stdout and stderr (C code, subprocesses)
// to a block's client; nil sends them to the host's log.
func (c *proc) setSink(s *sink) {
	c.stdout.setSink(s)
	c.stderr.setSink(s)
}

// drain waits (briefly) until what the child wrote to its pipes before the
// block ended has been forwarded.
func (c *proc) drain() {
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) && (c.stdout.pending() || c.stderr.pending()) {
		time.Sleep(time.Millisecond)
	}
}

// compiler asks the child whether a source compiles, for the repair.
func (c *proc) compiler() repair.Compiler {
	return func(src string) *protocol.SyntaxError {
		if err := c.conn.Send(protocol.Request{V: protocol.Version, Op: protocol.OpCompile, Code: src}); err != nil {
			return &protocol.SyntaxError{Message: "the Python process stopped: " + err.Error()}
		}
		ev, err := c.answer()
		if err != nil {
			return &protocol.SyntaxError{Message: "the Python process stopped: " + err.Error()}
		}
		if ev.Syntax == nil {
			return nil
		}
		return ev.Syntax
	}
}

// forwarder copies one of the child's output pipes to the current sink.
type forwarder struct {
	r      *os.File
	stream string
	log    io.Writer

	mu      sync.Mutex
	sink    *sink
	logged  int
	recent  []byte
	copying bool
	closed  bool // r is closed: the child's end of the pipe was
}

// maxLogged bounds what a child's stray output adds to the host's log.
const maxLogged = 1 << 20

func newForwarder(r *os.File, stream string, log io.Writer) *forwarder {
	f := &forwarder{r: r, stream: stream, log: log}
	go f.loop()
	return f
}

func (f *forwarder) loop() {
	buf := make([]byte, protocol.OutChunk)
	for {
		n, err := f.r.Read(buf)
		if n > 0 {
			f.mu.Lock()
			f.copying = true
			s := f.sink
			f.recent = append(f.recent, buf[:n]...)
			if len(f.recent) > 4096 {
				f.recent = f.recent[len(f.recent)-4096:]
			}
			if s == nil && f.logged < maxLogged {
				f.logged += n
				f.log.Write(buf[:n])
			}
			f.mu.Unlock()
			if s != nil {
				s.Send(protocol.Event{Ev: protocol.EvOut, Stream: f.stream, Data: string(buf[:n])})
			}
			f.mu.Lock()
			f.copying = false
			f.mu.Unlock()
		}
		if err != nil {
			// Under f.mu: pending must not read the descriptor as it
			// is closed.
			f.mu.Lock()
			f.closed = true
			f.r.Close()
			f.mu.Unlock()
			return
		}
	}
}

// logStray writes output no block is waiting for to the host's log,
// within the same bound.
func (f *forwarder) logStray(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logged < maxLogged {
		f.logged += len(data)
		io.WriteString(f.log, data)
	}
}

func (f *forwarder) setSink(s *sink) {
	f.mu.Lock()
	f.sink = s
	f.mu.Unlock()
}

// pending reports whether output is waiting in the pipe or being copied.
func (f *forwarder) pending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.copying {
		return true
	}
	if f.closed {
		return false
	}
	n, err := unix.IoctlGetInt(int(f.r.Fd()), unix.TIOCINQ)
	return err == nil && n > 0
}

// lastLines is the end of what the child wrote, for a start-up failure.
func (f *forwarder) lastLines() string {
	time.Sleep(20 * time.Millisecond) // let the copy loop read the last bytes
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(trimSpace(f.recent))
}

// lastLine is the last line of s, cut to 200 bytes, for a notice.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// tail keeps the last bytes read from a pipe (the stack dumps).
type tail struct {
	mu   sync.Mutex
	data []byte
	max  int
	last time.Time
}

func newTail(r *os.File, max int) *tail {
	t := &tail{max: max}
	go func() {
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			t.mu.Lock()
			t.data = append(t.data, buf[:n]...)
			if len(t.data) > t.max {
				t.data = t.data[len(t.data)-t.max:]
			}
			t.last = time.Now()
			t.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return t
}

// since returns what arrived after mark bytes, and when the last came.
func (t *tail) snapshot() ([]byte, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.data...), t.last
}

var errChildGone = errors.New("the Python process stopped")

// sigStacks makes faulthandler in the child dump every thread's stack.
var sigStacks = syscall.SIGUSR1
