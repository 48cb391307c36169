package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// The user may run git init or git clone in a root while a session
// lives: the .git it makes is in no mount of the session's processes,
// whose shields were computed when each started (jail.Shield.Now). The
// host watches the top of each writable root (inotify: those folders,
// and those on the way of a .git file, see below) and, when a git name
// appears there, ends every process of the
// session at once — the child, its standby, the running shell()
// commands — then starts a new child, restored from the snapshot, whose
// mounts keep the name read-only; each later shell() command computes
// its shield as it starts, and the host's own tools refuse the name
// whether it exists or not (jail.Shield.GitAt).
//
// Where a .git at the top is a file leading git to a git folder
// ("gitdir: lnk/g"), or its commondir does, the session cannot write
// that folder (gitLeads in jail.Shield.Now), but it can replace a name a
// writable root holds on the way there: point the link lnk elsewhere, or
// exchange a folder with one of its own, and the user's next git command
// runs the config and hooks it wrote there. No mount can hold a name in
// a writable folder; the host watches the folders holding these names
// (jail.GitWay) as it watches the tops, and a change of one is told and
// acted on as a new .git, the notice naming where git is led now.
//
// The processes are ended, not frozen and given a new mount: a
// descriptor one of them opened in the new .git before the host saw it
// would outlive any mount put over it. What stays is the moment between
// the name's creation and the kill (the event's way to the host), in
// which a process of the session already running can write there: the
// notice names what in it could run code (gitSuspects).
//
// Before a process is made the child, and before each block, the host
// catches up with what the watch has not told yet (gitCurrent): the
// events queued, then the git names at the tops of the watched folders
// against the files last seen there. An event read late (a host slowed
// by load) or lost (the queue overflowed, a watch was lost) never lets
// a process whose shield predates the name serve a block: each process
// carries the count of changes its shield protects against.

// gitWatchMask: a name made, moved in, removed or moved away, and the
// folder itself moved or removed (see read).
const gitWatchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// movedKey marks, in gitWatch.dirs, a watched folder that was moved
// away: the watch follows it, and it is named where it was.
const movedKey = "\x00moved:"

// gitState is what a host knows of its session's .git folders.
type gitState struct {
	// watch watches the tops of the roots (nil until a jailed child
	// starts); changes counts the changes it told of (gitMark): a process
	// whose shield was computed before the last of them protects less
	// than it must (proc.gitGen, standby.gen). Both under Host.mu.
	watch   *gitWatch
	changes int
	// told are the changes the next block's restart notice tells, until
	// a block runs (Host.mu).
	told []gitEvent
	// seen are the times (ctime) of the files under the .git folders of
	// the workspace at the last look after a block (gitnotice.go), under
	// the turn.
	seen map[string]time.Time
}

// close ends the watch; mu guards it.
func (g *gitState) close(mu *sync.Mutex) {
	mu.Lock()
	w := g.watch
	mu.Unlock()
	if w != nil {
		w.close()
	}
}

// gitWatch is the host's inotify instance on the tops of the roots.
//
// Its events are read and told (changed) under mu, by its goroutine or by
// catchUp, so that once catchUp returns, every change the kernel queued
// before it has been told: a late event (a host slowed down by load)
// cannot let a process whose shield predates a git name serve a block,
// and is not told twice.
type gitWatch struct {
	f *os.File // non-blocking, on the runtime's poller
	// changed is told, under mu, of the changes in a batch of events (see
	// read); what it returns runs once mu is released.
	changed func([]gitEvent) func()

	mu   sync.Mutex
	dirs map[string]int // folder → watch descriptor
	// roots are the folders of dirs watched for git names at their top
	// (the writable roots); ways are the names on the way of a root's
	// .git to its git folder that a writable root holds (jail.GitWay),
	// each with its root: the others of dirs are the folders holding
	// them.
	roots map[string]bool
	ways  map[string]string
	// known is the file each git name at the top of a watched folder was
	// when last seen (when the folder was first watched, and at each
	// event for it), for look.
	known map[string]fileID
	// tops are the paths of the git names at the top of the folders
	// watched under their own names, for look (nil: to be listed again).
	tops []string
	buf  []byte
}

// fileID is a file's identity: a name made or moved in anew is another
// file (unless the file system gives a new file the number of one just
// removed: an event the watch saw is told whatever the number).
type fileID struct{ dev, ino uint64 }

