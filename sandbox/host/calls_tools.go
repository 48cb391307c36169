package host

import (
	"path/filepath"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// access is what a child started under policy may touch through the
// tools: its roots when jailed, anything when not.
func (h *Host) access(policy protocol.Policy) tools.Access {
	a := tools.Access{Workspace: h.cfg.Meta.Workspace, Network: policy.Network, Unconfined: !policy.Jail}
	// A bad allow list fails the child's start, before any call.
	if np, err := h.proxyFor(policy); err == nil && np != nil {
		a.Proxy = np
	}
	if policy.Jail {
		a.ReadWrite, a.ReadOnly = h.roots(policy)
		// The host's own files, should a root hold them (a Vis home inside
		// the workspace).
		a.Hidden = []string{h.cfg.Attachments, filepath.Join(h.cfg.Folder.Dir, "shells"), h.cfg.Folder.SocketPath(), h.cfg.Folder.KeyPath()}
		// What the child keeps read-only (the same shield); where it
		// cannot be made, the child does not start, and no call comes.
		a.Shield, _ = jail.NewShield(a.ReadWrite, h.cfg.Own, h.cfg.OwnInner, h.cfg.Sessions,
			[]string{h.cfg.Folder.StateDir(), h.cfg.Folder.TempDir()})
		if h.cfg.CommandPython != nil {
			var dirs []string
			a.Python, dirs = h.cfg.CommandPython()
			a.ReadOnly = append(a.ReadOnly, dirs...)
		}
	}
	return a
}

// toolOps adds cat, grep and patch, run under the child's access.
func (h *Host) toolOps(ops map[protocol.Call]hostcalls.Op, policy protocol.Policy) {
	a := h.access(policy)
	hostcalls.ToolOps(a, ops)
	ops[protocol.CallPatch] = h.patchOp(a)
}
