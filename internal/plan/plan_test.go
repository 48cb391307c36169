package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A plan is its fields, each ended by a NUL, then "end"; a folder keeps
// the newest maxPlans.
func TestWriterSave(t *testing.T) {
	dir := t.TempDir()
	// A missing path is observed as "-" (a file's change time is always
	// recent in a test).
	missing := filepath.Join(t.TempDir(), "missing")
	var b Writer
	b.Field("magic")
	b.List([]string{"a", "b"})
	if err := b.Observe([]string{missing}); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(dir, "p"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "magic\x002\x00a\x00b\x001\x00" + missing + "\x00-\x00end\x00"; string(data) != want {
		t.Errorf("plan %q, want %q", data, want)
	}
	for i := range maxPlans + 3 {
		var p Writer
		if err := p.Save(dir, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != maxPlans {
		t.Errorf("%d plans kept, want %d", len(entries), maxPlans)
	}
}

// A path changed within the racy window is not observed: its signature
// could not tell a change in the same tick.
func TestObserveRacy(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var b Writer
	if err := b.Observe([]string{fresh}); err == nil {
		t.Error("a path changed just now was observed")
	}
}
