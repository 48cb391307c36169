package client

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// A stopped session's attachments, read and commented without a host;
// Remove deletes them with the session.
func TestAttachmentsWithoutHost(t *testing.T) {
	home := t.TempDir()
	l := paths.New(func(k string) string { return map[string]string{"VIS_HOME": home}[k] })
	m := session.Meta{Name: "s", Workspace: t.TempDir()}
	c, err := Open(l.Sessions(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(l.Sessions(), session.Meta{Name: "s", Workspace: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := attachments.Open(l.Attachments())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, n := range []attachments.New{
		{Session: session.Find(l.Sessions(), m).ID(), SessionName: "s", Filename: "spec.md", Commentable: true},
		{Session: other.Folder.ID(), SessionName: "s", Filename: "elsewhere.md"},
	} {
		if _, err := st.Attach(n, strings.NewReader("# spec\n"), attachments.Limits{}); err != nil {
			t.Fatal(err)
		}
	}

	list, err := c.Attachments()
	if err != nil || len(list) != 1 || list[0].Filename != "spec.md" {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := c.CommentAttachment("spec.md", 1, "ok"); err != nil {
		t.Fatal(err)
	}
	d, err := c.Attachment("spec.md", 0)
	if err != nil || len(d.Comments) != 1 || d.Comments[0].Author == "" {
		t.Fatalf("get %+v, %v", d, err)
	}
	if counted, err := c.AttachmentsCommented(1); err != nil || len(counted) != 1 || len(counted[0].Comments) != 1 {
		t.Fatalf("list with comments %+v, %v", counted, err)
	}
	if uncounted, err := c.AttachmentsCommented(0); err != nil || len(uncounted) != 1 || uncounted[0].Comments != nil {
		t.Fatalf("list counting none %+v, %v", uncounted, err)
	}
	r, err := c.ReadAttachment(d)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "# spec\n" {
		t.Errorf("read %q", b)
	}
	var nf *attachments.NotFoundError
	if _, err := c.Attachment("elsewhere.md", 0); !errors.As(err, &nf) {
		t.Errorf("another workspace's attachment: %v", err)
	}

	if err := c.Remove(false); err != nil {
		t.Fatal(err)
	}
	if list, err := st.List(session.Find(l.Sessions(), m).ID()); err != nil || len(list) != 0 {
		t.Errorf("after rm: %+v, %v", list, err)
	}
	kept, err := other.Attachments()
	if err != nil || len(kept) != 1 {
		t.Fatalf("the other session's attachments: %+v, %v", kept, err)
	}
	if _, err := other.ReadAttachment(kept[0]); err != nil {
		t.Errorf("the blob it shared with the removed session was deleted: %v", err)
	}
	if filepath.Dir(filepath.Dir(c.Folder.Dir)) != l.Sandbox() {
		t.Errorf("session folder %s", c.Folder.Dir)
	}
}
