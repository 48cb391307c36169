package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/check"
)

func TestTree(t *testing.T) {
	f := newFixture(t)
	testenv.WriteTree(t, f.ws, map[string]string{
		"pkg/mod.py": "x = 1\n", "pkg/data.json": "{}", ".git/config.json": "{}", "node_modules/m/i.json": "{}",
	})
	if err := os.Symlink(filepath.Join(filepath.Dir(f.secret), "sub"), filepath.Join(f.ws, "pkg", "out")); err != nil {
		t.Fatal(err)
	}
	tree, err := OpenTree(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	data, st, err := tree.ReadFile("pkg/mod.py", 1<<20)
	if err != nil || string(data) != "x = 1\n" {
		t.Fatalf("read: %q %v", data, err)
	}
	// No symlink is followed, last or on the way; no path leaves.
	for _, rel := range []string{"escape", "inside", "escape-dir/x", "pkg/out/x", "../outside/secret", "/etc/passwd", "pkg/../../outside/secret"} {
		if _, _, err := tree.ReadFile(rel, 1<<20); err == nil {
			t.Errorf("read %s: no error", rel)
		}
	}
	// The walk of kernels without openat2 is fsutil's, tested there
	// (TestOpenEach) for the same links.
	if _, _, err := tree.ReadFile("pkg", 1<<20); err == nil {
		t.Error("read a folder: no error")
	}
	if _, _, err := tree.ReadFile("a.txt", 3); err == nil || !strings.Contains(err.Error(), "over the 3") {
		t.Errorf("read past the cap: %v", err)
	}

	// Replace only the file that was read, unchanged since.
	if err := tree.Replace("pkg/mod.py", "x = 2\n", st); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "pkg/mod.py")); string(b) != "x = 2\n" {
		t.Fatalf("replaced: %q", b)
	}
	if err := tree.Replace("pkg/mod.py", "x = 3\n", st); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("replace a file changed since it was read: %v", err)
	}

	// Changed: files modified since, checked kinds only, skipped folders
	// and symlinks left out, bounded.
	since := time.Now().Add(-time.Minute)
	want := func(rel string) bool { return check.KindOf(rel) != "" }
	skip := func(name string) bool { return name == ".git" || name == "node_modules" }
	files, complete := tree.Changed(since, 1000, want, skip)
	slices.Sort(files)
	if !complete || !slices.Equal(files, []string{"pkg/data.json", "pkg/mod.py"}) {
		t.Fatalf("changed: %v %v", files, complete)
	}
	if files, _ := tree.Changed(time.Now().Add(time.Minute), 1000, want, skip); len(files) != 0 {
		t.Fatalf("changed in the future: %v", files)
	}
	if _, complete := tree.Changed(since, 3, want, skip); complete {
		t.Fatal("a bound of 3 entries did not stop the walk")
	}
}
