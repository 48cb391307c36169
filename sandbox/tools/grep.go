package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
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
	if ws, err := canonical(a.Workspace); err == nil && a.Workspace != "" {
		g.workspace = ws
	}
	if st.IsDir() {
		err = g.walk(a, top.Real, glob)
	} else {
		err = g.file(top)
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
		if within(p, h) {
			return true
		}
	}
	if g.sessions == "" || !within(p, g.sessions) {
		return false
	}
	for _, k := range g.keep {
		// The session's own folders and the way to them.
		if within(p, k) || within(k, p) {
			return false
		}
	}
	return true
}

// walk searches a folder, keeping a stack of the .gitignore files that
// apply to the current folder.
func (g *grepper) walk(a Access, top, glob string) error {
	stack := g.ancestorIgnores(a, top)
	base := len(stack)
	return filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if cerr := g.ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == top {
				return err
			}
			g.skipped++
			return nil
		}
		if g.hidden(p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != top && (d.Name() == ".git" || kernelDirs[p] || ignored(stack, p, true)) {
				return filepath.SkipDir
			}
			for len(stack) > base && !within(p, stack[len(stack)-1].dir) {
				stack = stack[:len(stack)-1]
			}
			if f, ok := g.ignores.read(p); ok {
				stack = append(stack, f)
			}
			return nil
		}
		for len(stack) > base && !within(filepath.Dir(p), stack[len(stack)-1].dir) {
			stack = stack[:len(stack)-1]
		}
		if !d.Type().IsRegular() || ignored(stack, p, false) || !globMatch(glob, top, p) {
			return nil
		}
		switch err := g.file(resolved{Real: p, Shown: p}); {
		case errors.Is(err, errBinary):
			g.res.Binary++
		case g.ctx.Err() != nil:
			return g.ctx.Err()
		case err != nil:
			g.skipped++
		}
		return nil
	})
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
		if f, ok := g.ignores.read(dirs[i]); ok {
			files = append(files, f)
		}
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
func (g *grepper) file(r resolved) error {
	f, err := openText(r)
	if err != nil {
		return err
	}
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
	if g.workspace != "" && within(p, g.workspace) {
		if rel, err := filepath.Rel(g.workspace, p); err == nil {
			return rel
		}
	}
	return p
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
		notes = append(notes, fmt.Sprintf("%d binary files skipped", g.res.Binary))
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
