package cmdutil

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/client"
	"github.com/vis-agent/vis-agent/sandbox/jail/grant"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
)

// JailFlags are `sandbox run`'s choices of jail, over the settings.
type JailFlags struct {
	NoJail, NoNetwork     bool
	Network               string
	Roots, ReadOnlyRoots  []string
	AllowHosts, DenyHosts []string
}

// Add adds the jail flags to cmd.
func (jf *JailFlags) Add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&jf.NoJail, "no-jail", false, "run without the jail: files, processes and foreign code unconfined (the thread and memory caps stay)")
	cmd.Flags().BoolVar(&jf.NoNetwork, "no-network", false, "no sockets but unix ones, no name lookups (audit hook and kernel); as --network off")
	cmd.Flags().StringArrayVar(&jf.Roots, "root", nil, "a folder the jailed code may also read and write (repeatable)")
	cmd.Flags().StringArrayVar(&jf.ReadOnlyRoots, "read-only-root", nil, "a folder the jailed code may also read (repeatable)")
	AddNetworkFlags(cmd, &jf.Network, &jf.AllowHosts, &jf.DenyHosts)
}

// AddNetworkFlags adds --network, --allow-host and --deny-host.
func AddNetworkFlags(cmd *cobra.Command, network *string, allow, deny *[]string) {
	cmd.Flags().StringVar(network, "network", "", "on (every host), off, or allow: the allow list of the package index, sandbox.allow_hosts and --allow-host (default: sandbox.network, else allow)")
	cmd.Flags().StringArrayVar(allow, "allow-host", nil, "also reach these hosts, through a proxy of the session's host (repeatable: NAME, *.DOMAIN, NAME:PORT, IP, CIDR, @pypi, @github)")
	cmd.Flags().StringArrayVar(deny, "deny-host", nil, "never reach these hosts, even when allowed (repeatable, same patterns)")
}

// Args are the flags again, for connect on another machine (whose user's
// settings and checks of the roots apply there).
func (jf *JailFlags) Args() []string {
	var out []string
	if jf.NoJail {
		out = append(out, "--no-jail")
	}
	if jf.NoNetwork {
		out = append(out, "--no-network")
	}
	if jf.Network != "" {
		out = append(out, "--network", jf.Network)
	}
	for _, r := range jf.Roots {
		out = append(out, "--root", r)
	}
	for _, r := range jf.ReadOnlyRoots {
		out = append(out, "--read-only-root", r)
	}
	for _, h := range jf.AllowHosts {
		out = append(out, "--allow-host", h)
	}
	for _, h := range jf.DenyHosts {
		out = append(out, "--deny-host", h)
	}
	return out
}

// asked is what the flags ask, relative roots from dir; nil for no flags.
func (jf *JailFlags) asked(dir string) *grant.Asked {
	if jf == nil {
		return nil
	}
	return &grant.Asked{
		NoJail: jf.NoJail, NoNetwork: jf.NoNetwork, Network: jf.Network,
		Roots: jf.Roots, ReadOnlyRoots: jf.ReadOnlyRoots,
		AllowHosts: jf.AllowHosts, DenyHosts: jf.DenyHosts,
		Dir: dir,
	}
}

// SessionPolicy is the jail the child of session m (in folder dir) runs
// under, as grant decides it from the user's settings (whose problems are
// warned about) and the flags (nil: none); a refusal of a flag is a usage
// error.
func SessionPolicy(s Streams, flags *JailFlags, m client.Meta, dir string) (protocol.Policy, error) {
	st := config.Load(s.Layout().UserConfig())
	for _, problem := range st.Problems {
		fmt.Fprintf(s.Err, "vis-agent: warning: %s\n", problem)
	}
	p, err := grant.Decide(st, flags.asked(s.Dir), m.Workspace, dir)
	var refused grant.AskedError
	if errors.As(err, &refused) {
		return p, UsageError{err}
	}
	return p, err
}
