package cli

import (
	"path/filepath"
	"strings"

	"github.com/vis-agent/vis-agent/sandbox/session"
)

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
