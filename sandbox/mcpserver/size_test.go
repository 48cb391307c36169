package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// maxToolsList bounds the tools/list answer a client pays for at every
// start (and often every turn) in its context.
const maxToolsList = 8000

// TestToolsListSize: the tools (names, descriptions, schemas,
// annotations) of a jailed session with a typical workspace path stay
// under maxToolsList characters of JSON. VIS_PRINT_TOOLS_LIST=1 prints the
// figure (BENCHMARKS.md).
func TestToolsListSize(t *testing.T) {
	cs := inMemoryClient(t, Config{Session: &client.Session{Meta: session.Meta{Name: "default", Workspace: "/home/someone/projects/analysis"}},
		Policy: protocol.Policy{Jail: true, Network: true, MaxThreads: 64, MemoryMB: 4096}, Echo: true})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	n := len([]rune(string(data)))
	if os.Getenv("VIS_PRINT_TOOLS_LIST") != "" {
		t.Logf("tools/list: %d characters of JSON, %d tools", n, len(res.Tools))
		for _, tl := range res.Tools {
			b, _ := json.Marshal(tl)
			in, _ := json.Marshal(tl.InputSchema)
			out, _ := json.Marshal(tl.OutputSchema)
			t.Logf("  %s: %d (description %d, input schema %d, output schema %d)", tl.Name, len(b), len(tl.Description), len(in), len(out))
		}
	}
	if n > maxToolsList {
		t.Errorf("tools/list is %d characters of JSON, over %d", n, maxToolsList)
	}
}
