// Package proc is vis-agent's hidden process commands: the processes a
// session is made of, which clients and hosts start (`sandbox host`,
// `child`, `confine`, `check-worker`, `guard`) and the two ends of --host
// (`connect` on the session's machine, `mux` on the client's). Each reads
// its flags, then makes one call into the package that does the work.
package proc

import (
	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
)

// NewCmds are the hidden commands under `vis-agent sandbox`.
func NewCmds(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{NewCmdHost(f), NewCmdChild(f), NewCmdConfine(), NewCmdCheckWorker(), NewCmdGuard(),
		NewCmdConnect(f), NewCmdMux(f)}
}
