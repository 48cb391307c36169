package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// helpWidth is the widest line a command's help may have.
const helpWidth = 100

var (
	// flagListed is a flag's line in the Flags sections of a help (not a
	// description's continuation line).
	flagListed = regexp.MustCompile(`(?m)^  (?:-\w, |    )--([a-z][\w-]*)`)
	// flagNamed is a flag named in a help's text or usage line.
	flagNamed = regexp.MustCompile(`(?:^|[\s(\[|,])--([a-z][a-z0-9-]*)`)
)

// TestHelp: every command's help, read as a user reads it, names only the
// flags the command takes (its Flags sections list what it registers),
// keeps every line within 100 characters, and `sandbox mcp --help` lists
// the tools its server offers.
func TestHelp(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	home := t.TempDir()
	help := func(path []string) string {
		cmd := exec.Command(bin, append(slices.Clone(path), "--help")...)
		cmd.Env = []string{"HOME=" + home, "VIS_HOME=" + filepath.Join(home, ".vis"), "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s --help: %v", strings.Join(path, " "), err)
		}
		return string(out)
	}
	helps := map[string]string{}
	var walk func(path []string)
	walk = func(path []string) {
		name := strings.Join(append([]string{"vis-agent"}, path...), " ")
		text := help(path)
		helps[name] = text
		for _, line := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("%s --help: a line of %d characters: %s", name, n, line)
			}
		}
		if slices.Equal(path, []string{"python"}) {
			return // python's own command line, not cobra's (its tests: help.txtar)
		}
		body, flags, _ := strings.Cut(text, "\nFlags:\n")
		takes := map[string]bool{}
		for _, m := range flagListed.FindAllStringSubmatch(flags, -1) {
			takes[m[1]] = true
		}
		// The text, the usage line and the flags' descriptions; cobra's
		// completion help names brew's own --prefix.
		for _, m := range flagNamed.FindAllStringSubmatch(strings.ReplaceAll(text, "brew --prefix", ""), -1) {
			if !takes[m[1]] {
				t.Errorf("%s --help names --%s, which it does not take", name, m[1])
			}
		}
		if _, cmds, ok := strings.Cut(body, "\nAvailable Commands:\n"); ok {
			cmds, _, _ = strings.Cut(cmds, "\n\n")
			for _, line := range strings.Split(cmds, "\n") {
				if sub := strings.Fields(line); len(sub) > 0 && sub[0] != "help" {
					walk(append(slices.Clone(path), sub[0]))
				}
			}
		}
	}
	walk(nil)
	if len(helps) < 20 {
		t.Errorf("only %d commands' help read", len(helps))
	}
	// A flag's default is its own, and a value has a name.
	if h := helps["vis-agent sandbox import"]; !strings.Contains(h, "(default: the archive's)\n") || strings.Contains(h, `(default "default")`) {
		t.Errorf("sandbox import --help, --session's default:\n%s", h)
	}
	contains(t, "sandbox log --help", helps["vis-agent sandbox log"], "  -n, --lines N ")
}
