package host

import (
	"context"
	"encoding/json"
	"net"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// callServer is the server of the host calls of a child started under
// policy, on conn, for this host's session (serve it to start).
func (h *Host) callServer(conn net.Conn, policy protocol.Policy) *callServer {
	s := &callServer{conn: conn, ops: map[protocol.Call]op{}, streams: map[protocol.Call]streamOp{}, maxPayload: h.attachLimit()}
	s.ops[protocol.CallSession] = h.sessionOp(policy)
	h.attachmentOps(s.ops, s.streams)
	h.toolOps(s.ops, policy)
	h.shellOps(s.ops, policy)
	s.ops[protocol.CallInstall] = h.installOp(policy)
	s.ops[protocol.CallJournal] = h.journalOp
	return s
}

// sessionOp answers who is calling, as the host knows it: the session it
// serves and the jail its child was started under.
func (h *Host) sessionOp(policy protocol.Policy) op {
	return func(ctx context.Context, args json.RawMessage) (reply, error) {
		if err := decodeArgs(args, &struct{}{}); err != nil {
			return reply{}, err
		}
		return reply{result: map[string]any{
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
