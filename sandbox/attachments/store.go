// Package attachments is the attachments store of sandbox sessions: the
// files a session attached (versions under one filename, comments on the
// commentable ones) kept in one SQLite database per Vis home, with their
// bytes in content-addressed blob files beside it. The session's host,
// the CLI and the other front ends all read and write it through this
// package, several processes at once.
package attachments

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/fsutil"

	// The SQLite driver: cgo, so it adds no package init work to
	// `vis-agent python` starts (the pure Go one adds about 0.3 ms).
	_ "github.com/mattn/go-sqlite3"
)

// Files of the store's folder: the database, and the lock openers take
// turns with.
const (
	dbFile   = "attachments.db"
	openLock = "open.lock"
)

// Stamp changes whenever a store in dir commits (SQLite in WAL mode
// appends every commit to the database's -wal file; a checkpoint rewrites
// the database), so a reader that only wants to know whether anything
// changed pays two stats, not a query. "" when there is no store yet.
func Stamp(dir string) string {
	var b strings.Builder
	for _, f := range []string{dbFile, dbFile + "-wal"} {
		if st, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(&b, "%d.%d ", st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

// DefaultMaxBytes is the size limit of one attachment when the settings
// name none (sandbox.max_attachment_mb).
const DefaultMaxBytes = 64 << 20

// busyTimeout is how long a write waits for another process's.
const busyTimeout = 30 * time.Second

// Store is an open attachments store.
type Store struct {
	dir string
	db  *sql.DB
}

// Limits bound what one Attach stores.
type Limits struct {
	MaxBytes int64 // 0: DefaultMaxBytes
	// SessionMaxBytes bounds the session's versions together, each
	// counted at its size (0: no bound).
	SessionMaxBytes int64
}

// QuotaError is an attachment that would take its session past
// Limits.SessionMaxBytes.
type QuotaError struct{ Used, Size, Limit int64 }

func (e *QuotaError) Error() string {
	return fmt.Sprintf("this attachment (%s) would take the session's attachments to %s, over its limit of %s (sandbox.max_attachments_mb in config.toml); nothing was stored (vis-agent sandbox rm deletes a session's attachments)",
		sizeText(e.Size), sizeText(e.Used+e.Size), sizeText(e.Limit))
}

func (l Limits) max() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

// New is what an Attach is told besides the bytes.
type New struct {
	Session     string // the session's key: its folder name, session.Folder.ID
	SessionName string // the session's name, shown in descriptors
	Block       int    // the block that attached it (0: not from a block)
	Filename    string // "": a name made from the kind and media type
	Kind        string // "": from the media type (image, text, ...)
	MediaType   string // "": sniffed from the bytes, then the filename
	Commentable bool
}

// Comment is one comment on a commentable version.
type Comment struct {
	ID      int64     `json:"id"`
	Text    string    `json:"text"`
	Author  string    `json:"author"`
	Created time.Time `json:"created"`
}

// Descriptor describes one version of an attachment: who attached what,
// when, and its shape; never its bytes (Read has those).
type Descriptor struct {
	ID          string    `json:"id"`
	Filename    string    `json:"filename"`
	Version     int       `json:"version"`
	Kind        string    `json:"kind"`
	MediaType   string    `json:"media_type"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	Commentable bool      `json:"commentable"`
	Created     time.Time `json:"created"`
	Session     string    `json:"session"` // the session's name
	Block       int       `json:"block"`
	Comments    []Comment `json:"comments,omitempty"`
}

// Open opens the store in dir, making and migrating it as needed. Several
// processes may hold it open at once.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, blobDir, tmpDir), 0o700); err != nil {
		return nil, fmt.Errorf("open the attachments store: %w", err)
	}
	// Openers take turns: a new database's switch to WAL fails, without
	// waiting, while another process reads it.
	unlock, err := lockFile(filepath.Join(dir, openLock))
	if err != nil {
		return nil, fmt.Errorf("open the attachments store: %w", err)
	}
	defer unlock()
	db, err := sql.Open("sqlite3", dsn(filepath.Join(dir, dbFile)))
	if err != nil {
		return nil, fmt.Errorf("open the attachments store: %w", err)
	}
	if err := migrate(db, len(migrations)); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the attachments store %s: %w", dir, err)
	}
	s := &Store{dir: dir, db: db}
	s.sweepTemp()
	return s, nil
}

// lockFile holds an exclusive flock on path until the returned function
// is called.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// dsn names the database with the settings of every connection: WAL, so
// readers never wait for a writer; a busy timeout, so writers of several
// processes queue; write transactions that take the write lock at BEGIN,
// so none fails half way; full sync, so a committed attach survives a
// power cut.
func dsn(path string) string {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_txlock", "immediate")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "FULL")
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Attach stores the bytes of data as the next version of n.Filename in
// n.Session and describes it. Over lim, or on any error, nothing is
// stored.
func (s *Store) Attach(n New, data io.Reader, lim Limits) (Descriptor, error) {
	if n.Session == "" {
		return Descriptor{}, errors.New("attach: no session")
	}
	if n.Filename != "" {
		if err := CheckFilename(n.Filename); err != nil {
			return Descriptor{}, err
		}
	}
	b, err := s.writeTemp(data, lim.max())
	if err != nil {
		return Descriptor{}, err
	}
	defer b.discard()
	if n.MediaType == "" {
		n.MediaType = sniff(b.head, n.Filename)
	}
	if n.Kind == "" {
		n.Kind = kindOf(n.MediaType)
	}
	id, err := newID()
	if err != nil {
		return Descriptor{}, err
	}
	if n.Filename == "" {
		n.Filename = defaultFilename(n.Kind, n.MediaType, id)
	}
	d := Descriptor{ID: id, Filename: n.Filename, Kind: n.Kind, MediaType: n.MediaType, Size: b.size, SHA256: b.sum,
		Commentable: n.Commentable, Session: n.SessionName, Block: n.Block}
	// The blob goes in place under the write lock, which RemoveSession
	// also holds while it deletes unused blobs: the blob cannot vanish
	// between here and the row's commit.
	err = s.write(func(tx *sql.Tx) error {
		if lim.SessionMaxBytes > 0 {
			var used int64
			if err := tx.QueryRow(`SELECT COALESCE(SUM(size), 0) FROM attachments WHERE session = ?`, n.Session).Scan(&used); err != nil {
				return err
			}
			if used+b.size > lim.SessionMaxBytes {
				return &QuotaError{Used: used, Size: b.size, Limit: lim.SessionMaxBytes}
			}
		}
		if err := s.place(b); err != nil {
			return err
		}
		// Taken under the lock, so creation times follow versions.
		d.Created = time.Now().UTC()
		if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) + 1 FROM attachments WHERE session = ? AND filename = ?`,
			n.Session, n.Filename).Scan(&d.Version); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO attachments (id, session, session_name, filename, version, kind, media_type, size, sha256, commentable, created, block)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, n.Session, n.SessionName, d.Filename, d.Version, d.Kind, d.MediaType, d.Size, d.SHA256, d.Commentable, d.Created.UnixNano(), d.Block)
		return err
	})
	var qe *QuotaError
	if errors.As(err, &qe) {
		return Descriptor{}, err
	}
	if err != nil {
		return Descriptor{}, fmt.Errorf("attach %s: %w", d.Filename, err)
	}
	return d, nil
}

