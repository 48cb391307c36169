package proc

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/child"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// NewCmdChild is `sandbox child`, a session's Python process
// (child.Serve), which its host starts.
func NewCmdChild(f *cmdutil.Factory) *cobra.Command {
	s := f.Streams
	var dir string
	var dropPrivileges bool
	cmd := &cobra.Command{
		Use:    "child --dir FOLDER [" + protocol.DropPrivilegesFlag + "]",
		Short:  "Run a sandbox session's Python (started by its host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			code, err := child.Serve(child.Options{Dir: dir, DropPrivileges: dropPrivileges, Streams: s, WayOut: cmdutil.SandboxWayOut})
			if err == nil && code != 0 {
				err = cmdutil.ExitError{Code: code}
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the session folder")
	cmd.Flags().BoolVar(&dropPrivileges, strings.TrimPrefix(protocol.DropPrivilegesFlag, "--"), false,
		"the policy drops privileges: the bounding set and no_new_privs are set before Go starts")
	cmd.Flags().Bool(strings.TrimPrefix(protocol.NetworkFlag, "--"), false,
		"the network is an allow list: the network namespace is made before Go starts")
	return cmd
}
