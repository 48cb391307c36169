package cli

import (
	"errors"
	"path/filepath"
	"strings"

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

// trustRoots are the files and folders the session's trust variables name
// (a CA bundle, folders of certificates: SSL_CERT_DIR may list several,
// separated by ':'), which the jail lets the session read: the variables
// reach the session (session.Environ), and a bundle it may not open is no
// use. They come from the user's environment, never from the session.
func trustRoots(getenv func(string) string) []string {
	var roots []string
	for _, name := range session.TrustFiles {
		for _, p := range strings.Split(getenv(name), ":") {
			if filepath.IsAbs(p) {
				roots = append(roots, filepath.Clean(p))
			}
		}
	}
	return roots
}
