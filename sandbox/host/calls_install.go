package host

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/vis-agent/vis-agent/sandbox/install"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// installOp is install(*specs): the pinned uv, run by the host outside the
// jail, installs the requirements into the session's package folder. The
// block gives requirements (checked by install's strict grammar) and its
// base environment's versions (checked pins); everything else (uv, the
// CPython, the index, builds) comes from the user's settings.
func (h *Host) installOp(policy protocol.Policy) op {
	return func(ctx context.Context, args json.RawMessage, _ []byte) (reply, error) {
		var in struct {
			Specs []string `json:"specs"`
			Base  []string `json:"base"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return reply{}, err
		}
		if h.cfg.Install == nil {
			return reply{}, errorf("RuntimeError", "install() is not available in this session")
		}
		if len(in.Specs) > install.MaxSpecs {
			return reply{}, errorf("ValueError", "install: %d requirements; at most %d in one call", len(in.Specs), install.MaxSpecs)
		}
		var reqs []install.Requirement
		for _, s := range in.Specs {
			r, err := install.ParseRequirement(s)
			if err != nil {
				return reply{}, errorf("ValueError", "%v", err)
			}
			reqs = append(reqs, r)
		}
		pins, err := install.ParsePins(in.Base)
		if err != nil {
			return reply{}, errorf("ValueError", "%v", err)
		}
		opts, err := h.cfg.Install()
		if err != nil {
			return reply{}, errorf("RuntimeError", "install: %v", err)
		}
		opts.Network = policy.Network
		if !opts.Network && !install.LocalIndex(opts.IndexURL) {
			_, err := install.Run(ctx, opts, reqs, pins) // refuses, with the way out
			return reply{}, errorf("PermissionError", "%v", err)
		}
		if policy.Jail {
			target := opts.Target
			if r, err := filepath.EvalSymlinks(target); err == nil {
				target = r
			}
			rw, _ := h.roots(policy)
			for _, root := range rw {
				if within(target, root) {
					return reply{}, errorf("PermissionError", "install: the session's package folder %s is inside %s, which the session may write; uv is not run on it", opts.Target, root)
				}
			}
		}
		h.installs.Lock()
		defer h.installs.Unlock()
		res, err := install.Run(ctx, opts, reqs, pins)
		if err != nil && errors.Is(err, context.Canceled) {
			return reply{}, errorf("InterruptedError", "%v", err)
		}
		return reply{result: res}, err
	}
}

// within reports whether path is root or inside it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && filepath.IsLocal(rel)
}
