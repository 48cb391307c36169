package client

import (
	"context"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/journal"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestListStopped: a session no host runs is listed stopped, with no
// processes, and a folder without a meta is left out.
func TestListStopped(t *testing.T) {
	root := t.TempDir()
	if rows, err := List(root); err != nil || rows == nil || len(rows) != 0 {
		t.Fatalf("no sessions: %v, %#v (want an empty list, not null)", err, rows)
	}
	m := session.Meta{Name: "s", Workspace: t.TempDir()}
	if _, err := session.Create(root, m); err != nil {
		t.Fatal(err)
	}
	rows, err := List(root)
	if err != nil || len(rows) != 1 {
		t.Fatalf("one session: %v, %+v", err, rows)
	}
	if r := rows[0]; r.Name != "s" || r.Workspace != m.Workspace || r.State != "stopped" || r.HostPID != 0 || r.Jail != nil || r.ForkOf != "" {
		t.Errorf("row: %+v", r)
	}
}

// TestLog: a session that ran no block passes none, as does a journal
// with none yet; the latest n come oldest first, and follow ends with
// its context.
func TestLog(t *testing.T) {
	m := session.Meta{Name: "s", Workspace: t.TempDir()}
	f, err := session.Create(t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Folder: f, Meta: m}
	var got []string
	each := func(e journal.Entry) error { got = append(got, e.Code); return nil }
	if n, err := s.Log(context.Background(), 20, false, each); n != 0 || err != nil {
		t.Fatalf("no journal: %d, %v", n, err)
	}
	j, err := journal.Create(f.JournalFile(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, code := range []string{"a = 1", "b = 2", "c = 3"} {
		if _, err := j.Add(journal.Entry{Client: "run", Code: code, Status: "ok", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Log(context.Background(), 2, false, each); n != 2 || err != nil || len(got) != 2 || got[0] != "b = 2" || got[1] != "c = 3" {
		t.Errorf("the latest 2: %d, %v, %q", n, err, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*followEvery)
	defer cancel()
	got = nil
	if n, err := s.Log(ctx, 0, true, each); n != 3 || err != nil {
		t.Errorf("follow, all: %d, %v, %q", n, err, got)
	}
}
