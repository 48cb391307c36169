package client

import (
	"io"
	"os"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/transfer"
)

// The archive and fork types front ends hand on (sandbox/transfer's).
type (
	TransferLimits = transfer.Limits
	Manifest       = transfer.Manifest
	NewWorkspace   = transfer.NewWorkspace
)

// Export writes the archive of the session (settled) to w: its state (at
// most lim.StateBytes read), its attachments from the store's folder
// attachments, and release in the manifest.
func (s *Session) Export(w io.Writer, attachments, release string, lim TransferLimits) error {
	return transfer.Export(transfer.Source{Folder: s.Folder, Meta: s.Meta, Attachments: attachments, VisAgent: release,
		Protocol: protocol.Version, MaxStateBytes: lim.StateBytes}, w)
}

// Fork makes session m under the sessions folder from this session's
// (settled) state after block at (0: its last).
func (s *Session) Fork(at int, sessions string, m Meta, lim TransferLimits) error {
	src := transfer.Source{Folder: s.Folder, Meta: s.Meta, Protocol: protocol.Version, MaxStateBytes: lim.StateBytes}
	return transfer.Fork(src, at, transfer.Target{Sessions: sessions, Meta: m, Limits: lim})
}

// ForkWorkspace checks (and with copy, fills within max bytes) dir as
// the workspace of a fork of this session, leaving out hidden.
func (s *Session) ForkWorkspace(dir string, copy bool, max int64, hidden []string) (*NewWorkspace, error) {
	return transfer.ForkWorkspace(s.Meta.Workspace, dir, copy, max, hidden)
}

// Import restores the archive f (named archivePath in messages) as
// session m (its Name "": the archive's) under the sessions folder, its
// attachments into the store's folder attachments: whole, or nothing is
// left. It returns the manifest and the new session's name and workspace.
func Import(f *os.File, archivePath, sessions, attachments string, m Meta, lim TransferLimits) (Manifest, Meta, error) {
	return transfer.Import(f, archivePath, transfer.Target{Sessions: sessions, Meta: m, Attachments: attachments, Limits: lim})
}
