package jail

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// Shield is what a mount namespace of the jailed process's own keeps from
// it, where Landlock cannot: Landlock's rules only add (a root cannot
// have a read-only part), and they do not cover a file's mode, times or
// extended attributes at all, so that without a mount a jailed process
// could chmod any file of its user. A session's child applies it with
// open_tree and move_mount (Apply); its commands get the same from
// bubblewrap, which mounts nothing writable but their roots.
type Shield struct {
	// Writable are the writable roots: every other mount is made
	// read-only, and these are mounted writable again over them.
	Writable []string `json:",omitempty"`
	// ReadOnly are kept read-only, whatever root holds them: vis-agent's
	// own folders ($VIS_HOME: the settings, the shared packages, the run
	// plans, the sessions), the .git (folder or file) and .gitmodules at
	// the top of each writable root, whose hooks and settings git runs at
	// the user's next commit (see gitNames), where such a .git leads git
	// inside the writable roots (see gitLeads), and the user's home folder
	// when a writable root holds it (see homeFolders).
	ReadOnly []string `json:",omitempty"`
	// Sessions, when not "", is covered by an empty read-only folder
	// (vis-agent's sandbox folder: every session's key, socket and
	// snapshot, the attachments store of every session, the REPL's
	// history), whatever root holds it, writable or read-only (a
	// --read-only-root of ~ or of a parent of $VIS_HOME showed every
	// session's key and attachments), but for the writable roots
	// inside it, the session's own state and temp folders, and Shown, the
	// session's own folders it reads only (its package folder), shown
	// read-only.
	Sessions string   `json:",omitempty"`
	Shown    []string `json:",omitempty"`
}

// Empty reports whether s keeps nothing.
func (s Shield) Empty() bool { return len(s.Writable) == 0 && len(s.ReadOnly) == 0 && s.Sessions == "" }

// Protects reports whether s keeps anything inside roots (every root,
// writable or not), which a process without a mount namespace of its own
// must not run without.
func (s Shield) Protects(roots []string) bool {
	if len(s.ReadOnly) > 0 {
		return true
	}
	if s.Sessions == "" {
		return false
	}
	for _, r := range roots {
		if realpath.Within(s.Sessions, realpath.Canonical(r)) {
			return true
		}
	}
	return false
}

// Keep are what the cover of the sessions folder shows: the writable
// roots inside it, and Shown.
func (s Shield) Keep() []string {
	var keep []string
	for _, w := range s.Writable {
		if s.Sessions != "" && realpath.Within(w, s.Sessions) {
			keep = append(keep, w)
		}
	}
	return append(keep, s.Shown...)
}

// NewShield is the shield of a session whose writable roots are
// readWrite, given vis-agent's own folders (own: $VIS_HOME, the shared
// packages; kept read-only whole where a root holds them), those a root
// may not be inside of (inner: what vis-agent keeps in $VIS_HOME), and
// the folder of all sessions and the session's own folders inside it
// (keep: its state and temp folders, writable roots themselves, and its
// package folder, which it reads only). A writable root inside one of
// inner but those is refused: the jail could change vis-agent's
// settings, packages or another session. The folder that holds the
// sessions folder (paths.Layout's Sandbox, which holds the attachments
// store and the history beside it) is covered whether or not a writable
// root holds it: a read-only root may.
func NewShield(readWrite, own, inner []string, sessions string, keep []string) (Shield, error) {
	var s Shield
	canonAll := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			if p != "" {
				out = append(out, realpath.Canonical(p))
			}
		}
		return out
	}
	ownC, innerC, sessions := canonAll(own), canonAll(inner), realpath.Canonical(sessions)
	kept := map[string]bool{}
	for _, k := range canonAll(keep) {
		kept[k] = true
	}
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			s.ReadOnly = append(s.ReadOnly, p)
		}
	}
	for _, root := range canonAll(readWrite) {
		s.Writable = append(s.Writable, root)
		if kept[root] {
			continue
		}
		for _, o := range ownC {
			if realpath.Within(o, root) {
				add(o)
			}
		}
		for _, in := range innerC {
			if realpath.Within(root, in) {
				return Shield{}, fmt.Errorf("the writable root %s is inside %s, vis-agent's own: the jail could change its settings, packages or other sessions; use a folder outside it", root, in)
			}
		}
	}
	for _, h := range homeFolders() {
		if !s.holds(h) {
			continue
		}
		// The home folder's top level is where the shell, ssh, git and
		// most tools find what they run as the user (~/.bashrc, and
		// ~/.bash_profile that bash prefers once it exists, ~/.ssh,
		// ~/.config): the whole top level is read-only, new names too,
		// and its folders but the dot-folders are writable again, but
		// for the .git at the top of each (~/proj/.git: a project
		// checked out in the home; see Now). A symbolic link stays as it
		// is (the link cannot be replaced; what it points at is the
		// roots' to allow).
		add(h)
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				s.Writable = append(s.Writable, filepath.Join(h, e.Name()))
			}
		}
	}
	if sessions != "" && sessions != "." {
		s.Sessions = filepath.Dir(sessions)
		writable := map[string]bool{}
		for _, w := range s.Writable {
			writable[w] = true
		}
		for _, k := range canonAll(keep) {
			if !writable[k] {
				s.Shown = append(s.Shown, k)
			}
		}
	}
	return s.Now(), nil
}

