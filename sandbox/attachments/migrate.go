package attachments

import (
	"database/sql"
	"fmt"
)

// migrations make the schema: migrations[i] takes a database from
// version i (PRAGMA user_version) to i+1. Append only; never edit one
// that was released.
var migrations = []string{
	// 1: the rows, one per version, and the comments on them.
	`CREATE TABLE attachments (
		pk           INTEGER PRIMARY KEY,
		id           TEXT NOT NULL UNIQUE,
		session      TEXT NOT NULL,
		session_name TEXT NOT NULL,
		filename     TEXT NOT NULL,
		version      INTEGER NOT NULL,
		kind         TEXT NOT NULL,
		media_type   TEXT NOT NULL,
		size         INTEGER NOT NULL,
		sha256       TEXT NOT NULL,
		commentable  INTEGER NOT NULL,
		created      INTEGER NOT NULL,
		block        INTEGER NOT NULL,
		UNIQUE (session, filename, version)
	);
	CREATE TABLE comments (
		id         INTEGER PRIMARY KEY,
		attachment INTEGER NOT NULL REFERENCES attachments (pk) ON DELETE CASCADE,
		text       TEXT NOT NULL,
		author     TEXT NOT NULL,
		created    INTEGER NOT NULL
	);`,
	// 2: indexes for listing a session newest first, for finding whether
	// another row still uses a blob, and for a version's comments.
	`CREATE INDEX attachments_by_session ON attachments (session, created);
	CREATE INDEX attachments_by_sha256 ON attachments (sha256);
	CREATE INDEX comments_by_attachment ON comments (attachment);`,
}

// migrate brings db to schema version to, in one write transaction, so
// processes opening the store at once migrate it once.
func migrate(db *sql.DB, to int) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("its schema (version %d) is newer than this vis-agent knows (%d): use a newer vis-agent", v, len(migrations))
	}
	if v >= to {
		return nil
	}
	for i := v; i < to; i++ {
		if _, err := tx.Exec(migrations[i]); err != nil {
			return fmt.Errorf("migrate the schema to version %d: %w", i+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, to)); err != nil {
		return err
	}
	return tx.Commit()
}
