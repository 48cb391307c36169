package proc

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/host"
)

// NewCmdCheckWorker is the process a session's host parses the
// data files a block wrote in, bounded by the kernel (host.ServeParseWorker).
func NewCmdCheckWorker() *cobra.Command {
	return &cobra.Command{
		Use:    "check-worker",
		Short:  "Parse the data files a block wrote (started by a session's host)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			return host.ServeParseWorker(os.Stdin, os.Stdout)
		}),
	}
}
