package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/sandbox/host"
	"github.com/vis-agent/vis-agent/sandbox/jail"
)

// newSandboxCheckWorkerCmd is the process a session's host parses the
// data files a block wrote in, bounded by the kernel (host.ServeParseWorker).
func newSandboxCheckWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "check-worker",
		Short:  "Parse the data files a block wrote (started by a session's host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return host.ServeParseWorker(os.Stdin, os.Stdout)
		}),
	}
}

// newSandboxGuardCmd is the process that ends what a session's Python
// process started once that process has ended, should its host be gone by
// then (jail.GuardTaskGroup).
func newSandboxGuardCmd() *cobra.Command {
	var pid int
	cmd := &cobra.Command{
		Use:    "guard --pid PID",
		Short:  "End what a session's Python process started, once it ended (started by a session's host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return jail.GuardTaskGroup(pid)
		}),
	}
	cmd.Flags().IntVar(&pid, "pid", 0, "the Python process")
	return cmd
}
