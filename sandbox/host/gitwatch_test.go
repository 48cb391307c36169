package host

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// TestGitWatch: a .git or .gitmodules made or moved in at the top of a
// watched folder is reported with its path, other names and deeper ones
// are not, a folder no longer watched is not, one moved away and back is,
// and a missing folder is no error.
func TestGitWatch(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	got := make(chan string, 16)
	w, err := newGitWatch(func(events []gitEvent) func() {
		for _, e := range events {
			got <- e.path + "|" + e.what
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.watch([]string{a, b, filepath.Join(a, "missing")}); err != nil {
		t.Fatal(err)
	}
	expect := func(want string) {
		t.Helper()
		select {
		case g := <-got:
			if g != want {
				t.Errorf("reported %q, want %q", g, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("nothing reported, want %q", want)
		}
	}
	quiet := func() {
		t.Helper()
		select {
		case g := <-got:
			t.Errorf("reported %q", g)
		case <-time.After(100 * time.Millisecond):
		}
	}
	testenv.WriteTree(t, a, map[string]string{"notes.txt": "", "sub/.git/config": "", ".github/x": ""})
	quiet()
	os.Mkdir(filepath.Join(a, ".git"), 0o755)
	expect(filepath.Join(a, ".git") + "|" + filepath.Join(a, ".git") + " appeared")
	os.WriteFile(filepath.Join(b, "m"), nil, 0o644)
	os.Rename(filepath.Join(b, "m"), filepath.Join(b, ".gitmodules"))
	expect(filepath.Join(b, ".gitmodules") + "|" + filepath.Join(b, ".gitmodules") + " appeared")
	if err := w.watch([]string{a}); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(b, ".git"), 0o755)
	quiet()
	// A folder moved away and back is the same one, still watched when
	// the next process's roots are.
	if err := os.Rename(a, a+"-away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a+"-away", a); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		_, moved := w.dirs[movedKey+a]
		w.mu.Unlock()
		if moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the moves were not read")
		}
	}
	if err := w.watch([]string{a}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a, ".gitmodules"), nil, 0o644)
	expect(filepath.Join(a, ".gitmodules") + "|" + filepath.Join(a, ".gitmodules") + " appeared")
}

// TestGitWatchWays: the names on the way of a root's .git file to its
// git folder (gitdir: d/lnk/g, lnk -> sub) are watched in the folders
// holding them, a deeper one too: a link pointed elsewhere is reported
// with its root, and told as it is now, where git is led; other names in
// those folders are not; a change the events did not tell is found by
// look, which catchUp runs before each block.
func TestGitWatchWays(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, r, map[string]string{".git": "gitdir: d/lnk/g\n", "d/sub/g/config": "", "d/other/g/config": "[core]\n\tfsmonitor = x\n"})
	lnk := filepath.Join(r, "d", "lnk")
	if err := os.Symlink("sub", lnk); err != nil {
		t.Fatal(err)
	}
	got := make(chan gitEvent, 16)
	w, err := newGitWatch(func(events []gitEvent) func() {
		for _, e := range events {
			got <- e
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.watch([]string{r}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r, "d", "notes"), nil, 0o644)
	select {
	case e := <-got:
		t.Errorf("reported %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
	swap := func(to string) {
		t.Helper()
		if err := os.Symlink(to, lnk+".new"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(lnk+".new", lnk); err != nil {
			t.Fatal(err)
		}
	}
	swap("other")
	select {
	case e := <-got:
		what, git := e.now()
		if e.path != lnk || e.root != r || git != filepath.Join(r, "d", "other", "g") || !strings.Contains(what, lnk+" changed (now a link to other)") {
			t.Errorf("reported %+v, told as %q (git folder %s)", e, what, git)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the link's change was not reported")
	}
	// Held while the link changes back, the watch has read no event of
	// it: look finds it by the link's identity.
	w.mu.Lock()
	swap("sub")
	events := w.look("")
	w.mu.Unlock()
	if len(events) != 1 || events[0].path != lnk || events[0].root != r {
		t.Errorf("look found %+v, want the link %s", events, lnk)
	}
}

// TestGitSuspects: in a .git that appeared, what could run code and git
// init does not make is named: a hook that is not a sample, a setting of
// the config it does not write, a hard link; a FIFO is never opened.
func TestGitSuspects(t *testing.T) {
	git := filepath.Join(t.TempDir(), ".git")
	testenv.WriteTree(t, git, map[string]string{
		"config":                  "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"hooks/pre-commit.sample": "", "description": "", "info/exclude": "",
	})
	if s := gitSuspects(git); s != "" {
		t.Errorf("what git init and clone make: %q", s)
	}
	testenv.WriteTree(t, git, map[string]string{"hooks/pre-commit": "#!/bin/sh\n", "config": "[core]\n\tfsmonitor = evil\n"})
	os.Link(filepath.Join(git, "description"), filepath.Join(filepath.Dir(git), "description-link"))
	s := gitSuspects(git)
	for _, want := range []string{"hooks/pre-commit (not a sample)", "config (a setting git init does not write)", "description (2 names: a hard link)"} {
		if !strings.Contains(s, filepath.Join(git, want)) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	os.Remove(filepath.Join(git, "config"))
	if err := syscall.Mkfifo(filepath.Join(git, "config"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- gitSuspects(git) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO for the config hung the look")
	}
	if s := gitSuspects(filepath.Join(t.TempDir(), ".gitmodules")); s != "" {
		t.Errorf("a .gitmodules: %q", s)
	}
}

// TestGitChanged: the files under a .git of the workspace changed since
// the time given are found, at any depth, but not those of a protected
// .git, of the folders a .git's objects live in, or of what the last look
// saw as it is.
func TestGitChanged(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		".git/config": "", "sub/.git/config": "", "sub/.git/hooks/pre-commit": "", "sub/.git/objects/ab/cd": "",
		"deep/er/.git": "gitdir: x\n", "node_modules/m/.git/config": "", "a.py": "",
	})
	protected := func(rel string) bool { return rel == ".git" }
	files, complete, seen := gitChanged(ws, time.Now().Add(-time.Minute), nil, protected)
	slices.Sort(files)
	if want := []string{"deep/er/.git", "sub/.git/config", "sub/.git/hooks/pre-commit"}; !complete || !slices.Equal(files, want) {
		t.Errorf("changed %v (complete %v), want %v", files, complete, want)
	}
	files, _, _ = gitChanged(ws, time.Now().Add(-time.Minute), seen, protected)
	if len(files) != 0 {
		t.Errorf("what the last look saw as it is: %v", files)
	}
	if files, _, _ := gitChanged(ws, time.Now().Add(time.Minute), nil, protected); len(files) != 0 {
		t.Errorf("nothing changed since: %v", files)
	}
}

// TestGitHint: a failed command that ran git, or failed on a read-only
// file in .git, where a .git is read-only, gets the hint; a command that
// succeeded, or ran where no .git is read-only, does not.
func TestGitHint(t *testing.T) {
	exit := func(n int) *int { return &n }
	kept := func(paths ...string) *protocol.KernelStatus { return &protocol.KernelStatus{ReadOnly: paths} }
	for _, c := range []struct {
		st   tools.ShellState
		want bool
	}{
		{tools.ShellState{Command: "git commit -m x", Exit: exit(128), Kernel: kept("/ws/.git")}, true},
		{tools.ShellState{Command: "cd sub && git stash", Exit: exit(1), Kernel: kept("/ws/.git")}, true},
		{tools.ShellState{Command: "make", Exit: exit(2), Err: "touch .git/x: Read-only file system", Kernel: kept("/ws/.git")}, true},
		{tools.ShellState{Command: "git status", Exit: exit(0), Kernel: kept("/ws/.git")}, false},
		{tools.ShellState{Command: "git commit", Exit: exit(1), Kernel: kept("/home/me")}, false},
		{tools.ShellState{Command: "digit 1", Exit: exit(1), Kernel: kept("/ws/.git")}, false},
		{tools.ShellState{Command: "git commit", Kernel: kept("/ws/.git")}, false},
	} {
		if got := gitHint(c.st).Hint != ""; got != c.want {
			t.Errorf("%q exit %v: hint %v, want %v", c.st.Command, c.st.Exit, got, c.want)
		}
	}
}

// toldWatch is a watch of dirs whose changes are collected.
func toldWatch(t *testing.T, dirs ...string) (*gitWatch, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var told []string
	w, err := newGitWatch(func(events []gitEvent) func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			told = append(told, e.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	if err := w.watch(dirs); err != nil {
		t.Fatal(err)
	}
	return w, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(told)
	}
}

// TestGitWatchCatchUp: once catchUp returns, a git name made before it
// was told, once, whether the watch's goroutine read its event first or
// not; a name there before its folder was watched is no change.
func TestGitWatchCatchUp(t *testing.T) {
	var dirs, want []string
	for range 20 {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ".gitmodules"), nil, 0o644)
		dirs = append(dirs, dir)
	}
	w, told := toldWatch(t, dirs...)
	for _, dir := range dirs {
		os.Mkdir(filepath.Join(dir, ".git"), 0o755)
		w.catchUp()
		want = append(want, filepath.Join(dir, ".git")+" appeared")
		if got := told(); !slices.Equal(got, want) {
			t.Fatalf("told %q once catchUp returned, want %q", got, want)
		}
	}
	time.Sleep(100 * time.Millisecond)
	w.catchUp()
	if got := told(); !slices.Equal(got, want) {
		t.Errorf("told %q, want %q", got, want)
	}
}

// TestGitWatchLostEvents: when the kernel's queue of events overflowed,
// a git name made meanwhile (its event lost) is told all the same.
func TestGitWatchLostEvents(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	max, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || max <= 0 || max > 1<<16 {
		t.Skipf("fs.inotify.max_queued_events is %q", data)
	}
	dir := t.TempDir()
	w, told := toldWatch(t, dir)
	// The watch's goroutine reads no event while its lock is held.
	w.mu.Lock()
	for i := range max + 1 {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			w.mu.Unlock()
			t.Fatal(err)
		}
		f.Close()
	}
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	w.mu.Unlock()
	want := []string{filepath.Join(dir, ".git") + " appeared (the watch lost events)"}
	for deadline := time.Now().Add(10 * time.Second); !slices.Equal(told(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("told %q, want %q", told(), want)
		}
	}
}

// TestWatchRootsOfAnOlderPolicy: a standby of the policy before a block
// changed it may start after the child of the new one (it starts outside
// the turn): its watch keeps the new policy's roots, where a git name
// made later is seen.
func TestWatchRootsOfAnOlderPolicy(t *testing.T) {
	ws, extra := t.TempDir(), t.TempDir()
	h := &Host{turn: make(chan struct{}, 1), done: make(chan struct{}),
		cfg: Config{Meta: session.Meta{Workspace: ws}, Folder: session.Folder{Dir: t.TempDir()}, Log: io.Discard}}
	older, newer := protocol.Policy{Jail: true}, protocol.Policy{Jail: true, Roots: []string{extra}}
	h.policy = newer
	for _, p := range []protocol.Policy{newer, older} {
		if _, err := h.watchRoots(p); err != nil {
			t.Fatal(err)
		}
	}
	defer h.git.close(&h.mu)
	if err := os.Mkdir(filepath.Join(extra, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.gitCatchUp()
	h.mu.Lock()
	changes, told := h.git.changes, h.git.told
	h.mu.Unlock()
	if want := filepath.Join(extra, ".git") + " appeared"; changes != 1 || len(told) != 1 || told[0].what != want {
		t.Errorf("%d changes told %v, want 1: %q", changes, told, want)
	}
}
