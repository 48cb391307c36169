package proc

import (
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/jail"
)

// NewCmdConfine is the helper a session's host runs each shell()
// command through (inside bubblewrap when the session is jailed): the
// kernel layer is sandbox/jail's Confine, which applies it and execs the
// command.
func NewCmdConfine() *cobra.Command {
	var policy string
	var groupFD, statusFD, proxyFD int
	cmd := &cobra.Command{
		Use:    "confine --policy JSON [--group-fd N] [--status-fd N] [--proxy-fd N] -- COMMAND [ARG...]",
		Short:  "Run a session's command under the kernel layer (started by its host)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			return jail.Confine(policy, groupFD, statusFD, proxyFD, args)
		}),
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&policy, "policy", "", "the kernel layer to apply (sandbox/jail's Policy, JSON)")
	cmd.Flags().IntVar(&groupFD, "group-fd", -1, "the command's pids cgroup file to join")
	cmd.Flags().IntVar(&statusFD, "status-fd", -1, "where to report the layers in force")
	cmd.Flags().IntVar(&proxyFD, "proxy-fd", -1, "where to hand the listener of a proxied network")
	return cmd
}
