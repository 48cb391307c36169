package client

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// List describes the sessions under root (this machine's): what `sandbox
// list` shows, and connect answers to OpList. A folder whose meta cannot
// be read is left out.
func List(root string) ([]protocol.ListRow, error) {
	folders, err := session.All(root)
	if err != nil {
		return nil, err
	}
	rows := []protocol.ListRow{}
	for _, f := range folders {
		m, err := f.Meta()
		if err != nil {
			continue
		}
		rec := f.Host()
		row := protocol.ListRow{Name: m.Name, Workspace: m.Workspace, State: "stopped", SavedNames: max(rec.Saved, 0)}
		row.SnapshotBytes, row.SnapshotAtLeast = f.SnapshotSize()
		if m.ForkOf != nil {
			row.ForkOf = m.ForkOf.String()
		}
		if rec.Policy != nil {
			row.Jail, row.Network = &rec.Policy.Jail, &rec.Policy.Network
			if rec.Policy.Proxied() {
				row.Hosts = rec.Policy.Hosts
			}
		}
		if f.Running() {
			row.State, row.HostPID, row.ChildPID = "running", rec.HostPID, rec.ChildPID
			row.IdleSeconds = max(0, time.Since(time.UnixMilli(rec.LastUse)).Milliseconds()/1000)
			row.KernelMissing = rec.KernelMissing
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Metas are the sessions under root as their folders name them (a
// folder whose meta cannot be read is left out): what completion offers,
// without List's look at each folder's size and host.
func Metas(root string) ([]session.Meta, error) {
	folders, err := session.All(root)
	var metas []session.Meta
	for _, f := range folders {
		if m, err := f.Meta(); err == nil {
			metas = append(metas, m)
		}
	}
	return metas, err
}

// Existing is the client of session m under root, which must exist: no
// host is started for it.
func Existing(root string, m session.Meta) (*Session, error) {
	f := session.Find(root, m)
	if _, err := os.Stat(f.Dir); err != nil {
		return nil, fmt.Errorf("no session %q for workspace %s", m.Name, m.Workspace)
	}
	return &Session{Folder: f, Meta: m}, nil
}

// ListRemote is `vis-agent sandbox list` on t: the rows its connect
// answers.
func ListRemote(t Target, mux *remotemux.Config) ([]protocol.ListRow, error) {
	s := OpenRemote(t, session.Meta{}, nil, mux)
	ev, err := s.remoteCall(protocol.Request{Op: protocol.OpList}, nil)
	if err != nil {
		return nil, err
	}
	var rows []protocol.ListRow
	if err := json.Unmarshal([]byte(ev.Data), &rows); err != nil {
		return nil, err
	}
	return rows, nil
}