// gitNames are what git reads at the top of a work tree and runs as the
// user at the next commit, fetch or checkout there: .git (its hooks and
// settings; a folder, or a file naming one) and .gitmodules (the
// submodules' addresses and paths).
var gitNames = []string{".git", ".gitmodules"}

// IsGitName reports whether name is one of gitNames.
func IsGitName(name string) bool { return slices.Contains(gitNames, name) }

// Now is s with the git names at the top of each writable root, and
// where they lead git (gitLeads), kept read-only as the roots hold them
// now: a process started now gets this
// shield. The user may run git init or git clone in a root while a
// session lives, so a shield computed earlier is stale: the session's
// host makes a new child and computes its commands' shields anew (see
// sandbox/host's gitwatch.go). A name that is a symbolic link is left:
// the jail could replace the link itself, which no mount can hold
// (docs/jail.md, Limits); one that is missing cannot be mounted over.
func (s Shield) Now() Shield {
	writable := map[string]bool{}
	for _, w := range s.Writable {
		writable[w] = true
	}
	readOnly := make([]string, 0, len(s.ReadOnly))
	for _, p := range s.ReadOnly {
		if !writable[filepath.Dir(p)] || !IsGitName(filepath.Base(p)) {
			readOnly = append(readOnly, p)
		}
	}
	for _, w := range s.Writable {
		for _, name := range gitNames {
			p := filepath.Join(w, name)
			if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink == 0 && !slices.Contains(readOnly, p) {
				readOnly = append(readOnly, p)
			}
		}
		for _, p := range gitLeads(w) {
			if s.holds(p) && !s.holdsRoot(p) && !slices.Contains(readOnly, p) {
				readOnly = append(readOnly, p)
			}
		}
	}
	// Outer first: a read-only folder inside another is mounted after it.
	sort.SliceStable(readOnly, func(i, j int) bool { return depth(readOnly[i]) < depth(readOnly[j]) })
	s.ReadOnly = readOnly
	return s
}

// maxGitPointer bounds the .git file and commondir gitLeads reads.
const maxGitPointer = 4096

// gitLeads are the places, canonical, outside the .git at the top of the
// work tree root, where git there finds what it runs as the user: the
// folder a .git file names ("gitdir: X", git init --separate-git-dir, a
// worktree's or a submodule's), the common folder a git folder's
// commondir names (its config and hooks are read there), and what the
// config, hooks and info of either are symbolic links to. Kept read-only
// where a writable root holds them, as the .git itself: a hook or a
// setting written there runs at the next commit as surely. The names on
// the way there are not (a mount cannot hold a name in a writable
// folder): the host watches them (GitWay).
func gitLeads(root string) []string {
	way := GitWayOf(root)
	if way.Dir == "" {
		return nil
	}
	var leads []string
	dirs := []string{way.Dir}
	if way.Dir != filepath.Join(root, ".git") {
		leads = append(leads, way.Dir)
	}
	if way.Common != "" {
		leads = append(leads, way.Common)
		dirs = append(dirs, way.Common)
	}
	for _, d := range dirs {
		for _, name := range []string{"config", "config.worktree", "hooks", "info"} {
			p := filepath.Join(d, name)
			if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink != 0 {
				leads = append(leads, realpath.Canonical(p))
			}
		}
	}
	return leads
}

