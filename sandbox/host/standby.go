package host

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// A warm standby (sandbox.warm_restart) is a second interpreter child that
// started, jailed itself under the session's policy and imported the
// third-party modules the snapshot's values need, and waits. When the
// child stops (restart, a retired or crashed child) the next one is the
// standby: it reads the snapshot only then, so a restart costs the
// restore, not the interpreter's start and the imports.
//
// It is made when the session has been idle for warmAfter after a block
// whose snapshot names such modules (a session of plain Python values,
// whose restart costs little, gets none), and it is discarded when the
// policy changes, install() runs, the child is evicted or the host stops.
// It never runs a block: a block goes to the child it replaced.

// warmAfter is how long a session is idle before its standby is made: a
// session that runs block after block is not slowed by the imports.
const warmAfter = 2 * time.Second

// standby is a standby child: nil c until it was spawned; ready is closed
// once it is waiting (err nil) or failed.
type standby struct {
	policy  protocol.Policy
	preload []string
	ready   chan struct{}
	err     error
	// gen is the count of git changes its shield protects against
	// (gitState.changes when it started): it is swapped in only while no
	// other came.
	gen int
	// config is the user's config file as it was when it started.
	config stamp

	mu     sync.Mutex
	c      *proc
	killed bool // discarded: a child spawned after is killed at once
}

// noteSnapshot takes the modules the snapshot after a block needs, and
// schedules a standby for them (or drops one that no longer fits).
func (h *Host) noteSnapshot(preload []string) {
	if !h.cfg.WarmRestart {
		return
	}
	preload = validPreload(preload)
	h.mu.Lock()
	h.warm.preload = preload
	sb := h.warm.sb
	fits := sb != nil && sb.policy.Equal(h.policy) && covers(sb.preload, preload) && len(preload) > 0
	if !fits {
		h.warm.sb = nil
	}
	if !fits {
		h.scheduleStandbyLocked()
	}
	h.mu.Unlock()
	if !fits {
		sb.discard()
	}
}

// scheduleStandbyLocked makes a standby once the session has been idle
// warmAfter, when its snapshot needs imports and it has none: after a
// block, and after a child starts (the standby it may have taken was the
// one the next crash or restart would take). The caller holds h.mu.
func (h *Host) scheduleStandbyLocked() {
	if !h.cfg.WarmRestart || h.warm.sb != nil || len(h.warm.preload) == 0 || h.stopping {
		return
	}
	if h.warm.timer == nil {
		h.warm.timer = time.AfterFunc(warmAfter, h.makeStandby)
	} else {
		h.warm.timer.Reset(warmAfter)
	}
}

// maxPreload bounds the modules a standby imports (the list comes from
// the child, whose blocks may forge it: it only picks among modules the
// standby's own jail lets it import).
const maxPreload = 64

// validPreload keeps the names in preload that can be top-level modules,
// at most maxPreload of them.
func validPreload(preload []string) []string {
	var out []string
	for _, m := range preload {
		if len(out) < maxPreload && len(m) <= 100 && isIdentifier(m) {
			out = append(out, m)
		}
	}
	return out
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// covers reports whether the modules in have include every one in want.
func covers(have, want []string) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// makeStandby starts the standby, unless a block runs (its end schedules
// it again), one exists, the host stops, or the session has no child on
// purpose (stopped, evicted). A child that crashed still counts: the
// standby is what the next block wakes instead of a cold start.
func (h *Host) makeStandby() {
	h.mu.Lock()
	if h.stopping || h.busy || h.warm.sb != nil || len(h.warm.preload) == 0 || h.child == nil {
		h.mu.Unlock()
		return
	}
	sb := &standby{policy: h.policy, preload: h.warm.preload, ready: make(chan struct{}), config: stampOfPath(h.cfg.UserConfig)}
	h.warm.sb = sb
	h.mu.Unlock()
	calls := func(conn net.Conn) *hostcalls.Server { return h.callServer(conn, sb.policy) }
	// Its shield is computed when it starts, which may be long before it
	// serves: the roots as they are then are watched first (a home
	// folder's new folder is one).
	gen, err := h.watchRoots(sb.policy)
	sb.gen = gen
	var np *netProxy
	if err == nil {
		np, err = h.proxyFor(sb.policy)
	}
	var s *spawned
	if err == nil {
		s, err = spawnChild(h.cfg, sb.policy)
	}
	var c *proc
	if err == nil {
		c = newProc(h.cfg, s, calls)
		sb.mu.Lock()
		sb.c = c
		if sb.killed {
			err = errors.New("discarded while it started")
		}
		sb.mu.Unlock()
	}
	if err == nil {
		err = c.awaitStandby(h.cfg, s, sb.policy, sb.preload, np)
	}
	sb.err = err
	if err != nil && c != nil {
		c.end()
	}
	close(sb.ready)
	if err != nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: the standby Python process: %v\n", err)
	}
}

