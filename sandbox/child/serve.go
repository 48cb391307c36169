package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/vis-agent/vis-agent/internal/config"
	"github.com/vis-agent/vis-agent/internal/iostreams"
	"github.com/vis-agent/vis-agent/packages"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyrun"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/jail/audit"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/proxy"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// Options are the hidden `vis-agent sandbox child` command's: the
// session folder, whether the C constructor dropped privileges for the
// jail (protocol.DropPrivilegesFlag), the process's streams, and the way
// out a message gives for a workspace whose project cannot be read.
type Options struct {
	Dir            string
	DropPrivileges bool
	Streams        iostreams.Streams
	WayOut         string
}

// Serve is the body of a session's interpreter child: it readies the
// driver and the session's folders, receives the session from its host,
// chooses the environment as `vis-agent python -c` would in the workspace
// (pyrun.NewPlan), puts the session's policy in force (the audit hook,
// then the kernel layer over the roots jail.SessionRoots decides), and
// runs CPython serving the host. It returns CPython's exit status.
func Serve(o Options) (int, error) {
	s := o.Streams
	lib, _, inst, err := pyrun.LoadRuntime(s)
	if err != nil {
		return 0, err
	}
	l := s.Layout()
	pkgDir, err := Install(filepath.Join(l.Python(), "sandbox"))
	if err != nil {
		return 0, err
	}
	// Outside the jail, once per CPython: `vis-agent python` of this
	// library, in a folder of no project.
	if err := Compile(pkgDir, lib.Version.Short(), func(args ...string) *exec.Cmd {
		exe, _ := os.Executable()
		cmd := exec.Command(exe, append([]string{"python", "--shared"}, args...)...)
		cmd.Env, cmd.Dir = append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+lib.Path), pkgDir
		return cmd
	}); err != nil {
		fmt.Fprintf(s.Err, "vis-agent sandbox: %v\n", err)
	}
	folder := session.Folder{Dir: o.Dir}
	tmp, err := privateTemp(folder)
	if err != nil {
		return 0, err
	}
	state, err := stateFolder(folder)
	if err != nil {
		return 0, err
	}
	// Up to here the child may have started before its host knew
	// the session (the host's first child, see sandbox/host).
	ci, err := ReceiveInfo()
	if err != nil {
		return 0, err
	}
	if o.DropPrivileges && !ci.Policy.Jail {
		return 0, fmt.Errorf("started with %s for a session without the jail", protocol.DropPrivilegesFlag)
	}
	if err := os.Chdir(ci.Session.Workspace); err != nil {
		return 0, fmt.Errorf("enter the workspace: %w", err)
	}
	s.Dir = ci.Session.Workspace
	// The same environment as `vis-agent python -c` here: the
	// project's, or the shared packages of this CPython.
	rc := pyrun.Context{
		Args: pyrun.Args{Mode: pyrun.ModeCode}, Cwd: s.Dir, Environ: s.Environ(), Inst: inst, Version: lib.Version,
		SharedDir: l.SharedEnvironment(lib.Version.Short()), StartupDir: l.Startup(),
		Settings: func(p *packages.Project) config.Settings { return pyrun.RunSettings(s, p) },
	}
	// What the workspace holds may name import roots, not roots of
	// the jail.
	jr := jail.NewSessionRoots(ci.Session.Workspace, state, tmp, ci.Policy.Roots, func(msg string) {
		fmt.Fprintf(s.Err, "vis-agent sandbox: %s\n", msg)
	})
	if ci.Policy.Jail {
		rc.ImportRoots = jr.ImportRoots
	}
	plan, err := pyrun.NewPlan(rc)
	if plan.Scratch {
		defer os.RemoveAll(plan.EnvDir) // the shared packages folder could not be made
	}
	if err != nil {
		return 0, packages.WayOut(err, o.WayOut)
	}
	for _, m := range plan.Messages {
		fmt.Fprintf(s.Err, "vis-agent sandbox: %s\n", m)
	}
	if err := pyrun.SetEnviron(plan.Env); err != nil {
		return 0, err
	}
	// An allow list: the proxy's listener in this process's own
	// network namespace goes to the host, its address to every
	// client here and in shell(). Where the machine let the C
	// constructor make no namespace (no user namespaces, a container's
	// seccomp), the session's code gets no network at all rather than
	// none of its sessions starting, the allow list being the default:
	// the host is told, and install() still reaches the list through it.
	policy, noNetNS := ci.Policy, jail.NetworkNamespaceErr()
	proxyPort := 0
	switch {
	case policy.Proxied() && noNetNS != nil:
		if err := sendNoNamespace(protocol.CallsFD); err != nil {
			return 0, err
		}
		policy.Network = false
	case policy.Proxied():
		if proxyPort, err = jail.HandListener(protocol.CallsFD, 0); err != nil {
			return 0, err
		}
		for _, kv := range proxy.Environ(proxyPort) {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}
	// The jail, before any code of the session's: the driver's
	// first import runs under it.
	for _, name := range []string{"TMPDIR", "TEMP", "TMP"} {
		os.Setenv(name, tmp)
	}
	if err := plotEnviron(state); err != nil {
		return 0, err
	}
	// The user's settings only: the workspace's vis.toml is the
	// jailed code's to write.
	st := config.Load(l.UserConfig())
	ci.Settings = protocol.DriverSettings{MaxValueMB: st.SandboxMaxValueMB.Value, MaxSnapshotMB: st.SandboxMaxSnapshotMB.Value,
		HistoryBlocks: st.SandboxHistoryBlocks.Value, AttachFigures: st.SandboxAttachFigures.Value}
	if ci.Settings.HistoryBlocks == 0 { // history_blocks = 0: none (an absent 0 is the driver's default)
		ci.Settings.HistoryBlocks = -1
	}
	if ci.Packages, err = folder.PackageLayer(lib.Version.Short()); err != nil {
		return 0, err
	}
	var rw, ro []string
	if ci.Policy.Jail {
		rw, ro = jr.Roots(jail.SessionFiles{
			Runtime: []string{inst.Prefix, filepath.Dir(lib.Path), inst.Home, inst.Executable}, EnvDir: plan.EnvDir,
			Own:           append([]string{pkgDir, l.Startup(), ci.Packages}, trustRoots(s.Getenv)...),
			ReadOnlyRoots: ci.Policy.ReadOnlyRoots, Network: policy.Network,
		})
	}
	var shield jail.Shield
	if ci.Policy.Jail {
		own, inner := l.Own()
		if shield, err = jail.NewShield(rw, own, inner, l.Sessions(), []string{state, tmp, ci.Packages}); err != nil {
			return 0, err
		}
	}
	host := ci.Session.Access.Host
	if ci.Session.Access, err = applyChildPolicy(lib, policy, rw, ro, shield, proxyPort, tmp); err != nil {
		return 0, err
	}
	if policy.Network != ci.Policy.Network {
		ci.Session.Access.Kernel.Missing = append(ci.Session.Access.Kernel.Missing, fmt.Sprintf(
			"network: the allow list needs a network namespace, which could not be made (%v), so the session's code has no network; "+
				"install() still reaches the allow list's hosts, through the host (sandbox.network = \"on\" or --network on opens the network)", noNetNS))
	}
	ci.Session.Access.Host = host
	boot, err := Bootstrap(pkgDir, state, ci)
	if err != nil {
		return 0, err
	}
	if err := installHostCall(protocol.CallsFD); err != nil {
		return 0, err
	}
	if err := installWriteNotes(); err != nil {
		return 0, err
	}
	return lib.Main([]string{plan.Argv0, "-c", boot}, inst.Home, plan.Startup), nil
}

