package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// maxPatchCompiles bounds the sources one patch() has the session's
// Python compile (vis_sandbox.tools.MAX_PATCH_COMPILES): past it the edit
// is refused, and check=False writes it unchecked.
const maxPatchCompiles = 64

// patchOp is patch(path, old, new, check=True). A checked file's edit is
// checked before it is written (sandbox/check). Python is compiled by the
// session's own Python, which is running the block that called patch, so
// the host cannot ask it on the protocol link: it answers the call with
// {"compile": {"key", "name"}} and the source as the payload, and the
// block's Python calls again with every verdict so far in "compiled"
// (key: null when it compiles, else Python's error). The host keeps
// nothing between those calls: each one checks the edit again from the
// start, with the verdicts given, until it needs no more. An edit the
// check refuses answers {"refused": message}, which the Python side
// raises as ValueError (the message has several lines, which a call's
// error does not). "known" is the hash (sourceKey) of the text the
// session's Python compiled ahead for that path (vis_sandbox.ahead): when
// it is the file's text before the edit, the edit is checked as one of a
// file known to compile. It is that process's word, as each verdict is.
func (h *Host) patchOp(a tools.Access) hostcalls.Op {
	return func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		var in struct {
			Path, Old, New string
			Check          *bool
			Compiled       map[string]*protocol.SyntaxError
			Known          string
		}
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return hostcalls.Reply{}, err
		}
		var decide tools.PatchCheck
		var decided check.Decision
		if in.Check == nil || *in.Check {
			decide = h.patchCheck(in.Compiled, in.Known, &decided)
		}
		res, err := tools.PatchChecked(a, in.Path, in.Old, in.New, decide)
		var need *needCompile
		var refused *tools.Refused
		switch {
		case errors.As(err, &need):
			return hostcalls.Reply{Result: map[string]any{"compile": map[string]string{"key": need.key, "name": need.name}},
				Body: io.NopCloser(strings.NewReader(need.src)), Size: int64(len(need.src))}, nil
		case errors.As(err, &refused):
			return hostcalls.Reply{Result: map[string]string{"refused": refused.Msg}}, nil
		case err != nil:
			return hostcalls.Reply{}, hostcalls.ToolError(err)
		}
		if strings.HasPrefix(res.Checked, string(check.Python)) && res.Invalid == "" {
			h.checks.compiles(res.Real, res.Written, decided.Starts)
		}
		res.Version = h.checks.bump(h.versionsFile(), res.Real)
		res.Note = patchNote(res)
		return hostcalls.Reply{Result: res}, nil
	}
}

// needCompile stops a patch until the session's Python compiled src.
type needCompile struct{ key, name, src string }

func (n *needCompile) Error() string { return "compile " + n.name + " first" }

// sourceKey names a source in a patch's verdicts.
func sourceKey(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:16])
}

// patchCheck is the check of one patch call, with the verdicts its
// Python gave so far and the hash of the text it compiled ahead (""
// for none); the decision it made goes to decided.
func (h *Host) patchCheck(compiled map[string]*protocol.SyntaxError, known string, decided *check.Decision) tools.PatchCheck {
	return func(real string, e check.Edit) (check.Decision, error) {
		c := h.checker(func(name, src string) (*protocol.SyntaxError, bool) {
			v, ok := compiled[sourceKey(src)]
			return v, ok
		})
		e.BeforeValid, e.Starts = h.checks.compiled(real, e.Before)
		if !e.BeforeValid && known != "" && check.KindOf(e.Name) == check.Python && known == sourceKey(e.Before) {
			e.BeforeValid = true
		}
		if e.BeforeValid && e.Starts == nil && check.KindOf(e.Name) == check.Python {
			// Kept for the calls of this patch that follow.
			e.Starts = check.Starts(e.Before, c.Minor)
			h.checks.compiles(real, e.Before, e.Starts)
		}
		d, need := c.Decide(e)
		*decided = d
		if need == "" {
			return d, nil
		}
		if len(compiled) >= maxPatchCompiles {
			return d, &tools.Refused{Msg: fmt.Sprintf("patch %s: checking the edit took more than %d compiles; nothing was written (check=False writes it unchecked)", e.Name, maxPatchCompiles)}
		}
		return d, &needCompile{key: sourceKey(need), name: e.Name, src: need}
	}
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

// patchNote sums up a patch's check for people.
func patchNote(r tools.PatchResult) string {
	var note string
	switch {
	case r.Checked == "":
	case len(r.Corrections) > 0:
		note = fmt.Sprintf("checked as %s and repaired before it was written: %s", r.Checked, strings.Join(r.Corrections, "; "))
	case r.Invalid != "":
		first, _, _ := strings.Cut(r.Invalid, "\n")
		note = fmt.Sprintf("checked as %s: written, but it still does not parse, as before the edit: %s", r.Checked, first)
	default:
		note = "checked as " + r.Checked
	}
	if note != "" {
		note += "; "
	}
	return note + fmt.Sprintf("version %d", r.Version)
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
