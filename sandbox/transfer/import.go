package transfer

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Target is where Import puts the session.
type Target struct {
	Sessions    string       // the sessions folder of this Vis home
	Meta        session.Meta // the new session's name and workspace
	Attachments string       // the attachments store's folder
	Limits      Limits
}

// Import restores the archive f (named archivePath in messages; the
// caller opened it, a regular file) as the session t names (its Name "":
// the archive's), which must not exist: whole, or nothing is left (see the
// package doc). It returns the manifest and the session's name and
// workspace.
func Import(f *os.File, archivePath string, t Target) (Manifest, session.Meta, error) {
	m, err := importArchive(f, archivePath, &t)
	return m, t.Meta, err
}

func importArchive(f *os.File, archivePath string, t *Target) (Manifest, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return Manifest{}, fmt.Errorf("%s is not a regular file", archivePath)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w (%w)", archivePath, ErrDamaged, err)
	}
	m, entries, err := check(zr, t.Limits)
	if err != nil {
		return m, fmt.Errorf("%s: %w", archivePath, err)
	}
	if t.Meta.Name == "" {
		if err := session.CheckName(m.Session.Name); err != nil {
			return m, fmt.Errorf("%s: %w: %w", archivePath, ErrDamaged, err)
		}
		t.Meta.Name = m.Session.Name
	}
	final := session.Find(t.Sessions, t.Meta)
	if _, err := os.Lstat(final.Dir); err == nil {
		return m, fmt.Errorf("session %q of workspace %s exists: give another --session, or delete it (vis-agent sandbox rm)", t.Meta.Name, t.Meta.Workspace)
	}
	if err := os.MkdirAll(t.Sessions, 0o700); err != nil {
		return m, fmt.Errorf("import: %w", err)
	}
	// Staged beside the sessions (one file system: the rename at the end
	// is atomic), under a name no session has.
	stage, err := os.MkdirTemp(t.Sessions, ".import-")
	if err != nil {
		return m, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(stage)
	staged, err := session.Create(stage, t.Meta)
	if err != nil {
		return m, err
	}
	// The restart notice of its first block says where it came from.
	if err := staged.WriteStopped(fmt.Sprintf("the session was imported from an archive of session %s (vis-agent sandbox import)", m.Session.Name)); err != nil {
		return m, err
	}
	for _, file := range m.Files {
		dest := filepath.Join(staged.Dir, filepath.FromSlash(file.Path))
		if err := extract(entries[file.Path], dest, file); err != nil {
			return m, fmt.Errorf("%s: %w", archivePath, err)
		}
		// The manifest's word for the snapshot's format is checked
		// against its first bytes (which are all this process reads).
		if file.Path == stateDir+"/"+snapshotFile && !startsWith(dest, m.Snapshot) {
			return m, fmt.Errorf("%s: %w: the snapshot does not start as its manifest says", archivePath, ErrDamaged)
		}
	}
	// The attachments in one transaction, then the folder in one rename;
	// a failed rename takes the attachments back out.
	key := final.ID()
	if len(m.Attachments) > 0 {
		items := make([]attachments.Imported, len(m.Attachments))
		var closers []io.Closer
		defer func() {
			for _, c := range closers {
				c.Close()
			}
		}()
		for i, a := range m.Attachments {
			r, err := entries[a.File].Open()
			if err != nil {
				return m, fmt.Errorf("%s: %w (%w)", archivePath, ErrDamaged, err)
			}
			closers = append(closers, r)
			items[i] = attachments.Imported{Descriptor: a.Descriptor, Data: r}
		}
		store, err := attachments.Open(t.Attachments)
		if err != nil {
			return m, err
		}
		defer store.Close()
		if _, err := store.Import(key, t.Meta.Name, items, attachments.Limits{MaxBytes: t.Limits.AttachmentBytes, SessionMaxBytes: t.Limits.AttachmentsSum}); err != nil {
			return m, fmt.Errorf("%s: %w", archivePath, err)
		}
		if err := os.Rename(staged.Dir, final.Dir); err != nil {
			store.RemoveSession(key)
			return m, fmt.Errorf("import: %w", err)
		}
		return m, nil
	}
	if err := os.Rename(staged.Dir, final.Dir); err != nil {
		return m, fmt.Errorf("import: %w", err)
	}
	return m, nil
}

