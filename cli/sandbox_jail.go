package cli

import (
	"errors"
	"fmt"
	"github.com/vis-agent/vis-agent/pyrun"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/sandbox/child"
	"github.com/vis-agent/vis-agent/sandbox/jail"
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

// jailRoots makes a jailed child's roots: the folders its code may write
// (the workspace, the session's state and temp folders, the extra roots)
// and read (what its CPython needs to run, the driver, the import roots
// that roots.Import lets through, the extra read-only roots).
type jailRoots struct {
	rw       []string
	writable []roots.Writable
	// importRO are the import roots the jail opens read-only.
	importRO []string
	warn     func(string)
}

func newJailRoots(p protocol.Policy, workspace, state, tmp string, warn func(string)) *jailRoots {
	j := &jailRoots{rw: append([]string{workspace, state, tmp}, p.Roots...), warn: warn}
	for _, r := range j.rw {
		if real, _, err := roots.Walk(r); err == nil {
			j.writable = append(j.writable, roots.Writable{Path: real, Name: "the writable root"})
		}
	}
	j.writable[0].Name = "the workspace"
	return j
}

// importRoots is pyrun.NewPlan's hook: of the import roots a file names, those
// roots.Import keeps, resolved once; the others are left out with a
// warning in the host's log.
func (j *jailRoots) importRoots(paths []string, from string) []string {
	trusted := from != "" && roots.Trusted(from, j.writable)
	var keep []string
	for _, p := range paths {
		path, readOnly, why := roots.Import(p, trusted, j.writable)
		if path == "" {
			j.warn(fmt.Sprintf("import root %s (from %s) is left out of the jailed session: %s", p, from, why))
			continue
		}
		keep = append(keep, path)
		if readOnly {
			j.importRO = append(j.importRO, path)
		}
	}
	return keep
}

// roots are the child's folders (see jailRoots), none without the jail;
// extraRO are vis-agent's own (the driver, the start-up module).
func (j *jailRoots) roots(p protocol.Policy, lib *pyembed.Library, inst findpython.Install, plan pyrun.Plan, extraRO ...string) (rw, ro []string) {
	if !p.Jail {
		return nil, nil
	}
	ro = []string{inst.Prefix, filepath.Dir(lib.Path)}
	if inst.Home != "" {
		ro = append(ro, inst.Home)
	}
	if inst.Executable != "" {
		ro = append(ro, inst.Executable)
	}
	if plan.EnvDir != "" {
		// A project's .venv may be a symlink the jailed code planted.
		if env, _, why := roots.Import(plan.EnvDir, true, j.writable); env != "" {
			ro = append(ro, env)
		} else {
			j.warn(fmt.Sprintf("the environment %s is left out of the jailed session: %s", plan.EnvDir, why))
		}
	}
	ro = append(append(append(ro, j.importRO...), extraRO...), p.ReadOnlyRoots...)
	if p.Network {
		// Name lookups and TLS need these.
		ro = append(ro, "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
			"/etc/services", "/etc/protocols", "/etc/ssl", "/usr/share/ca-certificates", "/etc/ca-certificates")
	}
	return j.rw, resolved(ro)
}

// resolved are the paths with their symlinks resolved, as the kernel
// sees them (a venv's python is a link into the installation); a path
// that does not exist is dropped.
func resolved(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, r)
			if r != p {
				out = append(out, p)
			}
		}
	}
	return out
}

