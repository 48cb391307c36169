package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// docPages are the pages a user reads: the README and docs/*.md, relative
// to the repository's top folder.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, pages...)
}

// TestDocsCommandsExist: every `vis-agent …` command line in a shell code
// block of the README and docs/*.md names commands the built binary has
// (asked with --help, as a user would) and only flags their help lists,
// so a renamed command or flag cannot leave the docs behind.
func TestDocsCommandsExist(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	helps := map[string]string{}
	help := func(path []string) string {
		key := strings.Join(path, " ")
		if h, ok := helps[key]; ok {
			return h
		}
		out, err := exec.Command(bin, append(path, "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("vis-agent %s --help: %v\n%s", key, err, out)
		}
		helps[key] = string(out)
		return string(out)
	}
	n := 0
	for _, page := range docPages(t) {
		for _, c := range docCommands(t, page) {
			n++
			if err := checkCommand(c.words, help); err != nil {
				t.Errorf("%s:%d: %s: %v", filepath.Base(page), c.line, strings.Join(c.words, " "), err)
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d vis-agent command lines in the docs: the extraction is broken", n)
	}
	t.Logf("%d vis-agent command lines checked", n)
}

// docCommand is one vis-agent invocation of a code block: its words after
// "vis-agent", up to a shell operator or comment.
type docCommand struct {
	line  int
	words []string
}

// shellBlocks are the info strings of the code blocks whose lines are
// command lines: shell, and the bare blocks of usage synopses.
var shellBlocks = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}

// docCommands reads the vis-agent invocations of page's shell code blocks.
// A line that starts with spaces and "[" continues the synopsis above it.
func docCommands(t *testing.T, page string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	inBlock, shell := false, false
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !inBlock {
				shell = shellBlocks[strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))]
			}
			inBlock = !inBlock
			continue
		}
		if !inBlock || !shell {
			continue
		}
		words := shellWords(line)
		if len(out) > 0 && strings.HasPrefix(trimmed, "[") && line != trimmed && out[len(out)-1].line == i {
			out[len(out)-1].words = append(out[len(out)-1].words, words...)
			out[len(out)-1].line = i + 1
			continue
		}
		// A command starts a line, follows an operator or the "--" before
		// a command line given to another program (claude mcp add … --),
		// after any VAR=value words.
		start := true
		for j := 0; j < len(words); j++ {
			w := words[j]
			if strings.HasPrefix(w, "#") {
				break // a comment
			}
			if shellOperator[w] || w == "--" {
				start = true
				continue
			}
			if start && envAssignment.MatchString(w) {
				continue
			}
			isCommand := start && (w == "vis-agent" || strings.HasSuffix(w, "/vis-agent"))
			start = false
			if !isCommand {
				continue
			}
			c := docCommand{line: i + 1}
			depth := 0
			for j++; j < len(words); j++ {
				w := words[j]
				if depth == 0 && (shellOperator[w] || w == ">" || w == "2>" || strings.HasPrefix(w, "#")) {
					break
				}
				depth += strings.Count(w, "[") - strings.Count(w, "]")
				c.words = append(c.words, w)
			}
			j--
			out = append(out, c)
		}
	}
	return out
}

// shellOperator ends one command and starts the next.
var shellOperator = map[string]bool{"|": true, "&&": true, "||": true, ";": true}

// envAssignment is a VAR=value word before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// shellWords splits a line as a shell would, keeping quoted text as one
// word (its quotes dropped) and a backslash-newline out.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord && cur.String() != "\\" {
		words = append(words, cur.String())
	}
	return words
}