// GitWay is how git at a work tree root finds its git folder: Dir, the
// git folder (canonical; "" when the root's .git is neither a folder nor
// a file naming one that exists), Common, the folder its commondir names
// ("" for none), and Names, every name looked up on the way from the .git
// file to Dir and from Dir to Common (realpath.Trace: the folders, the
// symbolic links, the first one missing). Where a writable root holds
// one of Names, the session can replace it (a link pointed elsewhere, a
// folder moved away and made anew) and lead git to a folder of its own
// at the user's next git command: the host watches them as it watches a
// new .git (sandbox/host's gitwatch.go).
type GitWay struct {
	Dir, Common string
	Names       []string
}

// GitWayOf is the GitWay of the work tree root, as the files are now.
func GitWayOf(root string) GitWay {
	var way GitWay
	dir := filepath.Join(root, ".git")
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return way
	case st.Mode().IsRegular():
		gitdir, ok := gitPointer(dir, "gitdir: ")
		if !ok {
			return way
		}
		if dir, way.Names = realpath.Trace(relativeTo(root, gitdir)); dir == "" {
			return way
		}
	case !st.IsDir():
		return way
	}
	way.Dir = dir
	if common, ok := gitPointer(filepath.Join(dir, "commondir"), ""); ok {
		var names []string
		way.Common, names = realpath.Trace(relativeTo(dir, common))
		way.Names = append(way.Names, names...)
	}
	return way
}

// gitPointer is the path a git pointer file names (a .git file's
// "gitdir: X", a commondir's X): its first line without prefix. A file
// the jail may have written: never followed as a link, never waited on
// (a FIFO), bounded.
func gitPointer(path, prefix string) (string, bool) {
	data, err := fsutil.ReadRegular(path, maxGitPointer)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	return target, ok && target != ""
}

// relativeTo is p, when relative, put after dir, not cleaned: git
// resolves "link/.." from where link leads (realpath.Trace does), not
// lexically as filepath.Join would.
func relativeTo(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return dir + "/" + p
}

// holdsRoot reports whether p is a writable root of s or holds one: a
// git lead there (a .git file naming ".") is not made read-only, which
// would take the root itself.
func (s Shield) holdsRoot(p string) bool {
	for _, w := range s.Writable {
		if realpath.Within(w, p) {
			return true
		}
	}
	return false
}

// GitAt reports whether path is a git name at the top of a writable root
// of s, or inside one, whether it exists or not.
func (s Shield) GitAt(path string) bool {
	for _, w := range s.Writable {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(w, "/")+"/")
		if first, _, _ := strings.Cut(rel, "/"); ok && IsGitName(first) {
			return true
		}
	}
	return false
}

// holds reports whether a writable root holds p.
func (s Shield) holds(p string) bool {
	for _, w := range s.Writable {
		if realpath.Within(p, w) {
			return true
		}
	}
	return false
}

// homeFolders are the user's home folders, canonical: $HOME, which the
// user's shells and tools read, and the account's, which a new login
// reads. "/" is none (a service's home): a root of "/" is the user's
// own choice of everything.
func homeFolders() []string {
	var homes []string
	candidates := []string{os.Getenv("HOME")}
	if u, err := user.Current(); err == nil {
		candidates = append(candidates, u.HomeDir)
	}
	for _, h := range candidates {
		if !filepath.IsAbs(h) {
			continue
		}
		if h = realpath.Canonical(h); h != "/" && !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	return homes
}

// ReadOnlyAt reports whether s keeps path read-only: a git name at the
// top of a writable root or inside one (GitAt: also one made after s was
// computed, for the host's own tools, which write outside the jail), or
// the deepest of its read-only and writable folders holding path is a
// read-only one (at one depth, read-only wins: it is mounted over the
// writable clone).
func (s Shield) ReadOnlyAt(path string) bool {
	if s.GitAt(path) {
		return true
	}
	best, readOnly := -1, false
	for _, p := range s.ReadOnly {
		if realpath.Within(path, p) && depth(p) > best {
			best, readOnly = depth(p), true
		}
	}
	for _, p := range s.Writable {
		if realpath.Within(path, p) && depth(p) > best {
			best, readOnly = depth(p), false
		}
	}
	return readOnly
}

func depth(p string) int { return strings.Count(p, "/") }
