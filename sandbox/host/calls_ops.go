package host

import (
	"context"
	"encoding/json"
	"net"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// callServer is the server of the host calls of a child started under
// policy, on conn, for this host's session (serve it to start).
func (h *Host) callServer(conn net.Conn, policy protocol.Policy) *hostcalls.Server {
	ops, streams := h.callOps(policy)
	return hostcalls.NewServer(conn, ops, streams, h.attachLimit())
}

// callOps are the host calls of a child started under policy, by name:
// those without a payload, and those with one.
func (h *Host) callOps(policy protocol.Policy) (map[protocol.Call]hostcalls.Op, map[protocol.Call]hostcalls.StreamOp) {
	ops, streams := map[protocol.Call]hostcalls.Op{}, map[protocol.Call]hostcalls.StreamOp{}
	ops[protocol.CallSession] = h.sessionOp(policy)
	hostcalls.AttachmentOps(&h.store, h.cfg.Meta.Name, attachments.Limits{MaxBytes: h.attachLimit(), SessionMaxBytes: h.cfg.AttachQuotaBytes},
		h.noteAttached, ops, streams)
	h.toolOps(ops, policy)
	h.shellOps(ops, policy)
	ops[protocol.CallInstall] = h.installOp(policy)
	ops[protocol.CallJournal] = h.journalOp
	return ops, streams
}

// sessionOp answers who is calling, as the host knows it: the session it
// serves and the jail its child was started under.
func (h *Host) sessionOp(policy protocol.Policy) hostcalls.Op {
	return func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		if err := hostcalls.DecodeArgs(args, &struct{}{}); err != nil {
			return hostcalls.Reply{}, err
		}
		return hostcalls.Reply{Result: map[string]any{
			"name": h.cfg.Meta.Name, "workspace": h.cfg.Meta.Workspace,
			"jailed": policy.Jail, "network": policy.Network,
		}}, nil
	}
}

// roots are the folders a jailed session's tools may write and read: the
// child's own (the workspace, the session's state and temp folders, the
// policy's extra roots).
func (h *Host) roots(policy protocol.Policy) (rw, ro []string) {
	rw = append([]string{h.cfg.Meta.Workspace, h.cfg.Folder.StateDir(), h.cfg.Folder.TempDir()}, policy.Roots...)
	return rw, append([]string(nil), policy.ReadOnlyRoots...)
}

// attachLimit is the largest payload a host call may carry: an
// attachment's limit.
func (h *Host) attachLimit() int64 {
	if h.cfg.AttachMaxBytes > 0 {
		return h.cfg.AttachMaxBytes
	}
	return attachments.DefaultMaxBytes
}

// noteAttached adds d to the running block's result (a thread that
// attaches between blocks adds to none).
func (h *Host) noteAttached(d attachments.Descriptor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.attached != nil && len(h.attached) < maxListed {
		h.attached = append(h.attached, protocol.Attached{ID: d.ID, Filename: d.Filename, Version: d.Version, Kind: d.Kind,
			MediaType: d.MediaType, Size: d.Size})
	}
}

// maxListed bounds the attachments one block's result lists.
const maxListed = 1000
