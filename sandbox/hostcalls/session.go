package hostcalls

import (
	"context"
	"encoding/json"

	"github.com/vis-agent/vis-agent/sandbox/journal"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// SessionOp answers who is calling, as the host knows it: the session it
// serves (name, workspace) and the jail its child was started under
// (policy).
func SessionOp(name, workspace string, policy protocol.Policy) Op {
	return func(ctx context.Context, args json.RawMessage) (Reply, error) {
		if err := DecodeArgs(args, &struct{}{}); err != nil {
			return Reply{}, err
		}
		return Reply{Result: map[string]any{
			"name": name, "workspace": workspace,
			"jailed": policy.Jail, "network": policy.Network,
		}}, nil
	}
}

// maxJournalRead bounds the blocks one read_session() reads: each may
// hold MaxOutput of output.
const maxJournalRead = 200

// JournalOp is read_session(n) of the session's code: its newest blocks
// from the journal, which the jailed code cannot open itself; last reads
// them (the host writes the journal).
func JournalOp(last func(n int) ([]journal.Entry, error)) Op {
	return func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			N int `json:"n"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if in.N < 1 || in.N > maxJournalRead {
			return Reply{}, Errorf("ValueError", "n is how many of the latest blocks to read, 1 to %d, not %d", maxJournalRead, in.N)
		}
		entries, err := last(in.N)
		if err != nil {
			return Reply{}, Errorf("RuntimeError", "%v", err)
		}
		if entries == nil {
			entries = []journal.Entry{}
		}
		return Reply{Result: entries}, nil
	}
}
