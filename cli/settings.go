package cli

import (
	"fmt"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/paths"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/uvwrap"
)

// loadSettings reads the user's and the project's configuration.
func loadSettings(s Streams, p *packages.Project) config.Settings {
	projectDir := ""
	if p != nil {
		projectDir = p.Dir
	}
	return config.Load(config.Files(s.Layout(), projectDir, s.Dir)...)
}

// runSettings is loadSettings for a run: the problems, which never stop
// it, are warned about on stderr.
func runSettings(s Streams, p *packages.Project) config.Settings {
	settings := loadSettings(s, p)
	for _, problem := range settings.Problems {
		fmt.Fprintf(s.Err, "vis-agent: warning: %s\n", problem)
	}
	return settings
}

// locateUV finds the pinned uv beside the binary or in vis-agent's folder.
func locateUV(s Streams) (string, error) {
	return uvwrap.Locate(paths.ExeDir(), s.Layout().Home())
}

// pinnedUV says which uv is pinned and where it was found, for --version.
func pinnedUV(s Streams) string {
	v := uvwrap.Pinned().Version
	uv, err := locateUV(s)
	if err != nil {
		return v + " (pinned; not found: " + err.Error() + ")"
	}
	return v + " (" + uv + ")"
}
