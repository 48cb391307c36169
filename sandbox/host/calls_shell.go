package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// Bounds of the shell calls' times: a command's own timeout is kept
// within a block's longest (protocol.MaxTimeout), so that none runs on for hours
// after the block that started it; maxShellWait bounds the arguments.
const (
	maxShellWait = 24 * time.Hour
	// waitSlice is how long one wait on a command lasts before the call
	// checks whether it was abandoned.
	waitSlice = 250 * time.Millisecond
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

// waitShell waits until command id ends, max passes (0: no bound but the
// command's own timeout) or the call is abandoned.
func waitShell(ctx context.Context, m *tools.Shells, id string, max time.Duration) (tools.ShellState, error) {
	deadline := time.Now().Add(max)
	for {
		slice := waitSlice
		if max > 0 {
			slice = min(slice, time.Until(deadline))
		}
		st, err := m.Wait(id, max0(slice))
		if err != nil || st.Status != tools.StatusRunning || (max > 0 && !time.Now().Before(deadline)) {
			return st, err
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
	}
}

func max0(d time.Duration) time.Duration { return max(d, 0) }

// millis reads a duration argument in milliseconds, within [0, limit].
func millis(name string, ms int64, limit time.Duration) (time.Duration, error) {
	d := time.Duration(ms) * time.Millisecond
	if ms < 0 || d > limit {
		return 0, hostcalls.Errorf("ValueError", "shell: %s must be between 0 and %s", name, limit)
	}
	return d, nil
}

// shellOps adds shell_start, shell_state, shell_wait, shell_logs and
// shell_stop, for the commands of children started under policy.
func (h *Host) shellOps(ops map[protocol.Call]hostcalls.Op, policy protocol.Policy) {
	ops[protocol.CallShellStart] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		var in struct {
			Cmd       string `json:"cmd"`
			Cwd       string `json:"cwd"`
			TimeoutMS int64  `json:"timeout_ms"`
			WaitMS    int64  `json:"wait_ms"`
		}
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return hostcalls.Reply{}, err
		}
		if strings.TrimSpace(in.Cmd) == "" {
			return hostcalls.Reply{}, hostcalls.Errorf("ValueError", "shell: the command is empty")
		}
		timeout, err := millis("timeout", in.TimeoutMS, maxShellWait)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		if timeout == 0 {
			return hostcalls.Reply{}, hostcalls.Errorf("ValueError", "shell: timeout must be more than 0 seconds")
		}
		timeout = min(timeout, protocol.MaxTimeout)
		wait, err := millis("wait", in.WaitMS, maxShellWait)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		if err := h.checkDisk("shell"); err != nil {
			return hostcalls.Reply{}, err
		}
		m := h.shellsFor(policy)
		st, err := m.Start(in.Cmd, in.Cwd, timeout)
		if err != nil {
			return hostcalls.Reply{}, hostcalls.ToolError(err)
		}
		if wait > 0 {
			st, err = waitShell(ctx, m, st.ID, wait)
		}
		return hostcalls.Reply{Result: gitHint(st)}, hostcalls.ToolError(err)
	}
	id := func(args json.RawMessage) (string, error) {
		var in struct {
			ID string `json:"id"`
		}
		err := hostcalls.DecodeArgs(args, &in)
		return in.ID, err
	}
	ops[protocol.CallShellState] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		sid, err := id(args)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		st, err := h.shellsFor(policy).State(sid)
		return hostcalls.Reply{Result: gitHint(st)}, hostcalls.ToolError(err)
	}
	ops[protocol.CallShellStop] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		sid, err := id(args)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		st, err := h.shellsFor(policy).Stop(sid)
		return hostcalls.Reply{Result: gitHint(st)}, hostcalls.ToolError(err)
	}
	ops[protocol.CallShellWait] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		var in struct {
			ID    string `json:"id"`
			MaxMS int64  `json:"max_ms"`
		}
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return hostcalls.Reply{}, err
		}
		max, err := millis("max", in.MaxMS, maxShellWait)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		st, err := waitShell(ctx, h.shellsFor(policy), in.ID, max)
		return hostcalls.Reply{Result: gitHint(st)}, hostcalls.ToolError(err)
	}
	ops[protocol.CallShellLogs] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		var in struct {
			ID string `json:"id"`
			N  int    `json:"n"`
		}
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return hostcalls.Reply{}, err
		}
		lines, err := h.shellsFor(policy).Logs(in.ID, in.N)
		if lines == nil {
			lines = []string{}
		}
		return hostcalls.Reply{Result: map[string]any{"lines": lines}}, hostcalls.ToolError(err)
	}
}
