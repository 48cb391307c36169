package hostcalls

import (
	"context"
	"encoding/json"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// ToolOps adds cat and grep to ops, run under a, the child's access (the
// host works it out: its roots, its proxy, its shield).
func ToolOps(a tools.Access, ops map[protocol.Call]Op) {
	ops[protocol.CallCat] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			Path          string
			Offset, Limit int
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if in.Offset < 0 || in.Limit < 0 {
			return Reply{}, Errorf("ValueError", "cat: offset and limit are 0 or more")
		}
		res, err := tools.Cat(ctx, a, in.Path, in.Offset, in.Limit)
		return Reply{Result: res}, ToolError(err)
	}
	ops[protocol.CallGrep] = func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			Pattern, Path, Glob string
			Limit               int
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		if in.Limit < 0 {
			return Reply{}, Errorf("ValueError", "grep: limit is 0 or more")
		}
		res, err := tools.Grep(ctx, a, in.Pattern, in.Path, in.Glob, in.Limit)
		return Reply{Result: res}, ToolError(err)
	}
}

// ToolError is a tool's failure as the child raises it: of its kind when
// sandbox/tools marked one (a missing file, a refused path or command, a
// folder; see ErrorType), else a ValueError (a bad regex, a patch whose
// old text is missing or not unique).
func ToolError(err error) error {
	if err == nil || ErrorType(err) != "" {
		return err
	}
	return &Error{Type: "ValueError", Message: err.Error()}
}
