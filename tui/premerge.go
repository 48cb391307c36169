package tui

import (
	"errors"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// TEMPORARY until s2-store is merged: the descriptor of package
// sandbox/attachments as announced, and no store.

type Descriptor struct {
	ID          string
	Filename    string
	Version     int
	Kind        string
	MediaType   string
	Size        int64
	SHA256      string
	Commentable bool
	Created     time.Time
	Session     string
	Block       int
	Comments    []Comment
}

type Comment struct {
	ID      string
	Text    string
	Author  string
	Created time.Time
}

type attachmentStore interface {
	Attachments() ([]Descriptor, error)
	Attachment(idOrFilename string, version int) (Descriptor, error)
	ReadAttachment(d Descriptor) ([]byte, error)
	CommentAttachment(idOrFilename string, version int, text string) error
}

type noStore struct{}

func (noStore) Attachments() ([]Descriptor, error) { return nil, errors.New("no store yet") }
func (noStore) Attachment(string, int) (Descriptor, error) {
	return Descriptor{}, errors.New("no store yet")
}
func (noStore) ReadAttachment(Descriptor) ([]byte, error)   { return nil, errors.New("no store yet") }
func (noStore) CommentAttachment(string, int, string) error { return errors.New("no store yet") }

func storeOf(*client.Session) attachmentStore { return noStore{} }
