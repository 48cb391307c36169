package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyrun"
)

// ConfigOptions are what `vis-agent config` reads: its streams (it has
// no flags).
type ConfigOptions struct {
	Streams Streams
}

// NewCmdConfig is `vis-agent config`; runF (nil: runConfig) runs it.
func NewCmdConfig(f *cmdutil.Factory, runF func(*ConfigOptions) error) *cobra.Command {
	opts := &ConfigOptions{Streams: f.Streams}
	return &cobra.Command{
		Use:   "config",
		Short: "Show the merged configuration and where each setting comes from",
		Long: `Show vis-agent's configuration: ~/.vis/config.toml merged with the
project's vis.toml (the project wins), each setting with the file and line it
comes from. Entries that are ignored are listed on stderr, and the status is
then 1.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runConfig(opts)
		}),
	}
}

func runConfig(opts *ConfigOptions) error {
	s := opts.Streams
	if s.Dir == "" {
		return fmt.Errorf("the working folder cannot be read (was it removed?)")
	}
	project, err := packages.FindProject(s.Dir)
	if err != nil {
		// Without the project, its vis.toml cannot be placed; say so
		// and show the settings of the files found without it.
		fmt.Fprintf(s.Err, "vis-agent config: %s\n", termtext.Line(oneLine(err)))
	}
	settings := pyrun.LoadSettings(s, project)
	// A project's vis.toml (its path, what it says) may be a
	// session's writing: printed as text.
	var w strings.Builder
	for _, e := range settings.Entries() {
		fmt.Fprintf(&w, "%s = %s  # %s\n", e.Key, e.Value, e.From)
	}
	for _, f := range settings.Files {
		fmt.Fprintf(&w, "# read %s\n", f)
	}
	fmt.Fprintf(&w, "# shared packages: %s (one environment per CPython version)\n", s.Layout().SharedEnvironment("X.Y"))
	io.WriteString(s.Out, termtext.Text(w.String()))
	for _, p := range settings.Problems {
		fmt.Fprintf(s.Err, "vis-agent config: %s\n", termtext.Text(p))
	}
	if len(settings.Problems) > 0 || err != nil {
		return cmdutil.ExitError{Code: 1}
	}
	return nil
}
