package attachments

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
)

// Imported is one version of an attachment brought from another store
// (`vis-agent sandbox import`): its descriptor as exported, with its
// comments, and its bytes.
type Imported struct {
	Descriptor
	Data io.Reader
}

// Import stores the versions of another store's session as session's
// (its key) under sessionName, all of them or none: each keeps its
// filename, version, kind, media type, creation time, block and comments
// (with their authors and times), and gets a new id. Every version's bytes
// must match its descriptor's size and SHA-256 and fit lim; the session
// must have no attachments yet.
func (s *Store) Import(session, sessionName string, items []Imported, lim Limits) ([]Descriptor, error) {
	var total int64
	blobs := make([]*tempBlob, 0, len(items))
	defer func() {
		for _, b := range blobs {
			b.discard()
		}
	}()
	for _, it := range items {
		if err := CheckFilename(it.Filename); err != nil {
			return nil, err
		}
		if it.Version < 1 {
			return nil, fmt.Errorf("%s: version %d", it.Filename, it.Version)
		}
		b, err := s.writeTemp(it.Data, lim.max())
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, b)
		if b.size != it.Size || b.sum != it.SHA256 {
			return nil, fmt.Errorf("%s version %d: its bytes do not match its size and SHA-256", it.Filename, it.Version)
		}
		if total += b.size; lim.SessionMaxBytes > 0 && total > lim.SessionMaxBytes {
			return nil, &QuotaError{Used: total - b.size, Size: b.size, Limit: lim.SessionMaxBytes}
		}
	}
	out := make([]Descriptor, len(items))
	err := s.write(func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRow(`SELECT COUNT(*) FROM attachments WHERE session = ?`, session).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errors.New("the session already has attachments")
		}
		for i, it := range items {
			if err := s.place(blobs[i]); err != nil {
				return err
			}
			id, err := newID()
			if err != nil {
				return err
			}
			d := it.Descriptor
			d.ID, d.Session, d.Comments = id, sessionName, nil
			res, err := tx.Exec(`INSERT INTO attachments (id, session, session_name, filename, version, kind, media_type, size, sha256, commentable, created, block)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				d.ID, session, sessionName, d.Filename, d.Version, d.Kind, d.MediaType, d.Size, d.SHA256, d.Commentable, d.Created.UnixNano(), d.Block)
			if err != nil {
				return fmt.Errorf("%s version %d: %w", d.Filename, d.Version, err)
			}
			pk, err := res.LastInsertId()
			if err != nil {
				return err
			}
			for _, c := range it.Comments {
				if _, err := tx.Exec(`INSERT INTO comments (attachment, text, author, created) VALUES (?, ?, ?, ?)`,
					pk, c.Text, c.Author, c.Created.UnixNano()); err != nil {
					return err
				}
			}
			out[i] = d
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import the attachments: %w", err)
	}
	return out, nil
}
