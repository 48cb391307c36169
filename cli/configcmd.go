package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/packages"
)

func newConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Show the merged configuration and where each setting comes from",
		Long: `Show vis-agent's configuration: ~/.vis/config.toml merged with the
project's vis.toml (the project wins), each setting with the file and line it
comes from. Entries that are ignored are listed on stderr, and the status is
then 1.`,
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			cwd, err := os.Getwd()
			if err != nil {
				return err
			}
			project, err := packages.FindProject(cwd)
			if err != nil {
				// Without the project, its vis.toml cannot be placed; say so
				// and show the user's settings.
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", oneLine(err))
			}
			s := loadSettings(project, cwd)
			w := cmd.OutOrStdout()
			quoted := make([]string, len(s.SourcePaths.Value))
			for i, p := range s.SourcePaths.Value {
				quoted[i] = strconv.Quote(p)
			}
			fmt.Fprintf(w, "python.source_paths = [%s]  # %s\n", strings.Join(quoted, ", "), s.SourcePaths.From)
			fmt.Fprintf(w, "python.index_url = %s  # %s\n", strconv.Quote(s.IndexURL.Value), s.IndexURL.From)
			fmt.Fprintf(w, "python.tls_strict = %t  # %s\n", s.TLSStrict.Value, s.TLSStrict.From)
			for _, f := range s.Files {
				fmt.Fprintf(w, "# read %s\n", f)
			}
			for _, p := range s.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", p)
			}
			if len(s.Problems) > 0 || err != nil {
				return exitError{1}
			}
			return nil
		}),
	}
}
