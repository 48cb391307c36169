// Package host is a sandbox session's host process: it owns the session's
// socket, its idle timer and its interpreter child, runs one block at a time
// for the clients that connect (repairing blocks Python refuses, enforcing
// the timeout, retiring a child that does not unwind), and replaces a child
// that died, which restores the snapshot before the next block.
package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/install"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// Waits of the host.
const (
	// unwindGrace is how long an interrupted block has to stop before its
	// child is retired.
	unwindGrace = 5 * time.Second
	// waitNotice is how long a client waits for the session quietly.
	waitNotice = time.Second
)

// memoryTarget is the Go heap a host aims to stay under.
const memoryTarget = 160 << 20

// Config is what a host serves.
type Config struct {
	// UserConfig is the user's config.toml, whose settings a child reads
	// as it starts: a standby started before it changed is not swapped in.
	UserConfig string
	Folder     session.Folder
	Meta       session.Meta
	// Exe starts an interpreter child (Exe protocol.ChildArgs(...)).
	Exe string
	// Logs is the folder of hang records ($VIS_HOME/logs).
	Logs    string
	IdleTTL time.Duration // <= 0: never
	// SaveDelay is how long after a block's result the save after it is
	// asked for (save.go).
	SaveDelay time.Duration
	// AnswerTimeout is how long the child may take to answer a question
	// (answerOf; <= 0: defaultAnswerTimeout).
	AnswerTimeout time.Duration
	Memory        MemoryLimits
	Sessions      string // the folder of all sessions, for memory pressure
	Log           io.Writer
	// Policy is the jail of the first child; a block asking for another
	// one replaces the child.
	Policy protocol.Policy
	// Own are vis-agent's own folders ($VIS_HOME, the shared packages):
	// read-only to the session's code whatever root holds them; no
	// writable root may be inside one of OwnInner (jail.NewShield).
	Own, OwnInner []string
	// Attachments is the attachments store's folder; AttachMaxBytes the
	// limit of one attachment (0: the store's default).
	Attachments    string
	AttachMaxBytes int64
	// Install says how install() runs uv for this session (nil: it is not
	// available); the op adds the child's network policy.
	Install func() (install.Options, error)
	// CommandPython says what shell() commands of a jailed session get
	// of its python (nil: nothing): the PATH and PYTHONPATH, and the
	// folders to show them read-only.
	CommandPython func() (tools.CommandPython, []string)
	// FixFiles applies the repair engine's exact fix to a Python file a
	// block left not compiling (sandbox.fix_files); else it is only shown.
	FixFiles bool
	// AttachQuotaBytes bounds the session's attachments together (0: no
	// bound).
	AttachQuotaBytes int64
	// Journal is the session's journal file (sandbox/journal; "": none),
	// JournalMaxBytes its bound (0: the journal's default).
	Journal         string
	JournalMaxBytes int64
	// WarmRestart keeps a standby child for restarts (standby.go).
	WarmRestart bool
	// DiskBytes bounds what the session's folder holds
	// (sandbox.max_disk_mb, disk.go); a quarter of it, up to
	// tools.MaxSpoolsBytes, is for shell() output.
	DiskBytes int64
}

// limits are the bounds the host keeps, for session.access.host.
func (cfg Config) limits() *protocol.HostLimits {
	max := cfg.AttachMaxBytes
	if max <= 0 {
		max = attachments.DefaultMaxBytes
	}
	return &protocol.HostLimits{
		Socket:   "only clients that present the session's key (a file of its folder the jailed code cannot read) and run as this user",
		MaxCalls: hostcalls.MaxCalls, MaxAttachmentMB: int(max >> 20), MaxAttachmentsMB: int(cfg.AttachQuotaBytes >> 20),
		ReadMB: tools.MaxScanBytes >> 20, GrepRows: tools.MaxGrepRows, PatchMB: tools.MaxPatchBytes >> 20,
	}
}

