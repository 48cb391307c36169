package jail

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"kernel.org/pub/linux/libs/security/libcap/cap"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestEarlyFlag starts the test binary with the command line of a child
// given protocol.DropPrivilegesFlag, and without it: with it, every thread of the Go
// process, started after the constructor, has an empty bounding set (when
// the test may drop it) and no_new_privs; without it, nothing changed.
func TestEarlyFlag(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(childRequest{Report: true})
	canDrop, _ := cap.GetProc().GetFlag(cap.Effective, cap.SETPCAP)
	for _, tc := range []struct {
		args  []string
		early bool
	}{
		{protocol.ChildArgs("/nowhere", true, false), true},
		{protocol.ChildArgs("/nowhere", false, false), false},
		{[]string{"python", "-c", "pass", protocol.DropPrivilegesFlag}, false}, // only a sandbox child
	} {
		cmd := exec.Command(exe, tc.args...)
		cmd.Env = append(os.Environ(), childEnv+"="+string(req))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) < 2 {
			t.Fatalf("%v: want a line per thread of the Go runtime, got %q", tc.args, out)
		}
		for _, l := range lines {
			bnd, nnp, _ := strings.Cut(strings.TrimPrefix(l, "CapBnd="), " NoNewPrivs=")
			dropped := strings.Trim(bnd, "0") == ""
			if (nnp == "1") != tc.early || (canDrop && dropped != tc.early) {
				t.Errorf("%v: thread shows %q", tc.args, l)
			}
		}
	}
}
