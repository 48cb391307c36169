package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// logBlocks is how many of the latest blocks the session_log resource
// holds.
const logBlocks = 20

// addLog registers s's session_log resource: the latest blocks of the
// session's journal, whichever client ran them.
func (sv *server) addLog(s *client.Session) {
	sv.srv.AddResource(&mcp.Resource{URI: "vis-session://" + s.Meta.Name + "/log", Name: "session_log", MIMEType: "text/plain",
		Title:       "Session " + s.Meta.Name + "'s latest blocks",
		Description: "The latest 20 blocks of the session, from any client (you, the REPL, sandbox run): who ran each, its code, output and status."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return readLog(ctx, s, req)
		})
}

func readLog(ctx context.Context, s *client.Session, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if err := s.Settle(); err != nil {
		return nil, err
	}
	var b strings.Builder
	if _, err := s.Log(ctx, logBlocks, false, func(e client.LogEntry) error { b.WriteString(e.Text()); return nil }); err != nil {
		return nil, err
	}
	text := b.String()
	if text == "" {
		text = "The session has run no block yet.\n"
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}