// gitFile is the file at path now; false when there is none.
func gitFile(path string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

// newGitWatch starts a watch that tells changed what changed.
func newGitWatch(changed func([]gitEvent) func()) (*gitWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, gitWatchError(err)
	}
	w := &gitWatch{f: os.NewFile(uintptr(fd), "inotify"), changed: changed, dirs: map[string]int{}, roots: map[string]bool{}, ways: map[string]string{}, known: map[string]fileID{}, buf: make([]byte, 64<<10)}
	go w.loop()
	return w, nil
}

// gitWatchError says why the roots cannot be watched and what to do: a
// jailed session does not start without the watch.
func gitWatchError(err error) error {
	return fmt.Errorf("the session cannot watch its writable roots for a new .git (inotify: %w): raise fs.inotify.max_user_instances and fs.inotify.max_user_watches (sysctl), or run with --no-jail", err)
}

// watch makes dirs, the writable roots, the folders watched, with the
// folders holding the names on the way of their .git to its git folder
// (the ways). A folder newly watched is the writable root of no running
// process yet (the roots are watched before a process computes its
// shield; but for the session's own state and temp folders, which its
// first child makes), so the git names there now, and the names newly on
// a way, are known as they are.
func (w *gitWatch) watch(dirs []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := map[string]bool{}
	w.roots, w.tops = map[string]bool{}, nil
	for _, d := range dirs {
		w.roots[d] = true
	}
	ways := gitWays(dirs)
	var err error
	ctl := w.control(func(fd int) {
		add := func(d string) bool {
			want[d] = true
			if _, ok := w.dirs[d]; ok || err != nil {
				return false
			}
			wd, aerr := unix.InotifyAddWatch(fd, d, gitWatchMask)
			switch {
			case aerr == nil:
				w.dirs[d], w.tops = wd, nil
				return true
			case aerr != unix.ENOENT: // a missing folder (the child makes its own) holds nothing yet
				err = gitWatchError(fmt.Errorf("%s: %w", d, aerr))
			}
			return false
		}
		for _, d := range dirs {
			if add(d) {
				for _, p := range gitPaths(d) {
					w.see(p)
				}
			}
		}
		// The ways are read again once the folders holding their names
		// are watched, until they hold still: a name changed before its
		// folder was watched is read as it is now.
		for range maxWayReads {
			for n := range ways {
				add(filepath.Dir(n))
			}
			again := gitWays(dirs)
			if maps.Equal(again, ways) {
				break
			}
			ways = again
		}
		for n := range ways {
			add(filepath.Dir(n))
			if _, ok := w.ways[n]; !ok {
				w.see(n)
			}
		}
		for n := range w.ways {
			if _, ok := ways[n]; !ok {
				delete(w.known, n)
			}
		}
		w.ways = ways
		if err != nil {
			return
		}
		kept := map[int]bool{}
		for d, wd := range w.dirs {
			kept[wd] = kept[wd] || want[d]
		}
		for d, wd := range w.dirs {
			if want[d] {
				continue
			}
			// A folder moved away and back is watched again under its
			// name with the same descriptor (the kernel's one watch of
			// it): removing the watch of its moved name would remove
			// that one too.
			if !kept[wd] {
				unix.InotifyRmWatch(fd, uint32(wd))
			}
			w.forget(d)
		}
	})
	return errors.Join(ctl, err)
}

// maxWayReads bounds the times watch reads the ways of roots that a
// session keeps changing: each change after the first read is an event.
const maxWayReads = 4

// gitWays are the names on the way of each root's .git to its git folder
// (jail.GitWay) that a root holds, each with the root whose .git it is.
func gitWays(roots []string) map[string]string {
	ways := map[string]string{}
	for _, d := range roots {
		for _, n := range jail.GitWayOf(d).Names {
			if _, ok := ways[n]; !ok && slices.ContainsFunc(roots, func(r string) bool { return realpath.Within(filepath.Dir(n), r) }) {
				ways[n] = d
			}
		}
	}
	return ways
}

// gitPaths are the paths of the git names at the top of dir.
func gitPaths(dir string) []string {
	return []string{filepath.Join(dir, ".git"), filepath.Join(dir, ".gitmodules")}
}

// see records the file at the git name path as it is now, and reports
// whether it is not the one known before (false when there is none).
func (w *gitWatch) see(path string) (other bool) {
	id, ok := gitFile(path)
	was, known := w.known[path]
	if ok {
		w.known[path] = id
	} else {
		delete(w.known, path)
	}
	return ok && (!known || was != id)
}

// forget stops watching the folder of key in w.dirs.
func (w *gitWatch) forget(key string) {
	delete(w.dirs, key)
	w.tops = nil
	if !strings.HasPrefix(key, movedKey) {
		for _, p := range gitPaths(key) {
			delete(w.known, p)
		}
	}
}

