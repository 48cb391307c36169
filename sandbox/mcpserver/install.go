package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vis-agent/vis-agent/sandbox/install"
)

// installTimeout bounds an install tool call's block.
const installTimeout = 15 * time.Minute

const installDescription = `Install packages into the session, as install(...) in a block: PEP 508 requirements (no paths, URLs or options) from the user's index; they stay across restarts.`

// InstallArgs are the install tool's arguments.
type InstallArgs struct {
	Packages []string `json:"packages" jsonschema:"PEP 508 requirements"`
}

// install runs install(*packages) as a block of the session, so that it
// goes the way a block's own call goes (the host, the session's policy,
// interrupts), after checking each requirement here: a refusal costs no
// block.
func (sv *server) install(ctx context.Context, req *mcp.CallToolRequest, in InstallArgs) (*mcp.CallToolResult, any, error) {
	if len(in.Packages) == 0 {
		return errorResult(errors.New(`the install tool needs "packages", such as ["pandas", "numpy>=2"]`)), nil, nil
	}
	if len(in.Packages) > install.MaxSpecs {
		return errorResult(errors.New("install: too many requirements in one call")), nil, nil
	}
	for _, p := range in.Packages {
		if _, err := install.ParseRequirement(p); err != nil {
			return errorResult(err), nil, nil
		}
	}
	// Checked requirements are printable ASCII: their JSON strings are
	// Python string literals of the same text.
	var list bytes.Buffer
	enc := json.NewEncoder(&list)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in.Packages); err != nil {
		return errorResult(err), nil, nil
	}
	code := "print(install(*" + string(bytes.TrimSpace(list.Bytes())) + "))\n"
	return sv.python(ctx, req, code, installTimeout.Seconds(), false), nil, nil
}
