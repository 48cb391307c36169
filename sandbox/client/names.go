package client

import "github.com/vis-agent/vis-agent/sandbox/session"

// The front ends name sessions through the client, which holds their
// folders: they import none of sandbox/session (the import policy says so).

// Meta names a session: its name and workspace.
type Meta = session.Meta

// DefaultName is the session a command uses without --session.
const DefaultName = session.DefaultName

// MaxSocketPath is the longest unix socket path a client can dial.
const MaxSocketPath = session.MaxSocketPath

// CheckName refuses a name that is not a session's ([A-Za-z0-9._-], at
// most 64).
func CheckName(name string) error { return session.CheckName(name) }

// SocketFiles are the paths of the session's socket and of the key a
// client proves itself with: what the `run` fast path dials.
func (s *Session) SocketFiles() (socket, key string) {
	return s.Folder.SocketPath(), s.Folder.KeyPath()
}