// check reads the manifest and holds every entry of the archive to it and
// to the limits, before anything is written.
func check(zr *zip.Reader, lim Limits) (Manifest, map[string]*zip.File, error) {
	var m Manifest
	if len(zr.File) > maxEntries {
		return m, nil, fmt.Errorf("%w: %d files", ErrDamaged, len(zr.File))
	}
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		if _, dup := entries[f.Name]; dup {
			return m, nil, fmt.Errorf("%w: %s twice", ErrDamaged, f.Name)
		}
		if !f.Mode().IsRegular() {
			return m, nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrDamaged, f.Name, f.Mode().Type())
		}
		entries[f.Name] = f
	}
	mf := entries[manifestName]
	if mf == nil || mf.UncompressedSize64 > maxManifest {
		return m, nil, fmt.Errorf("%w: no manifest", ErrDamaged)
	}
	r, err := mf.Open()
	if err != nil {
		return m, nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifest))
	r.Close()
	if err != nil {
		return m, nil, fmt.Errorf("%w: the manifest: %w", ErrDamaged, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, nil, fmt.Errorf("%w: the manifest: %w", ErrDamaged, err)
	}
	if m.Format != Format {
		return m, nil, fmt.Errorf("an archive of format %d (vis-agent %s); this vis-agent reads format %d", m.Format, m.VisAgent, Format)
	}
	if m.Snapshot != "" && m.Snapshot != SnapshotMagic {
		return m, nil, fmt.Errorf("its snapshot is of another format (%q, vis-agent %s); this vis-agent restores %q: import it with the release that exported it", m.Snapshot, m.VisAgent, SnapshotMagic)
	}
	// Every entry is one the manifest lists, of the size it says, under
	// a name this package writes; every listed one is there.
	listed := map[string]int64{manifestName: int64(mf.UncompressedSize64)}
	var stateBytes, attachBytes int64
	for _, file := range m.Files {
		if !statePath(file.Path) || file.Size < 0 {
			return m, nil, fmt.Errorf("%w: the manifest names %q", ErrDamaged, file.Path)
		}
		if file.Path == stateDir+"/"+countFile && file.Size > maxCounter {
			return m, nil, fmt.Errorf("%w: the block counter is %d bytes", ErrDamaged, file.Size)
		}
		if file.Path == stateDir+"/"+snapshotFile && m.Snapshot != SnapshotMagic {
			return m, nil, fmt.Errorf("%w: its manifest names no snapshot format", ErrDamaged)
		}
		// Held to the limit as they add up: sizes past it (2^62 four
		// times) would overflow the sum.
		if file.Size > lim.StateBytes-stateBytes {
			return m, nil, fmt.Errorf("its snapshot and spill files are over the limit of %d MiB (sandbox.max_snapshot_mb)", lim.StateBytes>>20)
		}
		listed[file.Path] = file.Size
		stateBytes += file.Size
	}
	for i, a := range m.Attachments {
		if a.File != attachmentPath(i) || a.Size < 0 {
			return m, nil, fmt.Errorf("%w: the manifest names %q", ErrDamaged, a.File)
		}
		if a.Size > lim.AttachmentBytes {
			return m, nil, fmt.Errorf("attachment %s version %d is %d bytes, over the limit of one (sandbox.max_attachment_mb)", a.Filename, a.Version, a.Size)
		}
		listed[a.File] = a.Size
		attachBytes += a.Size
	}
	if len(listed) != len(entries) {
		return m, nil, fmt.Errorf("%w: it holds %d files, its manifest lists %d", ErrDamaged, len(entries), len(listed))
	}
	for name, size := range listed {
		f := entries[name]
		if f == nil {
			return m, nil, fmt.Errorf("%w: %s is missing", ErrDamaged, name)
		}
		if f.UncompressedSize64 != uint64(size) {
			return m, nil, fmt.Errorf("%w: %s is %d bytes, its manifest says %d", ErrDamaged, name, f.UncompressedSize64, size)
		}
	}
	if attachBytes > lim.AttachmentsSum {
		return m, nil, fmt.Errorf("its attachments are %d MiB, over the limit of %d MiB (sandbox.max_attachments_mb)", attachBytes>>20, lim.AttachmentsSum>>20)
	}
	return m, entries, nil
}

// extract writes entry to dest, a new file in a folder of the staging
// area, checking its size and SHA-256 as it goes.
func extract(entry *zip.File, dest string, want File) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	r, err := entry.Open()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	defer r.Close()
	w, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, want.Size+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// zip's own check: a wrong CRC-32 or a short entry.
		return fmt.Errorf("%w: %s: %w", ErrDamaged, want.Path, err)
	}
	if n != want.Size || hex.EncodeToString(h.Sum(nil)) != want.SHA256 {
		return fmt.Errorf("%w: %s does not match its size and SHA-256", ErrDamaged, want.Path)
	}
	return nil
}

// startsWith reports whether the file at path (one this import wrote)
// starts with prefix.
func startsWith(path, prefix string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(prefix))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == prefix
}
