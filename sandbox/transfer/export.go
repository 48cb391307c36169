package transfer

import (
	"archive/zip"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Source is the session Export reads.
type Source struct {
	Folder      session.Folder
	Meta        session.Meta
	Attachments string // the attachments store's folder
	VisAgent    string // this release, for the manifest
	Protocol    int
	// MaxStateBytes caps what is read of the state folder (the jailed
	// code may have filled it).
	MaxStateBytes int64
}

// Export writes the archive of src to w.
func Export(src Source, w io.Writer) error {
	zw := zip.NewWriter(w)
	// Spilled arrays are large and often random: speed over size.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	m := Manifest{Format: Format, VisAgent: src.VisAgent, Protocol: src.Protocol, Session: src.Meta, Exported: time.Now().UTC(),
		Files: []File{}, Attachments: []Attachment{}}
	if err := exportState(zw, src, &m); err != nil {
		return err
	}
	if err := exportAttachments(zw, src, &m); err != nil {
		return err
	}
	// Last: it holds the sums of what was written, not of what the files
	// held when they were listed.
	fw, err := zw.Create(manifestName)
	if err == nil {
		enc := json.NewEncoder(fw)
		enc.SetIndent("", "  ")
		err = enc.Encode(m)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return fmt.Errorf("write the archive: %w", err)
	}
	return nil
}

// exportState adds the snapshot, the block counter and the spill files:
// opened beneath the state folder, regular files only, never through a
// link.
func exportState(zw *zip.Writer, src Source, m *Manifest) error {
	root, err := os.OpenRoot(src.Folder.StateDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no block ever ran
	}
	if err != nil {
		return fmt.Errorf("read the session's state: %w", err)
	}
	defer root.Close()
	names := []string{snapshotFile, countFile}
	if dir, err := root.OpenFile(spillDir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0); err == nil {
		entries, err := dir.ReadDir(maxEntries)
		dir.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the session's spill files: %w", err)
		}
		for _, e := range entries {
			// Temporary files of a save under way, or anything else the
			// jailed code put there, are not the session's.
			if plainName(e.Name()) && e.Type().IsRegular() {
				names = append(names, spillDir+"/"+e.Name())
			}
		}
	}
	budget := src.MaxStateBytes
	for _, name := range names {
		f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the session's %s: %w", name, err)
		}
		file, err := copyRegular(zw, stateDir+"/"+name, f, budget)
		f.Close()
		if err != nil {
			return err
		}
		budget -= file.Size
		if name == snapshotFile {
			if m.Snapshot, err = magicOf(src.Folder.StateDir(), root); err != nil {
				return err
			}
		}
		m.Files = append(m.Files, file)
	}
	return nil
}

// magicOf is the start of the snapshot: its format, for the importer to
// check without reading further.
func magicOf(dir string, root *os.Root) (string, error) {
	f, err := root.OpenFile(snapshotFile, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("read the snapshot in %s: %w", dir, err)
	}
	defer f.Close()
	head := make([]byte, len(SnapshotMagic))
	n, _ := io.ReadFull(f, head)
	return string(head[:n]), nil
}

// copyRegular adds f, a regular file of at most max bytes, as name, and
// describes what it wrote.
func copyRegular(zw *zip.Writer, name string, f *os.File, max int64) (File, error) {
	st, err := f.Stat()
	if err != nil {
		return File{}, fmt.Errorf("read the session's %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("the session's %s is not a regular file (%s)", name, st.Mode().Type())
	}
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: st.ModTime()})
	if err != nil {
		return File{}, fmt.Errorf("write the archive: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(f, max+1))
	if err != nil {
		return File{}, fmt.Errorf("copy the session's %s: %w", name, err)
	}
	if n > max {
		return File{}, fmt.Errorf("the session's state is over %d MiB (sandbox.max_snapshot_mb)", max>>20)
	}
	return File{Path: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// exportAttachments adds every version of the session's attachments,
// oldest first, with its comments.
func exportAttachments(zw *zip.Writer, src Source, m *Manifest) error {
	if _, err := os.Stat(src.Attachments); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := attachments.Open(src.Attachments)
	if err != nil {
		return err
	}
	defer st.Close()
	key := src.Folder.ID()
	list, err := st.List(key)
	if err != nil {
		return err
	}
	slices.Reverse(list)
	for i, d := range list {
		full, err := st.Get(key, d.ID, 0)
		if err != nil {
			return err
		}
		r, err := st.Read(full)
		if err != nil {
			return err
		}
		name := attachmentPath(i)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: full.Created})
		if err == nil {
			_, err = io.Copy(w, r)
		}
		r.Close()
		if err != nil {
			return fmt.Errorf("write %s version %d to the archive: %w", full.Filename, full.Version, err)
		}
		m.Attachments = append(m.Attachments, Attachment{Descriptor: full, File: path.Clean(name)})
	}
	return nil
}
