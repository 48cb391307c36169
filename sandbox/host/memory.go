package host

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// MemoryLimits bound the interpreter children of all sessions together.
// Hosts are separate processes: they coordinate through the sessions
// folder, where each records its child and last use.
type MemoryLimits struct {
	MaxChildren int   // VIS_ENV_CACHE_MAX
	RSSBudget   int64 // VIS_ENV_RSS_BUDGET_MB, in bytes
}

// evictReason is the restart notice's reason after an eviction.
const evictReason = "the sandbox freed memory for other sessions (least recently used)"

// live is another session's running child.
type live struct {
	folder  session.Folder
	lastUse int64
	rss     int64
}

// relieveMemory stops the least recently used children of other sessions
// while there are more than MaxChildren, or their memory together passes
// RSSBudget, counting this session's child (or the one it is about to
// start).
func (h *Host) relieveMemory() {
	lim := h.cfg.Memory
	if lim.MaxChildren <= 0 && lim.RSSBudget <= 0 {
		return
	}
	folders, err := session.All(h.cfg.Sessions)
	if err != nil {
		return
	}
	var others []live
	var total int64
	for _, f := range folders {
		if f.Dir == h.cfg.Folder.Dir || !f.Running() {
			continue
		}
		rec := f.Host()
		if rec.ChildPID <= 0 {
			continue
		}
		rss := rssOf(rec.ChildPID)
		if rss < 0 {
			continue
		}
		others = append(others, live{f, rec.LastUse, rss})
		total += rss
	}
	h.mu.Lock()
	if h.child != nil && h.child.alive() {
		total += max(rssOf(h.child.pid()), 0)
	}
	h.mu.Unlock()
	sort.Slice(others, func(i, j int) bool { return others[i].lastUse < others[j].lastUse })
	for len(others) > 0 && ((lim.MaxChildren > 0 && len(others)+1 > lim.MaxChildren) || (lim.RSSBudget > 0 && total > lim.RSSBudget)) {
		victim := others[0]
		others = others[1:]
		if err := evict(victim.folder); err != nil {
			fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: could not free %s: %v\n", victim.folder.Dir, err)
			continue
		}
		total -= victim.rss
	}
}

// memoryCheckEvery is how often a session whose child runs looks at the
// memory of the others: a look at every block would cost each warm block a
// walk through every session's folder and /proc. A block that needs a
// child started always looks.
const memoryCheckEvery = time.Second

// relieveMemorySometimes is relieveMemory when its time has come.
func (h *Host) relieveMemorySometimes() {
	h.mu.Lock()
	due := h.child == nil || !h.child.alive() || time.Since(h.memoryChecked) >= memoryCheckEvery
	if due {
		h.memoryChecked = time.Now()
	}
	h.mu.Unlock()
	if due {
		h.relieveMemory()
	}
}

// evict asks another session's host to snapshot and stop its child.
func evict(f session.Folder) error {
	conn, err := f.Connect()
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	pc := protocol.NewConn(conn, conn)
	if err := pc.Send(protocol.Request{V: protocol.Version, Op: protocol.OpEvict}); err != nil {
		return err
	}
	var ev protocol.Event
	if err := pc.Receive(&ev); err != nil {
		return err
	}
	if ev.Ev != protocol.EvOK {
		return fmt.Errorf("%s", ev.Message)
	}
	return nil
}

// rssOf is a process's resident memory in bytes, -1 when it is gone.
func rssOf(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// evictChild stops this session's child for another session's memory; a
// busy session is left alone. One saving after a block that has answered
// is evicted once the save ends (within evictWait).
func (h *Host) evictChild() error {
	select {
	case h.turn <- struct{}{}:
	default:
		h.mu.Lock()
		saving := h.pending != nil && !h.busy
		h.mu.Unlock()
		if !saving {
			return fmt.Errorf("a block is running")
		}
		select {
		case h.turn <- struct{}{}:
		case <-time.After(evictWait):
			return fmt.Errorf("its snapshot is still being saved")
		}
	}
	defer h.release()
	h.discardStandby()
	h.stopChild(evictReason)
	return nil
}

// evictWait bounds how long an eviction waits for the save after a block.
const evictWait = 5 * time.Second
