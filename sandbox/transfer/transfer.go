// Package transfer moves a session between machines: Export writes one
// zip archive of its snapshot, spill files, block counter and attachments
// (with their comments), and a manifest with versions, sizes and SHA-256s;
// Import restores one as a new session.
//
// Both sides read hostile bytes. Export reads the session's state folder,
// which the jailed code may write: files are opened beneath it, regular
// ones only, never through a link, with sizes capped. Import reads an
// archive anyone may have made: only the names this package writes are
// accepted (no "..", absolute paths, links, devices or folders), every size
// is checked against the manifest and the limits before a byte is written,
// every byte against its SHA-256 as it is written, and the session appears
// whole or not at all (staged beside the sessions, renamed at the end; the
// attachments go in one transaction). The snapshot is copied, never read:
// only the new session's jailed child unpickles it.
package transfer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Format is the archive layout's version.
const Format = 1

// SnapshotMagic starts a snapshot this vis-agent restores (MAGIC of
// sandbox/child/py/vis_sandbox/snapfile.py, its format in its last byte).
const SnapshotMagic = "VISSNAP1"

// Names in the archive.
const (
	manifestName = "manifest.json"
	stateDir     = "state"
	snapshotFile = "snapshot.bin"
	countFile    = "blocks"
	spillDir     = "spill"
	attachDir    = "attachments"
)

// maxManifest bounds the manifest an import reads.
const maxManifest = 16 << 20

// maxEntries bounds the files of one archive.
const maxEntries = 100000

// maxCounter bounds the block counter file.
const maxCounter = 64

// Manifest describes an archive.
type Manifest struct {
	Format   int    `json:"format"`
	VisAgent string `json:"vis_agent"` // the release that exported it
	Protocol int    `json:"protocol"`  // its session protocol version
	// Snapshot is the magic its snapshot starts with ("" when the session
	// had none).
	Snapshot string       `json:"snapshot"`
	Session  session.Meta `json:"session"` // as it was named where it was exported
	Exported time.Time    `json:"exported"`
	// Files are the state folder's files (snapshot, block counter, spill
	// files), by archive name.
	Files []File `json:"files"`
	// Attachments are every version, oldest first, with comments; File
	// names its bytes in the archive.
	Attachments []Attachment `json:"attachments"`
}

// File is one file of the archive.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Attachment is one version of an attachment and the archive file of its
// bytes (their size and SHA-256 are the descriptor's).
type Attachment struct {
	attachments.Descriptor
	File string `json:"file"`
}

// Limits bound what an import writes: the user's settings.
type Limits struct {
	StateBytes      int64 // the snapshot and spill files together
	AttachmentBytes int64 // one attachment
	AttachmentsSum  int64 // all of them
}

// statePath reports whether name is a file of the state folder an archive
// may hold: the snapshot, the block counter, or a spill file of a plain
// name.
func statePath(name string) bool {
	switch rest, ok := strings.CutPrefix(name, stateDir+"/"); {
	case !ok:
		return false
	case rest == snapshotFile || rest == countFile:
		return true
	default:
		file, ok := strings.CutPrefix(rest, spillDir+"/")
		return ok && plainName(file)
	}
}

// attachmentPath is the archive name of attachment number i.
func attachmentPath(i int) string { return fmt.Sprintf("%s/%d.bin", attachDir, i) }

// plainName is a file name of letters, digits, '.', '_' and '-', not
// starting with '.' or '-': what the child names spill files.
func plainName(s string) bool { return fsutil.PlainName(s, 255) }

// ErrDamaged is an archive that is not a whole one of this format.
var ErrDamaged = errors.New("not a whole vis-agent session archive")
