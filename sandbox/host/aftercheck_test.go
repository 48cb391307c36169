package host

import (
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// BenchmarkCheckBlockNothing is the host's part of the check after a
// block that wrote no checked file and ran no shell() command: what
// every warm block pays.
func BenchmarkCheckBlockNothing(b *testing.B) {
	h := &Host{}
	started := time.Now()
	for range b.N {
		var res protocol.Result
		h.checkBlock(nil, &res, started, nil)
	}
}

func TestCheckLines(t *testing.T) {
	got := checkLines([]protocol.FileCheck{
		{Path: "a.py", Checked: "python 3.13", Line: 3, Column: 5, Message: "'(' was never\nclosed", Fix: "line 3: added ')'"},
		{Path: "b.py", Checked: "python 3.13", Line: 1, Message: "invalid syntax", Fix: "line 1: x", Fixed: true},
		{Path: "c.yaml", Checked: "yaml", Message: "exceeded max depth of 10000"},
	}, []string{"d.toml: not checked (toml): TOML over 1 MiB"}, 2)
	want := "[file check] a.py:3:5: '(' was never closed (python 3.13); exact fix, not applied (sandbox.fix_files = true applies it): line 3: added ')'\n" +
		"[file check] b.py:1: invalid syntax (python 3.13); fixed (sandbox.fix_files): line 1: x\n" +
		"[file check] c.yaml: exceeded max depth of 10000 (yaml)\n" +
		"[file check] d.toml: not checked (toml): TOML over 1 MiB\n" +
		"[file check] 2 more changed files not checked (a block's check reads at most 200 files, 5 MiB, for 2 seconds)\n"
	if got != want {
		t.Errorf("checkLines:\n%s\nwant:\n%s", got, want)
	}
	for _, c := range []struct {
		ws      string
		written []string
		want    string
	}{
		{"/ws", []string{"/ws/a.py", "/ws/sub/../b.json", "/other/c.py", "/ws", "/wsx/d.py", "/ws/../ws/e.toml"}, "a.py b.json e.toml"},
	} {
		if got := strings.Join(workspaceFiles(c.ws, c.written), " "); got != c.want {
			t.Errorf("workspaceFiles(%s, %v) = %s; want %s", c.ws, c.written, got, c.want)
		}
	}
}
