package hostcalls

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// Store opens the attachments store on first use (a session that never
// attaches never opens it) and keeps it open for the host's life. It
// also counts the session's attachments from then on, for the status:
// only this host attaches to its session.
type Store struct {
	Dir string
	Key string // the session's key in the store

	mu    sync.Mutex
	s     *attachments.Store
	count int
}

func (st *Store) get() (*attachments.Store, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s != nil {
		return st.s, nil
	}
	if st.Dir == "" {
		return nil, Errorf("RuntimeError", "this sandbox host has no attachments store")
	}
	s, err := attachments.Open(st.Dir)
	if err != nil {
		return nil, err
	}
	list, err := s.List(st.Key)
	if err != nil {
		s.Close()
		return nil, err
	}
	st.s, st.count = s, len(list)
	return s, nil
}

// attached counts one more attachment.
func (st *Store) attached() {
	st.mu.Lock()
	st.count++
	st.mu.Unlock()
}

// Counted is the session's number of attachments, nil before the store
// was opened.
func (st *Store) Counted() *int {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s == nil {
		return nil
	}
	n := st.count
	return &n
}

// AttachmentOps adds the attachment calls to ops and streams, for the
// session of st only (name is its name), within limits; noted hears of
// each attachment made.
func AttachmentOps(st *Store, name string, limits attachments.Limits, noted func(attachments.Descriptor),
	ops map[protocol.Call]Op, streams map[protocol.Call]StreamOp) {
	key := st.Key
	type ref struct {
		Ref     string
		Version int
	}
	get := func(args json.RawMessage) (*attachments.Store, attachments.Descriptor, error) {
		var in ref
		if err := DecodeArgs(args, &in); err != nil {
			return nil, attachments.Descriptor{}, err
		}
		s, err := st.get()
		if err != nil {
			return nil, attachments.Descriptor{}, err
		}
		d, err := s.Get(key, in.Ref, in.Version)
		return s, d, attachError(err)
	}
	streams[protocol.CallAttach] = func(ctx context.Context, args json.RawMessage, payload io.Reader) (Reply, error) {
		var in struct {
			Filename    string `json:"filename"`
			Kind        string `json:"kind"`
			MediaType   string `json:"media_type"`
			Commentable bool   `json:"commentable"`
			Block       int    `json:"block"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if in.Filename != "" {
			if err := attachments.CheckFilename(in.Filename); err != nil {
				return Reply{}, &Error{Type: "ValueError", Message: err.Error()}
			}
		}
		if in.Block < 0 {
			return Reply{}, Errorf("ValueError", "attach: block %d is negative", in.Block)
		}
		s, err := st.get()
		if err != nil {
			return Reply{}, err
		}
		d, err := s.Attach(attachments.New{Session: key, SessionName: name, Block: in.Block, Filename: in.Filename,
			Kind: in.Kind, MediaType: in.MediaType, Commentable: in.Commentable}, payload, limits)
		if err != nil {
			return Reply{}, attachError(err)
		}
		st.attached()
		noted(d)
		return Reply{Result: d}, nil
	}
	ops[protocol.CallAttachments] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		if err := DecodeArgs(args, &struct{}{}); err != nil {
			return Reply{}, err
		}
		s, err := st.get()
		if err != nil {
			return Reply{}, err
		}
		list, err := s.List(key)
		if list == nil {
			list = []attachments.Descriptor{}
		}
		return Reply{Result: list}, attachError(err)
	}
	ops[protocol.CallAttachment] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		_, d, err := get(args)
		return Reply{Result: d}, err
	}
	ops[protocol.CallAttachmentRead] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		s, d, err := get(args)
		if err != nil {
			return Reply{}, err
		}
		// Streamed to the link: the host never holds it whole.
		r, err := s.Read(d)
		if err != nil {
			return Reply{}, attachError(err)
		}
		return Reply{Result: d, Body: r, Size: d.Size}, nil
	}
}

// attachError gives the store's failures their Python exceptions.
func attachError(err error) error {
	var nf *attachments.NotFoundError
	var tl *attachments.TooLargeError
	var qe *attachments.QuotaError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &Error{Type: "KeyError", Message: err.Error()}
	case errors.As(err, &tl), errors.As(err, &qe):
		return &Error{Type: "ValueError", Message: err.Error()}
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Type: "OSError", Message: err.Error()}
}
