package attachments

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func attach(t *testing.T, s *Store, session, filename, data string, commentable bool) Descriptor {
	t.Helper()
	d, err := s.Attach(New{Session: session, SessionName: "name-" + session, Filename: filename, Commentable: commentable, Block: 3},
		strings.NewReader(data), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readAll(t *testing.T, s *Store, d Descriptor) string {
	t.Helper()
	r, err := s.Read(d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVersions(t *testing.T) {
	s := openStore(t, t.TempDir())
	v1 := attach(t, s, "s1", "PLAN.md", "# one\n", true)
	v2 := attach(t, s, "s1", "PLAN.md", "# two\n", false)
	v3 := attach(t, s, "s1", "PLAN.md", "# three\n", true)
	other := attach(t, s, "s1", "notes.txt", "notes", false)
	if v1.Version != 1 || v2.Version != 2 || v3.Version != 3 || other.Version != 1 {
		t.Fatalf("versions %d %d %d %d", v1.Version, v2.Version, v3.Version, other.Version)
	}
	if v1.MediaType != "text/markdown" || v1.Kind != "text" || v1.Size != 6 || v1.Session != "name-s1" || v1.Block != 3 {
		t.Errorf("descriptor %+v", v1)
	}
	sum := sha256.Sum256([]byte("# one\n"))
	if v1.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("sha256 %s", v1.SHA256)
	}
	for _, c := range []struct {
		version int
		want    Descriptor
	}{{0, v3}, {-1, v3}, {-2, v2}, {-3, v1}, {1, v1}, {2, v2}, {3, v3}} {
		d, err := s.Get("s1", "PLAN.md", c.version)
		if err != nil {
			t.Fatalf("version %d: %v", c.version, err)
		}
		if d.ID != c.want.ID || !d.Created.Equal(c.want.Created) {
			t.Errorf("version %d: got %+v, want %+v", c.version, d, c.want)
		}
	}
	if got := readAll(t, s, v2); got != "# two\n" {
		t.Errorf("read %q", got)
	}
	// An id names its version; with a version, another of its file.
	if d, err := s.Get("s1", v1.ID, 0); err != nil || d.Version != 1 {
		t.Errorf("by id: %+v, %v", d, err)
	}
	if d, err := s.Get("s1", v1.ID, -1); err != nil || d.Version != 3 {
		t.Errorf("by id, latest: %+v, %v", d, err)
	}
	for _, v := range []int{4, -4} {
		_, err := s.Get("s1", "PLAN.md", v)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !reflect.DeepEqual(nf.Versions, []int{1, 2, 3}) {
			t.Fatalf("version %d: %v", v, err)
		}
		if want := fmt.Sprintf(`no version %d of attachment "PLAN.md" in this session; it has versions 1, 2, 3`, v); err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
	}
	list, err := s.List("s1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	if want := []string{other.ID, v3.ID, v2.ID, v1.ID}; !reflect.DeepEqual(ids, want) {
		t.Errorf("list %v, want newest first %v", ids, want)
	}
	// Sessions do not see each other's attachments.
	if l, err := s.List("s2"); err != nil || len(l) != 0 {
		t.Errorf("other session: %v %v", l, err)
	}
	if _, err := s.Get("s2", "PLAN.md", 0); err == nil {
		t.Error("another session's attachment was found")
	}
}

func TestComments(t *testing.T) {
	s := openStore(t, t.TempDir())
	attach(t, s, "s", "spec.md", "spec", true)
	attach(t, s, "s", "spec.md", "spec 2", false)
	c, err := s.Comment("s", "spec.md", 1, "looks good", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == 0 || c.Text != "looks good" || c.Author != "ann" || c.Created.IsZero() {
		t.Errorf("comment %+v", c)
	}
	if _, err := s.Comment("s", "spec.md", 1, "second", "bob"); err != nil {
		t.Fatal(err)
	}
	d, err := s.Get("s", "spec.md", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Comments) != 2 || d.Comments[0].Text != "looks good" || d.Comments[1].Author != "bob" {
		t.Errorf("comments %+v", d.Comments)
	}
	_, err = s.Comment("s", "spec.md", 0, "no", "ann")
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "spec.md version 2") {
		t.Errorf("read-only version: %v", err)
	}
	if _, err := s.Comment("s", "spec.md", 1, "  ", "ann"); err == nil {
		t.Error("an empty comment was taken")
	}
	if d, _ := s.Get("s", "spec.md", 2); len(d.Comments) != 0 {
		t.Errorf("the read-only version has comments %+v", d.Comments)
	}
}

func TestDedupAndRemoveSession(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	attach(t, s, "s1", "a.txt", "shared bytes", true)
	attach(t, s, "s1", "b.txt", "shared bytes", false)
	b := attach(t, s, "s2", "c.txt", "shared bytes", false)
	own := attach(t, s, "s1", "own.txt", "only s1", false)
	if _, err := s.Comment("s1", "a.txt", 0, "hi", "ann"); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, dir); n != 2 {
		t.Fatalf("%d blob files, want 2 (identical bytes stored once)", n)
	}
	// A blob a crashed attach left without its row.
	orphan := filepath.Join(dir, blobDir, "ab", strings.Repeat("c", 62))
	os.MkdirAll(filepath.Dir(orphan), 0o700)
	os.WriteFile(orphan, []byte("orphan"), 0o600)
	if err := s.RemoveSession("s1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.List("s1"); len(l) != 0 {
		t.Errorf("s1 still lists %v", l)
	}
	if got := readAll(t, s, b); got != "shared bytes" {
		t.Errorf("s2's shared blob: %q", got)
	}
	if _, err := s.Read(own); err == nil {
		t.Error("s1's own blob is still there")
	}
	if n := countBlobs(t, dir); n != 1 {
		t.Errorf("%d blob files, want 1 (the shared one)", n)
	}
	var comments int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM comments`).Scan(&comments); err != nil || comments != 0 {
		t.Errorf("%d comments left (%v)", comments, err)
	}
	if err := s.RemoveSession("s2"); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, dir); n != 0 {
		t.Errorf("%d blob files left", n)
	}
}

// countBlobs counts the blob files (not the temporary ones).
func countBlobs(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, blobDir), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.IsDir() && d.Name() == tmpDir {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, blobDir, tmpDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestLimitLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := s.Attach(New{Session: "s", Filename: "big.bin"}, bytes.NewReader(make([]byte, 1025)), Limits{MaxBytes: 1024})
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "the attachment is larger than the limit of 1 KiB (sandbox.max_attachment_mb in config.toml); nothing was stored" {
		t.Fatalf("over the limit: %v", err)
	}
	if l, _ := s.List("s"); len(l) != 0 || countBlobs(t, dir) != 0 || len(tempFiles(t, dir)) != 0 {
		t.Errorf("something was stored: rows %v, blobs %d, temp %v", l, countBlobs(t, dir), tempFiles(t, dir))
	}
	// At the limit is fine.
	if _, err := s.Attach(New{Session: "s", Filename: "big.bin"}, bytes.NewReader(make([]byte, 1024)), Limits{MaxBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	// A reader that fails leaves nothing either.
	_, err = s.Attach(New{Session: "s", Filename: "broken"}, io.MultiReader(strings.NewReader("part"), errReader{}), Limits{})
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("failing reader: %v", err)
	}
	if l, _ := s.List("s"); len(l) != 1 || len(tempFiles(t, dir)) != 0 {
		t.Errorf("after a failed read: rows %d, temp %v", len(l), tempFiles(t, dir))
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestDefaultsAndSniffing(t *testing.T) {
	s := openStore(t, t.TempDir())
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...)
	cases := []struct {
		filename, kind, media string
		data                  []byte
		wantKind, wantMedia   string
		wantName              string // prefix, or the name
	}{
		{"", "", "", png, "image", "image/png", "image-"},
		{"", "", "", []byte("plain words"), "text", "text/plain", "text-"},
		{"", "doc", "text/markdown", []byte("# x"), "doc", "text/markdown", "doc-"},
		{"data.json", "", "", []byte(`{"a": 1}`), "text", "application/json", "data.json"},
		{"pic.md", "", "", png, "image", "image/png", "pic.md"}, // the bytes win over the name
		{"blob", "", "", []byte{0, 1, 2, 3}, "file", "application/octet-stream", "blob"},
	}
	for _, c := range cases {
		d, err := s.Attach(New{Session: "s", Filename: c.filename, Kind: c.kind, MediaType: c.media}, bytes.NewReader(c.data), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != c.wantKind || d.MediaType != c.wantMedia || !strings.HasPrefix(d.Filename, c.wantName) {
			t.Errorf("%q: got kind %q media %q name %q", c.filename, d.Kind, d.MediaType, d.Filename)
		}
		if c.filename == "" {
			if err := CheckFilename(d.Filename); err != nil || filepath.Ext(d.Filename) == "" {
				t.Errorf("default name %q: %v", d.Filename, err)
			}
		}
	}
	for _, bad := range []string{"a/b", "..", `x\y`, "a\x00b", "tab\there", strings.Repeat("x", 256)} {
		if _, err := s.Attach(New{Session: "s", Filename: bad}, strings.NewReader("x"), Limits{}); err == nil {
			t.Errorf("filename %q was taken", bad)
		}
	}
}

func TestNearest(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, n := range []string{"PLAN-search.md", "PLAN-index.md", "report.csv", "zzz.bin"} {
		attach(t, s, "s", n, n, false)
	}
	_, err := s.Get("s", "PLAN-serch.md", 0)
	if err == nil || err.Error() != `no attachment "PLAN-serch.md" in this session; nearest: PLAN-search.md` {
		t.Errorf("got %v", err)
	}
	_, err = s.Get("s", "report", 0)
	if err == nil || err.Error() != `no attachment "report" in this session; nearest: report.csv` {
		t.Errorf("got %v", err)
	}
	_, err = s.Get("s", "unrelated-thing", 0)
	if err == nil || err.Error() != `no attachment "unrelated-thing" in this session; its newest: zzz.bin, report.csv, PLAN-index.md` {
		t.Errorf("got %v", err)
	}
	// An id mistyped is near no filename: the newest are what to ask for.
	attach(t, s, "s", "report.csv", "again", false)
	_, err = s.Get("s", "att_0123456789ab", 0)
	if err == nil || err.Error() != `no attachment "att_0123456789ab" in this session; its newest: report.csv, zzz.bin, PLAN-index.md` {
		t.Errorf("got %v", err)
	}
	if _, err = s.Get("t", "att_0123456789ab", 0); err == nil || err.Error() != `no attachment "att_0123456789ab" in this session` {
		t.Errorf("a session without attachments: %v", err)
	}
}

func TestMigrations(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		if v := userVersion(t, s.db); v != len(migrations) {
			t.Errorf("user_version %d, want %d", v, len(migrations))
		}
		s.Close()
		s = openStore(t, dir) // opening again changes nothing
		if v := userVersion(t, s.db); v != len(migrations) {
			t.Errorf("user_version %d after a second open", v)
		}
	})
	t.Run("from version 1", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(dir, 0o700)
		db, err := sql.Open("sqlite3", dsn(filepath.Join(dir, dbFile)))
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate(db, 1); err != nil {
			t.Fatal(err)
		}
		if v := userVersion(t, db); v != 1 {
			t.Fatalf("user_version %d", v)
		}
		// A row written by a version-1 store, with its blob.
		s1 := &Store{dir: dir, db: db}
		os.MkdirAll(filepath.Join(dir, blobDir, tmpDir), 0o700)
		old, err := s1.Attach(New{Session: "s", SessionName: "n", Filename: "old.txt", Commentable: true}, strings.NewReader("old"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s1.Comment("s", "old.txt", 0, "kept", "ann"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s := openStore(t, dir)
		if v := userVersion(t, s.db); v != len(migrations) {
			t.Errorf("user_version %d, want %d", v, len(migrations))
		}
		var indexes int
		s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'attachments_by_sha256'`).Scan(&indexes)
		if indexes != 1 {
			t.Error("migration 2's index is missing")
		}
		d, err := s.Get("s", "old.txt", 0)
		if err != nil || d.ID != old.ID || len(d.Comments) != 1 || readAll(t, s, d) != "old" {
			t.Errorf("the old row: %+v, %v", d, err)
		}
		attach(t, s, "s", "old.txt", "new", false)
		if d, _ := s.Get("s", "old.txt", 0); d.Version != 2 {
			t.Errorf("next version %d", d.Version)
		}
	})
	t.Run("newer", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		if _, err := s.db.Exec(`PRAGMA user_version = 99`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), "newer than this vis-agent knows") {
			t.Errorf("a newer schema: %v", err)
		}
	})
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Two Store values (as two processes have) attaching at once: every
// attach gets its own version, none is lost.
func TestConcurrentStores(t *testing.T) {
	dir := t.TempDir()
	const perStore = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(dir)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for j := 0; j < perStore; j++ {
				if _, err := s.Attach(New{Session: "s", Filename: "same.txt"}, strings.NewReader(fmt.Sprintf("%d-%d", i, j)), Limits{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := openStore(t, dir)
	checkVersions(t, s, "same.txt", 2*perStore)
	list, err := s.List("s")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range list {
		if d.Version != 2*perStore-i {
			t.Fatalf("newest first: row %d is version %d", i, d.Version)
		}
	}
}

// checkVersions checks that filename has versions 1..n.
func checkVersions(t *testing.T, s *Store, filename string, n int) {
	t.Helper()
	versions, err := s.versions("s", filename)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range versions {
		if v != i+1 {
			t.Fatalf("versions %v", versions)
		}
	}
	if len(versions) != n {
		t.Fatalf("%d versions, want %d", len(versions), n)
	}
}

func TestOddFolderName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a ?#%b")
	s := openStore(t, dir)
	attach(t, s, "s", "x.txt", "x", false)
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err != nil {
		t.Fatal(err)
	}
}

// TestStamp: no store, no stamp; every attach changes it, reading does not.
func TestStamp(t *testing.T) {
	dir := t.TempDir()
	if st := Stamp(dir); st != "" {
		t.Fatalf("stamp of an empty folder: %q", st)
	}
	s := openStore(t, dir)
	attach(t, s, "s1", "a.txt", "one", false)
	first := Stamp(dir)
	if first == "" {
		t.Fatal("no stamp after an attach")
	}
	if _, err := s.List("s1"); err != nil {
		t.Fatal(err)
	}
	if again := Stamp(dir); again != first {
		t.Errorf("a list changed the stamp: %q, then %q", first, again)
	}
	attach(t, s, "s1", "a.txt", "two", false)
	if next := Stamp(dir); next == first {
		t.Errorf("an attach left the stamp %q", next)
	}
}

// TestQuota: a session's versions together stay within SessionMaxBytes;
// the one past it is refused whole, saying why, and other sessions are
// not counted.
func TestQuota(t *testing.T) {
	s := openStore(t, t.TempDir())
	lim := Limits{SessionMaxBytes: 10}
	for _, data := range []string{"12345", "678"} {
		if _, err := s.Attach(New{Session: "q", Filename: "a.txt"}, strings.NewReader(data), lim); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Attach(New{Session: "q", Filename: "b.txt"}, strings.NewReader("abc"), lim)
	var qe *QuotaError
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "sandbox.max_attachments_mb") || qe.Used != 8 {
		t.Fatalf("past the quota: %v", err)
	}
	if list, _ := s.List("q"); len(list) != 2 {
		t.Errorf("the refused attachment was stored: %d versions", len(list))
	}
	if _, err := s.Attach(New{Session: "other", Filename: "b.txt"}, strings.NewReader("abc"), lim); err != nil {
		t.Errorf("another session: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	for _, ok := range []string{"PLAN.md", "data v2.csv", "résumé.txt", "a.b.c"} {
		if err := CheckWritable(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, why := range map[string]string{
		".envrc": "hidden", "..": "give a file's name", "a/b": "not a path",
		"x\u202etxt.exe": "U+202E", "x\u2066y": "U+2066", "x\u200ey": "U+200E", "c1\u009bz": "U+009B", "tab\tz": "control character",
	} {
		if err := CheckWritable(name); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", name, err, why)
		}
	}
}
