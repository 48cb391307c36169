package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestSandboxRunPathLongOutput: a block printing 200 MB without a newline
// through the `sandbox run` fast path (sandbox/client/runpath) of a remote
// session (a stand-in docker engine, so the events come through the
// multiplexer in pieces that end anywhere in a message) reaches stdout
// whole, and the client's memory stays bounded. It kept every byte it had
// read until a read happened to end at a message's end: 190 MiB here.
func TestSandboxRunPathLongOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.First(t))
	bin := t.TempDir()
	if err := os.Symlink(sb.bin, filepath.Join(bin, "vis-agent")); err != nil {
		t.Fatal(err)
	}
	// docker exec -i NAME CMD...: the command, here.
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\nshift 3\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, kv := range sb.env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			sb.env[i] = "PATH=" + bin + ":" + path
		}
	}
	noMuxLeft(t, sb)
	const code = "import sys\nfor i in range(n): sys.stdout.write('x' * 1_000_000)"
	sb.ok("run", "--host", "docker://box", "--session", "long", "--workspace", sb.ws, "-c", "n = 1")
	sb.ok("run", "--host", "docker://box", "--session", "long", "--workspace", sb.ws, "-c", code)
	_, ino := sb.runPlan()
	sb.ok("run", "--host", "docker://box", "--session", "long", "--workspace", sb.ws, "-c", "n = 200")
	cmd := sb.command("run", "--host", "docker://box", "--session", "long", "--workspace", sb.ws, "-c", code)
	// A reader slower than the session: the client's reads then end
	// anywhere in a message.
	var out slowWriter
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not the client's rusage: see watchPeak.
	peakOf := watchPeak(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, now := sb.runPlan(); now != ino {
		t.Fatal("the plan was saved again: the block went through Go")
	}
	if out.n != 200_000_000 {
		t.Errorf("printed %d bytes, want 200000000", out.n)
	}
	peak := peakOf()
	t.Logf("the client's peak memory: %d MiB", peak)
	if peak > 48 {
		t.Errorf("the client peaked at %d MiB while passing 200 MB on", peak)
	}
}

// slowWriter counts bytes, a moment per write.
type slowWriter struct{ n int }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(200 * time.Microsecond)
	w.n += len(p)
	return len(p), nil
}