// Host serves one session.
type Host struct {
	cfg  Config
	ln   net.Listener
	turn chan struct{} // held by the request that uses the child

	mu    sync.Mutex
	child *proc
	busy  bool
	// pending is the save the child owes since the latest block's result
	// went out (save.go), nil when there is none.
	pending *pendingSave
	// trust are the trust and proxy variables of the client that ran the
	// latest block (nil: none said), which install() runs uv with.
	trust   []string
	clients int
	lastUse time.Time
	saved   int
	reason  string       // why the next child restarts, "" for a first start
	next    startOptions // what the next child does with the snapshot
	// attached collects what the running block attached, from its host
	// calls (nil between blocks).
	attached []protocol.Attached
	policy   protocol.Policy
	stopping bool
	idle     *time.Timer
	done     chan struct{}
	// queue are the run requests (see ticket).
	queue tickets
	// disk is the last measure of the session's folder (disk.go).
	disk disk
	// workers keeps a spare worker for the data files' parses
	// (parseworker.go).
	workers parseWorkers
	// memoryChecked is when relieveMemory last ran for a block.
	memoryChecked time.Time
	// written is the last record written (recordUnchanged).
	written writtenRecord
	// fresh is the child ensureChild started, until its first block.
	fresh freshChild
	// early is the child the host's C constructor started, until the
	// first child's start takes it (nil: none).
	early    *earlyChild
	recordMu sync.Mutex
	conns    sync.WaitGroup
	// door lets clients in (not under mu).
	door    door
	store   hostcalls.Store // the attachments store, opened on first use
	shells  shells          // the shell commands of the session's code
	proxies proxies

	// installs are install()'s runs and the bytecode compiles after them.
	installs installs
	// checks remembers the session's checked files (calls_check.go).
	checks checks
	// journal records every block; viewers follow them live.
	journal blockLog
	viewers viewers
	// warm is the standby child and what it imports (standby.go).
	warm standbys
	// git is what the host knows of the session's .git folders
	// (gitwatch.go, gitnotice.go).
	git gitState
}

// tickets are the run requests of the session, under Host.mu: current
// holds the turn; waiting, those waiting for it, oldest first.
type tickets struct {
	current *ticket
	waiting []*ticket
}

// freshChild is the child ensureChild started, until its first block,
// and when it said it was ready; under Host.mu.
type freshChild struct {
	c     *proc
	ready time.Time
}

// standbys are the standby child (nil: none), the modules the last
// snapshot needs, which a standby imports, and the timer that makes one
// when the session is idle; under Host.mu.
type standbys struct {
	sb      *standby
	preload []string
	timer   *time.Timer
}

// writtenRecord is the host record last written, without its last use,
// and that last use (Unix ms); under Host.mu.
type writtenRecord struct {
	key     []byte
	lastUse int64
}

// door lets in the clients that show the session's key
// (session.Authenticate): strangers counts the connections not let in
// yet. Set before the host listens, it needs no lock.
type door struct {
	key       []byte
	strangers chan struct{}
}

