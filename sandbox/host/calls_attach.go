package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// attachLimit is the largest payload a host call may carry: an
// attachment's limit.
func (h *Host) attachLimit() int64 {
	if h.cfg.AttachMaxBytes > 0 {
		return h.cfg.AttachMaxBytes
	}
	return attachments.DefaultMaxBytes
}

// store opens the attachments store on first use (a session that never
// attaches never opens it) and keeps it open for the host's life.
type store struct {
	dir string
	mu  sync.Mutex
	s   *attachments.Store
}

func (st *store) get() (*attachments.Store, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s != nil {
		return st.s, nil
	}
	if st.dir == "" {
		return nil, errorf("RuntimeError", "this sandbox host has no attachments store")
	}
	s, err := attachments.Open(st.dir)
	if err != nil {
		return nil, err
	}
	st.s = s
	return s, nil
}

// attachmentOps adds the attachment calls, for this host's session only.
func (h *Host) attachmentOps(ops map[string]op) {
	key := session.ID(h.cfg.Meta.Name, h.cfg.Meta.Workspace)
	type ref struct {
		Ref     string
		Version int
	}
	get := func(args json.RawMessage) (*attachments.Store, attachments.Descriptor, error) {
		var in ref
		if err := decodeArgs(args, &in); err != nil {
			return nil, attachments.Descriptor{}, err
		}
		s, err := h.store.get()
		if err != nil {
			return nil, attachments.Descriptor{}, err
		}
		d, err := s.Get(key, in.Ref, in.Version)
		return s, d, attachError(err)
	}
	ops["attach"] = func(ctx context.Context, args json.RawMessage, payload []byte) (reply, error) {
		var in struct {
			Filename    string `json:"filename"`
			Kind        string `json:"kind"`
			MediaType   string `json:"media_type"`
			Commentable bool   `json:"commentable"`
			Block       int    `json:"block"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return reply{}, err
		}
		if in.Filename != "" {
			if err := attachments.CheckFilename(in.Filename); err != nil {
				return reply{}, &callError{typ: "ValueError", msg: err.Error()}
			}
		}
		if in.Block < 0 {
			return reply{}, errorf("ValueError", "attach: block %d is negative", in.Block)
		}
		s, err := h.store.get()
		if err != nil {
			return reply{}, err
		}
		d, err := s.Attach(attachments.New{Session: key, SessionName: h.cfg.Meta.Name, Block: in.Block, Filename: in.Filename,
			Kind: in.Kind, MediaType: in.MediaType, Commentable: in.Commentable}, bytes.NewReader(payload), attachments.Limits{MaxBytes: h.attachLimit()})
		return reply{result: d}, attachError(err)
	}
	ops["attachments"] = func(ctx context.Context, args json.RawMessage, _ []byte) (reply, error) {
		if err := decodeArgs(args, &struct{}{}); err != nil {
			return reply{}, err
		}
		s, err := h.store.get()
		if err != nil {
			return reply{}, err
		}
		list, err := s.List(key)
		if list == nil {
			list = []attachments.Descriptor{}
		}
		return reply{result: list}, attachError(err)
	}
	ops["attachment"] = func(ctx context.Context, args json.RawMessage, _ []byte) (reply, error) {
		_, d, err := get(args)
		return reply{result: d}, err
	}
	ops["attachment_read"] = func(ctx context.Context, args json.RawMessage, _ []byte) (reply, error) {
		s, d, err := get(args)
		if err != nil {
			return reply{}, err
		}
		r, err := s.Read(d)
		if err != nil {
			return reply{}, attachError(err)
		}
		defer r.Close()
		data, err := io.ReadAll(io.LimitReader(r, d.Size+1))
		if err == nil && int64(len(data)) != d.Size {
			err = errorf("RuntimeError", "attachment %s: its stored bytes are %d long, not %d", d.Filename, len(data), d.Size)
		}
		return reply{result: d, payload: data}, attachError(err)
	}
}

// attachError gives the store's failures their Python exceptions.
func attachError(err error) error {
	var nf *attachments.NotFoundError
	var tl *attachments.TooLargeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &callError{typ: "KeyError", msg: err.Error()}
	case errors.As(err, &tl):
		return &callError{typ: "ValueError", msg: err.Error()}
	}
	var ce *callError
	if errors.As(err, &ce) {
		return err
	}
	return &callError{typ: "OSError", msg: err.Error()}
}
