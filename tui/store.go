package tui

import (
	"io"

	"github.com/vis-agent/vis-agent/sandbox/client"
)

// Descriptor is one version of an attachment, as the store describes it.
type (
	Descriptor = client.Descriptor
	Comment    = client.Comment
)

// maxCounted is how many commentable versions, the newest, the list
// counts the comments of: the store's list leaves comments out, and each
// count is one more query.
const maxCounted = 30

// listAttachments is the session's attachments, newest first; the newest
// maxCounted commentable ones carry their comments (a non-nil slice), the
// others none (nil: not counted).
func listAttachments(s *client.Session) ([]Descriptor, error) {
	return s.AttachmentsCommented(maxCounted)
}

// readAttachment is version id with its comments, and its first
// maxViewBytes bytes.
func readAttachment(s *client.Session, id string) (Descriptor, []byte, error) {
	d, err := s.Attachment(id, 0)
	if err != nil {
		return d, nil, err
	}
	r, err := s.ReadAttachment(d)
	if err != nil {
		return d, nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxViewBytes))
	return d, data, err
}
