package repair

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

// minCorpus is the least number of cases the corpus must hold.
const minCorpus = 150

func TestCorpus(t *testing.T) {
	ws := repairtest.Workers(t)
	cases := repairtest.Corpus(t)
	if len(cases) < minCorpus {
		t.Errorf("corpus has %d cases, want at least %d", len(cases), minCorpus)
	}
	counts := map[string]int{}
	for _, c := range cases {
		counts[c.Category()]++
	}
	t.Logf("corpus: %d cases %v", len(cases), counts)
	names := map[string]int{}
	for _, w := range ws {
		name := "python" + w.Version
		if names[name]++; names[name] > 1 {
			name += "#" + strconv.Itoa(names[name])
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				if c.RunsOn(w.Minor) {
					t.Run(c.Name, func(t *testing.T) { checkCase(t, w, c) })
				}
			}
		})
	}
}

func checkCase(t *testing.T, w *repairtest.Worker, c repairtest.Case) {
	compile := compiler(w)
	res := Repair(c.In, Options{Minor: w.Minor, Compile: compile})
	perr := compile(c.In)
	if perr == nil {
		// Valid in this version (say nested quotes from 3.12 on): it must
		// be left alone, and still mean what the repair would mean.
		if res.Changed || res.Source != c.In || res.PythonError != nil {
			t.Fatalf("changed a block that compiles: %+v", res)
		}
		if !c.Refuse {
			sameAST(t, w, c.In, c.Want)
		}
		return
	}
	if res.PythonError == nil || res.PythonError.Message != perr.Message {
		t.Errorf("python_error = %+v, want %+v", res.PythonError, perr)
	}
	if c.Refuse {
		if res.Repaired || res.Changed || res.Source != c.In {
			t.Fatalf("repaired a block that must be refused:\n%s\nfixes: %v", res.Source, res.Fixes)
		}
		msg := res.Error()
		if !strings.HasPrefix(msg, "SyntaxError: "+perr.Message) {
			t.Errorf("Error() = %q, want Python's message first", msg)
		}
		return
	}
	if !res.Repaired || !res.Changed {
		t.Fatalf("not repaired; python: %s\nproblems: %v\nerror:\n%s", perr.Message, res.Problems, res.Error())
	}
	sameAST(t, w, res.Source, c.Want)
	checkRepairShape(t, res, w.Minor)
}

// checkRepairShape checks the parts of a repaired Result the corpus does
// not spell out: notes for every fix, a clean rescan, the JSON keys.
func checkRepairShape(t *testing.T, res Result, minor int) {
	t.Helper()
	if len(res.Fixes) == 0 || len(res.Problems) != 0 || res.Error() != "" {
		t.Errorf("repaired result has fixes %v, problems %v, error %q", res.Fixes, res.Problems, res.Error())
	}
	for _, f := range res.Fixes {
		if f.Line < 1 || f.Column < 1 || f.Kind == "" || !strings.HasPrefix(f.Message, "line "+strconv.Itoa(f.Line)+": ") {
			t.Errorf("bad fix %+v", f)
		}
	}
	note := res.Note()
	if want := "Repaired this block. Python refused it with " + res.PythonError.Message; !strings.HasPrefix(note, want) {
		t.Errorf("Note() = %q, want prefix %q", note, want)
	}
	if ps := scan(res.Source, minor); len(ps) != 0 {
		t.Errorf("repaired source rescans with problems %v", ps)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "changed,fixes,problems,python_error,repaired,source" {
		t.Errorf("JSON keys = %s", got)
	}
}

func sameAST(t *testing.T, w *repairtest.Worker, got, want string) {
	t.Helper()
	g, err := w.Dump(got)
	if err != nil {
		t.Fatalf("repaired source does not parse: %v\n%s", err, got)
	}
	wd, err := w.Dump(want)
	if err != nil {
		t.Fatalf("expected source does not parse on %s: %v\n%s", w.Version, err, want)
	}
	if g != wd {
		t.Fatalf("repaired source differs from the expected one\n--- got\n%s--- want\n%s", got, want)
	}
}
