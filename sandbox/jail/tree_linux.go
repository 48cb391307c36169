package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// The mount tree of a jailed child: a tmpfs of its own as "/", holding
// nothing but its roots, each a clone of the real folder or file mounted
// at its own path (read-only but the writable roots), the symbolic links
// that lead to them (Debian's /lib -> usr/lib), a /proc of its own that
// shows only the processes it could trace (itself), and what the Shield
// keeps read-only or covers inside them. A path outside the roots does
// not exist for the child: stat, listdir, access, readlink, extended
// attributes and inotify find nothing, where Landlock, which refuses only
// opening, would have let them see the whole machine's names, sizes and
// times. Landlock still confines the roots themselves (and holds where
// the tree could not be made); the tree is what hides the rest.

// stageDir is where the new root is made before it becomes "/": any
// folder every Linux has. What it holds is cloned before the stage
// covers it.
const stageDir = "/tmp"

// mountKind is what a step mounts.
type mountKind int

const (
	cloneWritable mountKind = iota // a clone of a writable root
	cloneReadOnly                  // a clone of a read-only root, made read-only
	bindReadOnly                   // the tree's own view of a path, made read-only (the Shield's ReadOnly)
	coverSessions                  // an empty tmpfs over the sessions folder, read-only once filled
)

// treeMount is one mount of the plan, at path (canonical) in the new tree.
type treeMount struct {
	path string
	kind mountKind
	file bool // a single file, not a folder
	fd   int  // the clone, for cloneWritable and cloneReadOnly
}

// treePlan is what the new tree holds, decided before anything is
// mounted (the stage covers stageDir, where roots may be).
type treePlan struct {
	mounts []treeMount
	// links are the symbolic links on the way to the roots, at their
	// canonical place (the real folder that holds them), with their
	// targets as the real tree has them.
	links [][2]string
	// skipped are roots that could not be placed, each with why.
	skipped []string
}

// planTree places the roots and the shield: every root by its canonical
// path (and the links that lead there from the path it was given), outer
// ones first, and of two at one place the writable one. A root inside
// another of at least its rights (read-only in writable, or in
// read-only) is the outer clone's already, and is not mounted again,
// unless what the shield mounts between them changes that: a writable
// root inside a read-only one is mounted writable over it, as the home
// folder's sub-folders are under its read-only top level.
func planTree(s Shield, readWrite, readOnly []string) *treePlan {
	p := &treePlan{}
	type root struct {
		path     string
		writable bool
		file     bool
	}
	byPath := map[string]*root{}
	var order []string
	add := func(paths []string, writable bool) {
		for _, given := range paths {
			real, err := realpath.Eval(given)
			if err != nil {
				continue // a root that does not exist is skipped, as Landlock does
			}
			st, err := os.Stat(real)
			if err != nil {
				continue
			}
			p.linksOn(given, 0)
			if r, ok := byPath[real]; ok {
				r.writable = r.writable || writable
				continue
			}
			byPath[real] = &root{path: real, writable: writable, file: !st.IsDir()}
			order = append(order, real)
		}
	}
	add(readWrite, true)
	add(s.Writable, true)
	add(readOnly, false)
	add(s.Shown, false)
	var steps []treeMount
	for _, path := range order {
		r := byPath[path]
		kind := cloneReadOnly
		if r.writable {
			kind = cloneWritable
		}
		steps = append(steps, treeMount{path: path, kind: kind, file: r.file, fd: -1})
	}
	for _, ro := range s.ReadOnly {
		steps = append(steps, treeMount{path: ro, kind: bindReadOnly, fd: -1})
	}
	if s.Sessions != "" {
		steps = append(steps, treeMount{path: s.Sessions, kind: coverSessions, fd: -1})
	}
	// Outer first; at one depth a clone before what keeps it read-only
	// or covers it (its order above).
	sort.SliceStable(steps, func(i, j int) bool { return depth(steps[i].path) < depth(steps[j].path) })
	for i, m := range steps {
		if (m.kind == cloneWritable || m.kind == cloneReadOnly) && coveredBy(steps[:i], m) {
			continue
		}
		p.mounts = append(p.mounts, m)
	}
	return p
}

