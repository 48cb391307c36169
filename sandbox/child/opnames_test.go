package child

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// The requests the host sends the child (sandbox/host: the child's
// connection and the standby's wake) and the events the child answers with.
var (
	childOps = []protocol.Op{
		protocol.OpRun, protocol.OpDefs, protocol.OpIsComplete, protocol.OpCompletions, protocol.OpPing,
		protocol.OpCompile, protocol.OpSave, protocol.OpHistory, protocol.OpRewindHere, protocol.OpNotice, protocol.OpExit,
		protocol.OpWake,
	}
	childEvents = []protocol.Ev{
		protocol.EvOut, protocol.EvNote, protocol.EvResult, protocol.EvDefs, protocol.EvIsComplete,
		protocol.EvCompletions, protocol.EvOK, protocol.EvError, protocol.EvRestoring, protocol.EvReady,
		protocol.EvRunning, protocol.EvPong, protocol.EvCompiled, protocol.EvSaved, protocol.EvHistory,
		protocol.EvStandby, protocol.EvStale,
	}
)

// TestOpAndEventNames: the op and event names of the link between the host
// and the child's Python (py/vis_sandbox) are the protocol's on both sides.
// Every op the host sends is one the Python handles (a key of the driver's
// REQUESTS, or a req.get("op") compared with it) and every op it handles is
// one the host sends; every event the Python sends ({"ev": NAME}) is a
// child's protocol.Ev and every child's protocol.Ev is sent. A name renamed
// on one side fails here, named, rather than in a session.
func TestOpAndEventNames(t *testing.T) {
	files, err := filepath.Glob("py/vis_sandbox/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("the child's Python: %v (%d files)", err, len(files))
	}
	requests := regexp.MustCompile(`(?s)\nREQUESTS = \{\n(.*?)\n\}`)
	key := regexp.MustCompile(`(?m)^\s*"([a-z_]+)":`)
	compared := regexp.MustCompile(`req\.get\("op"\) [!=]= "([a-z_]+)"`)
	emitted := regexp.MustCompile(`"ev": "([a-z_]+)"`)
	handled := map[string]string{} // op -> the file handling it
	sent := map[string]string{}    // event -> a file sending it
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src, base := string(data), filepath.Base(f)
		if m := requests.FindStringSubmatch(src); m != nil {
			for _, k := range key.FindAllStringSubmatch(m[1], -1) {
				handled[k[1]] = base
			}
		}
		for _, m := range compared.FindAllStringSubmatch(src, -1) {
			handled[m[1]] = base
		}
		for _, m := range emitted.FindAllStringSubmatch(src, -1) {
			sent[m[1]] = base
		}
	}
	if len(handled) == 0 || len(sent) == 0 {
		t.Fatalf("no op handled (%d) or no event sent (%d) found in the child's Python", len(handled), len(sent))
	}
	for _, op := range childOps {
		if handled[string(op)] == "" {
			t.Errorf("the host sends the child op %q, which the child's Python does not handle", op)
		}
	}
	for op, file := range handled {
		if !slices.Contains(childOps, protocol.Op(op)) {
			t.Errorf("%s handles op %q, which is no protocol.Op the host sends the child", file, op)
		}
	}
	for ev, file := range sent {
		if !slices.Contains(childEvents, protocol.Ev(ev)) {
			t.Errorf("%s sends event %q, which is no child's protocol.Ev", file, ev)
		}
	}
	for _, ev := range childEvents {
		if sent[string(ev)] == "" {
			t.Errorf("the host expects event %q of the child, which the child's Python never sends", ev)
		}
	}
}
