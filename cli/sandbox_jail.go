package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/jail/grant"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// jailFlags are `sandbox run`'s choices of jail, over the settings.
type jailFlags struct {
	noJail, noNetwork     bool
	network               string
	roots, readOnlyRoots  []string
	allowHosts, denyHosts []string
}

func (jf *jailFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&jf.noJail, "no-jail", false, "run without the jail: files, processes and foreign code unconfined (the thread and memory caps stay)")
	cmd.Flags().BoolVar(&jf.noNetwork, "no-network", false, "no sockets but unix ones, no name lookups (audit hook and kernel); as --network off")
	cmd.Flags().StringArrayVar(&jf.roots, "root", nil, "a folder the jailed code may also read and write (repeatable)")
	cmd.Flags().StringArrayVar(&jf.readOnlyRoots, "read-only-root", nil, "a folder the jailed code may also read (repeatable)")
	addNetworkFlags(cmd, &jf.network, &jf.allowHosts, &jf.denyHosts)
}

// addNetworkFlags adds --network, --allow-host and --deny-host.
func addNetworkFlags(cmd *cobra.Command, network *string, allow, deny *[]string) {
	cmd.Flags().StringVar(network, "network", "", "on (every host), off, or allow: the allow list of the package index, sandbox.allow_hosts and --allow-host (default: sandbox.network, else allow)")
	cmd.Flags().StringArrayVar(allow, "allow-host", nil, "also reach these hosts, through a proxy of the session's host (repeatable: NAME, *.DOMAIN, NAME:PORT, IP, CIDR, @pypi, @github)")
	cmd.Flags().StringArrayVar(deny, "deny-host", nil, "never reach these hosts, even when allowed (repeatable, same patterns)")
}

// args are the flags again, for connect on another machine (whose user's
// settings and checks of the roots apply there).
func (jf *jailFlags) args() []string {
	var out []string
	if jf.noJail {
		out = append(out, "--no-jail")
	}
	if jf.noNetwork {
		out = append(out, "--no-network")
	}
	if jf.network != "" {
		out = append(out, "--network", jf.network)
	}
	for _, r := range jf.roots {
		out = append(out, "--root", r)
	}
	for _, r := range jf.readOnlyRoots {
		out = append(out, "--read-only-root", r)
	}
	for _, h := range jf.allowHosts {
		out = append(out, "--allow-host", h)
	}
	for _, h := range jf.denyHosts {
		out = append(out, "--deny-host", h)
	}
	return out
}

// asked is what the flags ask, relative roots from dir; nil for no flags.
func (jf *jailFlags) asked(dir string) *grant.Asked {
	if jf == nil {
		return nil
	}
	return &grant.Asked{
		NoJail: jf.noJail, NoNetwork: jf.noNetwork, Network: jf.network,
		Roots: jf.roots, ReadOnlyRoots: jf.readOnlyRoots,
		AllowHosts: jf.allowHosts, DenyHosts: jf.denyHosts,
		Dir: dir,
	}
}

// sessionPolicy is the jail the child of session m (in folder f) runs
// under, as grant decides it from the user's settings (whose problems are
// warned about) and the flags (nil: none); a refusal of a flag is a usage
// error.
func sessionPolicy(s Streams, flags *jailFlags, m session.Meta, f session.Folder) (protocol.Policy, error) {
	st := config.Load(s.Layout().UserConfig())
	for _, problem := range st.Problems {
		fmt.Fprintf(s.Err, "vis-agent: warning: %s\n", problem)
	}
	p, err := grant.Decide(st, flags.asked(s.Dir), m.Workspace, f.Dir)
	var refused grant.AskedError
	if errors.As(err, &refused) {
		return p, usageError{err}
	}
	return p, err
}
