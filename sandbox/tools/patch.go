package tools

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/check"
)

// MaxPatchBytes is the largest file patch rewrites: the host holds it,
// and the new content, in memory.
const MaxPatchBytes = 16 << 20

// PatchResult is one replacement written.
type PatchResult struct {
	Path string `json:"path"` // as the caller named it
	Diff string `json:"diff"` // unified diff of what was written, 3 lines of context
	// Checked names the check the new text passed before it was written
	// ("python 3.13", "json", "toml", "yaml"), "" when none was made.
	Checked string `json:"checked"`
	// Corrections are the repair engine's changes to the new text, one
	// sentence each, when what was written is its repair.
	Corrections []string `json:"corrections"`
	// Invalid says the text written does not parse (the file did not
	// before the edit either), "" when it does or was not checked.
	Invalid string `json:"invalid,omitempty"`
	// Version counts the session's writes to the file (the host's).
	Version int `json:"version"`
	// Note sums up the check for people.
	Note string `json:"note,omitempty"`

	// Real is the file's canonical path and Written the text written:
	// for the host's bookkeeping, not the caller's.
	Real    string `json:"-"`
	Written string `json:"-"`
}

// PatchCheck decides, before anything is written, what patch writes in
// place of an edit of the file real (see check.Decision). An error stops
// the patch; nothing is written.
type PatchCheck func(real string, e check.Edit) (check.Decision, error)

// Refused is a patch its check refused: nothing was written. The
// message has several lines (the parser's message, the line, a caret).
type Refused struct{ Msg string }

func (r *Refused) Error() string { return r.Msg }

// Patch replaces the one occurrence of old in the file at path with new,
// and returns the unified diff. It refuses when old is empty, missing or
// found more than once, and when the file is not under a writable root.
// The new content is written to a temporary file beside the old one
// (same mode and owner), synced, and renamed over it, so a crash leaves
// either the old file or the new one; the file's other hard links keep
// the old content.
func Patch(a Access, path, old, new string) (PatchResult, error) {
	return PatchChecked(a, path, old, new, nil)
}

// PatchChecked is Patch whose edit check decides first what is written
// (nil: the edit as is).
func PatchChecked(a Access, path, old, new string, decide PatchCheck) (PatchResult, error) {
	if old == "" {
		return PatchResult{}, fmt.Errorf("patch %s: old is empty; give the exact text to replace", path)
	}
	r, err := a.resolve(path, true)
	if err != nil {
		return PatchResult{}, fmt.Errorf("patch: %w", err)
	}
	if !a.Unconfined && a.rootOf(r.Real) == r.Real {
		// A root itself: its folder is outside the roots.
		if st, err := os.Stat(r.Real); err == nil && st.IsDir() {
			return PatchResult{}, fmt.Errorf("patch: %w", failure(errIsDir, "is a directory: %s", r.Shown))
		}
		return PatchResult{}, fmt.Errorf("patch %s: a root itself is not replaced; patch files inside it", r.Shown)
	}
	dir, err := a.open(filepath.Dir(r.Real), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return PatchResult{}, fmt.Errorf("patch %s: %w", r.Shown, err)
	}
	defer dir.Close()
	name := filepath.Base(r.Real)
	content, st, err := readForPatch(dir, name, r.Shown)
	if err != nil {
		return PatchResult{}, fmt.Errorf("patch: %w", err)
	}
	switch n := strings.Count(content, old); n {
	case 0:
		return PatchResult{}, fmt.Errorf("patch %s: old text not found (it must match exactly, whitespace included)%s", r.Shown, nearest(content, old))
	case 1:
	default:
		return PatchResult{}, fmt.Errorf("patch %s: old text found %d times (%s); add context to make it unique", r.Shown, n, occurrences(content, old))
	}
	at := strings.Index(content, old)
	after := content[:at] + new + content[at+len(old):]
	res := PatchResult{Path: r.Shown, Corrections: []string{}, Real: r.Real, Written: after}
	if decide != nil {
		d, err := decide(r.Real, check.Edit{Name: r.Shown, Before: content, After: after, At: at, OldLen: len(old), NewLen: len(new)})
		if err != nil {
			return PatchResult{}, err
		}
		if !d.Write {
			return PatchResult{}, &Refused{Msg: fmt.Sprintf("patch %s: %s", r.Shown, d.Refused)}
		}
		res.Checked, res.Invalid, res.Written = d.Checked, d.Invalid, d.Text
		res.Corrections = append(res.Corrections, d.Fixes...)
	}
	var diff string
	if res.Written == after {
		edits := []udiff.Edit{{Start: at, End: at + len(old), New: new}}
		diff, err = udiff.ToUnified("a/"+r.Shown, "b/"+r.Shown, content, edits, 3)
	} else {
		diff, err = udiff.ToUnified("a/"+r.Shown, "b/"+r.Shown, content, udiff.Strings(content, res.Written), 3)
	}
	if err != nil {
		return PatchResult{}, fmt.Errorf("patch %s: %w", r.Shown, err)
	}
	if err := replaceFile(int(dir.Fd()), name, res.Written, st); err != nil {
		return PatchResult{}, fmt.Errorf("patch %s: %w", r.Shown, err)
	}
	res.Diff = diff
	return res, nil
}

