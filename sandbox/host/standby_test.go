package host

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

func TestValidPreload(t *testing.T) {
	long := strings.Repeat("a", 101)
	got := validPreload([]string{"numpy", "_private", "café", "", "1abc", "a.b", "os; x", long, "pandas2"})
	if want := []string{"numpy", "_private", "café", "pandas2"}; !slices.Equal(got, want) {
		t.Errorf("validPreload = %q, want %q", got, want)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = "m" + strings.Repeat("x", i)
	}
	if n := len(validPreload(many)); n != maxPreload {
		t.Errorf("%d names kept, want %d", n, maxPreload)
	}
	if !covers([]string{"numpy", "pandas"}, []string{"pandas"}) || covers([]string{"numpy"}, []string{"numpy", "scipy"}) {
		t.Error("covers")
	}
}

// sleeper is a process standing for a standby child: it waits until it is
// killed.
func sleeper(t *testing.T) *proc {
	t.Helper()
	var ends [3]*os.File
	var readers [3]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		readers[i], ends[i] = r, w
	}
	cmd := exec.Command("sleep", "600")
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = ends[1], ends[2], []*os.File{ends[0]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	for _, w := range ends {
		w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	link, _ := net.Pipe()
	calls, _ := net.Pipe()
	c := newProc(Config{Log: io.Discard}, &spawned{process: cmd.Process, link: link, calls: calls, stacks: readers[0], stdout: readers[1], stderr: readers[2]},
		func(net.Conn) *hostcalls.Server { return nil })
	t.Cleanup(c.end)
	return c
}

// TestStandbyOfAnOlderShield: a standby whose shield was computed before
// a git name appeared at the top of a root is never swapped in, also when
// the watch has not told the host of it (it lost the folder's watch, or
// reads its events late under load): it is ended, and the change counted
// and told; a standby started after the change is swapped in.
func TestStandbyOfAnOlderShield(t *testing.T) {
	root := t.TempDir()
	h := &Host{turn: make(chan struct{}, 1), done: make(chan struct{}), cfg: Config{Log: io.Discard}}
	w, err := newGitWatch(h.gitMark)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	h.git.watch = w
	// The root is known, but its watch is lost: no event comes.
	w.mu.Lock()
	w.dirs[root], w.roots[root] = -1, true
	for _, p := range gitPaths(root) {
		w.see(p)
	}
	w.mu.Unlock()
	policy := protocol.Policy{Jail: true}
	standbyOf := func(gen int) *standby {
		sb := &standby{policy: policy, ready: make(chan struct{}), gen: gen, c: sleeper(t)}
		close(sb.ready)
		return sb
	}
	old := standbyOf(0)
	h.warm.sb = old
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := h.takeStandby(policy); c != nil {
		t.Fatalf("the standby started before %s/.git appeared was swapped in", root)
	}
	select {
	case <-old.c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby was not ended")
	}
	h.mu.Lock()
	changes, told := h.git.changes, h.git.told
	h.mu.Unlock()
	if want := filepath.Join(root, ".git") + " appeared"; changes != 1 || len(told) != 1 || told[0].what != want {
		t.Errorf("%d changes told %v, want 1: %q", changes, told, want)
	}
	h.warm.sb = standbyOf(1)
	if c := h.takeStandby(policy); c == nil || c.gitGen != 1 {
		t.Errorf("the standby started after the change was not swapped in")
	}
}
