package host

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestCheckDisk: past the budget, checkDisk refuses, naming what holds
// the space; the measure is trusted for a moment, the package folder's
// until install() changed it.
func TestCheckDisk(t *testing.T) {
	dir := t.TempDir()
	h := &Host{cfg: Config{Folder: session.Folder{Dir: dir}, DiskBytes: 1 << 20}}
	fill := func(rel string, n int) {
		t.Helper()
		data := make([]byte, n)
		rand.Read(data)
		os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale := func() { h.disk.measured = time.Time{} }
	fill("journal.db", 100<<10)
	if err := h.checkDisk("shell"); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	fill("tmp/a/fill", 2<<20)
	if err := h.checkDisk("shell"); err != nil {
		t.Fatalf("a measure of a moment ago: %v", err)
	}
	stale()
	err := h.checkDisk("shell")
	if hostcalls.ErrorType(err) != "OSError" || !strings.Contains(err.Error(), "shell: the session's disk budget is spent: its folder "+dir+" holds 2.1 MiB (tmp 2.0 MiB, journal.db 10") ||
		!strings.Contains(err.Error(), "past sandbox.max_disk_mb = 1;") {
		t.Fatalf("past the budget: %v", err)
	}
	os.RemoveAll(filepath.Join(dir, "tmp"))
	fill("packages/3.13/big", 2<<20) // install() wrote there
	h.disk.forget()
	if err := h.checkDisk("install"); err == nil || !strings.Contains(err.Error(), "(packages 2.0 MiB") {
		t.Fatalf("the package folder: %v", err)
	}
	os.RemoveAll(filepath.Join(dir, "packages"))
	stale()
	if err := h.checkDisk("install"); err == nil {
		t.Fatal("the package folder was walked again without an install")
	}
	h.disk.forget()
	if err := h.checkDisk("install"); err != nil {
		t.Fatalf("after an install: %v", err)
	}
}
