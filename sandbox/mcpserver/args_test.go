package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// TestArgumentErrors: a tool called with wrong arguments answers one
// sentence naming the argument, not the schema validator's report.
func TestArgumentErrors(t *testing.T) {
	cs := inMemoryClient(t, Config{Session: &client.Session{Meta: session.Meta{Name: "default", Workspace: "/w"}}})
	ctx := context.Background()
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"defs", `{"limit": "x"}`, `limit must be an integer, not a string`},
		{"interrupt", `{"any": "yes"}`, `any must be true or false, not a string`},
		{"defs", `{"nme": "x"}`, `unknown argument "nme"`},
		{"read_attachment", `{}`, `id_or_filename`},
	} {
		var args map[string]any
		json.Unmarshal([]byte(tc.args), &args)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
		text := ""
		if err != nil {
			text = err.Error()
		} else {
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
		}
		if !strings.Contains(text, tc.want) || strings.Contains(text, "validating") || strings.Count(strings.TrimSpace(text), "\n") > 0 {
			t.Errorf("%s %s: %q", tc.tool, tc.args, text)
		}
	}
}

// inMemoryClient is a client connected to a server of cfg in memory, both
// closed when the test ends.
func inMemoryClient(t *testing.T, cfg Config) *mcp.ClientSession {
	t.Helper()
	sv := newServer(cfg)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := sv.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: t.Name(), Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
