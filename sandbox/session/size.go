package session

import (
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// The bounds of SnapshotSize's walk: the jailed child writes in the
// session's state folder, and a block that made millions of files or a
// tree thousands deep must not make `sandbox list` hang or fill memory.
// Variables for the tests.
var (
	sizeMaxEntries = 100_000
	sizeMaxDepth   = 32
	sizeMaxTime    = 2 * time.Second
)

// SnapshotSize is the size of the session's snapshot and spill files
// (what `sandbox list` shows): the regular files in its folder but the
// host's own files, the child's temp folder, install()'s packages and
// matplotlib's caches. A file linked twice (the history's links to a
// snapshot) counts once. Links are not followed, and the walk stops at
// sizeMaxEntries entries, sizeMaxDepth folders deep or after sizeMaxTime:
// then cut is true, and n is what it counted (the size is at least n).
func (f Folder) SnapshotSize() (n int64, cut bool) {
	fd, err := unix.Open(f.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	w := sizeWalk{seen: map[[2]uint64]bool{}, deadline: time.Now().Add(sizeMaxTime),
		// the child's temp folder, install()'s packages, matplotlib's caches
		skip: map[string]bool{"tmp": true, "packages": true, "state/cache": true, "state/matplotlib": true}}
	w.dir(fd, "", 0)
	return w.n, w.cut
}

// ownFile reports whether name is one of the host's files at the top of
// a session's folder (a switch, not a map: a package variable would add
// an init to every vis-agent python start).
func ownFile(name string) bool {
	switch name {
	case metaFile, hostFile, stoppedFile, aliveLock, startLock, sockFile, LogFile:
		return true
	}
	return false
}

type sizeWalk struct {
	n        int64
	cut      bool
	entries  int
	seen     map[[2]uint64]bool
	skip     map[string]bool
	deadline time.Time
}

// dir adds the files of the folder open as fd (rel to the session's
// folder, depth folders down), read a batch of entries at a time (never
// the whole folder at once), and closes fd.
func (w *sizeWalk) dir(fd int, rel string, depth int) {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	for !w.cut {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if w.entries++; w.entries > sizeMaxEntries || time.Now().After(w.deadline) {
				w.cut = true
				return
			}
			name := e.Name()
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				p := path.Join(rel, name)
				if w.skip[p] {
					continue
				}
				if depth+1 > sizeMaxDepth {
					w.cut = true
					return
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
				if err == nil {
					w.dir(sub, p, depth+1)
				}
			case unix.S_IFREG:
				if rel == "" && ownFile(name) {
					continue
				}
				if st.Nlink > 1 {
					id := [2]uint64{uint64(st.Dev), st.Ino}
					if w.seen[id] {
						continue
					}
					w.seen[id] = true
				}
				w.n += st.Size
			}
		}
		if err != nil || len(entries) == 0 {
			return // the end of the folder, or a folder that cannot be read
		}
	}
}
