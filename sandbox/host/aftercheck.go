package host

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// Bounds of the check after a block.
const (
	maxCheckedFiles = 200
	maxCheckedBytes = 5 << 20
	// maxCheckTime bounds the compiles; a repair that needs more is not
	// proposed.
	maxCheckTime = 2 * time.Second
	// maxScanEntries bounds the walk of the workspace for the files that
	// shell() commands changed.
	maxScanEntries = 20000
	// scanSlack: a file's time comes from the kernel's coarse clock, a
	// tick behind the block's start.
	scanSlack = 50 * time.Millisecond
)

// unscanned reports whether the walk leaves the folder name out:
// version control, environments, caches and dependencies, which a
// shell() command such as git checkout or pip install fills with files
// that are not the session's work.
func unscanned(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", "site-packages",
		".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".idea", ".eggs":
		return true
	}
	return false
}

// checkBlock looks at the checked files (sandbox/check) a block created
// or changed inside the workspace and, for each that no longer parses,
// puts a FileCheck in the result and a line at the end of the block's
// output; with sandbox.fix_files an exact repair of a Python file is
// written. The files: those the child saw the session's code write (its
// audit hook's notes, exact for Python code and free when there are
// none), and when shell() commands may have run during the block, or the
// notes overflowed, those the workspace holds with a time since the
// block started (a bounded walk). Writes by C code that bypass Python's
// file functions, and by processes the block started otherwise, are not
// seen. A file is read at most once per change (its inode, size and
// time), beneath the workspace, following no symlink.
func (h *Host) checkBlock(c *proc, res *protocol.Result, started time.Time, out *sink) {
	written, more := res.Written, res.WrittenMore
	res.Written, res.WrittenMore = nil, false
	scan := more || h.shellsRanSince(started)
	if len(written) == 0 && !scan {
		return
	}
	ws := filepath.Clean(h.cfg.Meta.Workspace)
	tree, err := tools.OpenTree(ws)
	if err != nil {
		return
	}
	defer tree.Close()
	rels := workspaceFiles(ws, written)
	if scan {
		changed, _ := tree.Changed(started.Add(-scanSlack), maxScanEntries,
			func(rel string) bool { return check.KindOf(rel) != "" }, unscanned)
		rels = append(rels, changed...)
	}
	slices.Sort(rels)
	rels = slices.Compact(rels)
	checks, unchecked, skipped := h.checkFiles(c, tree, realpath.Canonical(ws), rels)
	res.Checks = checks
	if text := checkLines(checks, unchecked, skipped); text != "" {
		out.Send(protocol.Event{Ev: protocol.EvOut, Stream: protocol.StreamStderr, Data: text})
	}
}

// workspaceFiles are the paths of written inside the workspace ws (as it
// is named, or as the kernel resolves it: the child names files from its
// working folder), relative to it.
func workspaceFiles(ws string, written []string) []string {
	roots := []string{ws}
	if real, err := realpath.Eval(ws); err == nil && real != ws {
		roots = append(roots, real)
	}
	var rels []string
	for _, p := range written {
		p = filepath.Clean(p)
		for _, root := range roots {
			if rel, err := filepath.Rel(root, p); err == nil && rel != "." && !strings.HasPrefix(rel, "../") && rel != ".." {
				rels = append(rels, rel)
				break
			}
		}
	}
	return rels
}