// coveredBy reports whether the deepest of before that holds m already
// shows m's path with m's rights: a clone (the same files) that is
// writable, or read-only as m is, or a read-only bind where m is
// read-only. A cover of the sessions folder hides what it holds.
func coveredBy(before []treeMount, m treeMount) bool {
	best := -1
	for i, b := range before {
		if realpath.Within(m.path, b.path) && (best < 0 || depth(b.path) >= depth(before[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	switch before[best].kind {
	case cloneWritable:
		return true
	case cloneReadOnly, bindReadOnly:
		return m.kind == cloneReadOnly
	}
	return false
}

// linksOn records the symbolic links on the way to path (each prefix
// that is one, and those on the way to its target), as the real tree
// has them: the tree makes the same links, so that a root named through
// a link (a venv's python, /lib64/ld-linux-x86-64.so.2) is found where
// it was named.
func (p *treePlan) linksOn(path string, hops int) {
	if hops > 40 {
		return
	}
	prefix := "/"
	for _, name := range strings.Split(strings.Trim(filepath.Clean(path), "/"), "/") {
		if name == "" {
			continue
		}
		prefix = filepath.Join(prefix, name)
		st, err := os.Lstat(prefix)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(prefix)
		parent, err2 := realpath.Eval(filepath.Dir(prefix))
		if err != nil || err2 != nil {
			continue
		}
		p.links = append(p.links, [2]string{filepath.Join(parent, name), target})
		if !filepath.IsAbs(target) {
			target = filepath.Join(parent, target)
		}
		p.linksOn(target, hops+1)
	}
}

// clone takes a clone of every root of the plan, before the stage covers
// any of them; a root that cannot be cloned is skipped and said.
func (p *treePlan) clone() {
	kept := p.mounts[:0]
	for _, m := range p.mounts {
		if m.kind == cloneWritable || m.kind == cloneReadOnly {
			fd, err := unix.OpenTree(unix.AT_FDCWD, m.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				p.skipped = append(p.skipped, fmt.Sprintf("%s (%v)", m.path, err))
				continue
			}
			m.fd = fd
		}
		kept = append(kept, m)
	}
	p.mounts = kept
}

func (p *treePlan) close() {
	for _, m := range p.mounts {
		if m.fd >= 0 {
			unix.Close(m.fd)
		}
	}
}

// stage is the new tree while it is made: its root at dir, and the
// devices of the tmpfs mounts made here, the only ones where a mount
// point or a link is made (never inside a clone of a real folder).
type stage struct {
	dir  string
	ours map[uint64]bool
}

// at is path's place in the stage.
func (s *stage) at(path string) string { return filepath.Join(s.dir, path) }

// tmpfs mounts a tmpfs at path (in the stage) and counts it as ours.
func (s *stage) tmpfs(path, opts string) error {
	if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	s.ours[st.Dev] = true
	return nil
}

// mkdirAll makes path (canonical) in the stage, each missing folder
// only where its parent is one of ours.
func (s *stage) mkdirAll(path string) error {
	cur := s.dir
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" {
			continue
		}
		next := filepath.Join(cur, name)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return fmt.Errorf("%s is not a folder in the jail's tree", strings.TrimPrefix(next, s.dir))
			}
			cur = next
			continue
		}
		if err := s.ownsParent(next); err != nil {
			return err
		}
		if err := unix.Mkdir(next, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("make %s in the jail's tree: %w", strings.TrimPrefix(next, s.dir), err)
		}
		cur = next
	}
	return nil
}

// ownsParent refuses a new name whose folder is not one of ours.
func (s *stage) ownsParent(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Dir(path), &st); err != nil {
		return fmt.Errorf("the jail's tree at %s: %w", strings.TrimPrefix(filepath.Dir(path), s.dir), err)
	}
	if !s.ours[st.Dev] {
		return fmt.Errorf("%s is missing inside a root (it changed while the jail was made)", strings.TrimPrefix(path, s.dir))
	}
	return nil
}

// mountPoint makes the place of m: its folder, or for a file an empty
// file in its folder.
func (s *stage) mountPoint(m treeMount) error {
	if !m.file {
		return s.mkdirAll(m.path)
	}
	if err := s.mkdirAll(filepath.Dir(m.path)); err != nil {
		return err
	}
	at := s.at(m.path)
	if _, err := os.Lstat(at); err == nil {
		return nil
	}
	if err := s.ownsParent(at); err != nil {
		return err
	}
	fd, err := unix.Open(at, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("make %s in the jail's tree: %w", m.path, err)
	}
	return unix.Close(fd)
}

