package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// swapper exchanges two names of a folder (renameat2 RENAME_EXCHANGE:
// atomic, as a block racing the host would) until stop is called.
func swapper(t *testing.T, dir, a, b string) (stop func() int64) {
	t.Helper()
	var done atomic.Bool
	var n atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	stop = func() int64 { once.Do(func() { done.Store(true); wg.Wait() }); return n.Load() }
	t.Cleanup(func() { stop() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, a), unix.AT_FDCWD, filepath.Join(dir, b), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			n.Add(1)
		}
	}()
	return stop
}

// TestToolsRaceASwappedFolder: a block swaps a folder of the workspace
// with a symlink to a folder outside the roots (or with a symlink to a
// hidden folder inside them), as fast as it can, while the host's file
// tools read and write through that folder. No tool ever reads the
// secret, lists a name from outside, or writes outside.
func TestToolsRaceASwappedFolder(t *testing.T) {
	base := t.TempDir()
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	hidden := filepath.Join(ws, ".host")
	testenv.WriteTree(t, base, map[string]string{
		"ws/d/f.txt":            "inside\n",
		"ws/d/sub/g.txt":        "inside\n",
		"ws/d/.gitignore":       "nothing\n",
		"ws/.host/f.txt":        "HIDDENSECRET\n",
		"ws/.host/sub/g.txt":    "HIDDENSECRET\n",
		"outside/f.txt":         "TOPSECRET\n",
		"outside/sub/g.txt":     "TOPSECRET\n",
		"outside/sub/only-here": "TOPSECRET\n",
		"outside/.gitignore":    "*.txt\n",
	})
	for _, target := range []string{out, hidden} {
		t.Run(filepath.Base(target), func(t *testing.T) {
			link := filepath.Join(ws, "link")
			os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			a := Access{Workspace: ws, ReadWrite: []string{ws}, Hidden: []string{hidden}}
			stop := swapper(t, ws, "d", "link")
			defer func() {
				stop()
				// Back as it was: d a folder, link the symlink.
				if st, err := os.Lstat(filepath.Join(ws, "d")); err == nil && st.Mode()&os.ModeSymlink != 0 {
					unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "d"), unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
			}()
			ctx := context.Background()
			deadline := time.Now().Add(3 * time.Second)
			var reads, greps, patches int
			for time.Now().Before(deadline) {
				if r, err := Cat(ctx, a, "d/f.txt", 0, 0); err == nil {
					reads++
					if strings.Contains(r.Text, "SECRET") {
						t.Fatalf("cat read through the swapped folder: %q", r.Text)
					}
				}
				if r, err := Cat(ctx, a, "d/sub/g.txt", 0, 0); err == nil && strings.Contains(r.Text, "SECRET") {
					t.Fatalf("cat read through the swapped folder: %q", r.Text)
				}
				if r, err := Grep(ctx, a, "SECRET|inside|only", "d", "", 0); err == nil {
					greps++
					if strings.Contains(r.Text, "SECRET") || strings.Contains(r.Text, "only-here") {
						t.Fatalf("grep read through the swapped folder: %q", r.Text)
					}
					// A file it could not read is one it listed in the
					// folder the symlink leads to.
					if strings.Contains(r.Note, "could not be read") || strings.Contains(r.Note, ".gitignore") {
						t.Fatalf("grep listed the folder the symlink leads to: %q", r.Note)
					}
				}
				if _, err := Patch(a, "d/f.txt", "inside", "inside"); err == nil {
					patches++
				}
			}
			n := stop()
			t.Logf("%d swaps; %d cats, %d greps, %d patches got through", n, reads, greps, patches)
			for _, f := range []string{filepath.Join(out, "f.txt"), filepath.Join(hidden, "f.txt")} {
				data, _ := os.ReadFile(f)
				if !strings.Contains(string(data), "SECRET") {
					t.Errorf("%s was written: %q", f, data)
				}
			}
		})
	}
}

// TestAccessOpenBeneath: open takes a canonical path only beneath the
// root that holds it, refusing a symlink anywhere below the root and a
// path no root holds.
func TestAccessOpenBeneath(t *testing.T) {
	f := newFixture(t)
	if r, err := f.a.open(filepath.Join(f.ws, "a.txt"), unix.O_RDONLY); err != nil {
		t.Fatalf("a file of the workspace: %v", err)
	} else {
		r.Close()
	}
	if d, err := f.a.open(f.ws, unix.O_PATH|unix.O_DIRECTORY); err != nil {
		t.Fatalf("the root itself: %v", err)
	} else {
		d.Close()
	}
	_, err := f.a.open(filepath.Join(f.ws, "escape-dir", "x"), unix.O_RDONLY)
	wantErr(t, err, "too many levels of symbolic links")
	_, err = f.a.open(f.secret, unix.O_RDONLY)
	wantErr(t, err, "outside the session's roots")
	if got := f.a.rootOf(filepath.Join(f.ro, "lib.txt")); got != f.ro {
		t.Errorf("the root of a file of the read-only root: %q", got)
	}
}
