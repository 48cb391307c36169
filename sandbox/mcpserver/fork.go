package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// The server acts on one session at a time: the one the user started it
// for, or a fork of it that fork_session made; switch_session moves among
// those and no other. The authority to use a session is the user's, given
// when they started the server: a name in a request, which a model writes
// from whatever text it read, never reaches a session the user did not
// give or the server did not make.

// sessions are the sessions the server may act on, and the one it acts on.
type sessions struct {
	mu  sync.Mutex
	cur *client.Session
	own map[string]*client.Session // by name: the server's session and its forks
}

// cur is the session the tools act on now.
func (sv *server) cur() *client.Session {
	sv.sessions.mu.Lock()
	defer sv.sessions.mu.Unlock()
	return sv.sessions.cur
}

// named is the server's session of that name, nil when it has none.
func (ss *sessions) named(name string) *client.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.own[name]
}

// switchTo makes the server's session name the current one; false when
// it has none of that name.
func (ss *sessions) switchTo(name string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.own[name]
	if ok {
		ss.cur = s
	}
	return ok
}

// names are the server's sessions' names, sorted.
func (ss *sessions) names() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]string, 0, len(ss.own))
	for n := range ss.own {
		out = append(out, strconv.Quote(n))
	}
	sort.Strings(out)
	return out
}

const forkDescription = `Copy the session's state (after block at; default: the last) into a new session of the same workspace and switch to it; the original stays as it is (switch_session goes back).`

const switchDescription = `Make the tools act on this server's session or a fork fork_session made (no other).`

// ForkArgs are fork_session's arguments.
type ForkArgs struct {
	Name string `json:"name,omitempty" jsonschema:"default: SESSION-fork-N"`
	At   int    `json:"at,omitempty" jsonschema:"a block of the history"`
}

// fork makes a fork of the current session and switches to it.
func (sv *server) fork(ctx context.Context, req *mcp.CallToolRequest, in ForkArgs) (*mcp.CallToolResult, any, error) {
	if sv.forkSession == nil {
		return nil, nil, errors.New("fork_session works for a session of this machine, not one of another (--host)")
	}
	if in.At < 0 {
		return nil, nil, errors.New("at is a block's number, 1 or more (defs names the blocks of the history)")
	}
	src := sv.cur()
	name := in.Name
	if name == "" {
		name = sv.forkName(src)
	} else if err := client.CheckName(name); err != nil {
		return nil, nil, err
	}
	s, err := sv.forkSession(src, name, in.At)
	if err != nil {
		return nil, nil, err
	}
	s.Client = src.Client // the same client: its interrupt reaches its blocks there
	sv.sessions.mu.Lock()
	sv.sessions.own[name], sv.sessions.cur = s, s
	sv.sessions.mu.Unlock()
	sv.addSessionResources(s)
	sv.syncResources(ctx)
	where := "its last block"
	if in.At > 0 {
		where = fmt.Sprintf("block %d", in.At)
	}
	return textResult(fmt.Sprintf("Forked session %s from %s after %s, and switched to it: the tools act on %s now (its first python call restores "+
		"that state); %s stays as it was. The workspace's files are shared. switch_session with name %q goes back.\n",
		name, src.Meta.Name, where, name, src.Meta.Name, src.Meta.Name)), nil, nil
}

// forkName is the first SESSION-fork-N (SESSION the server's own) that no
// session of the workspace has.
func (sv *server) forkName(src *client.Session) string {
	root := filepath.Dir(src.Folder.Dir)
	for n := 1; ; n++ {
		suffix := "-fork-" + strconv.Itoa(n)
		name := sv.home.Meta.Name
		if len(name)+len(suffix) > 64 {
			name = name[:64-len(suffix)]
		}
		name += suffix
		if sv.sessions.named(name) != nil {
			continue
		}
		if _, err := client.Existing(root, client.Meta{Name: name, Workspace: src.Meta.Workspace}); err != nil {
			return name
		}
	}
}

// SwitchArgs are switch_session's arguments.
type SwitchArgs struct {
	Name string `json:"name"`
}

func (sv *server) switchSession(ctx context.Context, req *mcp.CallToolRequest, in SwitchArgs) (*mcp.CallToolResult, any, error) {
	if !sv.sessions.switchTo(in.Name) {
		return nil, nil, fmt.Errorf("session %q is not this server's: it switches among %s (its own and the forks fork_session made)",
			in.Name, strings.Join(sv.sessions.names(), ", "))
	}
	sv.syncResources(ctx)
	return textResult(fmt.Sprintf("Switched to session %s: the tools act on it now.\n", in.Name)), nil, nil
}
