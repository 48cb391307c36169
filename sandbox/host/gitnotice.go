package host

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// A .git the jail does not keep read-only — one below the top of a
// root, one the session made itself (a .git it makes at the top of a
// root is kept read-only from then on, gitwatch.go) — is the session's
// to write, and git runs its hooks and settings as the user at the next
// commit there. So what a block or its shell() commands changed under
// any .git of the workspace is named after the block: in its result
// (Result.Git) and at the end of its output, which the journal keeps
// (sandbox log) and the REPL shows.

// maxGitNamed bounds the files a block's result names.
const maxGitNamed = 20

// gitSkipped are the folders of a .git that run nothing, and hold most
// of its files.
var gitSkipped = map[string]bool{"objects": true, "logs": true, "refs": true, "lfs": true}

// takeGitNotes takes the paths inside a .git out of the child's write
// notes (sandbox/child/written.c notes them beside the checked files), and
// reports whether there were any.
func takeGitNotes(res *protocol.Result) bool {
	kept, noted := res.Written[:0], false
	for _, p := range res.Written {
		if strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			noted = true
		} else {
			kept = append(kept, p)
		}
	}
	res.Written = kept
	return noted
}

// noteGit names the files under a .git of the workspace that changed
// since started, but for those the jail keeps read-only, when the block
// may have changed one: its notes named one (noted), or a shell()
// command of the session ran.
func (h *Host) noteGit(c *proc, res *protocol.Result, started time.Time, noted bool, out *sink) {
	if !noted && !h.shellsRanSince(started) {
		return
	}
	ws := realpath.Canonical(filepath.Clean(h.cfg.Meta.Workspace))
	shield := h.access(c.policy).Shield
	files, complete, seen := gitChanged(ws, started.Add(-scanSlack), h.git.seen, func(rel string) bool {
		return shield.GitAt(filepath.Join(ws, rel))
	})
	h.git.seen = seen
	if len(files) == 0 {
		return
	}
	more := len(files) > maxGitNamed
	res.Git = files[:min(len(files), maxGitNamed)]
	shown := make([]string, len(res.Git))
	for i, f := range res.Git {
		shown[i] = f
		if strings.ContainsFunc(f, func(r rune) bool { return !unicode.IsGraphic(r) || r == ' ' }) {
			shown[i] = strconv.Quote(f)
		}
	}
	line := "[.git] changed while the block ran, in a .git the jail does not keep read-only (git runs its hooks and settings as you): " + strings.Join(shown, ", ")
	if more || !complete {
		line += ", and more"
	}
	out.Send(protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStderr, Data: line + "; look at them before you run git there\n"})
}

// gitChanged walks the workspace at ws (beneath it: os.Root) for the
// files and links under a .git folder, and the .git files, whose status
// changed since t (ctime: a write, a new name, a hard link; the session
// cannot set it back) and is not as the last look saw it (seen: the
// kernel's clock for file times is coarse, and t is a little before the
// block's start), leaving out the .git folders protected says the jail
// keeps read-only, the folders the after-block check leaves out
// (unscanned) and gitSkipped's. At most maxScanEntries entries are read:
// complete is false past them. now is what this look saw.
func gitChanged(ws string, t time.Time, seen map[string]time.Time, protected func(rel string) bool) (files []string, complete bool, now map[string]time.Time) {
	now = map[string]time.Time{}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, true, now
	}
	defer root.Close()
	type dir struct {
		rel   string
		inGit bool
	}
	queue, read := []dir{{".", false}}, 0
	changed := func(rel string) bool {
		st, err := root.Lstat(rel)
		if err != nil {
			return false
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		ctime := time.Unix(sys.Ctim.Unix())
		now[rel] = ctime
		last, known := seen[rel]
		return !ctime.Before(t) && !(known && last.Equal(ctime))
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		f, err := openDir(root, d.rel)
		if err != nil {
			continue
		}
		for {
			entries, err := f.ReadDir(256)
			for _, e := range entries {
				if read++; read > maxScanEntries {
					f.Close()
					return files, false, now
				}
				rel := path.Join(d.rel, e.Name())
				switch {
				case e.IsDir() && d.inGit:
					if !gitSkipped[e.Name()] {
						queue = append(queue, dir{rel, true})
					}
				case e.IsDir() && e.Name() == ".git":
					if !protected(rel) {
						queue = append(queue, dir{rel, true})
					}
				case e.IsDir():
					if !unscanned(e.Name()) {
						queue = append(queue, dir{rel, false})
					}
				case (d.inGit || e.Name() == ".git" && !protected(rel)) && changed(rel):
					files = append(files, rel)
				}
			}
			if err != nil || len(entries) == 0 {
				break
			}
		}
		f.Close()
	}
	return files, true, now
}
