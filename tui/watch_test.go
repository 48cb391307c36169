package tui

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestWatchHostileCounter: the block counter is in the state folder, which
// the jailed code writes; replaced by a FIFO, a link to /dev/zero or a
// huge file, the REPL's look at it returns at once, with no counter, and
// reads no more than a few bytes.
func TestWatchHostileCounter(t *testing.T) {
	dir := t.TempDir()
	s := &client.Session{Folder: session.Folder{Dir: dir}}
	counter := s.Folder.BlocksFile()
	if err := os.MkdirAll(filepath.Dir(counter), 0o700); err != nil {
		t.Fatal(err)
	}
	look := func(what string) string {
		t.Helper()
		got := make(chan string, 1)
		go func() { got <- blocksStamp(s) }()
		select {
		case stamp := <-got:
			return stamp
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the look at the counter hangs", what)
		}
		return ""
	}
	os.WriteFile(counter, []byte("00000000000000000007\n"), 0o600)
	if got := look("a counter"); got != "00000000000000000007" {
		t.Errorf("a counter reads %q", got)
	}
	for what, plant := range map[string]func() error{
		"a FIFO":           func() error { return syscall.Mkfifo(counter, 0o600) },
		"a link to a zero": func() error { return os.Symlink("/dev/zero", counter) },
		"a huge file":      func() error { return os.WriteFile(counter, []byte(strings.Repeat("7", 10<<20)), 0o600) },
	} {
		os.Remove(counter)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if got := look(what); got != "" {
			t.Errorf("%s reads as %d bytes of counter", what, len(got))
		}
	}
	// The attachments' stamp looks at the store's files without opening
	// them.
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
