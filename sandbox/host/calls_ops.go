package host

import (
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
	ops[protocol.CallSession] = hostcalls.SessionOp(h.cfg.Meta.Name, h.cfg.Meta.Workspace, policy)
	hostcalls.AttachmentOps(&h.store, h.cfg.Meta.Name, attachments.Limits{MaxBytes: h.attachLimit(), SessionMaxBytes: h.cfg.AttachQuotaBytes},
		h.noteAttached, ops, streams)
	h.toolOps(ops, policy)
	h.shellOps(ops, policy)
	ops[protocol.CallInstall] = h.installOp(policy)
	ops[protocol.CallJournal] = hostcalls.JournalOp(h.lastBlocks)
	return ops, streams
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