// readForPatch reads the regular file name in dir, refusing symlinks,
// folders and files over MaxPatchBytes.
func readForPatch(dir *os.File, name, shown string) (string, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "", st, failure(errMissing, "no such file: %s", shown)
		}
		return "", st, fmt.Errorf("%s: %w", shown, err)
	}
	f := os.NewFile(uintptr(fd), shown)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return "", st, fmt.Errorf("%s: %w", shown, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return "", st, failure(errIsDir, "is a directory: %s", shown)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", st, fmt.Errorf("not a regular file: %s", shown)
	case st.Size > MaxPatchBytes:
		return "", st, fmt.Errorf("%s is %d bytes; patch edits files up to %d MiB", shown, st.Size, MaxPatchBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxPatchBytes+1))
	if err != nil {
		return "", st, fmt.Errorf("%s: %w", shown, err)
	}
	return string(data), st, nil
}

// replaceFile writes content to a new file in the folder dfd with st's
// mode and owner, syncs it, renames it over name and syncs the folder.
func replaceFile(dfd int, name, content string, st unix.Stat_t) error {
	tmp := "." + name + ".vis-patch-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	ok := false
	defer func() {
		if !ok {
			f.Close()
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if _, err := io.WriteString(f, content); err != nil {
		return err
	}
	// The owner first: chown clears the set-id bits that fchmod then sets.
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		return err
	}
	ok = true
	// O_PATH descriptors cannot be synced: open the folder again to.
	if d, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Fsync(d)
		unix.Close(d)
	}
	return nil
}

// shownLines is how many places a patch's error names.
const shownLines = 5

// occurrences names the lines where old starts in content: "lines 3, 10
// and 22", the first shownLines of them.
func occurrences(content, old string) string {
	var lines []string
	n := 0
	for at, from := 0, 0; ; from = at + len(old) {
		i := strings.Index(content[from:], old)
		if i < 0 {
			break
		}
		at = from + i
		n++
		if len(lines) < shownLines {
			lines = append(lines, strconv.Itoa(strings.Count(content[:at], "\n")+1))
		}
		if len(old) == 0 {
			break
		}
	}
	text := "lines " + strings.Join(lines, ", ")
	if n > len(lines) {
		text += fmt.Sprintf(", +%d more", n-len(lines))
	}
	return text
}

// nearest says where old's first line is nearly in content: the same
// text with other whitespace, or the line sharing the most of its words
// (at least half); "" when none is near.
func nearest(content, old string) string {
	first := ""
	for _, l := range strings.Split(old, "\n") {
		if strings.TrimSpace(l) != "" {
			first = l
			break
		}
	}
	want := strings.Fields(first)
	if len(want) == 0 {
		return ""
	}
	best, bestShared := 0, 0
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		got := strings.Fields(l)
		if strings.Join(got, " ") == strings.Join(want, " ") {
			return fmt.Sprintf("; its first line is line %d with other whitespace: %q", i+1, shorten(l))
		}
		shared := 0
		have := map[string]int{}
		for _, w := range got {
			have[w]++
		}
		for _, w := range want {
			if have[w] > 0 {
				have[w]--
				shared++
			}
		}
		if shared > bestShared {
			best, bestShared = i, shared
		}
	}
	if 2*bestShared < len(want) {
		return ""
	}
	return fmt.Sprintf("; the nearest line to its first is line %d: %q", best+1, shorten(lines[best]))
}

// shorten cuts a line for an error message.
func shorten(l string) string {
	if r := []rune(l); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return l
}
