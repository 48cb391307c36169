package tui

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
)

// TestWatchHostileStamp: the attachments' stamp looks at the store's
// files without opening them: a FIFO and a link to /dev/zero do not hang
// the REPL's look.
func TestWatchHostileStamp(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	os.MkdirAll(store, 0o700)
	syscall.Mkfifo(filepath.Join(store, "attachments.db"), 0o600)
	os.Symlink("/dev/zero", filepath.Join(store, "attachments.db-wal"))
	done := make(chan string, 1)
	go func() { done <- attachments.Stamp(store) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the attachments' stamp hangs on a FIFO")
	}
}
