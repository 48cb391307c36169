package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// The session's attachments are read from the store directly (it is
// shared by processes, WAL): no host is needed, and a stopped session's
// attachments are there too.

// The store's types as the front ends name them: they reach the store
// only through a session (issue 35).
type (
	// Descriptor is one version of an attachment, as the store describes
	// it.
	Descriptor = attachments.Descriptor
	// Comment is a comment on a commentable version.
	Comment = attachments.Comment
	// NewAttachment is what Attach stores: its filename, kind, media type.
	NewAttachment = attachments.New
	// AttachLimits bounds what Attach stores.
	AttachLimits = attachments.Limits
	// AttachmentNotFoundError is Attachment's error for a name or id the
	// session has no attachment of.
	AttachmentNotFoundError = attachments.NotFoundError
)

// DefaultMaxAttachBytes bounds an attachment when the settings name no
// bound.
const DefaultMaxAttachBytes = attachments.DefaultMaxBytes

// CheckWritableFilename refuses a filename a block chose that a front end
// must not write in the user's folder by itself (attachments.CheckWritable).
func CheckWritableFilename(name string) error { return attachments.CheckWritable(name) }

// attachmentKey is the session's key in the store: its folder name.
func (s *Session) attachmentKey() string { return s.Folder.ID() }

// attachmentsDir is the store of the Vis home the session's folder is in.
func (s *Session) attachmentsDir() string { return paths.AttachmentsOf(s.Folder.Dir) }

// AttachmentsStamp changes whenever an attachment of any session is stored
// or commented on (attachments.Stamp): a front end that watches for new
// ones pays two stats a look, not a query. Another machine's store has no
// stamp here: "" (a watcher does not look), or with fresh, the time, so
// that the caller lists it anew.
func (s *Session) AttachmentsStamp(fresh bool) string {
	switch {
	case s.Remote == nil:
		return attachments.Stamp(s.attachmentsDir())
	case fresh:
		return time.Now().String()
	}
	return ""
}

// Attach stores data as a new attachment (or a new version of one) of the
// session, within limits: only a session of this machine.
func (s *Session) Attach(n attachments.New, data io.Reader, limits attachments.Limits) (attachments.Descriptor, error) {
	if s.Remote != nil {
		return attachments.Descriptor{}, errors.New("the session is on another machine: its output is not kept here")
	}
	n.Session, n.SessionName = s.attachmentKey(), s.Meta.Name
	var d attachments.Descriptor
	err := s.withStore(func(st *attachments.Store) (err error) {
		d, err = st.Attach(n, data, limits)
		return err
	})
	return d, err
}

// withStore runs fn on the open store.
func (s *Session) withStore(fn func(*attachments.Store) error) error {
	st, err := attachments.Open(s.attachmentsDir())
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// Attachments describes the session's attachments, every version, newest
// first.
func (s *Session) Attachments() ([]attachments.Descriptor, error) {
	return s.AttachmentsCommented(0)
}

// AttachmentsCommented is Attachments with the comments of the newest
// counted commentable versions filled in (a non-nil slice; the others
// nil), read through one open store.
func (s *Session) AttachmentsCommented(counted int) ([]attachments.Descriptor, error) {
	var out []attachments.Descriptor
	if s.Remote != nil {
		err := s.remoteJSON(protocol.Request{Op: protocol.OpAttachments, Limit: counted}, &out)
		return out, err
	}
	err := s.withStore(func(st *attachments.Store) (err error) {
		key := s.attachmentKey()
		if out, err = st.List(key); err != nil {
			return err
		}
		for i, d := range out {
			if !d.Commentable || counted == 0 {
				continue
			}
			counted--
			if full, err := st.Get(key, d.ID, 0); err == nil {
				if full.Comments == nil {
					full.Comments = []attachments.Comment{}
				}
				out[i] = full
			}
		}
		return nil
	})
	return out, err
}

// Attachment describes one version of an attachment, with its comments
// (version as attachments.Store.Get takes it: 0 the latest, negative
// counting back).
func (s *Session) Attachment(idOrFilename string, version int) (attachments.Descriptor, error) {
	var d attachments.Descriptor
	if s.Remote != nil {
		err := s.remoteJSON(protocol.Request{Op: protocol.OpAttachment, Name: idOrFilename, AttachmentVersion: version}, &d)
		return d, err
	}
	err := s.withStore(func(st *attachments.Store) (err error) {
		d, err = st.Get(s.attachmentKey(), idOrFilename, version)
		return err
	})
	return d, err
}

// ReadAttachment opens the bytes of d.
func (s *Session) ReadAttachment(d attachments.Descriptor) (io.ReadCloser, error) {
	var r io.ReadCloser
	if s.Remote != nil {
		return s.remoteAttachment(d), nil
	}
	err := s.withStore(func(st *attachments.Store) (err error) {
		r, err = st.Read(d)
		return err
	})
	return r, err
}

// CommentAttachment adds a comment, signed with the account's user name,
// to a commentable version.
func (s *Session) CommentAttachment(idOrFilename string, version int, text string) (attachments.Comment, error) {
	var c attachments.Comment
	if s.Remote != nil {
		// Signed there by the account connect runs as.
		err := s.remoteJSON(protocol.Request{Op: protocol.OpComment, Name: idOrFilename, AttachmentVersion: version, Code: text}, &c)
		return c, err
	}
	err := s.withStore(func(st *attachments.Store) (err error) {
		c, err = st.Comment(s.attachmentKey(), idOrFilename, version, text, author())
		return err
	})
	return c, err
}

// author names the person commenting: the account's user name.
func author() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "user"
}

// removeAttachments deletes the session's attachments, when there is a
// store at all.
func (s *Session) removeAttachments() error {
	if _, err := os.Stat(s.attachmentsDir()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := s.withStore(func(st *attachments.Store) error { return st.RemoveSession(s.attachmentKey()) }); err != nil {
		return fmt.Errorf("delete the session: %w", err)
	}
	return nil
}
