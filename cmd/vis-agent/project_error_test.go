package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// TestSandboxBrokenProject: in a folder whose pyproject.toml is not TOML,
// `sandbox run` says the file, the line and the ways out that exist
// (--workspace, vis-agent python --shared), in one line, and leaves no
// host behind; `vis-agent config` still shows the settings and the
// problem, advising no flag it does not have.
func TestSandboxBrokenProject(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	file := filepath.Join(sb.ws, "pyproject.toml")
	if err := os.WriteFile(file, []byte("[project]\nname = \"x\"\nversion =\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sb.run("run", "-c", "print(1)")
	want := "vis-agent: " + file + ":3: not valid TOML: "
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "--workspace") || !strings.Contains(r.stderr, "vis-agent python --shared") {
		t.Errorf("sandbox run in a broken project: %+v\nwant one line starting %q", r, want)
	}
	if hosts, _ := filepath.Glob(filepath.Join(sb.home, "sandbox", "sessions", "*", "host.json")); len(hosts) > 0 {
		t.Errorf("a host was started: %v", hosts)
	}

	cmd := exec.Command(sb.bin, "config")
	cmd.Env, cmd.Dir = sb.env, sb.ws
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || err == nil {
		t.Errorf("config: status %d, want 1", code)
	}
	contains(t, "config's settings", out.String(), "sandbox.jail = true  # default", "sandbox.allow_builds = false  # default")
	if e := errb.String(); !strings.HasPrefix(e, "vis-agent config: "+file+":3: not valid TOML: ") || strings.Contains(e, "--shared") {
		t.Errorf("config's problem: %q", e)
	}
}

// TestCraftedTOMLIsNotParsed: a pyproject.toml or vis.toml a session may
// have written with one 50 KB dotted key (whose parse grows with the
// square of its depth: minutes and gigabytes) is refused before any parse
// by vis-agent python and vis-agent config, at once and in one line each,
// with the process far from swollen.
func TestCraftedTOMLIsNotParsed(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	key := strings.Repeat("x.", 25000) + "x = 1\n"
	for _, c := range []struct{ file, text string }{
		{"pyproject.toml", "[project]\nname = \"p\"\n[tool.vis]\n" + key},
		{"vis.toml", key},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"python", "-c", "print('ran')"}, {"config"}} {
			cmd := exec.Command(sb.bin, args...)
			cmd.Env, cmd.Dir = sb.env, dir
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			peak := watchPeak(cmd.Process.Pid)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s with a crafted %s hung", args[0], c.file)
			}
			if !strings.Contains(out.String(), "nested more than 32 deep") {
				t.Errorf("%s with a crafted %s does not say it was not read:\n%s", args[0], c.file, out.String())
			}
			if mib := peak(); mib > 256 {
				t.Errorf("%s with a crafted %s peaked at %d MiB", args[0], c.file, mib)
			}
		}
	}
}