// link makes the symbolic link at path (its folder canonical) to target,
// unless something is there already.
func (s *stage) link(path, target string) error {
	if err := s.mkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	at := s.at(path)
	if _, err := os.Lstat(at); err == nil {
		return nil
	}
	if err := s.ownsParent(at); err != nil {
		return err
	}
	return os.Symlink(target, at)
}

var readOnlyAttr = unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}

// mount does m in the stage, its mount point made.
func (s *stage) mount(m treeMount) error {
	at := s.at(m.path)
	switch m.kind {
	case cloneWritable, cloneReadOnly:
		if m.kind == cloneReadOnly {
			if err := unix.MountSetattr(m.fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &readOnlyAttr); err != nil {
				return fmt.Errorf("keep %s read-only: %w", m.path, err)
			}
		}
		if err := unix.MoveMount(m.fd, "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount %s: %w", m.path, err)
		}
	case bindReadOnly:
		fd, err := unix.OpenTree(unix.AT_FDCWD, at, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("keep %s read-only: %w", m.path, err)
		}
		defer unix.Close(fd)
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &readOnlyAttr); err != nil {
			return fmt.Errorf("keep %s read-only: %w", m.path, err)
		}
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("keep %s read-only: %w", m.path, err)
		}
	case coverSessions:
		if err := s.tmpfs(at, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("cover %s: %w", m.path, err)
		}
	}
	return nil
}

// alias shows the tree's own path (a root mounted in it) at another
// place, made on the tree's tmpfs.
func (s *stage) alias(path, at string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, s.at(path), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("show %s at %s: %w", path, at, err)
	}
	defer unix.Close(fd)
	if err := s.mkdirAll(at); err != nil {
		return fmt.Errorf("show %s at %s: %w", path, at, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, s.at(at), unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("show %s at %s: %w", path, at, err)
	}
	return nil
}

// procOptions show a process of the new /proc only the processes it may
// trace (ptrace's read check, which a process without capabilities in
// its own Landlock domain passes for itself and its own children only)
// and nothing of /proc but the processes' folders (no /proc/sys,
// /proc/net of the machine, /proc/kcore).
const procOptions = "hidepid=ptraceable,subset=pid"

// mountProc gives the stage a /proc: its own instance when the kernel
// lets this process make one (root; a user namespace's process may not,
// its pid namespace being the machine's), else a read-only clone of the
// machine's, whose other processes' folders a jailed process can then
// stat but not open (Landlock). The audit hook reads /proc/self/fd; the
// kernel layer's own checks read /proc/self.
func (s *stage) mountProc() (own bool, err error) {
	at := s.at("/proc")
	if err := s.mkdirAll("/proc"); err != nil {
		return false, err
	}
	if unix.Mount("proc", at, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, procOptions) == nil {
		return true, nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/proc", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return false, fmt.Errorf("the jail's /proc: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &readOnlyAttr); err != nil {
		return false, fmt.Errorf("the jail's /proc: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("the jail's /proc: %w", err)
	}
	return false, nil
}

// enter makes the stage the process's root (pivot_root, the old root
// detached; where the old root cannot be pivoted, the rootfs of an
// initramfs, the stage is moved over it and entered with chroot), its
// root folder read-only, and enters wd again.
func (s *stage) enter(wd string) error {
	if err := unix.Chdir(s.dir); err != nil {
		return fmt.Errorf("enter the jail's tree: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err == nil {
		if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detach the machine's tree: %w", err)
		}
	} else if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("enter the jail's tree: %w", err)
	} else if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("enter the jail's tree: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("enter the jail's tree: %w", err)
	}
	// Nothing is written outside the roots, not even in the tree itself
	// (unless a root is "/" itself, mounted over it).
	var root unix.Stat_t
	if err := unix.Lstat("/", &root); err == nil && s.ours[root.Dev] {
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &readOnlyAttr); err != nil {
			return fmt.Errorf("make the jail's tree read-only: %w", err)
		}
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("enter the working folder again: %w", err)
	}
	return nil
}

// treeExtras are what the tree holds besides the roots and the shield:
// a /dev/shm of its own, and a writable root shown at /tmp too.
type treeExtras struct {
	privateShm bool
	tmpAt      string
}

// treeResult says what applyTree made: tmpAt is where the temp folder
// shows too ("" nowhere).
type treeResult struct {
	ownProc, ownShm bool
	tmpAt           string
	skipped         []string
}

