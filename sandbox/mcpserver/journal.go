package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/journal"
)

// logBlocks is how many of the latest blocks the session_log resource
// holds.
const logBlocks = 20

// addJournal registers the session_log resource: the latest blocks of
// the session's journal, whichever client ran them.
func (sv *server) addJournal(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{URI: "vis-session://" + sv.s.Meta.Name + "/log", Name: "session_log", MIMEType: "text/plain",
		Title:       "Session " + sv.s.Meta.Name + "'s latest blocks",
		Description: "The latest 20 blocks of the session, from any client (you, the REPL, sandbox run): who ran each, its code, output and status."},
		sv.readLog)
}

func (sv *server) readLog(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if err := sv.s.Settle(); err != nil {
		return nil, err
	}
	text := "The session has run no block yet.\n"
	j, err := journal.OpenRead(sv.s.Folder.JournalFile())
	switch {
	case errors.Is(err, journal.ErrNone):
	case err != nil:
		return nil, err
	default:
		defer j.Close()
		entries, err := j.Last(logBlocks, 0)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			var b strings.Builder
			for _, e := range entries {
				b.WriteString(e.Text())
			}
			text = b.String()
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}
