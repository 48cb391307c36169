package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestReleaseVersion builds vis-agent with the -X flag of goreleaser.yaml's
// ldflags, as a release does, and checks that the version it sets is the
// one --version prints and the one connect names when a client speaks
// another protocol version (both used to report the module's version,
// "devel-…", whatever the release set).
func TestReleaseVersion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build with")
	}
	py := testenv.First(t)
	const want = "v9.9.9"
	x := releaseVersionFlag(t, want)
	bin := filepath.Join(t.TempDir(), "vis-agent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", x, "-o", bin, "github.com/vis-agent/vis-agent/cmd/vis-agent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", x, err, out)
	}
	sb := newSandbox(t, py)
	sb.bin = bin
	v := exec.Command(bin, "--version")
	v.Env = sb.env
	if out, err := v.Output(); err != nil || !strings.HasPrefix(string(out), "vis-agent "+want+"\n") {
		t.Errorf("--version of a build with %s: %q %v", x, out, err)
	}
	cmd := sb.command("connect", "--workspace", sb.ws)
	cmd.Stdin = strings.NewReader(`{"v": 99, "op": "status"}` + "\n")
	out, _ := cmd.Output()
	contains(t, "connect's answer to another protocol version", string(out), "vis-agent "+want+" on ")
}

// releaseVersionFlag is the -X flag of goreleaser.yaml's build, with
// version in place of goreleaser's template.
func releaseVersionFlag(t *testing.T, version string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct{ Ldflags []string }
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("goreleaser.yaml: %v", err)
	}
	for _, b := range cfg.Builds {
		for _, f := range b.Ldflags {
			if strings.HasPrefix(f, "-X ") && strings.Contains(f, "{{.Version}}") {
				return strings.ReplaceAll(f, "{{.Version}}", version)
			}
		}
	}
	t.Fatal("goreleaser.yaml's ldflags set no version with -X")
	return ""
}
