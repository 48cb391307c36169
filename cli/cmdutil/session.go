package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/remotemux"
)

// SessionFlags are --session, --workspace and --host.
type SessionFlags struct {
	Name, Workspace string
	Host            string
	// Local: a session of this machine only (connect: no --host).
	Local   bool
	Streams Streams
}

// Add adds the flags to cmd, with --session's completion; --host unless
// Local.
func (sf *SessionFlags) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&sf.Name, "session", client.DefaultName, "the session's name ([A-Za-z0-9._-], at most 64)")
	workspace := "the session's workspace folder (default: the current folder; with --host, connect's folder there)"
	if sf.Local {
		workspace = "the session's workspace folder (default: the current folder)"
	}
	cmd.Flags().StringVar(&sf.Workspace, "workspace", "", workspace)
	// Registering twice (a command adding the flags twice) is the only error.
	_ = cmd.RegisterFlagCompletionFunc("session", sf.CompleteSessions)
	if !sf.Local {
		AddHostFlag(cmd, &sf.Host)
	}
}

// AddHostFlag adds --host URL.
func AddHostFlag(cmd *cobra.Command, host *string) {
	cmd.Flags().StringVar(host, "host", "", "the machine of the session: ssh://[user@]host[:port][/path/to/vis-agent], kubectl://namespace/pod[/container][?context=NAME], docker://container or podman://container (default: $"+client.HostEnv+", else this one)")
}

// HostTarget is the machine --host (else $VIS_SANDBOX_HOST) names; nil
// for this one.
func HostTarget(s Streams, host string) (*client.Target, error) {
	if host == "" {
		host = s.Getenv(client.HostEnv)
	}
	if host == "" {
		return nil, nil
	}
	t, err := client.ParseTarget(host)
	if err != nil {
		return nil, UsageError{err}
	}
	return &t, nil
}

// Remote is the client of the session the flags name on the machine of
// --host, with jf's flags passed on to connect there; nil without --host.
func (sf *SessionFlags) Remote(jf *JailFlags) (*client.Session, error) {
	if sf.Local {
		return nil, nil
	}
	t, err := HostTarget(sf.Streams, sf.Host)
	if t == nil || err != nil {
		return nil, err
	}
	if err := client.CheckName(sf.Name); err != nil {
		return nil, UsageError{err}
	}
	args := []string{"--session", sf.Name}
	if sf.Workspace != "" {
		args = append(args, "--workspace", sf.Workspace)
	}
	if jf != nil {
		args = append(args, jf.Args()...)
	}
	return client.OpenRemote(*t, client.Meta{Name: sf.Name, Workspace: sf.Workspace}, args, MuxConfig(sf.Streams)), nil
}

// MuxConfig is how the client reaches its multiplexers of --host targets:
// nil when $VIS_SANDBOX_MUX is 0 (every request runs the engine's
// command) or this binary cannot be found to start one.
func MuxConfig(s Streams) *remotemux.Config {
	if s.Getenv(remotemux.EnvOff) == "0" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &remotemux.Config{Dir: s.Layout().RemoteMux(), Command: []string{exe, "sandbox", "mux", "--"}, Env: s.Environ()}
}

// Meta checks the flags and names the session.
func (sf *SessionFlags) Meta() (client.Meta, error) {
	if err := client.CheckName(sf.Name); err != nil {
		return client.Meta{}, UsageError{err}
	}
	abs, err := sf.WorkspaceDir()
	if err != nil {
		return client.Meta{}, err
	}
	return client.Meta{Name: sf.Name, Workspace: abs}, nil
}

// WorkspaceDir is the workspace folder --workspace names (default: the
// working folder), absolute with its links resolved.
func (sf *SessionFlags) WorkspaceDir() (string, error) {
	ws := sf.Workspace
	if ws == "" {
		if ws = sf.Streams.Dir; ws == "" {
			return "", errors.New("the working folder cannot be read (was it removed?): give --workspace")
		}
	}
	if !filepath.IsAbs(ws) {
		ws = filepath.Join(sf.Streams.Dir, ws)
	}
	abs, err := filepath.Abs(ws)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", UsageError{fmt.Errorf("workspace %s: %w", ws, errors.Unwrap(err))}
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", UsageError{fmt.Errorf("workspace %s is not a folder", ws)}
	}
	return abs, nil
}

// Open is the client of the session the flags name, and the jail policy
// of the user's settings and jf (nil: no jail flags); a host it starts
// starts its child under that policy.
func (sf *SessionFlags) Open(jf *JailFlags) (*client.Session, protocol.Policy, error) {
	// Remote: the policy is the other machine's to make (connect there).
	if c, err := sf.Remote(jf); c != nil || err != nil {
		return c, protocol.Policy{}, err
	}
	m, err := sf.Meta()
	if err != nil {
		return nil, protocol.Policy{}, err
	}
	var policy protocol.Policy
	c, err := client.OpenFor(sf.Streams.Layout().Sessions(), m, func(dir string, running bool) ([]string, error) {
		if err := checkProject(running, m.Workspace); err != nil {
			return nil, err
		}
		var err error
		if policy, err = SessionPolicy(sf.Streams, jf, m, dir); err != nil {
			return nil, err
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return append([]string{exe}, protocol.HostArgs(dir, &policy)...), nil
	})
	if c != nil {
		c.Env = sf.Streams.Environ()
	}
	return c, policy, err
}

// Existing is the client of a session that must already exist.
func (sf *SessionFlags) Existing() (*client.Session, error) {
	if c, err := sf.Remote(nil); c != nil || err != nil {
		return c, err
	}
	m, err := sf.Meta()
	if err != nil {
		return nil, err
	}
	return client.Existing(sf.Streams.Layout().Sessions(), m)
}

// Settled is Existing's session once the host has saved the snapshot
// after its last block and journaled it (a running session saves after
// the block's answer): for the commands that read its folder.
func (sf *SessionFlags) Settled() (*client.Session, error) {
	c, err := sf.Existing()
	if err != nil {
		return nil, err
	}
	if err := c.Settle(); err != nil {
		return nil, err
	}
	return c, nil
}

// SandboxWayOut is the way out of a workspace whose pyproject.toml cannot
// be read, for the sandbox commands (which have no --shared).
const SandboxWayOut = "fix it, give the session another folder with --workspace, or run Python without a session: vis-agent python --shared"

// checkProject refuses, before a host is started for it, a session whose
// workspace has a pyproject.toml that cannot be read: its Python process
// could not choose the environment, and the host would wait with none.
// A running session (running: its host runs) is left to run.
func checkProject(running bool, workspace string) error {
	if running {
		return nil
	}
	_, err := packages.FindProject(workspace)
	var pe *packages.PyprojectError
	if errors.As(err, &pe) {
		return packages.WayOut(err, SandboxWayOut)
	}
	return nil
}
