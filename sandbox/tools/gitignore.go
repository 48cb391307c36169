package tools

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// The Go module proxy offers go-git's gitignore package, which brings
// twenty modules and newer x/net and x/crypto with it, and
// sabhiram/go-gitignore, unmaintained since 2021, which reads "?" as a
// literal and leaves "a/b" unanchored. Git's rules fit in this file.

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	re      *regexp.Regexp // matches a path relative to the file's folder
	negate  bool           // "!pattern": re-includes
	dirOnly bool           // "pattern/": matches directories only
}

// ignoreFile is the rules of one .gitignore, for the paths below dir (the
// canonical path of the file's folder).
type ignoreFile struct {
	dir   string
	rules []ignoreRule
}

// Bounds of the .gitignore files one grep reads: each rule is a compiled
// regular expression, and the session's code writes these files.
const (
	maxIgnoreBytes = 256 << 10
	maxIgnoreRules = 10000
)

// ignoreBudget reads the .gitignore files of one grep, within its bounds.
type ignoreBudget struct {
	rules   int
	skipped int // files not applied: too large, past the rules, not regular
}

// read parses the .gitignore in the folder dir, if there is one it may
// apply: a regular file (opened without following a symlink or waiting on
// a FIFO) of at most maxIgnoreBytes whose rules fit in the budget.
func (b *ignoreBudget) read(d *os.File, dir string) (ignoreFile, bool) {
	fd, err := unix.Openat(int(d.Fd()), ".gitignore", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.skipped++
		}
		return ignoreFile{}, false
	}
	f := os.NewFile(uintptr(fd), path.Join(dir, ".gitignore"))
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxIgnoreBytes {
		b.skipped++
		return ignoreFile{}, false
	}
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, maxIgnoreBytes))
	for sc.Scan() {
		if l := sc.Text(); strings.TrimSpace(l) != "" && l[0] != '#' {
			lines = append(lines, l)
		}
	}
	// Counted before any is compiled.
	if b.rules+len(lines) > maxIgnoreRules {
		b.skipped++
		return ignoreFile{}, false
	}
	b.rules += len(lines)
	return ignoreFile{dir: dir, rules: parseIgnore(lines)}, true
}

// parseIgnore turns .gitignore lines into rules (gitignore(5)): blank
// lines and # comments skipped, trailing spaces dropped unless escaped,
// "!" negates, a trailing "/" matches directories only, a "/" elsewhere
// anchors the pattern to the file's folder, "*" and "?" and "[...]" stay
// within one path element, "**" spans elements.
func parseIgnore(lines []string) []ignoreRule {
	var rules []ignoreRule
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		for strings.HasSuffix(l, " ") && !strings.HasSuffix(l, `\ `) {
			l = l[:len(l)-1]
		}
		if l == "" || l[0] == '#' {
			continue
		}
		var r ignoreRule
		if l[0] == '!' {
			r.negate = true
			l = l[1:]
		}
		if strings.HasSuffix(l, "/") {
			r.dirOnly = true
			l = strings.TrimRight(l, "/")
		}
		anchored := strings.Contains(l, "/")
		l = strings.TrimPrefix(l, "/")
		if l == "" {
			continue
		}
		expr := globRegexp(l)
		if !anchored {
			expr = "(?:.*/)?" + expr
		}
		re, err := regexp.Compile("^" + expr + "$")
		if err != nil {
			continue // git ignores a pattern it cannot read, so do we
		}
		r.re = re
		rules = append(rules, r)
	}
	return rules
}

// globRegexp translates one gitignore glob to a regular expression.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case strings.HasPrefix(glob[i:], "**/") && (i == 0 || glob[i-1] == '/'):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**") && i+2 == len(glob) && (i == 0 || glob[i-1] == '/'):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// ignored reports whether the canonical path p is ignored by files,
// outermost first: the deepest file with a matching rule decides, and in
// it the last matching rule.
func ignored(files []ignoreFile, p string, isDir bool) bool {
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if !strings.HasPrefix(p, strings.TrimSuffix(f.dir, "/")+"/") {
			continue
		}
		sub := p[len(strings.TrimSuffix(f.dir, "/"))+1:]
		for j := len(f.rules) - 1; j >= 0; j-- {
			r := f.rules[j]
			if r.dirOnly && !isDir {
				continue
			}
			if r.re.MatchString(sub) {
				return !r.negate
			}
		}
	}
	return false
}