// serve listens on the session's socket, reports readiness with ready (nil
// on success), and serves until the host stops.
func serve(cfg Config, ready func(error)) error {
	// The host's own memory is bounded by what it does for a block (see
	// hostcalls.Server); the collector keeps the heap close to that rather than
	// at twice the peak.
	debug.SetMemoryLimit(memoryTarget)
	alive, err := cfg.Folder.LockAlive(10 * time.Second)
	if err != nil {
		ready(err)
		return err
	}
	defer alive.Release()
	key, err := cfg.Folder.NewKey()
	if err != nil {
		ready(err)
		return err
	}
	h := &Host{cfg: cfg, turn: make(chan struct{}, 1), lastUse: time.Now(), saved: -1, done: make(chan struct{}),
		policy: cfg.Policy, early: takeEarlyChild(), store: hostcalls.Store{Dir: cfg.Attachments, Key: cfg.Folder.ID()},
		door: door{key: key, strangers: make(chan struct{}, maxStrangers)}, journal: blockLog{path: cfg.Journal, max: cfg.JournalMaxBytes, log: cfg.Log}}
	// The reason shows only if the child restores a snapshot.
	h.reason = cfg.Folder.TakeStopped()
	if h.reason == "" {
		h.reason = "the sandbox's host process was killed or crashed"
	}
	// The first block is on its way: start the child now, while the
	// socket is set up (if that fails, the child dies with this process),
	// and make room among the other sessions' children meanwhile rather
	// than before the block.
	go func() {
		h.turn <- struct{}{}
		h.mu.Lock()
		h.memoryChecked = time.Now()
		h.mu.Unlock()
		relieved := make(chan struct{})
		go func() {
			h.relieveMemory()
			close(relieved)
		}()
		if _, err := h.ensureChild(); err != nil {
			fmt.Fprintf(cfg.Log, "vis-agent sandbox host: %v\n", err)
		}
		<-relieved
		<-h.turn
	}()
	ln, err := cfg.Folder.Listen()
	if err != nil {
		ready(err)
		return err
	}
	h.ln = ln
	h.writeRecord()
	ready(nil)
	if cfg.IdleTTL > 0 {
		h.idle = time.AfterFunc(cfg.IdleTTL, h.onIdle)
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-h.done:
				h.viewers.closeAll()
				h.finishConns()
				h.journal.close()
				h.closeShells()
				h.closeProxies()
				h.git.close(&h.mu)
				// No record write is cut in half by the exit; later
				// ones wait for it.
				h.recordMu.Lock()
				return nil
			default:
			}
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept a client: %w", err)
		}
		h.conns.Add(1)
		go func() {
			defer h.conns.Done()
			h.serveConn(conn)
		}()
	}
}

// finishConns lets the answers of a stopping host (the "ok" of stop) reach
// their clients, for a bounded time.
func (h *Host) finishConns() {
	done := make(chan struct{})
	go func() {
		h.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// maxStrangers bounds the connections waiting to show the key: one more
// is closed at once.
const maxStrangers = 32

// admit lets in a client that shows the session's key; it returns the
// connection's reader after the key, or nil when it closed it.
func (h *Host) admit(conn net.Conn) io.Reader {
	select {
	case h.door.strangers <- struct{}{}:
	default:
		return nil
	}
	r, err := session.Authenticate(conn, h.door.key)
	<-h.door.strangers
	if err != nil && !errors.Is(err, io.EOF) {
		protocol.Write(conn, protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		// What the client sent after must be read, a little of it, or
		// closing resets the connection before it reads the answer.
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		io.CopyN(io.Discard, conn, 64<<10)
	}
	if err != nil {
		return nil
	}
	return r
}

func (h *Host) serveConn(conn net.Conn) {
	defer conn.Close()
	r := h.admit(conn)
	if r == nil {
		return
	}
	h.mu.Lock()
	h.clients++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.clients--
		h.mu.Unlock()
		h.touch()
	}()
	pc := protocol.NewConn(r, nil).Bound(protocol.ClientBounds)
	out := &sink{w: conn}
	req, err := pc.ReceiveRequest()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
		}
		return
	}
	switch req.Op {
	case protocol.OpRun:
		h.run(req, out, h.watchRun(pc))
	case protocol.OpDefs, protocol.OpIsComplete, protocol.OpCompletions:
		h.ask(req, out)
	case protocol.OpFollow:
		// A REPL left open does not keep an idle session's processes.
		h.mu.Lock()
		h.clients--
		h.mu.Unlock()
		h.follow(req, out, pc)
		h.mu.Lock()
		h.clients++
		h.mu.Unlock()
	case protocol.OpJournal:
		h.syncJournal(out)
	case protocol.OpStatus:
		st := h.status()
		out.Send(protocol.Event{Ev: protocol.EvStatus, Status: &st})
	case protocol.OpInterrupt:
		msg, err := h.interruptFor(req)
		if err != nil {
			out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
			return
		}
		out.Send(protocol.Event{Ev: protocol.EvOK, Message: msg})
	case protocol.OpEvict:
		if err := h.evictChild(); err != nil {
			out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
			return
		}
		out.Send(protocol.Event{Ev: protocol.EvOK})
	case protocol.OpRewind:
		h.rewind(req, out)
	case protocol.OpStop, protocol.OpRestart:
		if err := h.stop(req); err != nil {
			out.Send(protocol.Event{Ev: protocol.EvError, Message: err.Error()})
			return
		}
		out.Send(protocol.Event{Ev: protocol.EvOK})
	default:
		out.Send(protocol.Event{Ev: protocol.EvError, Message: fmt.Sprintf("unknown request %q", req.Op)})
	}
}