// control runs f on the instance's descriptor.
func (w *gitWatch) control(f func(fd int)) error {
	rc, err := w.f.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { f(int(fd)) })
	}
	return err
}

// close ends the watch.
func (w *gitWatch) close() { w.f.Close() }

// loop reads and tells the events until the watch is closed.
func (w *gitWatch) loop() {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var end func()
		done := false
		err := rc.Read(func(fd uintptr) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			n, err := readEvents(int(fd), w.buf)
			if errors.Is(err, unix.EAGAIN) {
				return false // none yet: wait for some
			}
			if err != nil {
				done = true
			} else {
				end = w.tell(w.read(w.buf[:n]))
			}
			return true
		})
		if end != nil {
			end()
		}
		if err != nil || done {
			return
		}
	}
}

// readEvents reads what events are queued on the instance fd into buf.
func readEvents(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// tell tells changed of events (none: nothing); the caller holds mu.
func (w *gitWatch) tell(events []gitEvent) func() {
	if len(events) == 0 {
		return nil
	}
	return w.changed(events)
}

// catchUp tells what the watch has not told yet, and returns once it has
// been acted on: the events queued now, then any git name at the top of
// a watched folder that is not the file last seen there (events lost, or
// a watch lost).
func (w *gitWatch) catchUp() {
	w.mu.Lock()
	var events []gitEvent
	w.control(func(fd int) {
		for {
			n, err := readEvents(fd, w.buf)
			if err != nil {
				return
			}
			events = append(events, w.read(w.buf[:n])...)
		}
	})
	end := w.tell(append(events, w.look("")...))
	w.mu.Unlock()
	if end != nil {
		end()
	}
}

// look is the git names at the top of the watched folders that are not
// the files last seen there, as changes (why, if not "", says why it
// looked); it records them as they are. The caller holds mu.
func (w *gitWatch) look(why string) []gitEvent {
	if w.tops == nil {
		for d := range w.dirs {
			// A moved folder's events are read; its name is another
			// folder's now.
			if w.roots[d] {
				w.tops = append(w.tops, gitPaths(d)...)
			}
		}
	}
	var events []gitEvent
	for _, p := range w.tops {
		if w.see(p) {
			events = append(events, gitEvent{path: p, what: p + " appeared" + why})
		}
	}
	for p, root := range w.ways {
		if w.see(p) {
			events = append(events, gitEvent{path: p, root: root})
		}
	}
	return events
}

// read is what the events in buf say changed: each git name made or
// moved in at the top of a root, each name of a way made, moved in,
// removed or moved away, or, when events were lost, each one that is not
// the file last seen there. The caller holds mu.
func (w *gitWatch) read(buf []byte) []gitEvent {
	var events []gitEvent
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		size := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:min(len(buf), off+unix.SizeofInotifyEvent+size)], "\x00"))
		off += unix.SizeofInotifyEvent + size
		key := w.dirOf(wd)
		dir := strings.TrimPrefix(key, movedKey)
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && key != "" {
			// A folder made in its place is watched when the next child
			// starts; until then the child, whose mount follows the old
			// folder, finds the new one read-only, and each shell()
			// command mounts it with the shield of its start. A moved
			// folder is the child's still: watched until then.
			w.forget(key)
			if mask&unix.IN_MOVE_SELF != 0 {
				w.dirs[movedKey+dir] = wd
			}
		}
		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			events = append(events, w.look(" (the watch lost events)")...)
		case key == "":
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && w.roots[dir] && jail.IsGitName(name):
			path := filepath.Join(dir, name)
			if key == dir {
				w.see(path)
			}
			events = append(events, gitEvent{path: path, what: path + " appeared"})
		case w.ways[filepath.Join(dir, name)] != "" && mask&(unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
			path := filepath.Join(dir, name)
			if key == dir {
				w.see(path)
			}
			events = append(events, gitEvent{path: path, root: w.ways[path]})
		}
	}
	return events
}

// dirOf is the folder of watch descriptor wd, "" when none.
func (w *gitWatch) dirOf(wd int) string {
	for d, x := range w.dirs {
		if x == wd {
			return d
		}
	}
	return ""
}