// placeholder is a synopsis word standing for a value: COMMAND, FILE,
// ID|FILENAME, ARG….
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_.…|-]*$`)

// checkCommand walks words down the command tree and checks the flags of
// the command it ends on against that command's --help. A lowercase word
// where the command has subcommands must be one of them; a placeholder
// there (vis-agent sandbox COMMAND --host …) leaves the flags unchecked.
func checkCommand(words []string, help func([]string) string) error {
	var path []string
	i := 0
	for ; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		if strings.HasPrefix(w, "-") || w == "" {
			break
		}
		if placeholder.MatchString(w) {
			if hasSubcommands(help(path)) {
				return nil
			}
			break
		}
		if !hasSubcommands(help(path)) {
			break
		}
		// stop|restart|interrupt: each must be a command of its own.
		alts := strings.Split(w, "|")
		for _, alt := range alts {
			if err := isCommand(append(append([]string{}, path...), alt), help); err != nil {
				return err
			}
		}
		if len(alts) > 1 {
			path = append(path, alts[0])
			i++
			break
		}
		path = append(path, w)
	}
	h := help(path)
	python := len(path) == 1 && path[0] == "python"
	for ; i < len(words); i++ {
		for _, part := range strings.Split(strings.Trim(words[i], "[](),.…"), "|") {
			if python && (part == "-c" || part == "-m" || part == "uv" || part == "-" || strings.HasSuffix(part, ".py")) {
				return nil // the program: what follows is its own
			}
			if !strings.HasPrefix(part, "-") || part == "-" || part == "--" {
				continue
			}
			name, _, _ := strings.Cut(part, "=")
			if python && !strings.HasPrefix(name, "--") {
				continue // python's own options (-B, -X dev, …)
			}
			if !helpHasFlag(h, name) {
				return fmt.Errorf("vis-agent %s has no flag %s (its --help does not list it)", strings.Join(path, " "), name)
			}
		}
	}
	return nil
}

// isCommand checks that path is a command: its help's usage line names
// it. (An unknown subcommand shows its parent's help.)
func isCommand(path []string, help func([]string) string) error {
	want := "vis-agent " + strings.Join(path, " ")
	for _, line := range strings.Split(help(path), "\n") {
		l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "usage:"))
		if l == want || strings.HasPrefix(l, want+" ") {
			return nil
		}
	}
	return fmt.Errorf("%q is not a command (vis-agent %s --help shows another command's help)", want, strings.Join(path, " "))
}

// hasSubcommands reads cobra's "Available Commands:" section.
func hasSubcommands(h string) bool { return strings.Contains(h, "\nAvailable Commands:\n") }

// helpHasFlag finds a flag in a help text: "--name" as a word, or
// "-x," / "-x " for a short one.
func helpHasFlag(h, name string) bool {
	re := regexp.MustCompile(`(^|[\s,\[])` + regexp.QuoteMeta(name) + `([\s,=\]]|$)`)
	return re.MatchString(h)
}

// TestDocsLinksResolve: every relative link of the README and docs/*.md
// leads to a file of the repository, and its #anchor to a heading there.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	n := 0
	for _, page := range docPages(t) {
		for _, l := range docLinks(t, page) {
			n++
			if err := checkLink(page, l.target); err != nil {
				t.Errorf("%s:%d: (%s): %v", filepath.Base(page), l.line, l.target, err)
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d relative links in the docs: the extraction is broken", n)
	}
	t.Logf("%d relative links checked", n)
}

type docLink struct {
	line   int
	target string
}

// mdLink is an inline link's target; code spans and blocks are skipped
// before it is applied.
var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
)

func docLinks(t *testing.T, page string) []docLink {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []docLink
	inBlock := false
	// A link's text may wrap; its "](target)" is on one line.
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, docLink{i + 1, target})
		}
	}
	return out
}

// checkLink resolves target from page: the file, then the anchor among its
// headings' GitHub anchors.
func checkLink(page, target string) error {
	file, anchor, _ := strings.Cut(target, "#")
	dest := page
	if file != "" {
		dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
	}
	if _, err := os.Stat(dest); err != nil {
		return fmt.Errorf("no such file: %w", err)
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(dest, ".md") {
		return fmt.Errorf("an anchor into a file that is not Markdown")
	}
	anchors, err := headingAnchors(dest)
	if err != nil {
		return err
	}
	if !anchors[anchor] {
		return fmt.Errorf("%s has no heading whose anchor is #%s", filepath.Base(dest), anchor)
	}
	return nil
}

// headingLink is a link in a heading, whose text alone makes the anchor.
var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingAnchors are the anchors GitHub gives a page's headings: the text
// without its Markdown, lower-cased, punctuation but "-" and "_" dropped,
// spaces made "-"; a repeated one gets -1, -2, ….
func headingAnchors(page string) (map[string]bool, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		text = headingLink.ReplaceAllString(text, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}