// write runs fn in one write transaction.
func (s *Store) write(fn func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

const columns = `id, session_name, filename, version, kind, media_type, size, sha256, commentable, created, block`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

func scanDescriptor(r scanner) (Descriptor, error) {
	var d Descriptor
	var created int64
	err := r.Scan(&d.ID, &d.Session, &d.Filename, &d.Version, &d.Kind, &d.MediaType, &d.Size, &d.SHA256, &d.Commentable, &created, &d.Block)
	d.Created = time.Unix(0, created).UTC()
	return d, err
}

// List describes every version attached in session, newest first.
func (s *Store) List(session string) ([]Descriptor, error) {
	rows, err := s.db.Query(`SELECT `+columns+` FROM attachments WHERE session = ? ORDER BY created DESC, pk DESC`, session)
	if err != nil {
		return nil, fmt.Errorf("list the attachments: %w", err)
	}
	defer rows.Close()
	out := []Descriptor{}
	for rows.Next() {
		d, err := scanDescriptor(rows)
		if err != nil {
			return nil, fmt.Errorf("list the attachments: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the attachments: %w", err)
	}
	return out, nil
}

// Get describes one version, with its comments. idOrFilename is an id or
// a filename; version 0 is the latest (for an id: that id's own), N
// version N, and a negative one counts back from the latest (-1 the
// latest, -2 the one before). An unknown one is a *NotFoundError.
func (s *Store) Get(session, idOrFilename string, version int) (Descriptor, error) {
	d, err := s.find(session, idOrFilename, version)
	if err != nil {
		return d, err
	}
	d.Comments, err = s.comments(d.ID)
	return d, err
}

// find is Get without the comments.
func (s *Store) find(session, idOrFilename string, version int) (Descriptor, error) {
	filename := idOrFilename
	d, err := scanDescriptor(s.db.QueryRow(`SELECT `+columns+` FROM attachments WHERE session = ? AND id = ?`, session, idOrFilename))
	switch {
	case err == nil && version == 0:
		return d, nil
	case err == nil:
		filename = d.Filename // another version of that id's file
	case !errors.Is(err, sql.ErrNoRows):
		return d, fmt.Errorf("read the attachments: %w", err)
	}
	versions, err := s.versions(session, filename)
	if err != nil {
		return Descriptor{}, err
	}
	if len(versions) == 0 {
		names, err := s.filenames(session)
		if err != nil {
			return Descriptor{}, err
		}
		nf := &NotFoundError{What: idOrFilename, Nearest: nearestNames(idOrFilename, names)}
		if len(nf.Nearest) == 0 {
			nf.Newest = names[:min(len(names), maxNearest)]
		}
		return Descriptor{}, nf
	}
	want := version
	switch {
	case version == 0:
		want = versions[len(versions)-1]
	case version < 0 && -version <= len(versions):
		want = versions[len(versions)+version]
	}
	d, err = scanDescriptor(s.db.QueryRow(`SELECT `+columns+` FROM attachments WHERE session = ? AND filename = ? AND version = ?`,
		session, filename, want))
	if errors.Is(err, sql.ErrNoRows) {
		return d, &NotFoundError{What: filename, Version: version, Versions: versions}
	}
	if err != nil {
		return d, fmt.Errorf("read the attachments: %w", err)
	}
	return d, nil
}

// versions lists the versions of filename in session, oldest first.
func (s *Store) versions(session, filename string) ([]int, error) {
	rows, err := s.db.Query(`SELECT version FROM attachments WHERE session = ? AND filename = ? ORDER BY version`, session, filename)
	if err != nil {
		return nil, fmt.Errorf("read the attachments: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read the attachments: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// filenames are the session's filenames, the newest attached first.
func (s *Store) filenames(session string) ([]string, error) {
	rows, err := s.db.Query(`SELECT filename FROM attachments WHERE session = ? GROUP BY filename ORDER BY MAX(pk) DESC`, session)
	if err != nil {
		return nil, fmt.Errorf("read the attachments: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("read the attachments: %w", err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the attachments: %w", err)
	}
	return names, nil
}

func (s *Store) comments(id string) ([]Comment, error) {
	rows, err := s.db.Query(`SELECT c.id, c.text, c.author, c.created FROM comments c JOIN attachments a ON a.pk = c.attachment
		WHERE a.id = ? ORDER BY c.id`, id)
	if err != nil {
		return nil, fmt.Errorf("read the comments: %w", err)
	}
	defer rows.Close()
	var out []Comment
	for rows.Next() {
		var c Comment
		var created int64
		if err := rows.Scan(&c.ID, &c.Text, &c.Author, &created); err != nil {
			return nil, fmt.Errorf("read the comments: %w", err)
		}
		c.Created = time.Unix(0, created).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// Read opens the bytes of d.
func (s *Store) Read(d Descriptor) (io.ReadCloser, error) {
	p, err := s.blobPath(d.SHA256)
	if err != nil {
		return nil, err
	}
	f, err := fsutil.OpenRegular(p)
	if err == nil {
		// Its size is the row's, or the bytes are not this version's.
		if st, serr := f.Stat(); serr != nil || st.Size() != d.Size {
			f.Close()
			err = fmt.Errorf("its stored bytes are not %d long", d.Size)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read attachment %s version %d: %w", d.Filename, d.Version, err)
	}
	return f, nil
}

// ErrReadOnly is the reason a comment is refused: the version was not
// attached commentable.
var ErrReadOnly error = readOnlyError{}

// readOnlyError is ErrReadOnly's type: a value, built at compile time.
type readOnlyError struct{}

func (readOnlyError) Error() string {
	return "it is read-only (attached without commentable=True); a new version attached with commentable=True takes comments"
}

// Comment adds a comment to one version (found as Get finds it); a
// read-only version refuses it with ErrReadOnly.
func (s *Store) Comment(session, idOrFilename string, version int, text, author string) (Comment, error) {
	if strings.TrimSpace(text) == "" {
		return Comment{}, errors.New("the comment is empty")
	}
	d, err := s.find(session, idOrFilename, version)
	if err != nil {
		return Comment{}, err
	}
	if !d.Commentable {
		return Comment{}, fmt.Errorf("cannot comment on %s version %d: %w", d.Filename, d.Version, ErrReadOnly)
	}
	c := Comment{Text: text, Author: author, Created: time.Now().UTC()}
	err = s.write(func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT INTO comments (attachment, text, author, created) SELECT pk, ?, ?, ? FROM attachments WHERE id = ?`,
			text, author, c.Created.UnixNano(), d.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errors.New("the attachment was removed meanwhile")
		}
		c.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return Comment{}, fmt.Errorf("comment on %s version %d: %w", d.Filename, d.Version, err)
	}
	return c, nil
}

// RemoveSession deletes the session's attachments and comments, and every
// blob no row uses: the session's own, and any a crashed attach left.
func (s *Store) RemoveSession(session string) error {
	err := s.write(func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM attachments WHERE session = ?`, session)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete the session's attachments: %w", err)
	}
	// The rows are gone first: a crash from here on leaves unused blobs
	// (the next RemoveSession deletes them), never a row without its
	// bytes.
	if err := s.write(s.removeUnused); err != nil {
		return fmt.Errorf("delete the session's attachment files: %w", err)
	}
	return nil
}
