package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"syscall"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/client/runpath"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
)

// A warm `sandbox run -c CODE` is carried to the session's host by the
// next identical command line before Go starts (sandbox/client/runpath):
// the request is the same but for its code, when the same flags run in
// the same workspace with the same environment and the user's settings
// and the binary are as they were. Only flags whose whole
// effect is in the request qualify; the others (--timeout, which may be
// clamped with a line on stderr; --json; --raw; --workspace; the jail
// flags) always go through Go. A session on another machine is reached
// through its multiplexer, whose stream header carries --workspace as the
// remote connect's flag: there, --host and --workspace qualify too (the
// list is written out: an append would give cli an init on the python
// start path).
var (
	runPathFlags       = []string{"code", "session", "echo", "no-echo"}
	remoteRunPathFlags = []string{"host", "workspace", "code", "session", "echo", "no-echo"}
)

// saveRunPlan saves the plan of a `sandbox run` whose block the host ran
// with req (its code and client aside): best effort, a plan not saved
// only costs the next run Go's start.
func saveRunPlan(s cmdutil.Streams, given []string, c *client.Session, req protocol.Request) {
	if !runpath.Missed() || s.OutTerminal || s.ErrTerminal {
		return
	}
	flags := runPathFlags
	if c.Remote != nil {
		flags = remoteRunPathFlags
	}
	only := true
	for _, name := range given {
		only = only && slices.Contains(flags, name)
	}
	args := os.Args
	if !only || len(args) < 5 || args[1] != "sandbox" || args[2] != "run" ||
		(args[len(args)-2] != "-c" && args[len(args)-2] != "--code") || args[len(args)-1] != req.Code {
		return
	}
	if len(config.Load(s.Layout().UserConfig()).Problems) > 0 {
		return
	}
	wd, err := syscall.Getwd()
	if err != nil {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	plan := runpath.Plan{Workspace: wd, Environ: s.Environ(), Args: args[3 : len(args)-1],
		Observed: []string{s.Layout().UserConfig(), exe}}
	if !planTarget(&plan, c, req.Policy) {
		return
	}
	req.V, req.Code, req.Client = protocol.Version, "", nil
	if plan.Request, err = json.Marshal(req); err != nil {
		return
	}
	_ = runpath.Save(s.Layout().Python(), plan)
}

// planTarget fills in where plan's request goes: the session's socket, or
// a remote session's multiplexer, when runpath.c can reach it as Go's
// client does; false when it cannot (a local policy is then the
// settings' alone: roots are resolved through links that may change
// without the settings changing).
func planTarget(plan *runpath.Plan, c *client.Session, p *protocol.Policy) bool {
	if r := c.Remote; r != nil {
		if r.Mux == nil { // VIS_SANDBOX_MUX=0: an engine run each time
			return false
		}
		paths := remotemux.PathsOf(r.Mux.Dir, r.Target.URL)
		header, err := remotemux.Header(r.Args)
		if err != nil || len(paths.Socket) > client.MaxSocketPath {
			return false
		}
		plan.Socket, plan.Key = paths.Socket, paths.Key
		plan.Header, plan.URL = string(bytes.TrimSuffix(header, []byte("\n"))), r.Target.URL
		return true
	}
	socket, key := c.SocketFiles()
	if p == nil || len(p.Roots)+len(p.ReadOnlyRoots) > 0 || plan.Workspace != c.Meta.Workspace ||
		len(socket) > client.MaxSocketPath {
		return false
	}
	plan.Socket, plan.Key = socket, key
	return true
}
