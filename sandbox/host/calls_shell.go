package host

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// shells are the host's shell commands, one set per jail policy (a
// command keeps the confinement it started with); all are stopped when
// the host ends.
type shells struct {
	mu   sync.Mutex
	sets map[string]*tools.Shells
	// spools bound the output all of them keep on disk together.
	spools *tools.Spools
}

// shellsFor returns the commands of children started under policy.
func (h *Host) shellsFor(policy protocol.Policy) *tools.Shells {
	key, _ := json.Marshal(policy)
	h.shells.mu.Lock()
	defer h.shells.mu.Unlock()
	if h.shells.sets == nil {
		h.shells.sets = map[string]*tools.Shells{}
		// A previous host's output: its commands are gone.
		os.RemoveAll(filepath.Join(h.cfg.Folder.Dir, "shells"))
		h.shells.spools = tools.NewSpools(h.cfg.DiskBytes / 4)
	}
	m := h.shells.sets[string(key)]
	if m == nil {
		dir := filepath.Join(h.cfg.Folder.Dir, "shells", fmt.Sprint(len(h.shells.sets)+1))
		// The caps of the session's child bound each command too: its
		// processes' address space, and its processes and threads together.
		m = tools.NewShells(dir, h.access(policy), tools.Limits{Exe: h.cfg.Exe,
			MemoryBytes: uint64(max(policy.MemoryMB, 0)) << 20, MaxTasks: max(policy.MaxThreads, 0)}, h.shells.spools)
		h.shells.sets[string(key)] = m
	}
	return m
}

// closeShells stops every command the host started.
func (h *Host) closeShells() {
	h.shells.mu.Lock()
	sets := h.shells.sets
	h.shells.sets = nil
	h.shells.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close()
		}()
	}
	wg.Wait()
}

// shellOps adds the shell calls (sandbox/hostcalls.ShellOps) for the
// commands of children started under policy.
func (h *Host) shellOps(ops map[protocol.Call]hostcalls.Op, policy protocol.Policy) {
	hostcalls.ShellOps(hostcalls.ShellHost{
		Shells:    func() *tools.Shells { return h.shellsFor(policy) },
		CheckDisk: h.checkDisk,
		Hint:      gitHint,
	}, ops)
}
