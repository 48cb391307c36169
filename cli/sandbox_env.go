package cli

import (
	"errors"

	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// sandboxWayOut is the way out of a workspace whose pyproject.toml cannot
// be read, for the sandbox commands (which have no --shared).
const sandboxWayOut = "fix it, give the session another folder with --workspace, or run Python without a session: vis-agent python --shared"

// checkProject refuses, before a host is started for it, a session whose
// workspace has a pyproject.toml that cannot be read: its Python process
// could not choose the environment, and the host would wait with none.
// A running session is left to run.
func checkProject(f session.Folder, workspace string) error {
	if f.Running() {
		return nil
	}
	_, err := packages.FindProject(workspace)
	var pe *packages.PyprojectError
	if errors.As(err, &pe) {
		return packages.WayOut(err, sandboxWayOut)
	}
	return nil
}
