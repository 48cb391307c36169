package mcpserver

import (
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

func TestAttachmentURIs(t *testing.T) {
	m := &client.Session{Meta: session.Meta{Name: "m.1"}}
	sv := &server{home: m, sessions: sessions{cur: m, own: map[string]*client.Session{"m.1": m}}}
	for _, c := range []struct {
		name    string
		version int
		uri     string
	}{
		{"notes.txt", 0, "vis-attachment://m.1/notes.txt"},
		{"a b#?.txt", 2, "vis-attachment://m.1/a%20b%23%3F.txt?version=2"},
		{"att_0123", -1, "vis-attachment://m.1/att_0123?version=-1"},
	} {
		u := attachmentURI("m.1", c.name, c.version)
		if u != c.uri {
			t.Errorf("uri(%q, %d) = %s, want %s", c.name, c.version, u, c.uri)
		}
		if s, name, version, err := sv.parseURI(u); err != nil || s != m || name != c.name || version != c.version {
			t.Errorf("parseURI(%s) = %q %d %v", u, name, version, err)
		}
	}
	for _, bad := range []string{"vis-attachment://other/notes.txt", "file:///m.1/notes.txt", "vis-attachment://m.1/", "vis-attachment://m.1/a/b",
		"vis-attachment://m.1/a?version=two", "%zz"} {
		if _, name, _, err := sv.parseURI(bad); err == nil {
			t.Errorf("parseURI(%s) = %q, want an error", bad, name)
		}
	}
}

func TestCharSlice(t *testing.T) {
	for _, c := range []struct {
		s             string
		offset, limit int
		want          string
	}{
		{"héllo", 0, 2, "hé"}, {"héllo", 1, 3, "éll"}, {"héllo", 3, 10, "lo"}, {"héllo", 9, 2, ""}, {"", 0, 5, ""},
	} {
		got, total := charSlice(c.s, c.offset, c.limit)
		if got != c.want || total != len([]rune(c.s)) {
			t.Errorf("charSlice(%q, %d, %d) = %q %d", c.s, c.offset, c.limit, got, total)
		}
	}
}

func TestIsText(t *testing.T) {
	for _, c := range []struct {
		mediaType string
		data      string
		want      bool
	}{
		{"text/plain; charset=utf-8", "hi", true}, {"application/json", "{}", true}, {"application/octet-stream", "plain words", true},
		{"application/octet-stream", "a\x00b", false}, {"text/plain", "\xff\xfe", false}, {"image/png", "\x89PNG\r\n", false},
	} {
		if got := isText(c.mediaType, []byte(c.data)); got != c.want {
			t.Errorf("isText(%q, %q) = %v", c.mediaType, c.data, got)
		}
	}
}
