package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// repairJSON is what `vis-agent sandbox repair --json` prints.
type repairJSON struct {
	Changed  bool   `json:"changed"`
	Repaired bool   `json:"repaired"`
	Source   string `json:"source"`
	Fixes    []struct {
		Kind, Message string
		Line, Column  int
	} `json:"fixes"`
	Problems    []json.RawMessage `json:"problems"`
	PythonError *struct {
		Message string `json:"message"`
		Text    string `json:"text"`
	} `json:"python_error"`
}

// TestRepairCorpus sends every block of the repair corpus through the
// built binary, `vis-agent sandbox repair --json`, on each CPython: the
// embedded CPython decides, and the result is compared as an AST with the
// intended program by that version's python.
func TestRepairCorpus(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t)
	cases := repairtest.Corpus(t)
	for _, w := range repairtest.Workers(t) {
		t.Run(w.Python.Name, func(t *testing.T) {
			t.Parallel()
			env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+w.Python.Library, "VIS_HOME="+t.TempDir())
			for _, c := range cases {
				if !c.RunsOn(w.Minor) {
					continue
				}
				t.Run(c.Name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), hangBound)
					defer cancel()
					cmd := exec.CommandContext(ctx, bin, "sandbox", "repair", "--json")
					cmd.Env = env
					cmd.Stdin = strings.NewReader(c.In)
					var out, errb bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &errb
					err := cmd.Run()
					var res repairJSON
					if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
						t.Fatalf("output is not JSON (%v): %s\nstderr: %s", jerr, out.String(), errb.String())
					}
					if res.Problems == nil || res.Fixes == nil {
						t.Fatalf("problems and fixes must be lists, never null: %s", out.String())
					}
					if res.PythonError != nil && strings.HasSuffix(res.PythonError.Text, "\n") {
						t.Errorf("python_error.text ends with a line ending: %q", res.PythonError.Text)
					}
					perr := w.Compile(c.In)
					switch {
					case perr == nil:
						if err != nil || res.Changed || res.PythonError != nil || res.Source != c.In {
							t.Fatalf("a block that compiles was not left alone: %v %+v", err, res)
						}
					case c.Refuse:
						if err == nil || res.Repaired || res.Source != c.In || res.PythonError == nil || res.PythonError.Message != perr.Msg {
							t.Fatalf("a block that must be refused: exit %v, %+v", err, res)
						}
					default:
						if err != nil || !res.Repaired || len(res.Fixes) == 0 || res.PythonError == nil || res.PythonError.Message != perr.Msg {
							t.Fatalf("not repaired: exit %v, %+v\nstderr: %s", err, res, errb.String())
						}
						got, gerr := w.Dump(res.Source)
						want, werr := w.Dump(c.Want)
						if gerr != nil || werr != nil || got != want {
							t.Fatalf("repaired source differs from the intended program (%v, %v)\n--- got\n%s--- want\n%s", gerr, werr, res.Source, c.Want)
						}
					}
				})
			}
		})
	}
}
