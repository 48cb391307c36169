package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// Limits of grep.
const (
	DefaultGrepRows = 200
	// MaxGrepRows caps limit: the rows of one answer, whatever the
	// session's code asks (Total still counts every match).
	MaxGrepRows = 10000
	// grepLineBytes is how much of one line grep searches; the rest of a
	// longer line is not searched.
	grepLineBytes = 1 << 20
	// grepShowBytes is how much of a matching line a row shows, around
	// the match.
	grepShowBytes = 300
)

// GrepMatch is one matching line.
type GrepMatch struct {
	File string `json:"file"` // relative to the workspace when inside it
	Line int    `json:"line"` // from 1
	Text string `json:"text"` // the line, cut around the match when long
}

// GrepResult is the lines of text files that match a pattern.
type GrepResult struct {
	Pattern string      `json:"pattern"`
	Path    string      `json:"path"` // as the caller named it
	Matches []GrepMatch `json:"matches"`
	// Text is the matches as "file:line:text" rows, then the note.
	Text string `json:"text"`
	// Total counts every matching line, shown or not.
	Total int `json:"total"`
	Files int `json:"files"` // text files searched
	// Binary counts files skipped because they hold a NUL byte.
	Binary int `json:"binary"`
	// Note says what was left out and how to narrow the search.
	Note string `json:"note"`
}

// Grep searches the text files under path (a file or a folder; the
// workspace when empty) for lines matching pattern, a Go regular
// expression (RE2 syntax). Folders are walked without following symlinks;
// .git folders, files a .gitignore ignores (those of the folders searched
// and of their parents up to the repository's top) and binary files are
// skipped. glob, when set, keeps only files whose name matches it (or,
// when it holds a "/", whose path relative to path does). At most limit
// matches (DefaultGrepRows when limit <= 0) are returned; Total counts
// all of them.
func Grep(ctx context.Context, a Access, pattern, path, glob string, limit int) (GrepResult, error) {
	if limit <= 0 {
		limit = DefaultGrepRows
	}
	capped := limit > MaxGrepRows
	limit = min(limit, MaxGrepRows)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return GrepResult{}, fmt.Errorf("grep: bad regex %q: %w", pattern, unwrapSyntax(err))
	}
	if glob != "" {
		if _, err := filepath.Match(glob, ""); err != nil {
			return GrepResult{}, fmt.Errorf("grep: bad glob %q: %w", glob, err)
		}
	}
	if path == "" {
		path = "."
	}
	top, err := a.resolve(path, false)
	if err != nil {
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	st, err := os.Lstat(top.Real)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return GrepResult{}, failure(errMissing, "grep: no such file or folder: %s", top.Shown)
		}
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	g := &grepper{ctx: ctx, re: re, limit: limit, capped: capped, res: GrepResult{Pattern: pattern, Path: top.Shown}}
	if !a.Unconfined {
		for _, h := range a.Hidden {
			g.hide = append(g.hide, rootPath(h))
		}
		g.sessions, g.keep = a.Shield.Sessions, a.Shield.Keep()
	}
	if ws, err := realpath.Resolve(a.Workspace); err == nil && a.Workspace != "" {
		g.workspace = ws
	}
	if st.IsDir() {
		err = g.walk(a, top.Real, glob)
	} else {
		err = g.file(a, top)
	}
	if err != nil {
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	g.finish()
	return g.res, nil
}

// grepper holds one search's state.
type grepper struct {
	ctx       context.Context
	re        *regexp.Regexp
	limit     int
	capped    bool // limit was cut to MaxGrepRows
	workspace string
	res       GrepResult
	rows      strings.Builder
	skipped   int      // files that could not be read
	binaries  []string // the first binary files skipped, as shown
	cut       int      // files searched in their first MaxScanBytes only
	hide      []string // Access.Hidden, made canonical
	ignores   ignoreBudget
	// sessions is the folder the shield covers but for keep (canonical).
	sessions string
	keep     []string
}