// discard ends the standby (it may still be starting).
func (sb *standby) discard() {
	if sb == nil {
		return
	}
	sb.mu.Lock()
	sb.killed = true
	c := sb.c
	sb.mu.Unlock()
	if c != nil && c.alive() { // a reaped child's pid may be another process's
		c.kill()
	}
	go func() {
		<-sb.ready
		if sb.c != nil {
			sb.c.end()
		}
	}()
}

// discardStandby ends the session's standby, if it has one.
func (h *Host) discardStandby() {
	h.mu.Lock()
	sb := h.warm.sb
	h.warm.sb = nil
	if h.warm.timer != nil {
		h.warm.timer.Stop()
	}
	h.mu.Unlock()
	sb.discard()
}

// takeStandby hands over the standby for a new child under policy, once it
// is waiting; nil when there is none that can serve. One whose shield
// predates a git name at the top of a root never serves, whether or not
// the watch has told of it yet.
func (h *Host) takeStandby(policy protocol.Policy) *proc {
	h.mu.Lock()
	sb := h.warm.sb
	h.warm.sb = nil
	h.mu.Unlock()
	if sb == nil {
		return nil
	}
	<-sb.ready
	if sb.err != nil || !sb.policy.Equal(policy) || !sb.c.alive() || !h.gitCurrent(sb.gen) || stampOfPath(h.cfg.UserConfig) != sb.config {
		sb.discard()
		return nil
	}
	sb.c.gitGen = sb.gen
	return sb.c
}

// wakeStandby makes the standby the session's child, restoring the
// snapshot: nil and no error when there is no standby, or when it could not
// serve (the caller starts a child); a restoreError when the restore ended
// it.
func (h *Host) wakeStandby(policy protocol.Policy, reason string, opts startOptions) (*proc, error) {
	sc := h.takeStandby(policy)
	if sc == nil {
		return nil, nil
	}
	c, err := sc.wake(policy, reason, opts)
	if _, ok := errors.AsType[*restoreError](err); ok || err == nil {
		return c, err
	}
	fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v; starting a new one\n", err)
	return nil, nil
}

// awaitStandby sends a standby its description and waits until it has
// imported what it preloads.
func (c *proc) awaitStandby(cfg Config, s *spawned, policy protocol.Policy, preload []string, np *netProxy) error {
	err := c.introduce(s, protocol.ChildInfo{Session: sessionInfo(cfg), Policy: policy, Standby: true, Preload: preload}, np)
	if err != nil {
		return err
	}
	c.link.SetReadDeadline(time.Now().Add(readyTimeout))
	defer c.link.SetReadDeadline(time.Time{})
	ev, err := c.answer()
	if err != nil {
		return fmt.Errorf("it stopped before it was ready: %s", c.exitReason())
	}
	if ev.Ev != protocol.EvStandby {
		return fmt.Errorf("it answered %q, not standby: %s", ev.Ev, ev.Message)
	}
	return nil
}

// wake swaps a standby in: it restores the snapshot as startChild's child
// would, and is then the session's child.
func (c *proc) wake(policy protocol.Policy, reason string, opts startOptions) (*proc, error) {
	c.started = time.Now()
	err := c.conn.Send(protocol.Wake{V: protocol.Version, Op: protocol.OpWake, RestartReason: reason, Discard: opts.discard, Drop: opts.drop, Rewind: opts.rewind})
	return c.awaitReady(err, policy)
}

// end kills the child and waits for it.
func (c *proc) end() {
	if c.alive() {
		c.kill()
	}
	<-c.exited
	c.link.Close()
}

// stampOfPath is the stamp of the file at path; the zero value when it is
// not there.
func stampOfPath(path string) stamp {
	var st unix.Stat_t
	if path == "" || unix.Stat(path, &st) != nil {
		return stamp{}
	}
	return stampOf(st)
}
