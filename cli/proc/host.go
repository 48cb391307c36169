package proc

import (
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/host"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// NewCmdHost is `sandbox host`, a session's host (host.Serve), which its
// clients start.
func NewCmdHost(f *cmdutil.Factory) *cobra.Command {
	s := f.Streams
	var dir, policy string
	cmd := &cobra.Command{
		Use:    "host --dir FOLDER [--policy JSON]",
		Short:  "Serve a sandbox session (started by the clients)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			return host.Serve(host.Options{Dir: dir, Policy: policy, Streams: s,
				DefaultPolicy: func(m session.Meta, f session.Folder) (protocol.Policy, error) {
					return cmdutil.SessionPolicy(s, nil, m, f.Dir)
				}})
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the session folder")
	cmd.Flags().StringVar(&policy, "policy", "", "the jail of the first child, JSON (default: the settings')")
	return cmd
}
