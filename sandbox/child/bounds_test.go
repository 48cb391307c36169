package child

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// TestLinkBoundsMatch: the driver's link cuts what it sends to the bounds
// the host reads with (protocol.ChildBounds): a child that sent more
// would be replaced.
func TestLinkBoundsMatch(t *testing.T) {
	src, err := os.ReadFile("py/vis_sandbox/link.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("MAX_LINE = %d << 20  #", protocol.MaxChildLine>>20),
		fmt.Sprintf("MAX_STRING = %d << 10  #", protocol.MaxChildString>>10),
		fmt.Sprintf("CHUNK = %d << 10  #", protocol.OutChunk>>10),
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("link.py lacks %q", want)
		}
	}
}
