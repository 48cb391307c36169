package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/termtext"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyrun"
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
				// and show the settings of the files found without it.
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", termtext.Line(oneLine(err)))
			}
			settings := pyrun.LoadSettings(s, project)
			// A project's vis.toml (its path, what it says) may be a
			// session's writing: printed as text.
			var w strings.Builder
			fmt.Fprintf(&w, "python.source_paths = %s  # %s\n", quotedList(settings.SourcePaths.Value), settings.SourcePaths.From)
			fmt.Fprintf(&w, "python.index_url = %s  # %s\n", strconv.Quote(settings.IndexURL.Value), settings.IndexURL.From)
			fmt.Fprintf(&w, "python.tls_strict = %t  # %s\n", settings.TLSStrict.Value, settings.TLSStrict.From)
			fmt.Fprintf(&w, "sandbox.jail = %t  # %s\n", settings.SandboxJail.Value, settings.SandboxJail.From)
			if settings.SandboxNetworkAllow.Value {
				fmt.Fprintf(&w, "sandbox.network = \"allow\"  # %s\n", settings.SandboxNetwork.From)
				fmt.Fprintf(&w, "sandbox.allow_hosts = %s  # %s\n", quotedList(settings.SandboxAllowHosts.Value), settings.SandboxAllowHosts.From)
				fmt.Fprintf(&w, "sandbox.deny_hosts = %s  # %s\n", quotedList(settings.SandboxDenyHosts.Value), settings.SandboxDenyHosts.From)
			} else {
				fmt.Fprintf(&w, "sandbox.network = %t  # %s\n", settings.SandboxNetwork.Value, settings.SandboxNetwork.From)
			}
			fmt.Fprintf(&w, "sandbox.max_threads = %d  # %s\n", settings.SandboxMaxThreads.Value, settings.SandboxMaxThreads.From)
			fmt.Fprintf(&w, "sandbox.memory_mb = %d  # %s\n", settings.SandboxMemoryMB.Value, settings.SandboxMemoryMB.From)
			fmt.Fprintf(&w, "sandbox.max_attachment_mb = %d  # %s\n", settings.SandboxMaxAttachmentMB.Value, settings.SandboxMaxAttachmentMB.From)
			fmt.Fprintf(&w, "sandbox.max_value_mb = %d  # %s\n", settings.SandboxMaxValueMB.Value, settings.SandboxMaxValueMB.From)
			fmt.Fprintf(&w, "sandbox.max_snapshot_mb = %d  # %s\n", settings.SandboxMaxSnapshotMB.Value, settings.SandboxMaxSnapshotMB.From)
			fmt.Fprintf(&w, "sandbox.max_disk_mb = %d  # %s\n", settings.SandboxMaxDiskMB.Value, settings.SandboxMaxDiskMB.From)
			fmt.Fprintf(&w, "sandbox.attach_figures = %t  # %s\n", settings.SandboxAttachFigures.Value, settings.SandboxAttachFigures.From)
			fmt.Fprintf(&w, "sandbox.allow_builds = %t  # %s\n", settings.SandboxAllowBuilds.Value, settings.SandboxAllowBuilds.From)
			fmt.Fprintf(&w, "sandbox.fix_files = %t  # %s\n", settings.SandboxFixFiles.Value, settings.SandboxFixFiles.From)
			fmt.Fprintf(&w, "sandbox.warm_restart = %t  # %s\n", settings.SandboxWarmRestart.Value, settings.SandboxWarmRestart.From)
			fmt.Fprintf(&w, "sandbox.echo = %t  # %s\n", settings.SandboxEcho.Value, settings.SandboxEcho.From)
			fmt.Fprintf(&w, "sandbox.roots = %s  # %s\n", quotedList(settings.SandboxRoots.Value), settings.SandboxRoots.From)
			fmt.Fprintf(&w, "sandbox.read_only_roots = %s  # %s\n", quotedList(settings.SandboxReadOnlyRoots.Value), settings.SandboxReadOnlyRoots.From)
			for _, f := range settings.Files {
				fmt.Fprintf(&w, "# read %s\n", f)
			}
			fmt.Fprintf(&w, "# shared packages: %s (one environment per CPython version)\n", s.Layout().SharedEnvironment("X.Y"))
			io.WriteString(cmd.OutOrStdout(), termtext.Text(w.String()))
			for _, p := range settings.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "vis-agent config: %s\n", termtext.Text(p))
			}
			if len(settings.Problems) > 0 || err != nil {
				return exitError{1}
			}
			return nil
		}),
	}
}

// quotedList is a TOML list of strings.
func quotedList(items []string) string {
	quoted := make([]string, len(items))
	for i, p := range items {
		quoted[i] = strconv.Quote(p)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
