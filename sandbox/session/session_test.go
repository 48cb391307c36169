package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"default", "a.b_c-1", strings.Repeat("n", 64)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", strings.Repeat("n", 65), "é"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestWorkspacesHaveTheirOwnSessions(t *testing.T) {
	a, b := Find("/r", Meta{Name: "default", Workspace: "/a"}).ID(), Find("/r", Meta{Name: "default", Workspace: "/b"}).ID()
	if a == b || !strings.HasPrefix(a, "default-") {
		t.Errorf("ids: %s %s", a, b)
	}
}

// A folder deeper than sun_path holds is reached through /proc/self/fd.
func TestSocketOfADeepFolder(t *testing.T) {
	root := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	f, err := Create(root, Meta{Name: "s", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.SocketPath()) <= MaxSocketPath {
		t.Fatalf("path not deep enough: %d", len(f.SocketPath()))
	}
	ln, err := f.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := f.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
		t.Fatalf("read %q: %v", buf, err)
	}
	if st, err := os.Stat(f.SocketPath()); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v %v", st, err)
	}
	if st, _ := os.Stat(f.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("session folder mode %v", st.Mode().Perm())
	}
}

func TestAliveLock(t *testing.T) {
	f, err := Create(t.TempDir(), Meta{Name: "s", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Running() {
		t.Fatal("running before a host")
	}
	l, err := f.LockAlive(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.LockAlive(50 * time.Millisecond); err == nil {
		t.Error("a second host got the lock")
	}
	if !f.Running() {
		t.Error("not running with the lock held")
	}
	l.Release()
	if !f.WaitStopped(time.Second) || f.Running() {
		t.Error("running after the host let go")
	}
}

func TestStoppedReasonIsTakenOnce(t *testing.T) {
	f, _ := Create(t.TempDir(), Meta{Name: "s", Workspace: "/w"})
	f.WriteStopped("idle")
	if r := f.TakeStopped(); r != "idle" {
		t.Errorf("reason %q", r)
	}
	if r := f.TakeStopped(); r != "" {
		t.Errorf("reason taken twice: %q", r)
	}
}