// checkFiles checks the files rels of the workspace tree (whose
// canonical path is root), within the bounds: the ones that do not
// parse, a line for each one not parsed, saying why, and how many were
// left unchecked. The data files are parsed together in a worker process
// (parseTexts), Python files compiled by the child.
func (h *Host) checkFiles(c *proc, tree *tools.Tree, root string, rels []string) (found []protocol.FileCheck, unchecked []string, skipped int) {
	deadline := time.Now().Add(maxCheckTime)
	type file struct {
		rel  string
		data []byte
		st   unix.Stat_t
	}
	var files []file
	var texts []dataText
	budget := int64(maxCheckedBytes)
	for i, rel := range rels {
		if len(files) >= maxCheckedFiles {
			skipped += len(rels) - i
			break
		}
		st, err := tree.Stat(rel)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || h.checks.unchanged(rel, st) {
			continue // gone, not a regular file, or checked as it is
		}
		if st.Size > budget {
			skipped++
			continue
		}
		data, st, err := tree.ReadFile(rel, budget)
		if err != nil {
			continue
		}
		budget -= int64(len(data))
		files = append(files, file{rel, data, st})
		if kind := check.KindOf(rel); kind != check.Python {
			texts = append(texts, dataText{kind, string(data)})
		}
	}
	// The worker parses while the child compiles.
	parsing := make(chan []check.Parsed, 1)
	if len(texts) > 0 {
		go func() { parsing <- h.parseTexts(deadline, texts) }()
	}
	var parsed []check.Parsed // the worker's answers not used yet
	compile, lost := c.fileCompiler(deadline)
	checker := h.checker(compile)
	var next check.Parsed // the answer for the data file being checked
	checker.Parse = func(check.Kind, string) (*check.Problem, string) { return next.Problem, next.Unchecked }
	for _, f := range files {
		python := check.KindOf(f.rel) == check.Python
		if python && (*lost || time.Now().After(deadline)) {
			skipped++
			continue
		}
		if !python {
			if parsed == nil {
				parsed = <-parsing
			}
			next, parsed = parsed[0], parsed[1:]
		}
		v, _ := checker.Text(f.rel, string(f.data), true)
		if python && *lost {
			skipped++
			continue
		}
		h.checks.checked(f.rel, f.st)
		real := filepath.Join(root, f.rel)
		if v.Unchecked != "" {
			unchecked = append(unchecked, fmt.Sprintf("%s: not checked (%s): %s", f.rel, v.Checked, v.Unchecked))
			continue
		}
		if v.Problem == nil {
			if strings.HasPrefix(v.Checked, string(check.Python)) {
				h.checks.compiles(real, string(f.data), nil)
			}
			continue
		}
		fc := protocol.FileCheck{Path: f.rel, Checked: v.Checked, Line: v.Problem.Line, Column: v.Problem.Column, Message: v.Problem.Message}
		if v.Fixed != "" {
			fc.Fix = strings.Join(v.Fixes, "; ")
			if h.cfg.FixFiles && tree.Replace(f.rel, v.Fixed, f.st) == nil {
				fc.Fixed = true
				h.checks.compiles(real, v.Fixed, nil)
				h.checks.bump(h.versionsFile(), real)
				if now, err := tree.Stat(f.rel); err == nil {
					h.checks.checked(f.rel, now)
				}
			}
		}
		found = append(found, fc)
	}
	return found, unchecked, skipped
}

// fileCompiler compiles files with the child, between blocks, until
// deadline; lost is set when the child stopped answering (it is then
// killed: its link is out of step) or the deadline passed, and the
// compiles after it fail.
func (c *proc) fileCompiler(deadline time.Time) (check.Compile, *bool) {
	lost := new(bool)
	return func(name, src string) (*protocol.SyntaxError, bool) {
		if *lost || time.Now().After(deadline) {
			*lost = true
			return &protocol.SyntaxError{Message: "the check's time ran out"}, true
		}
		if err := c.conn.Send(protocol.Request{V: protocol.Version, Op: protocol.OpCompile, Code: protocol.FileCode(src), File: name}); err != nil {
			*lost = true
			return &protocol.SyntaxError{Message: "the Python process stopped"}, true
		}
		c.link.SetReadDeadline(time.Now().Add(pingTimeout))
		ev, err := c.answer()
		c.link.SetReadDeadline(time.Time{})
		if err != nil || ev.Ev != protocol.EvCompiled {
			*lost = true
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.mu.Lock()
				c.retired = fmt.Sprintf("the Python process did not answer for %s while the files of the block were checked", humanDuration(pingTimeout))
				c.mu.Unlock()
				c.kill()
			}
			return &protocol.SyntaxError{Message: "the Python process stopped"}, true
		}
		return ev.Syntax, true
	}, lost
}

// shellsRanSince reports whether a shell() command of the session may
// have run since t.
func (h *Host) shellsRanSince(t time.Time) bool {
	h.shells.mu.Lock()
	defer h.shells.mu.Unlock()
	for _, m := range h.shells.sets {
		if m.RanSince(t) {
			return true
		}
	}
	return false
}

// checkLines are the lines a block's output ends with: one per file that
// does not parse, and those of unchecked (files not parsed).
func checkLines(checks []protocol.FileCheck, unchecked []string, skipped int) string {
	var b strings.Builder
	for _, fc := range checks {
		fmt.Fprintf(&b, "[file check] %s", fc.Path)
		if fc.Line > 0 {
			fmt.Fprintf(&b, ":%d", fc.Line)
			if fc.Column > 0 {
				fmt.Fprintf(&b, ":%d", fc.Column)
			}
		}
		fmt.Fprintf(&b, ": %s (%s)", oneLine(fc.Message), fc.Checked)
		switch {
		case fc.Fixed:
			fmt.Fprintf(&b, "; fixed (sandbox.fix_files): %s", fc.Fix)
		case fc.Fix != "":
			fmt.Fprintf(&b, "; exact fix, not applied (sandbox.fix_files = true applies it): %s", fc.Fix)
		}
		b.WriteByte('\n')
	}
	for _, u := range unchecked {
		fmt.Fprintf(&b, "[file check] %s\n", oneLine(u))
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "[file check] %d more changed files not checked (a block's check reads at most %d files, %d MiB, for %s)\n",
			skipped, maxCheckedFiles, maxCheckedBytes>>20, humanDuration(maxCheckTime))
	}
	return b.String()
}

// oneLine keeps a parser's message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