// hidden reports whether p is one of the session's hidden paths or
// under one, or in another session's folder.
func (g *grepper) hidden(p string) bool {
	for _, h := range g.hide {
		if realpath.Within(p, h) {
			return true
		}
	}
	if g.sessions == "" || !realpath.Within(p, g.sessions) {
		return false
	}
	for _, k := range g.keep {
		// The session's own folders and the way to them.
		if realpath.Within(p, k) || realpath.Within(k, p) {
			return false
		}
	}
	return true
}

// maxWalkPath is the longest path grep enters (PATH_MAX): descriptors
// reach deeper than any path, and each level holds one open.
const maxWalkPath = 4096

// walk searches the folder top, opened beneath its root, and below it
// one name at a time relative to the folder's descriptor, never following
// a symlink: a folder the session's code swaps for a symlink while the
// search runs is not entered, wherever the symlink leads.
func (g *grepper) walk(a Access, top, glob string) error {
	stack := g.ancestorIgnores(a, top)
	d, err := a.open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	defer d.Close()
	return g.dir(d, top, top, glob, stack)
}

// dir searches the folder d, found at p, in name order, with the
// .gitignore files of stack (its parents') and its own.
func (g *grepper) dir(d *os.File, p, top, glob string, stack []ignoreFile) error {
	stack = stack[:len(stack):len(stack)] // siblings do not share what this one appends
	if f, ok := g.ignores.read(d, p); ok {
		stack = append(stack, f)
	}
	entries, err := d.ReadDir(-1)
	if err != nil && len(entries) == 0 {
		if p == top {
			return err
		}
		g.skipped++
		return nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if err := g.ctx.Err(); err != nil {
			return err
		}
		child := filepath.Join(p, e.Name())
		switch {
		case g.hidden(child):
			continue
		case len(child) > maxWalkPath:
			g.skipped++
			continue
		case e.IsDir():
			if e.Name() == ".git" || kernelDirs[child] || ignored(stack, child, true) {
				continue
			}
			fd, err := unix.Openat(int(d.Fd()), e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err != nil {
				g.skipped++
				continue
			}
			sub := os.NewFile(uintptr(fd), child)
			err = g.dir(sub, child, top, glob, stack)
			sub.Close()
			if err != nil {
				return err
			}
		case e.Type().IsRegular():
			if ignored(stack, child, false) || !globMatch(glob, top, child) {
				continue
			}
			r := resolved{Real: child, Shown: child}
			fd, err := unix.Openat(int(d.Fd()), e.Name(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			var f *os.File
			if err == nil {
				f = os.NewFile(uintptr(fd), child)
			} else {
				err = &os.PathError{Op: "open", Path: child, Err: err}
			}
			if f, err = checkText(f, err, r); err == nil {
				err = g.search(f, r)
			}
			switch {
			case errors.Is(err, errBinary):
				g.res.Binary++
				if len(g.binaries) < shownBinaries {
					g.binaries = append(g.binaries, g.shown(child))
				}
			case g.ctx.Err() != nil:
				return g.ctx.Err()
			case err != nil:
				g.skipped++
			}
		}
	}
	return nil
}

// kernelDirs hold the kernel's files, not text; a search of / (without
// the jail) passes them over.
var kernelDirs = map[string]bool{"/proc": true, "/sys": true, "/dev": true}

// ancestorIgnores reads the .gitignore files of top's parents up to the
// top of the git repository holding top, when there is one; parents
// outside the roots are not read.
func (g *grepper) ancestorIgnores(a Access, top string) []ignoreFile {
	var dirs []string
	for dir := filepath.Dir(top); dir != top; top, dir = dir, filepath.Dir(dir) {
		if !a.Unconfined && !under(dir, a.ReadWrite) && !under(dir, a.ReadOnly) {
			return nil
		}
		dirs = append(dirs, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			break
		}
		if dir == "/" {
			return nil // no repository above
		}
	}
	var files []ignoreFile
	for i := len(dirs) - 1; i >= 0; i-- {
		d, err := a.open(dirs[i], unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		if f, ok := g.ignores.read(d, dirs[i]); ok {
			files = append(files, f)
		}
		d.Close()
	}
	return files
}

// globMatch reports whether the file p found under top passes glob.
func globMatch(glob, top, p string) bool {
	if glob == "" {
		return true
	}
	name := filepath.Base(p)
	if strings.Contains(glob, "/") {
		name, _ = filepath.Rel(top, p)
	}
	ok, _ := filepath.Match(glob, name)
	return ok
}

// file searches one file, counting every match and keeping the first
// ones up to the limit.
func (g *grepper) file(a Access, r resolved) error {
	f, err := openText(a, r)
	if err != nil {
		return err
	}
	return g.search(f, r)
}

// search searches f, opened for r, and closes it.
func (g *grepper) search(f *os.File, r resolved) error {
	defer f.Close()
	g.res.Files++
	shown := g.display(r.Real)
	scan := &scanned{r: f, left: MaxScanBytes}
	br := bufio.NewReaderSize(scan, 64<<10)
	for n := 1; ; n++ {
		if n%checkEvery == 0 && g.ctx.Err() != nil {
			return g.ctx.Err()
		}
		l, err := readLine(br, grepLineBytes)
		if errors.Is(err, io.EOF) {
			if scan.cut {
				g.cut++
			}
			return nil
		}
		if err != nil {
			return err
		}
		loc := g.re.FindStringIndex(l.text)
		if loc == nil {
			continue
		}
		g.res.Total++
		if len(g.res.Matches) < g.limit {
			m := GrepMatch{File: shown, Line: n, Text: around(l.text, loc[0], grepShowBytes)}
			g.res.Matches = append(g.res.Matches, m)
			fmt.Fprintf(&g.rows, "%s:%d:%s\n", m.File, m.Line, m.Text)
		}
	}
}

// display is how a row names a file: relative to the workspace when
// inside it, absolute otherwise.
func (g *grepper) display(p string) string {
	if g.workspace != "" && realpath.Within(p, g.workspace) {
		if rel, err := filepath.Rel(g.workspace, p); err == nil {
			return rel
		}
	}
	return p
}

// shownBinaries is how many of the binary files skipped the note names.
const shownBinaries = 5

// shown is path as the note names it: relative to the workspace inside it.
func (g *grepper) shown(path string) string {
	if rel, err := filepath.Rel(g.workspace, path); err == nil && g.workspace != "" && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// finish writes the rows and the note.
func (g *grepper) finish() {
	var notes []string
	if more := g.res.Total - len(g.res.Matches); more > 0 && g.capped {
		notes = append(notes, fmt.Sprintf("%d more matching lines not shown (at most %d are; narrow with path= or glob=)", more, MaxGrepRows))
	} else if more > 0 {
		notes = append(notes, fmt.Sprintf("%d more matching lines not shown (raise limit=, or narrow with path= or glob=)", more))
	}
	if g.res.Total == 0 {
		notes = append(notes, fmt.Sprintf("no match in %d files", g.res.Files))
	}
	if g.res.Binary > 0 {
		names := strings.Join(g.binaries, ", ")
		if more := g.res.Binary - len(g.binaries); more > 0 {
			names += fmt.Sprintf(", +%d more", more)
		}
		notes = append(notes, fmt.Sprintf("%d binary files skipped: %s", g.res.Binary, names))
	}
	if g.skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d files could not be read", g.skipped))
	}
	if g.cut > 0 {
		notes = append(notes, fmt.Sprintf("%d files searched in their first %d MiB only", g.cut, MaxScanBytes>>20))
	}
	if g.ignores.skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d .gitignore files not applied (over %d KiB, past %d rules in all, or not regular files)", g.ignores.skipped, maxIgnoreBytes>>10, maxIgnoreRules))
	}
	g.res.Note = strings.Join(notes, "; ")
	g.res.Text = g.rows.String()
	if g.res.Note != "" {
		g.res.Text += "(" + g.res.Note + ")\n"
	}
	if g.res.Matches == nil {
		g.res.Matches = []GrepMatch{}
	}
}

// around cuts a long line to about size bytes around the byte offset at,
// on rune boundaries, marking what it left out.
func around(text string, at, size int) string {
	if len(text) <= size {
		return text
	}
	start := max(0, at-size/4)
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	end := min(len(text), start+size)
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// unwrapSyntax keeps the part of a regexp error that says what is wrong.
func unwrapSyntax(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%s: `%s`", se.Code, se.Expr)
	}
	return err
}
