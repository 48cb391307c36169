package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

var (
	// settingNamed is a setting the docs name in backticks:
	// `sandbox.journal_mb` or `sandbox.echo = false`.
	settingNamed = regexp.MustCompile("`((?:python|sandbox)\\.[a-z_]+)[` ]")
	// settingShown is a line of `vis-agent config`.
	settingShown = regexp.MustCompile(`(?m)^([a-z_.]+) = `)
)

// TestConfigShowsDocumentedSettings: `vis-agent config` shows every
// setting the README and docs/ name.
func TestConfigShowsDocumentedSettings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cmd := exec.Command(testenv.Binary(t), "config")
	cmd.Env = []string{"HOME=" + home, "VIS_HOME=" + filepath.Join(home, ".vis"), "PATH=/usr/bin:/bin"}
	cmd.Dir = home
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("vis-agent config: %v", err)
	}
	shown := map[string]bool{}
	for _, m := range settingShown.FindAllStringSubmatch(string(out), -1) {
		shown[m[1]] = true
	}
	docs := []string{filepath.Join("..", "..", "README.md")}
	filepath.WalkDir(filepath.Join("..", "..", "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	})
	named := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range settingNamed.FindAllStringSubmatch(string(text), -1) {
			named++
			if !shown[m[1]] {
				t.Errorf("%s names %s, which vis-agent config does not show:\n%s", doc, m[1], out)
			}
		}
	}
	if named == 0 {
		t.Errorf("no setting named in %s", strings.Join(docs, ", "))
	}
}