// sink writes events to one client; after a write fails (the client went
// away) it drops the rest, and the block goes on.
type sink struct {
	mu   sync.Mutex
	w    io.Writer
	gone bool
	// tap sees every event sent, also after the client went away: the
	// block's record (journal.go).
	tap func(protocol.Event)
}

func (s *sink) Send(ev protocol.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tap != nil {
		s.tap(ev)
	}
	if s.gone {
		return
	}
	if err := protocol.Write(s.w, ev); err != nil {
		s.gone = true
	}
}

// acquire takes the session's turn, telling the client when it waits;
// false when the host stops or withdrawn closes first.
func (h *Host) acquire(out *sink, withdrawn <-chan struct{}) bool {
	select {
	case h.turn <- struct{}{}:
		return true
	case <-withdrawn:
		return false
	case <-time.After(waitNotice):
	}
	h.mu.Lock()
	busy := h.busy
	h.mu.Unlock()
	if who := h.holder(); busy && who != "" { // else the session's Python is still starting
		out.Send(protocol.Event{Ev: protocol.EvWait, Message: "waiting for the block of " + who + " to finish"})
	}
	select {
	case h.turn <- struct{}{}:
		return true
	case <-withdrawn:
		return false
	case <-h.done:
		return false
	}
}

func (h *Host) release() { <-h.turn }

// takeTurn waits for the session's turn for the host's own work; false
// when the host stops first.
func (h *Host) takeTurn() bool {
	select {
	case h.turn <- struct{}{}:
		return true
	case <-h.done:
		return false
	}
}

func (h *Host) touch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUse = time.Now()
	if h.idle != nil && !h.stopping {
		h.idle.Reset(h.cfg.IdleTTL)
	}
}

func (h *Host) status() protocol.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := protocol.Status{Name: h.cfg.Meta.Name, Workspace: h.cfg.Meta.Workspace, HostPID: os.Getpid(), Busy: h.busy,
		IdleSec: int64(time.Since(h.lastUse) / time.Second)}
	st.Attachments = h.store.Counted()
	if h.child != nil && h.child.alive() {
		st.ChildPID = h.child.pid()
		st.Python = h.child.version
		st.Jailed, st.Network = h.child.policy.Jail, h.child.policy.Network
	}
	return st
}

// writeRecord publishes the host's state in the session folder. Writes
// take turns, so the last one written holds the latest state.
func (h *Host) writeRecord() {
	h.recordMu.Lock()
	defer h.recordMu.Unlock()
	h.mu.Lock()
	policy := h.policy
	r := session.HostRecord{HostPID: os.Getpid(), LastUse: h.lastUse.UnixMilli(), Saved: h.saved, Policy: &policy}
	if h.saved < 0 {
		r.Saved = h.cfg.Folder.Host().Saved
	}
	if h.child != nil && h.child.alive() {
		r.ChildPID, r.KernelMissing = h.child.pid(), h.child.kernelMissing
	}
	if h.recordUnchanged(r) {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	if err := h.cfg.Folder.WriteHost(r); err != nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v\n", err)
	}
}

// recordUnchanged reports whether r is the record last written but for a
// last use less than a second later, which is not worth a file write
// after every warm block (the last use is shown in whole seconds). The
// caller holds h.mu.
func (h *Host) recordUnchanged(r session.HostRecord) bool {
	use := r.LastUse
	r.LastUse = 0
	key, err := json.Marshal(r)
	if err != nil {
		return false
	}
	if bytes.Equal(key, h.written.key) && use-h.written.lastUse < 1000 {
		return true
	}
	h.written.key, h.written.lastUse = key, use
	return false
}

