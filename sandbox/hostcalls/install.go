package hostcalls

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/vis-agent/vis-agent/sandbox/install"
)

// Installer installs reqs, with pins, the versions of the block's base
// environment, as the host does (its uv, outside the jail, into the
// session's package folder): what it keeps (the installs one at a time,
// the standby, the proxy, the disk budget) stays with it.
type Installer func(ctx context.Context, reqs []install.Requirement, pins []string) (install.Result, error)

// InstallOp is install(*specs), run by run (nil: the session has no
// install()). The block gives requirements (checked by install's strict
// grammar) and its base environment's versions (checked pins); everything
// else (uv, the CPython, the index, builds) comes from the user's settings.
func InstallOp(run Installer) Op {
	return func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			Specs []string `json:"specs"`
			Base  []string `json:"base"`
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if run == nil {
			return Reply{}, Errorf("RuntimeError", "install() is not available in this session")
		}
		if len(in.Specs) > install.MaxSpecs {
			return Reply{}, Errorf("ValueError", "install: %d requirements; at most %d in one call", len(in.Specs), install.MaxSpecs)
		}
		var reqs []install.Requirement
		for _, s := range in.Specs {
			r, err := install.ParseRequirement(s)
			if err != nil {
				return Reply{}, Errorf("ValueError", "%v", err)
			}
			reqs = append(reqs, r)
		}
		pins, err := install.ParsePins(in.Base)
		if err != nil {
			return Reply{}, Errorf("ValueError", "%v", err)
		}
		res, err := run(ctx, reqs, pins)
		if err != nil && errors.Is(err, context.Canceled) {
			return Reply{}, Errorf("InterruptedError", "%v", err)
		}
		return Reply{Result: res}, err
	}
}
