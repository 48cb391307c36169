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

const installDescription = `Install Python packages into the persistent session, as install(...) does in a python block: e.g. packages ["pandas", "numpy>=2"].
Each entry is one requirement: a name with optional extras, version specifiers and markers (PEP 508); paths, URLs, VCS links and options (-e, -r, --index-url) are refused.
The packages come from the user's index, as wheels unless the user's config allows source builds, and go into the session's own package folder, after the environment's packages (which are never changed; their versions are kept). They import at once, in the next python call, and stay across restarts.
The result lists what was installed (names and versions) and how long it took. A ModuleNotFoundError in a block names the install() that brings the module.`

// InstallArgs are the install tool's arguments.
type InstallArgs struct {
	Packages []string `json:"packages" jsonschema:"requirements, such as [\"pandas\", \"numpy>=2\"]: names with optional extras, versions and markers"`
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
	return sv.python(ctx, req, code, installTimeout.Seconds()), nil, nil
}
