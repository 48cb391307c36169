// Package journal is a session's record of its blocks: every block any
// client ran (`sandbox run`, the REPL, an MCP client), with its code, its
// output (capped), how it ended and what it attached, in one SQLite
// database in the session's folder. Only the session's host writes it,
// and the folder is out of the jail's reach, so what it holds is what the
// host saw; the code and output in it are still the session's, untrusted
// text for whoever shows them. The journal is kept until the session is
// removed, bounded in size: past the bound the oldest blocks go first.
package journal

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/vis-agent/vis-agent/sandbox/protocol"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver the attachments store uses too
)

// Caps of one block's record: its output keeps its first and last lines
// within MaxOutput bytes, its code its first MaxCode bytes.
const (
	MaxOutput = 64 << 10
	MaxCode   = 256 << 10
)

// DefaultMaxBytes bounds a journal when the settings name no bound
// (sandbox.journal_mb).
const DefaultMaxBytes = 64 << 20

// rowOverhead is what a row costs besides its texts, for the bound.
const rowOverhead = 256

// Entry is one block as the journal keeps it.
type Entry struct {
	ID int64 `json:"id"`
	// Client is the kind of client that ran the block ("run", "repl",
	// "mcp"), ClientID which one (an MCP client's name, a process id).
	Client   string `json:"client"`
	ClientID string `json:"client_id"`
	Code     string `json:"code"`
	// Output is both streams as printed, cut in the middle on line
	// boundaries past MaxOutput (OutputCut bytes are missing, and a line
	// in their place says so).
	Output    string `json:"output"`
	OutputCut int64  `json:"output_cut,omitempty"`
	// Status is "ok", "error", "interrupted" or "timed out".
	Status      string              `json:"status"`
	Error       *Error              `json:"error,omitempty"`
	RepairNote  string              `json:"repair_note,omitempty"`
	Notice      string              `json:"notice,omitempty"`
	Started     time.Time           `json:"started"`
	DurationMS  int64               `json:"duration_ms"`
	Attachments []protocol.Attached `json:"attachments,omitempty"`
	CodeCut     int64               `json:"code_cut,omitempty"`
	// Block is the block's number in its session's Python process (as in
	// its tracebacks, "<block 12>"), which `sandbox rewind --to` takes; 0
	// when it did not run there. Rewound: a rewind went back past it.
	Block   int64 `json:"block,omitempty"`
	Rewound bool  `json:"rewound,omitempty"`
}

// Error is how a block failed.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Label is the client as shown beside a block: "mcp: claude", "run".
func (e Entry) Label() string { return Label(e.Client, e.ClientID) }

// Label is a client's kind and id as shown beside its blocks.
func Label(kind, id string) string {
	if kind == "" {
		kind = "client"
	}
	if id == "" {
		return kind
	}
	return kind + ": " + id
}

// schema is the journal's one table; user_version says which schema a
// file holds (1 had no block and rewound: upgrade adds them).
const schema = `CREATE TABLE IF NOT EXISTS blocks (
	id          INTEGER PRIMARY KEY,
	client      TEXT NOT NULL,
	client_id   TEXT NOT NULL,
	code        TEXT NOT NULL,
	code_cut    INTEGER NOT NULL,
	output      TEXT NOT NULL,
	output_cut  INTEGER NOT NULL,
	status      TEXT NOT NULL,
	error       TEXT NOT NULL,
	repair_note TEXT NOT NULL,
	notice      TEXT NOT NULL,
	started     INTEGER NOT NULL,
	duration_ms INTEGER NOT NULL,
	attachments TEXT NOT NULL,
	size        INTEGER NOT NULL,
	block       INTEGER NOT NULL DEFAULT 0,
	rewound     INTEGER NOT NULL DEFAULT 0
);
PRAGMA user_version = 2;`

