package cli

import (
	"encoding/json"
	"os"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// A warm `sandbox run -c CODE` is carried to the session's host by the
// next identical command line before Go starts (pyembed.RunPlan,
// pyembed/runpath.c): the request is the same but for its code, when the
// same flags run in the same workspace with the same environment and the
// user's settings and the binary are as they were. Only flags whose whole
// effect is in the request qualify; the others (--timeout, which may be
// clamped with a line on stderr; --json; --raw; --workspace; --host and the
// jail flags) always go through Go.
var runPathFlags = []string{"code", "session", "echo", "no-echo"}

// saveRunPlan saves the plan of a local `sandbox run` whose block the host
// ran with req (its code and client aside): best effort, a plan not saved
// only costs the next run Go's start.
func saveRunPlan(s Streams, cmd *cobra.Command, c *client.Session, req protocol.Request) {
	if !pyembed.RunPathMissed() || c.Remote != nil || s.OutTerminal || s.ErrTerminal {
		return
	}
	only := true
	cmd.Flags().Visit(func(f *pflag.Flag) { only = only && slices.Contains(runPathFlags, f.Name) })
	args := os.Args
	if !only || len(args) < 5 || args[1] != "sandbox" || args[2] != "run" ||
		(args[len(args)-2] != "-c" && args[len(args)-2] != "--code") || args[len(args)-1] != req.Code {
		return
	}
	// The policy must be the settings' alone: roots are resolved through
	// links that may change without the settings changing.
	p := req.Policy
	st := config.Load(s.Layout().UserConfig())
	if p == nil || len(p.Roots)+len(p.ReadOnlyRoots) > 0 || len(st.Problems) > 0 {
		return
	}
	if wd, err := syscall.Getwd(); err != nil || wd != c.Meta.Workspace || len(c.Folder.SocketPath()) > session.MaxSocketPath {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	req.V, req.Code, req.Client = protocol.Version, "", nil
	body, err := json.Marshal(req)
	if err != nil {
		return
	}
	_ = pyembed.SaveRunPlan(s.Layout().Python(), pyembed.RunPlan{
		Workspace: c.Meta.Workspace, Environ: s.Environ(), Args: args[3 : len(args)-1],
		Observed: []string{s.Layout().UserConfig(), exe},
		Socket:   c.Folder.SocketPath(), Key: c.Folder.KeyPath(), Request: body,
	})
}