// ensureChild returns the live child, starting one (which restores the
// snapshot) when there is none, or when a git name appeared at the top of
// a root since its shield was computed. The caller holds the turn.
func (h *Host) ensureChild() (*proc, error) {
	h.mu.Lock()
	c := h.child
	h.mu.Unlock()
	if c != nil && c.alive() && h.gitCurrent(c.gitGen) {
		return c, nil
	}
	h.mu.Lock()
	c = h.child
	if c != nil && h.reason == "" {
		h.reason = c.exitReason()
	}
	reason, policy, opts := h.reason, h.policy, h.next
	h.mu.Unlock()
	for {
		// The roots are watched before the child computes its shield, and
		// a child that started while a git name appeared is replaced
		// (gitwatch.go).
		gen, err := h.watchRoots(policy)
		if err != nil {
			return nil, err
		}
		c, err := h.startFor(policy, gen, reason, opts)
		if err != nil {
			return nil, err
		}
		// Made the child under the lock of the count: a change counted
		// later ends it (gitMark).
		h.gitCatchUp()
		h.mu.Lock()
		if c.gitGen == h.git.changes {
			h.child, h.reason, h.next = c, "", startOptions{}
			h.fresh.c, h.fresh.ready = c, time.Now()
			h.scheduleStandbyLocked()
			h.mu.Unlock()
			// Not in the way of the block waiting for this child: the
			// record is written after the block too, and each write reads
			// the latest state.
			go h.writeRecord()
			return c, nil
		}
		h.mu.Unlock()
		c.end()
	}
}

// startFor starts a child under policy: the standby, else a new one,
// whose shield protects against the first gen git changes.
func (h *Host) startFor(policy protocol.Policy, gen int, reason string, opts startOptions) (*proc, error) {
	calls := func(conn net.Conn) *hostcalls.Server { return h.callServer(conn, policy) }
	np, err := h.proxyFor(policy)
	if err != nil {
		return nil, err
	}
	c, err := h.wakeStandby(policy, reason, opts)
	fresh := c == nil && err == nil
	if fresh {
		c, err = startChild(h.cfg, policy, h.takeEarly(), reason, opts, calls, np)
	}
	var re *restoreError
	if errors.As(err, &re) {
		// Never a dead session: what the snapshot held is lost, and the
		// notice says so.
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v; starting a new one with the snapshot discarded\n", err)
		c, err = startChild(h.cfg, policy, h.takeEarly(), reason, startOptions{discard: "restoring it stopped the Python process (" + re.why + ")"}, calls, np)
		fresh = true
	}
	if err == nil && fresh {
		c.gitGen = gen
	}
	return c, err
}

// takeEarly hands over the early child, once; nil when there is none.
func (h *Host) takeEarly() *earlyChild {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.early
	h.early = nil
	return e
}

// usePolicy makes p the policy of the next block: a child started with
// another one is snapshotted and stopped, and the next one starts under p
// with the notice. The caller holds the turn.
func (h *Host) usePolicy(p protocol.Policy) {
	h.mu.Lock()
	old := h.policy
	h.mu.Unlock()
	if old.Equal(p) {
		return
	}
	h.discardStandby()
	h.stopChild(fmt.Sprintf("the block asked for another jail policy (%s; it was %s)", p, old))
	h.mu.Lock()
	h.policy = p
	h.mu.Unlock()
	h.writeRecord()
}