// upgrade adds what schema 2 added to a journal of schema 1. Another
// process may be at it too: a column that is there already is no error.
func upgrade(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != 1 {
		return err
	}
	for _, col := range []string{"block", "rewound"} {
		if _, err := db.Exec(`ALTER TABLE blocks ADD COLUMN ` + col + ` INTEGER NOT NULL DEFAULT 0`); err != nil &&
			!strings.Contains(err.Error(), "duplicate column") {
			return err
		}
	}
	_, err := db.Exec(`PRAGMA user_version = 2`)
	return err
}

// Journal is an open journal.
type Journal struct {
	db  *sql.DB
	max int64

	mu    sync.Mutex
	total int64 // the rows' sizes together
}

// Create opens the journal at path for its host, making it when new;
// maxBytes bounds it (0: DefaultMaxBytes).
func Create(path string, maxBytes int64) (*Journal, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	// Private, as the session's other files (SQLite gives its -wal and
	// -shm files the database's mode).
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("make the session's journal: %w", err)
	}
	f.Close()
	db, err := open(path, "rw")
	if err != nil {
		return nil, err
	}
	if err := upgrade(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("upgrade the session's journal: %w", err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("make the session's journal: %w", err)
	}
	j := &Journal{db: db, max: maxBytes}
	if err := db.QueryRow(`SELECT COALESCE(SUM(size), 0) FROM blocks`).Scan(&j.total); err != nil {
		db.Close()
		return nil, fmt.Errorf("read the session's journal: %w", err)
	}
	return j, nil
}

// ErrNone is a journal that does not exist yet: the session ran no block.
var ErrNone = errors.New("the session has no journal yet (it ran no block)")

// OpenRead opens the journal at path to read it.
func OpenRead(path string) (*Journal, error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, ErrNone
	}
	db, err := open(path, "rw")
	if err != nil {
		return nil, err
	}
	if err := upgrade(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("upgrade the session's journal: %w", err)
	}
	return &Journal{db: db}, nil
}

// open opens the database with WAL (readers never wait for the host) and
// normal sync: a block's record may be lost in a power cut, never torn.
func open(path, mode string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	q.Set("mode", mode)
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_busy_timeout", "5000")
	db, err := sql.Open("sqlite3", "file:"+u.EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open the session's journal: %w", err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the session's journal %s: %w", path, err)
	}
	return db, nil
}

// Close closes the journal.
func (j *Journal) Close() error { return j.db.Close() }

// Add records one block; its id is returned.
func (j *Journal) Add(e Entry) (int64, error) {
	ids, err := j.AddAll([]Entry{e})
	if len(ids) == 0 {
		return 0, err
	}
	return ids[0], err
}

