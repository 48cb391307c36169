package client

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engine puts a docker on PATH that runs script, and dials it.
func engine(t *testing.T, script string) *remoteConn {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := &Remote{Target: Target{URL: "docker://c", Scheme: "docker", Container: "c", Program: "vis-agent"}}
	c, err := r.dialEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// All the engine wrote is read, even when it has exited before the
// reader got to the end (Wait closing the pipe under the reader lost the
// last answer of a connection, as "file already closed").
func TestRemoteConnReadsPastExit(t *testing.T) {
	const size = 60000 // within a pipe's buffer: the engine exits unread
	for i := range 5 {
		c := engine(t, "head -c 60000 /dev/zero")
		<-c.waited
		b, err := io.ReadAll(c)
		if err != nil || len(b) != size {
			t.Fatalf("round %d: read %d of %d bytes: %v", i, len(b), size, err)
		}
	}
}

// A process the engine left behind holding its output (a backgrounded ssh
// master) does not keep the reader waiting once the engine has exited.
func TestRemoteConnEndsWithTheEngine(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	c := engine(t, "sleep 60 & echo $! >"+pid+"; printf bye")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pid); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
	})
	started := time.Now()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "bye" {
		t.Fatalf("read %q: %v", b, err)
	}
	if took := time.Since(started); took > 30*time.Second {
		t.Errorf("the read ended %s after the engine", took)
	}
}
