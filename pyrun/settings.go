package pyrun

import (
	"fmt"
	"github.com/vis-agent/vis-agent/internal/iostreams"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/packages"
)

// LoadSettings reads the user's and the project's configuration.
func LoadSettings(s iostreams.Streams, p *packages.Project) config.Settings {
	projectDir := ""
	if p != nil {
		projectDir = p.Dir
	}
	return config.Load(config.Files(s.Layout(), projectDir, s.Dir)...)
}

// RunSettings is LoadSettings for a run: the problems, which never stop
// it, are warned about on stderr.
func RunSettings(s iostreams.Streams, p *packages.Project) config.Settings {
	settings := LoadSettings(s, p)
	for _, problem := range settings.Problems {
		fmt.Fprintf(s.Err, "vis-agent: warning: %s\n", problem)
	}
	return settings
}
