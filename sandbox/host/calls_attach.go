package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/vis-agent/vis-agent/sandbox/attachments"
	"github.com/vis-agent/vis-agent/sandbox/hostcalls"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
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
// attaches never opens it) and keeps it open for the host's life. It
// also counts the session's attachments from then on, for the status:
// only this host attaches to its session.
type store struct {
	dir string
	key string // the session's key in the store

	mu    sync.Mutex
	s     *attachments.Store
	count int
}

func (st *store) get() (*attachments.Store, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s != nil {
		return st.s, nil
	}
	if st.dir == "" {
		return nil, hostcalls.Errorf("RuntimeError", "this sandbox host has no attachments store")
	}
	s, err := attachments.Open(st.dir)
	if err != nil {
		return nil, err
	}
	list, err := s.List(st.key)
	if err != nil {
		s.Close()
		return nil, err
	}
	st.s, st.count = s, len(list)
	return s, nil
}

// attached counts one more attachment.
func (st *store) attached() {
	st.mu.Lock()
	st.count++
	st.mu.Unlock()
}

// counted is the session's number of attachments, nil before the store
// was opened.
func (st *store) counted() *int {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.s == nil {
		return nil
	}
	n := st.count
	return &n
}

// attachmentOps adds the attachment calls, for this host's session only.
func (h *Host) attachmentOps(ops map[protocol.Call]hostcalls.Op, streams map[protocol.Call]hostcalls.StreamOp) {
	key := h.store.key
	type ref struct {
		Ref     string
		Version int
	}
	get := func(args json.RawMessage) (*attachments.Store, attachments.Descriptor, error) {
		var in ref
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return nil, attachments.Descriptor{}, err
		}
		s, err := h.store.get()
		if err != nil {
			return nil, attachments.Descriptor{}, err
		}
		d, err := s.Get(key, in.Ref, in.Version)
		return s, d, attachError(err)
	}
	streams[protocol.CallAttach] = func(ctx context.Context, args json.RawMessage, payload io.Reader) (hostcalls.Reply, error) {
		var in struct {
			Filename    string `json:"filename"`
			Kind        string `json:"kind"`
			MediaType   string `json:"media_type"`
			Commentable bool   `json:"commentable"`
			Block       int    `json:"block"`
		}
		if err := hostcalls.DecodeArgs(args, &in); err != nil {
			return hostcalls.Reply{}, err
		}
		if in.Filename != "" {
			if err := attachments.CheckFilename(in.Filename); err != nil {
				return hostcalls.Reply{}, &hostcalls.Error{Type: "ValueError", Message: err.Error()}
			}
		}
		if in.Block < 0 {
			return hostcalls.Reply{}, hostcalls.Errorf("ValueError", "attach: block %d is negative", in.Block)
		}
		s, err := h.store.get()
		if err != nil {
			return hostcalls.Reply{}, err
		}
		d, err := s.Attach(attachments.New{Session: key, SessionName: h.cfg.Meta.Name, Block: in.Block, Filename: in.Filename,
			Kind: in.Kind, MediaType: in.MediaType, Commentable: in.Commentable}, payload,
			attachments.Limits{MaxBytes: h.attachLimit(), SessionMaxBytes: h.cfg.AttachQuotaBytes})
		if err != nil {
			return hostcalls.Reply{}, attachError(err)
		}
		h.store.attached()
		h.noteAttached(d)
		return hostcalls.Reply{Result: d}, nil
	}
	ops[protocol.CallAttachments] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		if err := hostcalls.DecodeArgs(args, &struct{}{}); err != nil {
			return hostcalls.Reply{}, err
		}
		s, err := h.store.get()
		if err != nil {
			return hostcalls.Reply{}, err
		}
		list, err := s.List(key)
		if list == nil {
			list = []attachments.Descriptor{}
		}
		return hostcalls.Reply{Result: list}, attachError(err)
	}
	ops[protocol.CallAttachment] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		_, d, err := get(args)
		return hostcalls.Reply{Result: d}, err
	}
	ops[protocol.CallAttachmentRead] = func(ctx context.Context, args json.RawMessage) (hostcalls.Reply, error) {
		s, d, err := get(args)
		if err != nil {
			return hostcalls.Reply{}, err
		}
		// Streamed to the link: the host never holds it whole.
		r, err := s.Read(d)
		if err != nil {
			return hostcalls.Reply{}, attachError(err)
		}
		return hostcalls.Reply{Result: d, Body: r, Size: d.Size}, nil
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
		return &hostcalls.Error{Type: "KeyError", Message: err.Error()}
	case errors.As(err, &tl), errors.As(err, &qe):
		return &hostcalls.Error{Type: "ValueError", Message: err.Error()}
	}
	var ce *hostcalls.Error
	if errors.As(err, &ce) {
		return err
	}
	return &hostcalls.Error{Type: "OSError", Message: err.Error()}
}

// noteAttached adds d to the running block's result (a thread that
// attaches between blocks adds to none).
func (h *Host) noteAttached(d attachments.Descriptor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.attached != nil && len(h.attached) < maxListed {
		h.attached = append(h.attached, protocol.Attached{ID: d.ID, Filename: d.Filename, Version: d.Version, Kind: d.Kind,
			MediaType: d.MediaType, Size: d.Size})
	}
}

// maxListed bounds the attachments one block's result lists.
const maxListed = 1000
