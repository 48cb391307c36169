package proc

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
)

// NewCmdMux is `sandbox mux`, the multiplexer of a --host URL.
func NewCmdMux(f *cmdutil.Factory) *cobra.Command {
	s := f.Streams
	return &cobra.Command{
		Use:   "mux URL",
		Short: "Carry the requests of this machine's clients to the --host URL over one engine connection (started by the clients)",
		Long: `Run the engine's command to URL once, with connect --mux there, and pass
each connection of this user's clients on its socket (under
$VIS_HOME/sandbox/remote) on as a stream of its own. The clients start it
when none answers; it exits after $VIS_SANDBOX_MUX_IDLE (default 10m)
without a request, when the engine ends, or when its socket is removed.`,
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: cmdutil.RunE(func(cmd *cobra.Command, args []string) error {
			t, err := client.ParseTarget(args[0])
			if err != nil {
				return cmdutil.UsageError{Err: err}
			}
			var idle time.Duration
			if v := s.Getenv(remotemux.EnvIdle); v != "" {
				if idle, err = time.ParseDuration(v); err != nil || idle <= 0 {
					return cmdutil.UsageError{Err: fmt.Errorf("$%s=%q: give a duration such as 10m", remotemux.EnvIdle, v)}
				}
			}
			return remotemux.Run(remotemux.Options{URL: t.URL, Engine: t.Command([]string{"--mux"}), Dir: s.Layout().RemoteMux(), Idle: idle, Log: s.Err})
		}),
	}
}
