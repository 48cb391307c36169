package host

import (
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// patchOp is the patch call (sandbox/hostcalls.PatchOp) under a, with
// what this host knows of the session's checked files: the after-block
// checks share it.
func (h *Host) patchOp(a tools.Access) hostcalls.Op {
	return hostcalls.PatchOp(a, hostcalls.PatchFiles{
		Checker: h.checker, Compiled: h.checks.compiled, Compiles: h.checks.compiles,
		Bump: func(real string) int { return h.checks.bump(h.versionsFile(), real) },
	})
}

// checker is a Checker of the session's Python (the running child's
// version) compiling with compile, and parsing data texts in a worker
// process (parseOne).
func (h *Host) checker(compile check.Compile) check.Checker {
	h.mu.Lock()
	c := h.child
	h.mu.Unlock()
	if c == nil {
		return check.Checker{Parse: h.parseOne}
	}
	version := c.version
	if parts := strings.SplitN(version, ".", 3); len(parts) >= 2 {
		version = parts[0] + "." + parts[1]
	}
	return check.Checker{Compile: compile, Parse: h.parseOne, Minor: c.minor, Version: version}
}

// versionsFile keeps the session's file versions across its hosts (a
// host exits when idle), in the session's folder, which the jailed code
// cannot write.
func (h *Host) versionsFile() string { return filepath.Join(h.cfg.Folder.Dir, "file-versions.json") }

// checks is what the host remembers of the session's checked files: the
// versions of the files it wrote (patch, fix_files), the text each Python
// file last had when this session found it compiling, with its
// statements' starts (so an edit of it is checked on the statements it
// touches), and the status of the files checked after blocks (so an
// unchanged one is not read again).
type checks struct {
	mu       sync.Mutex
	versions map[string]fileVersion // canonical path -> writes
	seq      int64                  // orders the versions' writes, for eviction
	valid    map[string]compiledText
	stamps   map[string]stamp // workspace-relative path -> status when checked
}

// compiledText is a text known to compile: its hash, and its Starts when
// known.
type compiledText struct {
	sum    [sha256.Size]byte
	starts []repair.LineStart
}

type fileVersion struct {
	V   int   `json:"v"`
	Seq int64 `json:"seq"`
}

// stamp is what tells a file changed: its inode, size and time.
type stamp struct {
	ino, size int64
	mtime     unix.Timespec
}

func stampOf(st unix.Stat_t) stamp {
	return stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim}
}

// maxRemembered bounds each of checks' maps: past it the oldest version
// goes, and the caches start again.
const maxRemembered = 10000

// compiles remembers that text, the content of the file real, compiles,
// and its Starts (nil when not known).
func (k *checks) compiles(real, text string, starts []repair.LineStart) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.valid == nil || len(k.valid) >= maxRemembered {
		k.valid = map[string]compiledText{}
	}
	k.valid[real] = compiledText{sum: sha256.Sum256([]byte(text)), starts: starts}
}

// compiled reports whether text is what the file real held when it was
// last found compiling, and its Starts if they are known.
func (k *checks) compiled(real, text string) (bool, []repair.LineStart) {
	sum := sha256.Sum256([]byte(text))
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.valid[real]
	if !ok || c.sum != sum {
		return false, nil
	}
	return true, c.starts
}

// unchanged reports whether the file rel has the status it had when last
// checked.
func (k *checks) unchanged(rel string, st unix.Stat_t) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.stamps[rel]
	return ok && s == stampOf(st)
}

// checked remembers the status of the file rel as checked.
func (k *checks) checked(rel string, st unix.Stat_t) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stamps == nil || len(k.stamps) >= maxRemembered {
		k.stamps = map[string]stamp{}
	}
	k.stamps[rel] = stampOf(st)
}

// bump counts a write to the file real and returns its version, kept in
// file (read on first use, rewritten after each write).
func (k *checks) bump(file, real string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.versions == nil {
		k.versions = readVersions(file)
		for _, v := range k.versions {
			k.seq = max(k.seq, v.Seq)
		}
	}
	if _, ok := k.versions[real]; !ok && len(k.versions) >= maxRemembered {
		oldest := ""
		for p, v := range k.versions {
			if oldest == "" || v.Seq < k.versions[oldest].Seq {
				oldest = p
			}
		}
		delete(k.versions, oldest)
	}
	k.seq++
	v := fileVersion{V: k.versions[real].V + 1, Seq: k.seq}
	k.versions[real] = v
	if data, err := json.Marshal(k.versions); err == nil {
		atomicfile.Write(file, data) // a failure costs only the count after a restart
	}
	return v.V
}

// maxVersionsFile bounds what readVersions reads.
const maxVersionsFile = 4 << 20

// readVersions reads the versions file (a regular file, no symlink, of
// at most maxVersionsFile); anything else is an empty record.
func readVersions(file string) map[string]fileVersion {
	out := map[string]fileVersion{}
	data, err := fsutil.ReadRegular(file, maxVersionsFile)
	if err != nil || json.Unmarshal(data, &out) != nil {
		return map[string]fileVersion{}
	}
	return out
}