// AddAll records blocks in one transaction (a host that ran several
// blocks since its last write pays one commit for them); their ids are
// returned. The oldest rows go when the journal is past its bound.
func (j *Journal) AddAll(entries []Entry) ([]int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	tx, err := j.db.Begin()
	if err != nil {
		return nil, fmt.Errorf("record the blocks in the session's journal: %w", err)
	}
	defer tx.Rollback()
	insert, err := tx.Prepare(`INSERT INTO blocks (client, client_id, code, code_cut, output, output_cut, status, error,
		repair_note, notice, started, duration_ms, attachments, size, block) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("record the blocks in the session's journal: %w", err)
	}
	defer insert.Close()
	ids := make([]int64, 0, len(entries))
	added := int64(0)
	for _, e := range entries {
		e.Code, e.CodeCut = cutHead(e.Code, MaxCode)
		errText := ""
		if e.Error != nil {
			b, _ := json.Marshal(e.Error)
			errText = string(b)
		}
		att := "[]"
		if len(e.Attachments) > 0 {
			b, _ := json.Marshal(e.Attachments)
			att = string(b)
		}
		size := int64(len(e.Code)+len(e.Output)+len(errText)+len(e.RepairNote)+len(e.Notice)+len(att)) + rowOverhead
		res, err := insert.Exec(e.Client, e.ClientID, e.Code, e.CodeCut, e.Output, e.OutputCut, e.Status, errText, e.RepairNote, e.Notice,
			e.Started.UnixMilli(), e.DurationMS, att, size, e.Block)
		if err != nil {
			return nil, fmt.Errorf("record the block in the session's journal: %w", err)
		}
		id, _ := res.LastInsertId()
		ids = append(ids, id)
		added += size
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("record the blocks in the session's journal: %w", err)
	}
	j.total += added
	if j.total > j.max {
		if err := j.trim(); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// trim deletes the oldest rows until the journal is within its bound
// again (at most down to three quarters of it, so that trims are rare).
func (j *Journal) trim() error {
	rows, err := j.db.Query(`SELECT id, size FROM blocks ORDER BY id`)
	if err != nil {
		return fmt.Errorf("trim the session's journal: %w", err)
	}
	var last int64 = -1
	total := j.total
	for rows.Next() && total > j.max*3/4 {
		var id, size int64
		if err := rows.Scan(&id, &size); err != nil {
			rows.Close()
			return fmt.Errorf("trim the session's journal: %w", err)
		}
		last, total = id, total-size
	}
	rows.Close()
	if last < 0 {
		return nil
	}
	if _, err := j.db.Exec(`DELETE FROM blocks WHERE id <= ?`, last); err != nil {
		return fmt.Errorf("trim the session's journal: %w", err)
	}
	j.total = total
	return nil
}

// Last is the newest n blocks with an id over after, oldest first (n <=
// 0: all of them).
func (j *Journal) Last(n int, after int64) ([]Entry, error) {
	if n <= 0 {
		n = -1
	}
	rows, err := j.db.Query(`SELECT id, client, client_id, code, code_cut, output, output_cut, status, error, repair_note,
		notice, started, duration_ms, attachments, block, rewound FROM (SELECT * FROM blocks WHERE id > ? ORDER BY id DESC LIMIT ?) ORDER BY id`, after, n)
	if err != nil {
		return nil, fmt.Errorf("read the session's journal: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var (
			e            Entry
			errText, att string
			started      int64
		)
		if err := rows.Scan(&e.ID, &e.Client, &e.ClientID, &e.Code, &e.CodeCut, &e.Output, &e.OutputCut, &e.Status, &errText,
			&e.RepairNote, &e.Notice, &started, &e.DurationMS, &att, &e.Block, &e.Rewound); err != nil {
			return nil, fmt.Errorf("read the session's journal: %w", err)
		}
		e.Started = time.UnixMilli(started)
		if errText != "" {
			e.Error = &Error{}
			json.Unmarshal([]byte(errText), e.Error)
		}
		json.Unmarshal([]byte(att), &e.Attachments)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the session's journal: %w", err)
	}
	return out, nil
}

// MarkRewound records a rewind to the state after the blocks in line (the
// target first, then the blocks it ran on, as far as the session's history
// goes): a block from the oldest of them on is rewound unless it is one of
// them. A later rewind to a rewound block (an undo) so unmarks its line.
func (j *Journal) MarkRewound(line []int) error {
	if len(line) == 0 {
		return nil
	}
	oldest := line[0]
	on := make([]string, len(line))
	for i, b := range line {
		oldest = min(oldest, b)
		on[i] = fmt.Sprint(b)
	}
	// the numbers are ints: formatted here, not spliced from text
	_, err := j.db.Exec(`UPDATE blocks SET rewound = (block NOT IN (`+strings.Join(on, ",")+`)) WHERE block >= ?`, oldest)
	if err != nil {
		return fmt.Errorf("mark the rewound blocks in the session's journal: %w", err)
	}
	return nil
}

// cutHead keeps the first max bytes of s (whole characters), and says how
// many it dropped.
func cutHead(s string, max int) (string, int64) {
	if len(s) <= max {
		return s, 0
	}
	i := runeStart(s, max)
	return s[:i], int64(len(s) - i)
}

// runeStart is the offset of the character of s that byte i belongs to.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// Output collects a block's output for its record: the first and last
// lines within MaxOutput bytes; what lies between is counted, not held.
type Output struct {
	head  strings.Builder
	tail  []byte
	total int64
}

// Write adds output as printed.
func (o *Output) Write(s string) {
	o.total += int64(len(s))
	if room := MaxOutput/2 - o.head.Len(); room > 0 {
		n := len(s)
		if n > room {
			n = runeStart(s, room)
		}
		o.head.WriteString(s[:n])
		s = s[n:]
	}
	o.tail = append(o.tail, s...)
	if len(o.tail) > 2*MaxOutput {
		keep := o.tail[len(o.tail)-MaxOutput/2:]
		for len(keep) > 0 && !utf8.RuneStart(keep[0]) {
			keep = keep[1:]
		}
		o.tail = append([]byte(nil), keep...)
	}
}

// Text is the output to record and how many bytes of it are missing: cut
// on line boundaries, with a line in the gap that says what is missing.
func (o *Output) Text() (string, int64) {
	head := o.head.String()
	if o.total <= MaxOutput { // nothing was dropped
		return head + string(o.tail), 0
	}
	tail := string(o.tail)
	if len(tail) > MaxOutput/2 {
		tail = tail[runeStart(tail, len(tail)-MaxOutput/2):]
	}
	// Whole lines only: the head up to its last newline, the tail from
	// its first.
	if i := strings.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	cut := o.total - int64(len(head)+len(tail))
	return head + fmt.Sprintf("[… %d bytes of output not kept in the journal …]\n", cut) + tail, cut
}

// Text is the block as people read it: a header line (id, client, start,
// duration, status, the block's number and whether it was rewound), the code with python's prompts, the notes, the
// output and how it ended.
func (e Entry) Text() string {
	same := func(s string) string { return s }
	return e.Render(same, same)
}

// Render is Text with every part but the output passed through text and
// the output through output: all of it is the session's, and a terminal
// shows it through internal/termtext (the code as text a person reviews,
// the output as the block's output).
func (e Entry) Render(text, output func(string) string) string {
	var b strings.Builder
	head := fmt.Sprintf("── #%d %s · %s · %s · %s", e.ID, e.Label(), e.Started.Local().Format("2006-01-02 15:04:05"),
		durationText(e.DurationMS), e.Status)
	if e.Block > 0 {
		// the number `sandbox rewind --to` takes
		head += fmt.Sprintf(" · block %d", e.Block)
	}
	if e.Rewound {
		head += " · rewound"
	}
	b.WriteString(text(head) + "\n")
	for i, line := range strings.Split(strings.TrimRight(e.Code, "\n"), "\n") {
		prompt := "... "
		if i == 0 {
			prompt = ">>> "
		}
		b.WriteString(prompt + text(line) + "\n")
	}
	if e.Notice != "" {
		b.WriteString(text(strings.TrimRight(e.Notice, "\n")) + "\n")
	}
	if e.RepairNote != "" {
		b.WriteString(text(strings.TrimRight(e.RepairNote, "\n")) + "\n")
	}
	b.WriteString(output(e.Output))
	if e.Output != "" && !strings.HasSuffix(e.Output, "\n") {
		b.WriteString("\n")
	}
	if e.Error != nil && e.Status != "ok" {
		b.WriteString(text(fmt.Sprintf("%s: %s", e.Error.Type, e.Error.Message)) + "\n")
	}
	for _, a := range e.Attachments {
		b.WriteString(text(fmt.Sprintf("attached %s (version %d, %s, id %s)", a.Filename, a.Version, sizeText(a.Size), a.ID)) + "\n")
	}
	return b.String()
}

// durationText is "12 ms", "3.4 s".
func durationText(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// sizeText is "12 bytes", "3.4 KiB", "5.0 MiB".
func sizeText(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
