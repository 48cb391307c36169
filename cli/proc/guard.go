package proc

import (
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/jail"
)

// NewCmdGuard is the process that ends what a session's Python
// process started once that process has ended, should its host be gone by
// then (jail.GuardTaskGroup).
func NewCmdGuard() *cobra.Command {
	var pid int
	cmd := &cobra.Command{
		Use:    "guard --pid PID",
		Short:  "End what a session's Python process started, once it ended (started by a session's host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			return jail.GuardTaskGroup(pid)
		}),
	}
	cmd.Flags().IntVar(&pid, "pid", 0, "the Python process")
	return cmd
}
