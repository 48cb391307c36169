package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/check"
)

func TestPatchChecked(t *testing.T) {
	f := newFixture(t)
	file := filepath.Join(f.ws, "code.py")
	if err := os.WriteFile(file, []byte("a = f(1)\nb = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen check.Edit
	repairIt := func(real string, e check.Edit) (check.Decision, error) {
		seen = e
		return check.Decision{Checked: "python 3.13", Write: true, Text: e.After + "c = 3\n", Valid: true, Fixes: []string{"line 3: added c"}}, nil
	}
	r, err := PatchChecked(f.a, "code.py", "f(1)", "f(10)", repairIt)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Before != "a = f(1)\nb = 2\n" || seen.After != "a = f(10)\nb = 2\n" || seen.At != 4 || seen.OldLen != 4 || seen.NewLen != 5 || seen.Name != "code.py" {
		t.Fatalf("the check saw %+v", seen)
	}
	data, _ := os.ReadFile(file)
	if string(data) != "a = f(10)\nb = 2\nc = 3\n" || r.Written != string(data) || r.Real != file {
		t.Fatalf("written %q; result %+v", data, r)
	}
	// The diff is of what was written, the repair included.
	if !strings.Contains(r.Diff, "+a = f(10)") || !strings.Contains(r.Diff, "+c = 3") || r.Checked != "python 3.13" || len(r.Corrections) != 1 {
		t.Fatalf("result: %+v", r)
	}

	refuse := func(real string, e check.Edit) (check.Decision, error) {
		return check.Decision{Checked: "python 3.13", Refused: "it would not compile:\nline 1"}, nil
	}
	_, err = PatchChecked(f.a, "code.py", "b = 2", "b = (", refuse)
	var ref *Refused
	if !errors.As(err, &ref) || ref.Msg != "patch code.py: it would not compile:\nline 1" {
		t.Fatalf("refused: %v", err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(data) {
		t.Fatalf("a refused patch wrote %q", after)
	}
	stop := errors.New("compile first")
	if _, err = PatchChecked(f.a, "code.py", "b = 2", "b = 3", func(string, check.Edit) (check.Decision, error) { return check.Decision{}, stop }); !errors.Is(err, stop) {
		t.Fatalf("the check's error: %v", err)
	}
}
