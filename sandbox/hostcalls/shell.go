package hostcalls

import (
	"context"
	"encoding/json"
	"strings"
	"time"

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

// ShellHost is what the shell calls need of the host, which keeps their
// commands (one set per jail policy, each keeping the confinement it
// started with, all stopped when the host ends) and the session's disk
// budget.
type ShellHost struct {
	// Shells are the commands of the calling child's policy.
	Shells func() *tools.Shells
	// CheckDisk refuses (an OSError) a new command, what, when the
	// session's disk budget is spent.
	CheckDisk func(what string) error
	// Hint adds to a command's state what the host knows of why it
	// failed (a .git that was read-only to it).
	Hint func(tools.ShellState) tools.ShellState
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
		return 0, Errorf("ValueError", "shell: %s must be between 0 and %s", name, limit)
	}
	return d, nil
}

// ShellOps adds shell_start, shell_state, shell_wait, shell_logs and
// shell_stop, for the commands host keeps.
func ShellOps(host ShellHost, ops map[protocol.Call]Op) {
	ops[protocol.CallShellStart] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			Cmd       string `json:"cmd"`
			Cwd       string `json:"cwd"`
			TimeoutMS int64  `json:"timeout_ms"`
			WaitMS    int64  `json:"wait_ms"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if strings.TrimSpace(in.Cmd) == "" {
			return Reply{}, Errorf("ValueError", "shell: the command is empty")
		}
		timeout, err := millis("timeout", in.TimeoutMS, maxShellWait)
		if err != nil {
			return Reply{}, err
		}
		if timeout == 0 {
			return Reply{}, Errorf("ValueError", "shell: timeout must be more than 0 seconds")
		}
		timeout = min(timeout, protocol.MaxTimeout)
		wait, err := millis("wait", in.WaitMS, maxShellWait)
		if err != nil {
			return Reply{}, err
		}
		if err := host.CheckDisk("shell"); err != nil {
			return Reply{}, err
		}
		m := host.Shells()
		st, err := m.Start(in.Cmd, in.Cwd, timeout)
		if err != nil {
			return Reply{}, ToolError(err)
		}
		if wait > 0 {
			st, err = waitShell(ctx, m, st.ID, wait)
		}
		return Reply{Result: host.Hint(st)}, ToolError(err)
	}
	id := func(args json.RawMessage) (string, error) {
		var in struct {
			ID string `json:"id"`
		}
		err := DecodeArgs(args, &in)
		return in.ID, err
	}
	ops[protocol.CallShellState] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		sid, err := id(args)
		if err != nil {
			return Reply{}, err
		}
		st, err := host.Shells().State(sid)
		return Reply{Result: host.Hint(st)}, ToolError(err)
	}
	ops[protocol.CallShellStop] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		sid, err := id(args)
		if err != nil {
			return Reply{}, err
		}
		st, err := host.Shells().Stop(sid)
		return Reply{Result: host.Hint(st)}, ToolError(err)
	}
	ops[protocol.CallShellWait] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			ID    string `json:"id"`
			MaxMS int64  `json:"max_ms"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		max, err := millis("max", in.MaxMS, maxShellWait)
		if err != nil {
			return Reply{}, err
		}
		st, err := waitShell(ctx, host.Shells(), in.ID, max)
		return Reply{Result: host.Hint(st)}, ToolError(err)
	}
	ops[protocol.CallShellLogs] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			ID string `json:"id"`
			N  int    `json:"n"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		lines, err := host.Shells().Logs(in.ID, in.N)
		if lines == nil {
			lines = []string{}
		}
		return Reply{Result: map[string]any{"lines": lines}}, ToolError(err)
	}
}
