package hostcalls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/check"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/repair"
	"github.com/vis-agent/vis-agent/sandbox/tools"
)

// PatchFiles is what the patch call shares with the host, which keeps it
// for the checks after each block too: what it knows of the session's
// checked files, and the checker of the session's Python.
type PatchFiles struct {
	// Checker is a Checker of the session's Python (the running child's
	// version) compiling with compile.
	Checker func(compile check.Compile) check.Checker
	// Compiled reports whether text is what the file real held when it
	// was last found compiling, and its Starts if they are known.
	Compiled func(real, text string) (bool, []repair.LineStart)
	// Compiles remembers that text, the content of the file real,
	// compiles, and its Starts (nil when not known).
	Compiles func(real, text string, starts []repair.LineStart)
	// Bump counts a write to the file real and returns its version.
	Bump func(real string) int
}

// maxPatchCompiles bounds the sources one patch() has the session's
// Python compile (vis_sandbox.tools.MAX_PATCH_COMPILES): past it the edit
// is refused, and check=False writes it unchecked.
const maxPatchCompiles = 64

// PatchOp is patch(path, old, new, check=True), under a, the child's
// access, with what the host knows of the session's files (files). A
// checked file's edit is checked before it is written (sandbox/check).
// Python is compiled by the
// session's own Python, which is running the block that called patch, so
// the host cannot ask it on the protocol link: it answers the call with
// {"compile": {"key", "name"}} and the source as the payload, and the
// block's Python calls again with every verdict so far in "compiled"
// (key: null when it compiles, else Python's error). The host keeps
// nothing between those calls: each one checks the edit again from the
// start, with the verdicts given, until it needs no more. An edit the
// check refuses answers {"refused": message}, which the Python side
// raises as ValueError (the message has several lines, which a call's
// error does not). "known" is the hash (sourceKey) of the text the
// session's Python compiled ahead for that path (vis_sandbox.ahead): when
// it is the file's text before the edit, the edit is checked as one of a
// file known to compile. It is that process's word, as each verdict is.
func PatchOp(a tools.Access, files PatchFiles) Op {
	return func(ctx context.Context, args json.RawMessage) (Reply, error) {
		var in struct {
			Path, Old, New string
			Check          *bool
			Compiled       map[string]*protocol.SyntaxError
			Known          string
		}
		if err := DecodeArgs(args, &in); err != nil {
			return Reply{}, err
		}
		var decide tools.PatchCheck
		var decided check.Decision
		if in.Check == nil || *in.Check {
			decide = files.patchCheck(in.Compiled, in.Known, &decided)
		}
		res, err := tools.PatchChecked(a, in.Path, in.Old, in.New, decide)
		var need *needCompile
		var refused *tools.Refused
		switch {
		case errors.As(err, &need):
			return Reply{Result: map[string]any{"compile": map[string]string{"key": need.key, "name": need.name}},
				Body: io.NopCloser(strings.NewReader(need.src)), Size: int64(len(need.src))}, nil
		case errors.As(err, &refused):
			return Reply{Result: map[string]string{"refused": refused.Msg}}, nil
		case err != nil:
			return Reply{}, ToolError(err)
		}
		if strings.HasPrefix(res.Checked, string(check.Python)) && res.Invalid == "" {
			files.Compiles(res.Real, res.Written, decided.Starts)
		}
		res.Version = files.Bump(res.Real)
		res.Note = patchNote(res)
		return Reply{Result: res}, nil
	}
}

// needCompile stops a patch until the session's Python compiled src.
type needCompile struct{ key, name, src string }

func (n *needCompile) Error() string { return "compile " + n.name + " first" }

// sourceKey names a source in a patch's verdicts.
func sourceKey(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:16])
}

// patchCheck is the check of one patch call, with the verdicts its
// Python gave so far and the hash of the text it compiled ahead (""
// for none); the decision it made goes to decided.
func (files PatchFiles) patchCheck(compiled map[string]*protocol.SyntaxError, known string, decided *check.Decision) tools.PatchCheck {
	return func(real string, e check.Edit) (check.Decision, error) {
		c := files.Checker(func(name, src string) (*protocol.SyntaxError, bool) {
			v, ok := compiled[sourceKey(src)]
			return v, ok
		})
		e.BeforeValid, e.Starts = files.Compiled(real, e.Before)
		if !e.BeforeValid && known != "" && check.KindOf(e.Name) == check.Python && known == sourceKey(e.Before) {
			e.BeforeValid = true
		}
		if e.BeforeValid && e.Starts == nil && check.KindOf(e.Name) == check.Python {
			// Kept for the calls of this patch that follow.
			e.Starts = check.Starts(e.Before, c.Minor)
			files.Compiles(real, e.Before, e.Starts)
		}
		d, need := c.Decide(e)
		*decided = d
		if need == "" {
			return d, nil
		}
		if len(compiled) >= maxPatchCompiles {
			return d, &tools.Refused{Msg: fmt.Sprintf("patch %s: checking the edit took more than %d compiles; nothing was written (check=False writes it unchecked)", e.Name, maxPatchCompiles)}
		}
		return d, &needCompile{key: sourceKey(need), name: e.Name, src: need}
	}
}

// patchNote sums up a patch's check for people.
func patchNote(r tools.PatchResult) string {
	var note string
	switch {
	case r.Checked == "":
	case len(r.Corrections) > 0:
		note = fmt.Sprintf("checked as %s and repaired before it was written: %s", r.Checked, strings.Join(r.Corrections, "; "))
	case r.Invalid != "":
		first, _, _ := strings.Cut(r.Invalid, "\n")
		note = fmt.Sprintf("checked as %s: written, but it still does not parse, as before the edit: %s", r.Checked, first)
	default:
		note = "checked as " + r.Checked
	}
	if note != "" {
		note += "; "
	}
	return note + fmt.Sprintf("version %d", r.Version)
}
