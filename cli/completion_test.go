package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/clitest"
	"github.com/vis-agent/vis-agent/pyrun"
)

// The generated scripts in completions/ are what `vis-agent completion`
// prints now: `make completions` refreshes them.
func TestCompletionsUpToDate(t *testing.T) {
	for shell, file := range map[string]string{
		"bash": "vis-agent.bash", "zsh": "_vis-agent", "fish": "vis-agent.fish", "powershell": "vis-agent.ps1",
	} {
		s, out, errOut := clitest.Streams(t, nil)
		if code := Main(context.Background(), []string{"completion", shell}, s); code != 0 {
			t.Fatalf("completion %s: status %d: %s", shell, code, errOut)
		}
		committed, err := os.ReadFile(filepath.Join("..", "completions", file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), committed) {
			t.Errorf("completions/%s is stale; run make completions", file)
		}
	}
}

func TestCompletionUnknownShell(t *testing.T) {
	s, out, errOut := clitest.Streams(t, nil)
	code := Main(context.Background(), []string{"completion", "tcsh"}, s)
	if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: status %d, stdout %q, stderr %q; want status 2 and one line naming the shell", code, out, errOut)
	}
}

func TestCompletePython(t *testing.T) {
	complete := func(args ...string) string {
		s, out, _ := clitest.Streams(t, nil)
		if code := Main(context.Background(), append([]string{"__complete", "python"}, args...), s); code != 0 {
			t.Fatalf("__complete %v: status %d", args, code)
		}
		return out.String()
	}
	got := complete("-B", "-")
	for _, want := range []string{"-c\trun code", "--shared\t", "--active\t", "--env\t", "--no-env\t", "--no-network\t", "-V\t", "-h\t", "--help-env\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q not among the completions:\n%s", want, got)
		}
	}
	if got := complete("-c", "pass", "-"); strings.Contains(got, "-c\trun code") {
		t.Errorf("options completed after the program selector:\n%s", got)
	}
}

// `vis-agent help python` is the same full help as `vis-agent python -h`.
func TestHelpPython(t *testing.T) {
	s, out, _ := clitest.Streams(t, nil)
	if code := Main(context.Background(), []string{"help", "python"}, s); code != 0 || out.String() != pyrun.Help {
		t.Errorf("help python: status %d, output:\n%s", code, out)
	}
}
