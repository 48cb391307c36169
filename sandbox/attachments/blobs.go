package attachments

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vis-agent/vis-agent/internal/headbuf"
)

// Blob files: blobs/ab/cdef… named by the sha256 of their bytes, written
// first as temporary files in blobs/tmp.
const (
	blobDir = "blobs"
	tmpDir  = "tmp"
	// staleTemp is the age past which a temporary file is a crashed
	// attach's, never one still being written.
	staleTemp = time.Hour
	// headSize is how much of the bytes sniffing looks at.
	headSize = 512
)

// tempBlob is bytes written and synced to a temporary file, not yet in
// place.
type tempBlob struct {
	path string
	size int64
	sum  string
	head []byte
}

// TooLargeError is an attachment over the size limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the attachment is larger than the limit of %s (sandbox.max_attachment_mb in config.toml); nothing was stored", sizeText(e.Limit))
}

// writeTemp copies data (at most max bytes) to a synced temporary file.
func (s *Store) writeTemp(data io.Reader, max int64) (*tempBlob, error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, blobDir, tmpDir), "attach-*")
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	b := &tempBlob{path: f.Name()}
	h := sha256.New()
	head := &headbuf.Writer{Max: headSize}
	// A large buffer: the bytes may come from a socket (the host's link to
	// a session), where fewer, larger reads pay.
	n, err := io.CopyBuffer(io.MultiWriter(f, h, head), io.LimitReader(data, max+1), make([]byte, 1<<20))
	if err == nil && n > max {
		err = &TooLargeError{Limit: max}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.discard()
		var tl *TooLargeError
		if errors.As(err, &tl) {
			return nil, err
		}
		return nil, fmt.Errorf("attach: read the bytes: %w", err)
	}
	b.size, b.sum, b.head = n, hex.EncodeToString(h.Sum(nil)), head.Bytes
	return b, nil
}

// discard removes the temporary file, if it is still there.
func (b *tempBlob) discard() { os.Remove(b.path) }

// blobPath is where the bytes of sum live.
func (s *Store) blobPath(sum string) (string, error) {
	if len(sum) != 2*sha256.Size {
		return "", fmt.Errorf("invalid sha256 %q", sum)
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return "", fmt.Errorf("invalid sha256 %q", sum)
	}
	return filepath.Join(s.dir, blobDir, sum[:2], sum[2:]), nil
}

// place moves b to its blob file, synced with its folder, unless the same
// bytes are there already. The caller holds the write lock.
func (s *Store) place(b *tempBlob) error {
	p, err := s.blobPath(b.sum)
	if err != nil {
		return err
	}
	if st, err := os.Stat(p); err == nil && st.Size() == b.size {
		return nil
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Rename(b.path, p); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// removeUnused deletes the blob files no row uses. The caller holds the
// write lock, so no attach is placing one meanwhile.
func (s *Store) removeUnused(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT DISTINCT sha256 FROM attachments`)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for rows.Next() {
		var sum string
		if err := rows.Scan(&sum); err != nil {
			rows.Close()
			return err
		}
		used[sum] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	root := filepath.Join(s.dir, blobDir)
	prefixes, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, p := range prefixes {
		if !p.IsDir() || len(p.Name()) != 2 {
			continue // tmp/, or not the store's
		}
		names, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			return err
		}
		for _, n := range names {
			if sum := p.Name() + n.Name(); len(sum) == 2*sha256.Size && !used[sum] {
				if err := os.Remove(filepath.Join(root, p.Name(), n.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}

// sweepTemp removes the temporary files of attaches that crashed.
func (s *Store) sweepTemp() {
	dir := filepath.Join(s.dir, blobDir, tmpDir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// newID is a new attachment id: "att_" and 12 random hex digits.
func newID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("attach: make an id: %w", err)
	}
	return "att_" + hex.EncodeToString(b[:]), nil
}

// sizeText is a size as people read it.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
