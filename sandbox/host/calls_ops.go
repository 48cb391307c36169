package host

import (
	"context"
	"encoding/json"
	"net"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// serveCalls serves the host calls of a child started under policy, for
// this host's session, until the child's end closes; an error says why
// the host closed it.
func (h *Host) serveCalls(conn net.Conn, policy protocol.Policy) error {
	s := &callServer{conn: conn, ops: map[string]op{}, maxPayload: h.attachLimit()}
	s.ops["session"] = h.sessionOp(policy)
	h.attachmentOps(s.ops)
	h.toolOps(s.ops, policy)
	h.shellOps(s.ops, policy)
	s.ops["install"] = h.installOp(policy)
	return s.serve()
}

// sessionOp answers who is calling, as the host knows it: the session it
// serves and the jail its child was started under.
func (h *Host) sessionOp(policy protocol.Policy) op {
	return func(ctx context.Context, args json.RawMessage, payload []byte) (reply, error) {
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
