package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/roots"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// jailFlags are `sandbox run`'s choices of jail, over the settings.
type jailFlags struct {
	noJail, noNetwork     bool
	roots, readOnlyRoots  []string
	allowHosts, denyHosts []string
}

func (jf *jailFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&jf.noJail, "no-jail", false, "run without the jail: files, processes and foreign code unconfined (the thread and memory caps stay)")
	cmd.Flags().BoolVar(&jf.noNetwork, "no-network", false, "no sockets but unix ones, no name lookups (audit hook and kernel)")
	cmd.Flags().StringArrayVar(&jf.roots, "root", nil, "a folder the jailed code may also read and write (repeatable)")
	cmd.Flags().StringArrayVar(&jf.readOnlyRoots, "read-only-root", nil, "a folder the jailed code may also read (repeatable)")
	addHostFlags(cmd, &jf.allowHosts, &jf.denyHosts)
}

// addHostFlags adds --allow-host and --deny-host.
func addHostFlags(cmd *cobra.Command, allow, deny *[]string) {
	cmd.Flags().StringArrayVar(allow, "allow-host", nil, "reach only these hosts, through a proxy of the session's host (repeatable: NAME, *.DOMAIN, NAME:PORT, IP, CIDR, @pypi, @github)")
	cmd.Flags().StringArrayVar(deny, "deny-host", nil, "never reach these hosts, even when allowed (repeatable, same patterns)")
}

// hostLists are the allow and deny lists of a network by name: the
// user's settings, then the flags', sets expanded with the index in use;
// nil when the network is not an allow list. A flag's bad pattern is a
// usage error.
func hostLists(st config.Settings, network bool, allow, deny []string) (*protocol.Hosts, error) {
	if !st.SandboxNetworkAllow.Value && len(allow) == 0 || !network {
		return nil, nil
	}
	index := st.IndexURL.Value
	expand := func(list []string, from string, flag bool) ([]string, error) {
		out, err := netpolicy.Expand(list, index)
		if err != nil {
			err = fmt.Errorf("%s: %w", from, err)
			if flag {
				return nil, usageError{err}
			}
		}
		return out, err
	}
	var h protocol.Hosts
	for _, l := range []struct {
		list []string
		to   *[]string
		from string
		flag bool
	}{
		{st.SandboxAllowHosts.Value, &h.Allow, st.SandboxAllowHosts.From + ": sandbox.allow_hosts", false},
		{allow, &h.Allow, "--allow-host", true},
		{st.SandboxDenyHosts.Value, &h.Deny, st.SandboxDenyHosts.From + ": sandbox.deny_hosts", false},
		{deny, &h.Deny, "--deny-host", true},
	} {
		out, err := expand(l.list, l.from, l.flag)
		if err != nil {
			return nil, err
		}
		for _, p := range out {
			if !slices.Contains(*l.to, p) {
				*l.to = append(*l.to, p)
			}
		}
	}
	if h.Allow == nil {
		h.Allow = []string{}
	}
	return &h, nil
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

// sessionPolicy is the jail the child of session m (in folder f) runs
// under: the user's settings ([sandbox] in ~/.vis/config.toml), then the
// flags (nil: none). A project's vis.toml is not read for it: the
// workspace is writable by the jailed code, which must not choose its own
// jail. Every extra root, of the settings or the flags, is resolved here,
// once, and refused when it lies inside a folder the jailed code can
// change (roots.CheckUser).
func sessionPolicy(s Streams, flags *jailFlags, m session.Meta, f session.Folder) (protocol.Policy, error) {
	st := config.Load(s.Layout().UserConfig())
	for _, problem := range st.Problems {
		fmt.Fprintf(s.Err, "vis-agent: warning: %s\n", problem)
	}
	p := protocol.Policy{
		Jail: st.SandboxJail.Value, Network: st.SandboxNetwork.Value,
		MaxThreads: st.SandboxMaxThreads.Value, MemoryMB: st.SandboxMemoryMB.Value,
	}
	// given is one extra root, and how to name it in a refusal.
	type given struct {
		path, from string
		flag       bool
	}
	var rw, ro []given
	for _, r := range st.SandboxRoots.Value {
		rw = append(rw, given{r, st.SandboxRoots.From + ": sandbox.roots", false})
	}
	for _, r := range st.SandboxReadOnlyRoots.Value {
		ro = append(ro, given{r, st.SandboxReadOnlyRoots.From + ": sandbox.read_only_roots", false})
	}
	var allow, deny []string
	if flags != nil {
		p.Jail = p.Jail && !flags.noJail
		if flags.noNetwork && len(flags.allowHosts) > 0 {
			return p, usageError{errors.New("--no-network and --allow-host contradict each other: choose one")}
		}
		// --allow-host turns the network on, through the proxy.
		p.Network = p.Network && !flags.noNetwork || len(flags.allowHosts) > 0
		allow, deny = flags.allowHosts, flags.denyHosts
		for _, r := range flags.roots {
			rw = append(rw, given{absFrom(s.Dir, r), "--root " + r, true})
		}
		for _, r := range flags.readOnlyRoots {
			ro = append(ro, given{absFrom(s.Dir, r), "--read-only-root " + r, true})
		}
	}
	hosts, err := hostLists(st, p.Network, allow, deny)
	if err != nil {
		return p, err
	}
	p.Hosts = hosts
	refuse := func(g given, err error) error {
		err = fmt.Errorf("%s: %w", g.from, err)
		if g.flag {
			return usageError{err}
		}
		return err
	}
	base := []roots.Writable{{Path: m.Workspace, Name: "the workspace"}, {Path: f.Dir, Name: "the session's folder"}}
	if real, _, err := roots.Walk(f.Dir); err == nil {
		base[1].Path = real
	}
	// The writable roots first, each checked against the others too: a
	// root inside another one can be swapped from there (the same one
	// twice is one root).
	type resolvedRoot struct {
		g    given
		real string
	}
	var rws []resolvedRoot
	for _, g := range rw {
		real, err := roots.CheckUser(g.path, base)
		if err != nil {
			return p, refuse(g, err)
		}
		rws = append(rws, resolvedRoot{g, real})
	}
	writable := slices.Clone(base)
	for i, r := range rws {
		others := slices.Clone(base)
		for j, o := range rws {
			if j != i && o.real != r.real {
				others = append(others, roots.Writable{Path: o.real, Name: "the root"})
			}
		}
		if _, err := roots.CheckUser(r.g.path, others); err != nil {
			return p, refuse(r.g, err)
		}
		if !slices.Contains(p.Roots, r.real) {
			p.Roots = append(p.Roots, r.real)
			writable = append(writable, roots.Writable{Path: r.real, Name: "the root"})
		}
	}
	for _, g := range ro {
		real, err := roots.CheckUser(g.path, writable)
		if err != nil {
			return p, refuse(g, err)
		}
		if !slices.Contains(p.ReadOnlyRoots, real) {
			p.ReadOnlyRoots = append(p.ReadOnlyRoots, real)
		}
	}
	return p, nil
}

// absFrom is p made absolute from dir.
func absFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}
