// Package grant decides the jail a session's child runs under: the user's
// settings ([sandbox] in the user's config.toml), then what the user asked
// on the command line. Nothing else has a say: not a project's vis.toml
// (the workspace is writable by the jailed code, which must not choose its
// own jail), and not a request on the session's socket (a request proves
// nothing). Every extra root, of the settings or the command line, is
// resolved here, once, and refused when it lies inside a folder the jailed
// code can change (roots.CheckUser). Pure Go: the kernel layer that
// applies the result is sandbox/jail.
package grant

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
	"github.com/vis-agent/vis-agent/sandbox/roots"
)

// Asked is what the user asked on a command line, over the settings.
type Asked struct {
	NoJail, NoNetwork bool
	// Network is --network: "on", "off", "allow" (the allow list), or ""
	// (the settings').
	Network               string
	Roots, ReadOnlyRoots  []string // as given; relative ones are from Dir
	AllowHosts, DenyHosts []string
	Dir                   string
}

// The network modes of --network and sandbox.network.
const (
	NetworkOn    = "on"
	NetworkOff   = "off"
	NetworkAllow = "allow"
)

// AskedError is a refusal of something the command line asked (a usage
// error); a refusal of the settings is a plain error.
type AskedError struct{ Err error }

func (e AskedError) Error() string { return e.Err.Error() }
func (e AskedError) Unwrap() error { return e.Err }

// given is one extra root, and how to name it in a refusal.
type given struct {
	path, from string
	asked      bool
}

func (g given) refuse(err error) error {
	err = fmt.Errorf("%s: %w", g.from, err)
	if g.asked {
		return AskedError{err}
	}
	return err
}

// Decide is the policy of the session whose workspace and folder are
// workspace and sessionDir: st, then asked (nil: nothing asked).
func Decide(st config.Settings, asked *Asked, workspace, sessionDir string) (protocol.Policy, error) {
	p := protocol.Policy{
		Jail: st.SandboxJail.Value, MaxThreads: st.SandboxMaxThreads.Value, MemoryMB: st.SandboxMemoryMB.Value,
	}
	mode, err := networkMode(st, asked)
	if err != nil {
		return p, err
	}
	p.Network = mode != NetworkOff
	var rw, ro []given
	for _, r := range st.SandboxRoots.Value {
		rw = append(rw, given{r, st.SandboxRoots.From + ": sandbox.roots", false})
	}
	for _, r := range st.SandboxReadOnlyRoots.Value {
		ro = append(ro, given{r, st.SandboxReadOnlyRoots.From + ": sandbox.read_only_roots", false})
	}
	var allow, deny []string
	if asked != nil {
		p.Jail = p.Jail && !asked.NoJail
		allow, deny = asked.AllowHosts, asked.DenyHosts
		for _, r := range asked.Roots {
			rw = append(rw, given{absFrom(asked.Dir, r), "--root " + r, true})
		}
		for _, r := range asked.ReadOnlyRoots {
			ro = append(ro, given{absFrom(asked.Dir, r), "--read-only-root " + r, true})
		}
	}
	if mode == NetworkAllow {
		if p.Hosts, err = hostLists(st, allow, deny); err != nil {
			return p, err
		}
	}
	base := []roots.Writable{{Path: workspace, Name: "the workspace"}, {Path: sessionDir, Name: "the session's folder"}}
	if real, _, err := realpath.Walk(sessionDir); err == nil {
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
			return p, g.refuse(err)
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
			return p, r.g.refuse(err)
		}
		if !slices.Contains(p.Roots, r.real) {
			p.Roots = append(p.Roots, r.real)
			writable = append(writable, roots.Writable{Path: r.real, Name: "the root"})
		}
	}
	for _, g := range ro {
		real, err := roots.CheckUser(g.path, writable)
		if err != nil {
			return p, g.refuse(err)
		}
		if !slices.Contains(p.ReadOnlyRoots, real) {
			p.ReadOnlyRoots = append(p.ReadOnlyRoots, real)
		}
	}
	return p, nil
}

// networkMode is the session's network: the settings' (the allow list
// of the package index unless the user's file says otherwise), then
// asked's --network or --no-network; --allow-host makes it an allow list
// (adding to the settings' one), which contradicts a network asked on or
// off.
func networkMode(st config.Settings, asked *Asked) (string, error) {
	mode := NetworkOff
	switch {
	case st.SandboxNetworkAllow.Value:
		mode = NetworkAllow
	case st.SandboxNetwork.Value:
		mode = NetworkOn
	}
	if asked == nil {
		return mode, nil
	}
	flag := asked.Network
	switch flag {
	case "", NetworkOn, NetworkOff, NetworkAllow:
	default:
		return "", AskedError{fmt.Errorf("--network %q: give on, off or allow (the allow list)", flag)}
	}
	if asked.NoNetwork {
		if flag != "" && flag != NetworkOff {
			return "", AskedError{fmt.Errorf("--no-network and --network %s contradict each other: choose one", flag)}
		}
		flag = NetworkOff
	}
	if len(asked.AllowHosts) > 0 {
		switch flag {
		case NetworkOff:
			return "", AskedError{errors.New("--no-network (or --network off) and --allow-host contradict each other: choose one")}
		case NetworkOn:
			return "", AskedError{errors.New("--network on reaches every host, --allow-host only those listed: choose one")}
		}
		flag = NetworkAllow
	}
	if flag != "" {
		mode = flag
	}
	return mode, nil
}

// hostLists are the allow and deny lists of a network by name: the
// user's settings, then the asked ones, sets expanded with the index in
// use.
func hostLists(st config.Settings, allow, deny []string) (*protocol.Hosts, error) {
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
		out, err := netpolicy.Expand(l.list, st.IndexURL.Value)
		if err != nil {
			return nil, given{from: l.from, asked: l.flag}.refuse(err)
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

// absFrom is p made absolute from dir.
func absFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}
