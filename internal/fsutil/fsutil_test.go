package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRegular: a regular file within the limit is read; a link, a
// FIFO (without waiting for a writer), a device and a larger file are not.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("12345"), 0o600)
	if data, err := ReadRegular(file, 5); err != nil || string(data) != "12345" {
		t.Fatalf("a regular file: %q %v", data, err)
	}
	if _, err := ReadRegular(file, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	os.Symlink(file, filepath.Join(dir, "link"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	for _, name := range []string{"link", "zero", "fifo", "missing"} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadRegular(filepath.Join(dir, name), 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was read", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the read waits", name)
		}
	}
	if _, err := ReadRegular("/dev/zero", 10); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a device: %v", err)
	}
}

func TestPlainName(t *testing.T) {
	for s, want := range map[string]bool{"p-0a1b": true, "pod.name_2": true, "": false, ".hidden": false, "-o": false,
		"a/b": false, "a b": false, "é": false, "x\x00": false} {
		if got := PlainName(s, 16); got != want {
			t.Errorf("PlainName(%q) = %v, want %v", s, got, want)
		}
	}
	if PlainName("abcdefghijklmnopq", 16) {
		t.Error("a name longer than max is plain")
	}
}