// applyChildPolicy puts the session's policy in force in this process,
// the child, before CPython runs any code: the kernel layer, then the C
// audit hook (installed once, before Main), with shield kept read-only
// inside the writable roots. Without the jail the thread cap, the memory
// cap and --no-network (or the allow list, whose proxy listens at
// proxyPort) still hold. It returns what is in force, for session.access.
func applyChildPolicy(lib *pyembed.Library, p protocol.Policy, rw, ro []string, shield jail.Shield, proxyPort int, tmp string) (protocol.Access, error) {
	acc := protocol.Access{IsJailed: p.Jail, Network: p.Network, Hosts: p.Hosts, MaxThreads: p.MaxThreads,
		ThreadCap: p.MaxThreads > 0 && audit.ThreadCapHeld(lib.Version), MemoryMB: p.MemoryMB, Roots: []string{}, ReadOnlyRoots: []string{}}
	memory := uint64(p.MemoryMB) << 20
	kernel := jail.Policy{NoNetwork: !p.Network, MemoryBytes: memory}
	if p.Jail {
		kernel = jail.Session(rw, ro, p.Network, memory)
		kernel.Shield, kernel.TmpAt = shield, tmp
		kernel.UserReadOnlyRoots = len(p.ReadOnlyRoots) > 0
		acc.Roots, acc.ReadOnlyRoots = rw, ro
	}
	kernel.MaxThreads = p.MaxThreads
	if p.Proxied() {
		kernel.ProxyPort = proxyPort
		acc.Proxy = fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
	}
	st, err := jail.Apply(kernel)
	if err != nil {
		return acc, fmt.Errorf("the sandbox's jail: %w", err)
	}
	// The hook after the kernel layer (both before any Python runs): it
	// follows what the kernel put in force (processes, a /dev/shm of the
	// jail's own).
	hook := audit.Policy{Jail: p.Jail, Processes: st.Processes, ReadWrite: kernel.ReadWrite, ReadOnly: kernel.ReadOnly,
		NoNetwork: !p.Network, MaxThreads: p.MaxThreads, Name: "the sandbox's jail"}
	if st.OwnShm {
		hook.ReadWrite = append(slices.Clip(hook.ReadWrite), "/dev/shm")
	}
	if st.TmpAlias != "" {
		// The temp folder under its short name, for every process.
		hook.ReadWrite = append(slices.Clip(hook.ReadWrite), st.TmpAlias)
		for _, name := range []string{"TMPDIR", "TEMP", "TMP"} {
			os.Setenv(name, st.TmpAlias)
		}
	}
	if !p.Jail {
		hook.Name = "the sandbox session's policy"
	}
	if err := audit.Install(hook); err != nil {
		return acc, fmt.Errorf("the sandbox's jail: %w", err)
	}
	if p.MaxThreads > 0 && !audit.ThreadCapHeld(lib.Version) && st.MaxTasks == 0 {
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

// privateTemp is this interpreter's own temp folder, p<pid> in the
// session's temp folder: a standby starts while the session's live
// interpreter works in its own, which it must not touch (it used to empty
// the one folder they shared, and the live one's tempfile calls failed).
// The folders of interpreters that ended, and anything else there, are
// removed; the jail opens this one only.
func privateTemp(folder session.Folder) (string, error) {
	base := folder.TempDir()
	if st, err := os.Lstat(base); err == nil && !st.IsDir() {
		os.Remove(base)
	}
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the session's temp folder: %w", err)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return "", fmt.Errorf("read the session's temp folder: %w", err)
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "p")); err == nil && e.Name() == "p"+strconv.Itoa(pid) &&
			pid != os.Getpid() && alive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
			return "", fmt.Errorf("empty the session's temp folder: %w", err)
		}
	}
	own := filepath.Join(base, "p"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(own, 0o700); err != nil {
		return "", fmt.Errorf("make the interpreter's temp folder: %w", err)
	}
	return own, nil
}

// alive reports whether process pid exists (another user's too).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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

// trustRoots are the files and folders the session's trust variables name
// (a CA bundle, folders of certificates: SSL_CERT_DIR may list several,
// separated by ':'), which the jail lets the session read: the variables
// reach the session (session.Environ), and a bundle it may not open is no
// use. They come from the user's environment, never from the session.
func trustRoots(getenv func(string) string) []string {
	var roots []string
	for _, name := range session.TrustFiles {
		for _, p := range strings.Split(getenv(name), ":") {
			if filepath.IsAbs(p) {
				roots = append(roots, filepath.Clean(p))
			}
		}
	}
	return roots
}

// sendNoNamespace tells the host, on link, that this child has no
// network namespace, so no listener comes.
func sendNoNamespace(link int) error {
	if _, err := syscall.Write(link, []byte{protocol.NoNetworkNamespace}); err != nil {
		return fmt.Errorf("tell the host the allow list has no network namespace: %w", err)
	}
	return nil
}
