package transfer

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestForkCopiesOnlyRegularFiles: a fork copies the snapshot (or a
// history entry), the counter and the spill files, regular files only:
// a link or a folder the jailed code put there, and temp files, stay out.
func TestForkCopiesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	src, err := session.Create(sessions, session.Meta{Name: "a", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	state := src.StateDir()
	files := map[string]string{"snapshot.bin": "VISSNAP1 now", "blocks": "3\n", "spill/p-1": "one", "history/1-0": "VISSNAP1 then",
		"spill/p-2.tmp-1-ab": "partial"}
	for name, data := range files {
		p := filepath.Join(state, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/etc/passwd", filepath.Join(state, "spill", "p-link"))
	os.Mkdir(filepath.Join(state, "spill", "p-dir"), 0o700)
	srcMeta := session.Meta{Name: "a", Workspace: "/w"}
	fork := func(name string, at int) error {
		return Fork(Source{Folder: src, Meta: srcMeta, MaxStateBytes: 1 << 20}, at, Target{Sessions: sessions, Meta: session.Meta{Name: name, Workspace: "/w"}})
	}
	if err := fork("b", 1); err != nil {
		t.Fatal(err)
	}
	b := session.Find(sessions, session.Meta{Name: "b", Workspace: "/w"})
	var got []string
	filepath.WalkDir(b.StateDir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(b.StateDir(), p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	if strings.Join(got, " ") != "blocks snapshot.bin spill/p-1" {
		t.Errorf("the fork's state: %v", got)
	}
	if data, _ := os.ReadFile(filepath.Join(b.StateDir(), "snapshot.bin")); string(data) != "VISSNAP1 then" {
		t.Errorf("the fork's snapshot: %q", data)
	}
	if m, err := b.Meta(); err != nil || m.ForkOf == nil || m.ForkOf.String() != "a at block 1" {
		t.Errorf("the fork's meta: %+v %v", m, err)
	}
	if err := fork("c", 2); err == nil || !strings.Contains(err.Error(), "block 2 is not in its history") {
		t.Errorf("a fork at a block not kept: %v", err)
	}
	if _, err := os.Lstat(session.Find(sessions, session.Meta{Name: "c", Workspace: "/w"}).Dir); !os.IsNotExist(err) {
		t.Errorf("a failed fork left its session: %v", err)
	}
	if err := fork("d", 0); err != nil {
		t.Fatal(err)
	}
	if err := fork("d", 0); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a fork onto an existing session: %v", err)
	}
}
