package session

import (
	"os"
	"path/filepath"
	"syscall"
)

// SnapshotBytes is the size of the session's snapshot and spill files
// (what `sandbox list` shows): everything in its folder but the host's
// own files, the child's temp folder, install()'s packages and
// matplotlib's caches. A file linked twice (the history's links to a
// snapshot) counts once.
func (f Folder) SnapshotBytes() int64 {
	dir := f.Dir
	var n int64
	seen := map[[2]uint64]bool{}
	own := map[string]bool{metaFile: true, hostFile: true, stoppedFile: true, aliveLock: true,
		startLock: true, sockFile: true, LogFile: true}
	state := f.StateDir()
	skip := map[string]bool{f.TempDir(): true, filepath.Join(dir, "packages"): true, filepath.Join(state, "cache"): true,
		filepath.Join(state, "matplotlib"): true}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && skip[p] {
			return filepath.SkipDir // the child's temp folder, install()'s packages, matplotlib's caches
		}
		if err != nil || d.IsDir() || own[d.Name()] && filepath.Dir(p) == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		n += info.Size()
		return nil
	})
	return n
}
