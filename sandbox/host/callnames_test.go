package host

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestCallNames: every host call the child's Python makes (call("NAME",
// ...) in sandbox/child/py/vis_sandbox) is one the host serves, so a
// renamed protocol.Call fails here rather than in a block.
func TestCallNames(t *testing.T) {
	ops, streams := (&Host{}).callOps(protocol.Policy{})
	files, err := filepath.Glob("../child/py/vis_sandbox/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("the child's Python: %v (%d files)", err, len(files))
	}
	calls := regexp.MustCompile(`\bcall\("([a-z_]+)"`)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range calls.FindAllStringSubmatch(string(src), -1) {
			seen++
			name := protocol.Call(m[1])
			if ops[name] == nil && streams[name] == nil {
				t.Errorf("%s calls %q, which the host does not serve", filepath.Base(f), name)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no call(\"NAME\", ...) found in the child's Python")
	}
}