// stop ends the child (saving its snapshot); "stop" also ends the host.
// A restart with Fresh or Drop starts the new child at once, under those
// options.
func (h *Host) stop(req protocol.Request) error {
	h.mu.Lock()
	busy, saving, c := h.busy, h.pending != nil, h.child
	h.mu.Unlock()
	if busy && !req.Force {
		return errors.New("a block is running in this session (use --force to stop it, or interrupt it first)")
	}
	// Without --force a stop waits for the save after the last block;
	// with it, that save is given up like a running block (the next
	// notice names what it lost).
	if (busy || saving && req.Force) && c != nil {
		c.kill()
	}
	h.turn <- struct{}{}
	defer h.release()
	reason := "the session was stopped (" + byWhom(req, "vis-agent sandbox stop") + ")"
	if req.Op == protocol.OpRestart {
		reason = "the session was restarted (" + byWhom(req, "vis-agent sandbox restart") + ")"
	}
	if req.Op == protocol.OpRestart && req.Fresh {
		return h.restartWith(reason, startOptions{discard: "a restart with fresh asked for it"})
	}
	if req.Op == protocol.OpRestart && len(req.Drop) > 0 {
		return h.restartWith(reason, startOptions{drop: req.Drop})
	}
	h.stopChild(reason)
	if req.Op == protocol.OpStop {
		h.shutdown(reason)
	}
	return nil
}

// byWhom names who asked for a stop or restart: the command line's
// command, or the client ("by mcp: claude-code", "by repl").
func byWhom(req protocol.Request, command string) string {
	if req.Client == nil || req.Client.Kind == "run" || req.Client.Kind == "" {
		return command
	}
	return "by " + req.Client.String()
}

// restartWith replaces the child by one that starts as opts say: with the
// snapshot discarded (the old child is killed, its state not saved), with
// names left out of it, or with a snapshot of the history (the old child
// saves first: its last block's state stays in the history). The caller
// holds the turn.
func (h *Host) restartWith(reason string, opts startOptions) error {
	fresh := opts.discard != ""
	h.mu.Lock()
	c := h.child
	h.child, h.reason, h.next = nil, reason, opts
	h.mu.Unlock()
	switch {
	case c == nil:
	case fresh:
		if c.alive() { // a reaped child's pid may be another process's
			c.kill()
		}
		<-c.exited
		c.link.Close()
	default:
		c.exit(opts.rewind == 0)
	}
	_, err := h.ensureChild()
	h.writeRecord()
	return err
}

// stopChild asks the child to save and exit, and records why for the
// next one. The caller holds the turn.
func (h *Host) stopChild(reason string) {
	h.mu.Lock()
	c := h.child
	h.child, h.reason = nil, reason
	h.mu.Unlock()
	if c != nil {
		c.exit(true)
	}
	h.writeRecord()
}

// shutdown ends the host, leaving the reason for the next host's notice.
func (h *Host) shutdown(reason string) {
	h.mu.Lock()
	if h.stopping {
		h.mu.Unlock()
		return
	}
	h.stopping = true
	if h.idle != nil {
		h.idle.Stop()
	}
	h.mu.Unlock()
	h.discardStandby()
	if err := h.cfg.Folder.WriteStopped(reason); err != nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v\n", err)
	}
	close(h.done)
	// A bytecode compile of install()'s left running would write into the
	// session's folder after the host is gone (and after an rm).
	h.installs.stopCompile()
	os.Remove(h.cfg.Folder.SocketPath())
	h.ln.Close()
}

func (h *Host) onIdle() {
	h.mu.Lock()
	active := h.busy || h.clients > 0
	h.mu.Unlock()
	took := false
	select {
	case h.turn <- struct{}{}:
		took = true
	default:
		active = true
	}
	if active {
		// A client is connected: the turn taken is given back, or every
		// later block and stop would wait for it forever.
		if took {
			h.release()
		}
		h.touch()
		return
	}
	defer h.release()
	reason := "the session was idle for " + humanDuration(h.cfg.IdleTTL)
	h.stopChild(reason)
	h.shutdown(reason)
}

// humanDuration is "5 minutes", "90 seconds", "1500 ms".
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		if d == time.Minute {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	case d == time.Second:
		return "1 second"
	case d%time.Second == 0:
		return fmt.Sprintf("%d seconds", d/time.Second)
	}
	return fmt.Sprintf("%d ms", d/time.Millisecond)
}
