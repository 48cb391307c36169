package attachments

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func imported(filename string, version int, data string, comments ...Comment) Imported {
	sum := sha256.Sum256([]byte(data))
	return Imported{Descriptor: Descriptor{ID: "att_old", Filename: filename, Version: version, Kind: "text", MediaType: "text/plain",
		Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Commentable: len(comments) > 0,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Block: 7, Comments: comments}, Data: strings.NewReader(data)}
}

// Import keeps versions, times, blocks and comments, all or nothing.
func TestImport(t *testing.T) {
	s := openStore(t, t.TempDir())
	when := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	items := []Imported{imported("a.txt", 1, "one"), imported("a.txt", 2, "two", Comment{Text: "ok", Author: "ann", Created: when})}
	got, err := s.Import("k", "moved", items, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID == "att_old" || got[0].ID == got[1].ID {
		t.Errorf("ids: %s %s", got[0].ID, got[1].ID)
	}
	d, err := s.Get("k", "a.txt", 0)
	if err != nil || d.Version != 2 || d.Block != 7 || !d.Created.Equal(items[1].Created) || d.Session != "moved" ||
		len(d.Comments) != 1 || d.Comments[0].Author != "ann" || !d.Comments[0].Created.Equal(when) {
		t.Errorf("the imported latest version: %+v %v", d, err)
	}
	r, _ := s.Read(d)
	var b bytes.Buffer
	b.ReadFrom(r)
	r.Close()
	if b.String() != "two" {
		t.Errorf("its bytes: %q", b.String())
	}
	if _, err := s.Import("k", "moved", []Imported{imported("b.txt", 1, "x")}, Limits{}); err == nil || !strings.Contains(err.Error(), "already has attachments") {
		t.Errorf("a second import into the session: %v", err)
	}

	// Bytes that do not match, a bad name, a quota: nothing is stored.
	bad := imported("c.txt", 1, "three")
	bad.Data = strings.NewReader("thrEe")
	for _, c := range []struct {
		items []Imported
		lim   Limits
		want  string
	}{
		{[]Imported{imported("c.txt", 1, "ok"), bad}, Limits{}, "do not match"},
		{[]Imported{imported("../c.txt", 1, "x")}, Limits{}, "c.txt"},
		{[]Imported{imported("c.txt", 0, "x")}, Limits{}, "version 0"},
		{[]Imported{imported("c.txt", 1, "12345"), imported("c.txt", 2, "12345")}, Limits{SessionMaxBytes: 8}, "over its limit"},
	} {
		if _, err := s.Import("k2", "other", c.items, c.lim); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Import = %v, want %q", err, c.want)
		}
		if l, _ := s.List("k2"); len(l) != 0 {
			t.Errorf("a refused import stored %v", l)
		}
	}
}
