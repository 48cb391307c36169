package tui

import (
	"io"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/client"
)

// Descriptor is one version of an attachment, as the store describes it.
type (
	Descriptor = attachments.Descriptor
	Comment    = attachments.Comment
)

// maxCounted is how many commentable versions, the newest, the list
// counts the comments of: the store's list leaves comments out, and each
// count is a Get that opens the store (about 1-2 ms).
const maxCounted = 30

// listAttachments is the session's attachments, newest first; the newest
// maxCounted commentable ones carry their comments (a non-nil slice), the
// others none (nil: not counted).
func listAttachments(s *client.Session) ([]Descriptor, error) {
	list, err := s.Attachments()
	if err != nil {
		return nil, err
	}
	counted := 0
	for i, d := range list {
		if !d.Commentable || counted == maxCounted {
			continue
		}
		counted++
		if full, err := s.Attachment(d.ID, 0); err == nil {
			if full.Comments == nil {
				full.Comments = []Comment{}
			}
			list[i] = full
		}
	}
	return list, nil
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
