package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The generated scripts in completions/ are what `vis-agent completion`
// prints now: `make completions` refreshes them.
func TestCompletionsUpToDate(t *testing.T) {
	for shell, file := range map[string]string{
		"bash": "vis-agent.bash", "zsh": "_vis-agent", "fish": "vis-agent.fish", "powershell": "vis-agent.ps1",
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"completion", shell})
		if err := root.Execute(); err != nil {
			t.Fatalf("completion %s: %v", shell, err)
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

func TestCompletePython(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"__complete", "python", "-B", "-"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("-c\trun code")) {
		t.Errorf("no -c among the completions:\n%s", out.String())
	}
	out.Reset()
	root.SetArgs([]string{"__complete", "python", "-c", "pass", "-"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("-c\trun code")) {
		t.Errorf("options completed after the program selector:\n%s", out.String())
	}
}