// tmpAliases are the short places the temp folder may show at, the first
// that holds no root and is in none.
var tmpAliases = []string{"/tmp", "/var/tmp"}

// tmpAlias is the first of tmpAliases free in plan's tree, "" for none.
func tmpAlias(plan *treePlan) string {
	for _, at := range tmpAliases {
		free := true
		for _, m := range plan.mounts {
			free = free && !realpath.Within(m.path, at) && !realpath.Within(at, m.path)
		}
		for _, l := range plan.links {
			free = free && !realpath.Within(l[0], at) && !realpath.Within(at, l[0])
		}
		if free {
			return at
		}
	}
	return ""
}

// shmOptions bound the private /dev/shm: its pages are the machine's
// memory, outside the address-space cap.
const shmOptions = "mode=1777,size=64m,nr_inodes=4096"

// applyTree makes this process's root a tree of only its roots (see
// above), with extras, in the mount namespace of its own the C constructor made
// (early_linux.c). It needs the capability to mount, so it runs before
// dropCapabilities; the jailed code can then neither unmount nor mount
// (no capabilities, and seccomp refuses the mount calls). Without a
// namespace, a shield that protects something inside the roots is an
// error saying how to do without; one that does not is errNoNamespace.
func applyTree(s Shield, readWrite, readOnly []string, extras treeExtras) (treeResult, error) {
	var res treeResult
	roots := append(append([]string(nil), readWrite...), readOnly...)
	if err := mountNamespace(); err != nil {
		if !s.Protects(roots) {
			return res, fmt.Errorf("%w (%w)", errNoNamespace, err)
		}
		return res, fmt.Errorf("%s must stay read-only to the jail, which needs a mount namespace, and this process could not make one (%w): allow user namespaces, use a workspace and roots that hold no .git, not your home folder and not vis-agent's folder (or VIS_HOME elsewhere), or run with --no-jail",
			strings.Join(s.ReadOnly, ", "), err)
	}
	// Nothing mounted here may reach the parent's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return res, fmt.Errorf("make the mounts private: %w", err)
	}
	wd, err := unix.Getwd()
	if err != nil {
		return res, fmt.Errorf("the working folder: %w", err)
	}
	plan := planTree(s, readWrite, readOnly)
	plan.clone()
	defer plan.close()
	st := &stage{dir: stageDir, ours: map[uint64]bool{}}
	if err := st.tmpfs(st.dir, "mode=0755,size=1m"); err != nil {
		return res, fmt.Errorf("make the jail's tree: %w", err)
	}
	for _, l := range plan.links {
		if err := st.link(l[0], l[1]); err != nil {
			plan.skipped = append(plan.skipped, fmt.Sprintf("the link %s (%v)", l[0], err))
		}
	}
	var covers []string
	for _, m := range plan.mounts {
		switch {
		case m.kind == bindReadOnly || m.kind == coverSessions:
			if _, err := os.Lstat(st.at(m.path)); err != nil {
				continue // not in the tree: nothing to keep or cover
			}
		default:
			if err := st.mountPoint(m); err != nil {
				plan.skipped = append(plan.skipped, fmt.Sprintf("%s (%v)", m.path, err))
				continue
			}
		}
		if err := st.mount(m); err != nil {
			return res, err
		}
		if m.kind == coverSessions {
			covers = append(covers, m.path)
		}
	}
	if res.ownProc, err = st.mountProc(); err != nil {
		return res, err
	}
	if extras.tmpAt != "" {
		if at := tmpAlias(plan); at != "" {
			if err := st.alias(extras.tmpAt, at); err != nil {
				return res, err
			}
			res.tmpAt = at
		}
	}
	if extras.privateShm {
		if err := st.mkdirAll(shmDir); err != nil {
			return res, fmt.Errorf("the jail's %s: %w", shmDir, err)
		}
		if err := unix.Mount("tmpfs", st.at(shmDir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, shmOptions); err != nil {
			return res, fmt.Errorf("the jail's %s: %w", shmDir, err)
		}
		res.ownShm = true
	}
	if err := st.enter(wd); err != nil {
		return res, err
	}
	for _, c := range covers {
		if err := unix.MountSetattr(unix.AT_FDCWD, c, 0, &readOnlyAttr); err != nil {
			return res, fmt.Errorf("make %s read-only: %w", c, err)
		}
	}
	res.skipped = plan.skipped
	return res, nil
}
