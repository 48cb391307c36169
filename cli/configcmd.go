package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/packages"
)

func newConfigCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Show the merged configuration and where each setting comes from",
		Long: `Show vis-agent's configuration: ~/.vis/config.toml merged with the
project's vis.toml (the project wins), each setting with the file and line it
comes from. Entries that are ignored are listed on stderr, and the status is
then 1.`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if s.Dir == "" {
				return fmt.Errorf("the working folder cannot be read (was it removed?)")
			}
			project, err := packages.FindProject(s.Dir)
			if err != nil {
				// Without the project, its vis.toml cannot be placed; say so
				// and show the user's settings.
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", oneLine(err))
			}
			settings := loadSettings(s, project)
			w := cmd.OutOrStdout()
			quoted := make([]string, len(settings.SourcePaths.Value))
			for i, p := range settings.SourcePaths.Value {
				quoted[i] = strconv.Quote(p)
			}
			fmt.Fprintf(w, "python.source_paths = [%s]  # %s\n", strings.Join(quoted, ", "), settings.SourcePaths.From)
			fmt.Fprintf(w, "python.index_url = %s  # %s\n", strconv.Quote(settings.IndexURL.Value), settings.IndexURL.From)
			fmt.Fprintf(w, "python.tls_strict = %t  # %s\n", settings.TLSStrict.Value, settings.TLSStrict.From)
			for _, f := range settings.Files {
				fmt.Fprintf(w, "# read %s\n", f)
			}
			for _, p := range settings.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", p)
			}
			if len(settings.Problems) > 0 || err != nil {
				return exitError{1}
			}
			return nil
		}),
	}
}