// applyChildPolicy puts the session's policy in force in this process,
// the child, before CPython runs any code: the C audit hook (installed
// once, before Main), then the kernel layer, with shield kept read-only
// inside the writable roots. Without the jail the thread cap, the memory
// cap and --no-network (or the allow list, whose proxy listens at
// proxyPort) still hold. It returns what is in force, for session.access.
func applyChildPolicy(lib *pyembed.Library, p protocol.Policy, rw, ro []string, shield jail.Shield, proxyPort int) (child.Access, error) {
	acc := child.Access{IsJailed: p.Jail, Network: p.Network, Hosts: p.Hosts, MaxThreads: p.MaxThreads,
		ThreadCap: p.MaxThreads > 0 && lib.ThreadCapHeld(), MemoryMB: p.MemoryMB, Roots: []string{}, ReadOnlyRoots: []string{}}
	memory := uint64(p.MemoryMB) << 20
	kernel := jail.Policy{NoNetwork: !p.Network, MemoryBytes: memory}
	if p.Jail {
		kernel = jail.Session(rw, ro, p.Network, memory)
		kernel.Shield = shield
		acc.Roots, acc.ReadOnlyRoots = rw, ro
	}
	kernel.MaxThreads = p.MaxThreads
	if p.Proxied() {
		kernel.ProxyPort = proxyPort
		acc.Proxy = fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
	}
	hook := pyembed.AuditPolicy{Jail: p.Jail, ReadWrite: kernel.ReadWrite, ReadOnly: kernel.ReadOnly,
		NoNetwork: !p.Network, MaxThreads: p.MaxThreads, Name: "the sandbox's jail"}
	if !p.Jail {
		hook.Name = "the sandbox session's policy"
	}
	if err := lib.InstallAuditHook(hook); err != nil {
		return acc, fmt.Errorf("the sandbox's jail: %w", err)
	}
	st, err := jail.Apply(kernel)
	if err != nil {
		return acc, fmt.Errorf("the sandbox's jail: %w", err)
	}
	if p.MaxThreads > 0 && !lib.ThreadCapHeld() && st.MaxTasks == 0 {
		// One sentence on threads: after the kernel's, if it gave one.
		note := fmt.Sprintf("CPython %s raises no event when a thread starts (3.12+ does), so the cap of %d threads is held in Python only, where code can undo it; the address-space cap still ends a thread bomb", lib.Version.Short(), p.MaxThreads)
		if i := slices.IndexFunc(st.Missing, func(m string) bool { return strings.HasPrefix(m, "threads: ") }); i >= 0 {
			st.Missing[i] += "; " + note
		} else {
			st.Missing = append(st.Missing, "threads: "+note)
		}
	}
	acc.Kernel = &st
	return acc, nil
}

// privateTemp is the child's temp folder inside its session folder,
// emptied at each start.
func privateTemp(folder session.Folder) (string, error) {
	tmp := folder.TempDir()
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("empty the session's temp folder: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("make the session's temp folder: %w", err)
	}
	return tmp, nil
}

// stateFolder is where the child keeps the session's snapshot: a folder of
// its own inside the session folder, so that the jailed code, which may
// write there, cannot touch the host's files beside it (its socket, its
// record, its locks). A snapshot of an older vis-agent, kept in the
// session folder itself, is moved in.
func stateFolder(folder session.Folder) (string, error) {
	state := folder.StateDir()
	if err := os.Mkdir(state, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the session's state folder: %w", err)
	}
	for _, name := range []string{"snapshot.bin", "spill", "blocks"} {
		old := filepath.Join(folder.Dir, name)
		if _, err := os.Lstat(old); err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(state, name)); err == nil {
			continue
		}
		if err := os.Rename(old, filepath.Join(state, name)); err != nil {
			return "", fmt.Errorf("move the snapshot into the state folder: %w", err)
		}
	}
	return state, nil
}

// plotEnviron points matplotlib's config and cache (and other programs'
// XDG cache) at folders of the session's state folder, which the jailed
// code may write and which outlive a start: matplotlib neither warns that
// ~/.config/matplotlib is not writable nor builds its font cache again at
// every start. Its backend is Agg, unless the child's environment names
// one (the session's fixed environment keeps no client's MPLBACKEND).
func plotEnviron(state string) error {
	mpl, cache := filepath.Join(state, "matplotlib"), filepath.Join(state, "cache")
	for _, dir := range []string{mpl, cache} {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make the session's %s folder: %w", filepath.Base(dir), err)
		}
	}
	os.Setenv("MPLCONFIGDIR", mpl)
	os.Setenv("XDG_CACHE_HOME", cache)
	if os.Getenv("MPLBACKEND") == "" {
		os.Setenv("MPLBACKEND", "Agg")
	}
	return nil
}