// watchRoots watches the top of each writable root of a child (or
// standby) started under policy (none without the jail), before it
// computes its shield: a git name made after that is seen. The roots of
// the session's policy stay watched (a standby of an older one may start
// while a child of the new one runs). It returns the count of changes
// the process's shield will protect against.
func (h *Host) watchRoots(policy protocol.Policy) (int, error) {
	h.mu.Lock()
	current := h.policy
	h.mu.Unlock()
	var dirs []string
	for _, p := range []protocol.Policy{policy, current} {
		if p.Jail && (len(dirs) == 0 || !p.Equal(policy)) {
			dirs = append(dirs, h.access(p).Shield.Writable...)
		}
	}
	h.mu.Lock()
	var err error
	if h.git.watch == nil && len(dirs) > 0 {
		h.git.watch, err = newGitWatch(h.gitMark)
	}
	w := h.git.watch
	h.mu.Unlock()
	if err == nil && w != nil {
		err = w.watch(dirs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.git.changes, err
}

// gitCatchUp acts on what the watch has not told yet (gitWatch.catchUp),
// before a process is made the child or given a block.
func (h *Host) gitCatchUp() {
	h.mu.Lock()
	w := h.git.watch
	h.mu.Unlock()
	if w != nil {
		w.catchUp()
	}
}

// gitCurrent reports whether a process whose shield protects against the
// first gen changes protects against all of them: what the watch has not
// told yet is looked at first.
func (h *Host) gitCurrent(gen int) bool {
	h.gitCatchUp()
	h.mu.Lock()
	defer h.mu.Unlock()
	return gen == h.git.changes
}

// gitMark counts the changes in events and takes the session's processes
// (the child, the standby) to end; what it returns ends them (gitEnd).
// A process the caller starts after it protects what changed.
func (h *Host) gitMark(events []gitEvent) func() {
	seen := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.git.changes++
	// A name that appears before the notice of an earlier one was shown
	// (the child started for it has run no block) is told with it.
	h.git.told = append(h.git.told, events...)
	told := slices.Clone(h.git.told)
	c, sb := h.child, h.warm.sb
	h.warm.sb = nil
	return func() { h.gitEnd(seen, told, c, sb) }
}

// gitEnd ends every process of the session at once (the child c, the
// standby sb, the running shell() commands), so that none runs with
// mounts older than the changes told, and has a new child started. A
// block that ran ends with the reason; the next one gets it as its
// restart notice.
func (h *Host) gitEnd(seen time.Time, told []gitEvent, c *proc, sb *standby) {
	if c == nil {
		c = &proc{} // nothing to kill or to tell
	}
	// The reason is read once the child has ended (exitReason): held
	// until it is written.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.process != nil && c.alive() {
		c.kill()
	}
	sb.discard()
	h.haltShells()
	killed := time.Since(seen)
	// What they wrote is looked at once they have ended: a system call
	// under way when the signal came still completes.
	if c.process != nil {
		waitEnd(c, unwindGrace)
	}
	if sb != nil {
		sb.mu.Lock()
		waitEnd(sb.c, unwindGrace)
		sb.mu.Unlock()
	}
	whats, suspects := make([]string, 0, len(told)), []string{}
	for _, e := range told {
		// A name moved away and another moved in are two events, told
		// once as the name is now.
		what, git := e.now()
		if slices.Contains(whats, what) {
			continue
		}
		whats = append(whats, what)
		if s := gitSuspects(git); s != "" && !slices.Contains(suspects, s) {
			suspects = append(suspects, s)
		}
	}
	c.retired = strings.Join(whats, " and ") + " while the session ran: git's files at the top of a root are kept read-only to the session, so its Python process was replaced (restored from the snapshot) and its running shell() commands were stopped"
	if len(suspects) > 0 {
		c.retired += "; before you run git there, look at " + strings.Join(suspects, ", ")
	}
	fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %s (its processes were killed %s after the host saw it)\n", c.retired, killed.Round(time.Microsecond))
	go h.restartAfterGit()
}

// shown forgets the changes told so far: a block ran, after the notice
// that tells them.
func (g *gitState) shown(mu *sync.Mutex) {
	mu.Lock()
	g.told = nil
	mu.Unlock()
}

// gitEvent is a change: a git name's path, and a sentence naming it; or
// a name on the way of root's .git to its git folder (jail.GitWay).
type gitEvent struct{ path, what, root string }

// now is the sentence that tells e, and the git folder whose suspects
// (gitSuspects) the user should look at. A way's name is told as it is
// now, where the session's processes, all ended, left it: what it is,
// and where root's .git leads git through it.
func (e gitEvent) now() (what, git string) {
	if e.root == "" {
		return e.what, e.path
	}
	is := "now gone"
	if to, err := os.Readlink(e.path); err == nil {
		is = "now a link to " + to
	} else if st, err := os.Lstat(e.path); err == nil && st.IsDir() {
		is = "now another folder"
	} else if err == nil {
		is = "now a file"
	}
	way := jail.GitWayOf(e.root)
	leads := "to no git folder"
	if way.Dir != "" {
		leads = "to " + way.Dir
	}
	return fmt.Sprintf("%s changed (%s), on the way of %s to its git folder: it leads git %s", e.path, is, filepath.Join(e.root, ".git"), leads), way.Dir
}

// waitEnd waits, at most d, until c (nil: none) has ended.
func waitEnd(c *proc, d time.Duration) {
	if c == nil {
		return
	}
	select {
	case <-c.exited:
	case <-time.After(d):
	}
}

// haltShells ends every running shell() command of the session at once.
func (h *Host) haltShells() {
	h.shells.mu.Lock()
	sets := make([]*tools.Shells, 0, len(h.shells.sets))
	for _, m := range h.shells.sets {
		sets = append(sets, m)
	}
	h.shells.mu.Unlock()
	for _, m := range sets {
		m.Halt()
	}
}

// restartAfterGit starts the session's next child, once the block that
// ran (if one did) has ended, so that the next block finds it ready.
func (h *Host) restartAfterGit() {
	if !h.takeTurn() {
		return
	}
	defer h.release()
	h.mu.Lock()
	had := h.child != nil && !h.stopping
	h.mu.Unlock()
	if !had {
		return
	}
	if _, err := h.ensureChild(); err != nil {
		fmt.Fprintf(h.cfg.Log, "vis-agent sandbox host: %v\n", err)
	}
}

// maxSuspects bounds the names gitSuspects reads in one folder.
const maxSuspects = 256

// gitSuspects names, in the git folder at git (a .git, or where a .git
// leads git), what could run code and
// is not what git init or git clone makes: a hook that is not a sample, a
// setting of the config they do not write, a file of its top, hooks or
// info folder with a second name (a hard link, through which the session
// would still write it), and what leads git elsewhere (a .git that is a
// file or a link, a link or a commondir in it); "" for none. Every process of the
// session has ended: nothing of its changes it under the look.
func gitSuspects(git string) string {
	if git == "" || jail.IsGitName(filepath.Base(git)) && filepath.Base(git) != ".git" {
		return ""
	}
	if st, err := os.Lstat(git); err == nil && !st.IsDir() {
		// A .git file (gitdir: X) or link leads git elsewhere: to a folder
		// the session may have made, of hooks and settings of its own.
		return git + " (not a folder: it leads git to another, whose hooks and settings git runs)"
	}
	root, err := os.OpenRoot(git)
	if err != nil {
		return ""
	}
	defer root.Close()
	var found []string
	for _, dir := range []string{".", "hooks", "info"} {
		f, err := openDir(root, dir)
		if err != nil {
			continue
		}
		entries, _ := f.ReadDir(maxSuspects)
		f.Close()
		for _, e := range entries {
			rel := filepath.Join(dir, e.Name())
			st, err := root.Lstat(rel)
			if err != nil || st.IsDir() {
				continue
			}
			links := uint64(1)
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				links = uint64(sys.Nlink)
			}
			switch {
			case st.Mode()&os.ModeSymlink != 0:
				found = append(found, filepath.Join(git, rel)+" (a link: git follows it)")
			case rel == "commondir":
				found = append(found, filepath.Join(git, rel)+" (leads git to another folder's hooks and settings)")
			case dir == "hooks" && !strings.HasSuffix(e.Name(), ".sample"):
				found = append(found, filepath.Join(git, rel)+" (not a sample)")
			case links > 1:
				found = append(found, fmt.Sprintf("%s (%d names: a hard link)", filepath.Join(git, rel), links))
			case rel == "config" && st.Mode().IsRegular() && !initConfig(root):
				found = append(found, filepath.Join(git, rel)+" (a setting git init does not write)")
			}
		}
	}
	return strings.Join(found, ", ")
}

// gitInitLine matches a line of the config git init and git clone write:
// their sections and settings, comments and blank lines.
var gitInitLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(\[(core|extensions|remote "[^"\\]*"|branch "[^"\\]*")\]|(repositoryformatversion|filemode|bare|logallrefupdates|symlinks|ignorecase|precomposeunicode|objectformat|url|fetch|remote|merge)\s*=[^\n]*|[#;][^\n]*)?\s*$`)
})

// maxConfig bounds the config initConfig reads.
const maxConfig = 64 << 10

// initConfig reports whether the config of the .git held by root holds
// only what git init and git clone write.
func initConfig(root *os.Root) bool {
	// Never a blocking open: the session may have made it a FIFO.
	f, err := root.OpenFile("config", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil || len(data) > maxConfig {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !gitInitLine().MatchString(line) {
			return false
		}
	}
	return true
}

// openDir opens the folder rel beneath root, never blocking: the session
// may have put a FIFO in its place.
func openDir(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}
