package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/cap"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Apply restricts the current process, all its threads and every process
// it starts later to p, for good. It returns what is in force; an error
// means a layer the kernel has failed unexpectedly, and the process may be
// partly restricted, so the caller must not run untrusted code.
func Apply(p Policy) (protocol.KernelStatus, error) {
	var st protocol.KernelStatus
	if abi, err := llsys.LandlockGetABIVersion(); err == nil {
		st.LandlockABI = abi
	}
	if p.DropPrivileges && ownNamespaces() {
		// Made by the C constructor, in one unshare (early_linux.c).
		st.Namespaces = append(st.Namespaces, "mount", "ipc", "uts")
	}
	if proxied(p) && NetworkNamespaceErr() == nil {
		st.Namespaces = append(st.Namespaces, "network")
	}
	if p.MemoryBytes > 0 {
		lim := unix.Rlimit{Cur: p.MemoryBytes, Max: p.MemoryBytes}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
			return st, fmt.Errorf("limit the address space to %d bytes: %w", p.MemoryBytes, err)
		}
		st.MemoryBytes = p.MemoryBytes
	}
	// Before the capabilities go: joining a cgroup needs root's access.
	if p.MaxThreads > 0 {
		if max, err := limitTasks(p.MaxThreads, p.ProcessesInTaskGroup); err != nil {
			st.Missing = append(st.Missing, fmt.Sprintf("threads: the kernel does not cap them (%v)", err))
		} else {
			st.MaxTasks = max
		}
	}
	if p.ProcessesInTaskGroup {
		if st.MaxTasks > 0 {
			p.NoNewProcesses, st.Processes = false, true
		} else {
			st.Missing = append(st.Missing, "processes: no pids cgroup holds them (it needs root or a delegated cgroup), so the jailed code starts none; shell() runs commands")
		}
	}
	// Before the capabilities go: a cgroup namespace needs them, and
	// after the cgroup is joined, rooted at it; per thread, hence psx.
	if p.DropPrivileges && ownNamespaces() {
		if _, _, errno := psx.Syscall3(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, 0, 0); errno != 0 {
			st.Missing = append(st.Missing, fmt.Sprintf("namespaces: the cgroup namespace could not be made (%v), so the child sees the machine's cgroup paths", errno))
		} else {
			st.Namespaces = append(st.Namespaces, "cgroup")
		}
	}
	// Before the capabilities go: mounting needs them; after the cgroup,
	// which is out of the tree after it.
	if !p.Shield.Empty() {
		switch res, err := applyTree(p.Shield, p.ReadWrite, p.ReadOnly, treeExtras{privateShm: p.PrivateShm, tmpAt: p.TmpAt}); {
		case errors.Is(err, errNoNamespace):
			st.Missing = append(st.Missing, fmt.Sprintf("files: %v, so the kernel shows the names, sizes and times of files outside the roots (Landlock refuses opening them only) and does not refuse changing their mode, times or extended attributes; the audit hook does", err))
		case err != nil:
			return st, err
		default:
			st.ReadOnlyMounts, st.OnlyRoots = true, true
			st.ReadOnly, st.HiddenSessions = p.Shield.ReadOnly, p.Shield.Sessions
			if !res.ownProc {
				st.Missing = append(st.Missing, "processes: this process could not make a /proc of its own (it needs root), so the ids of the machine's processes can be listed (not opened)")
			}
			for _, s := range res.skipped {
				st.Missing = append(st.Missing, "roots: left out of the jail's tree: "+s)
			}
			if res.ownShm {
				p.ReadWrite = append(slices.Clip(p.ReadWrite), shmDir)
				st.OwnShm = true
			}
			st.TmpAlias = res.tmpAt
		}
	}
	// Before the capabilities go (and Landlock hides /proc): the
	// namespace a proxied network needs.
	if proxied(p) {
		if err := checkLoopbackOnly(); err != nil {
			return st, err
		}
		st.ProxyPort = p.ProxyPort
	}
	if p.DropPrivileges {
		if err := dropCapabilities(); err != nil {
			return st, err
		}
	}
	if needsSeccomp(p) && !earlyNoNewPrivs() {
		// Per thread, hence psx; seccomp needs it, and with it an exec
		// cannot gain privileges (setuid, file capabilities, root's).
		if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); errno != 0 {
			return st, fmt.Errorf("set no_new_privs: %w", errno)
		}
	}
	loaded := false
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); needsSeccomp(p) && err != nil {
		st.Missing = append(st.Missing, "seccomp: this kernel has no seccomp filters, so socket families, new processes and administrative calls are not refused by the kernel")
	} else if needsSeccomp(p) {
		noUnix := p.ConfineFiles && st.LandlockABI < abiUnixSockets && !unixInTree(p, st)
		raw, err := filter(p, noUnix)
		if err != nil {
			return st, err
		}
		if err := loadFilter(raw); err != nil {
			return st, fmt.Errorf("load the seccomp filter: %w", err)
		}
		loaded = true
		st.NoUnixSockets, st.NoOtherProcesses, st.NoSysVIPC = noUnix, p.NoOtherProcesses, p.NoSysVIPC
	}
	// Check, not trust: every thread's own view of what it holds.
	if err := verifyThreads(p, loaded, &st); err != nil {
		return st, err
	}
	// Landlock last: once files are confined, /proc is out of reach.
	if err := applyLandlock(p, &st); err != nil {
		return st, err
	}
	return st, nil
}

// dropCapabilities empties every capability set of every thread: the
// bounding set first (that needs CAP_SETPCAP, the last thing dropped),
// then ambient, then inheritable, permitted and effective. Without
// CAP_SETPCAP (not root) the bounding set stays, and no_new_privs is what
// keeps an exec from using it.
func dropCapabilities() error {
	if on, err := cap.GetProc().GetFlag(cap.Effective, cap.SETPCAP); err == nil && on {
		for v := cap.Value(0); v < cap.MaxBits(); v++ {
			// Reading is this thread's alone; a value the early
			// constructor (protocol.DropPrivilegesFlag) dropped before
			// Go's threads started is gone from all of them.
			if in, err := cap.GetBound(v); err == nil && !in {
				continue
			}
			if err := cap.DropBound(v); err != nil {
				return fmt.Errorf("drop %s from the bounding set: %w", v, err)
			}
		}
	}
	if err := cap.ResetAmbient(); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	if err := cap.NewSet().SetProc(); err != nil {
		return fmt.Errorf("drop the capabilities: %w", err)
	}
	return nil
}

// earlyNoNewPrivs reports whether no_new_privs was set before any thread
// started (protocol.DropPrivilegesFlag): then every thread has it. Apply's thread check
// confirms it.
func earlyNoNewPrivs() bool {
	if on, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || on != 1 {
		return false
	}
	all := true
	err := eachThread(func(f map[string]string) { all = all && f["NoNewPrivs"] == "1" })
	return err == nil && all
}

// eachThread calls fn with the fields of every thread's status
// (/proc/PID/task/TID/status), but those of threads that ended meanwhile.
func eachThread(fn func(fields map[string]string)) error {
	return eachThreadFile("status", func(data []byte) { fn(statusFields(string(data))) })
}

// eachThreadFile calls fn with every thread's file name
// (/proc/PID/task/TID/name), but those of threads that ended meanwhile.
func eachThreadFile(name string, fn func(data []byte)) error {
	dir := fmt.Sprintf("/proc/%d/task", os.Getpid())
	tids, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list this process's threads: %w", err)
	}
	for _, tid := range tids {
		data, err := os.ReadFile(filepath.Join(dir, tid.Name(), name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended
			}
			return fmt.Errorf("read thread %s's %s: %w", tid.Name(), name, err)
		}
		fn(data)
	}
	return nil
}

// verifyThreads reads every thread's status and sets st's seccomp,
// no_new_privs and capability fields only when all threads show them. A
// thread that shows less than the policy and the loaded filter promise is
// an error: it could run code outside the jail.
func verifyThreads(p Policy, loaded bool, st *protocol.KernelStatus) error {
	seccompAll, nnpAll, capsAll := true, true, true
	err := eachThread(func(f map[string]string) {
		seccompAll = seccompAll && f["Seccomp"] == "2"
		nnp := f["NoNewPrivs"] == "1"
		nnpAll = nnpAll && nnp
		noCaps := true
		for _, set := range []string{"CapEff", "CapPrm", "CapInh", "CapAmb"} {
			noCaps = noCaps && isZeroHex(f[set])
		}
		capsAll = capsAll && noCaps && (isZeroHex(f["CapBnd"]) || nnp)
	})
	if err != nil {
		return err
	}
	st.Seccomp = loaded && seccompAll
	st.NoNewPrivs = nnpAll
	st.NoCaps = capsAll
	switch {
	case loaded && !seccompAll:
		return errors.New("a thread of this process runs without the seccomp filter")
	case p.DropPrivileges && !capsAll:
		return errors.New("a thread of this process still holds capabilities")
	}
	return nil
}

// statusFields parses /proc/…/status lines "Name:\tvalue".
func statusFields(s string) map[string]string {
	f := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}

func isZeroHex(s string) bool {
	n, err := strconv.ParseUint(s, 16, 64)
	return err == nil && n == 0
}

// applyLandlock enforces the file roots, the TCP rules and the IPC scopes
// on every thread (go-landlock goes through psx in a cgo binary), as far
// as the kernel's ABI allows, and records what it could not.
func applyLandlock(p Policy, st *protocol.KernelStatus) error {
	var cfg landlock.Config
	var rules []landlock.Rule
	if p.ConfineFiles {
		cfg.HandledAccessFS = landlock.V11.HandledAccessFS
		var err error
		if rules, err = rootRules(p.ReadWrite, p.ReadOnly, st.LandlockABI); err != nil {
			return err
		}
	}
	if p.NoNetwork {
		// No rule: no port may be bound or connected to. V10 adds UDP
		// where the kernel has it; seccomp refuses UDP sockets anyway.
		cfg.HandledAccessNet = landlock.V11.HandledAccessNet
	} else if proxied(p) {
		// TCP to the proxy's port only; UDP reaches nothing but the
		// loopback of the namespace.
		cfg.HandledAccessNet = landlock.V4.HandledAccessNet
		rules = append(rules, landlock.ConnectTCP(uint16(p.ProxyPort)))
	}
	if p.ScopeIPC {
		cfg.Scoped = landlock.V11.Scoped
	}
	if st.LandlockABI == 0 {
		if p.ConfineFiles || p.NoNetwork || proxied(p) || p.ScopeIPC {
			st.Missing = append(st.Missing, "landlock: this kernel has no Landlock (Linux 5.13+ with landlock in lsm=), so file roots, TCP rules and signal scoping are not enforced by the kernel")
		}
		return nil
	}
	if cfg.HandledAccessFS == 0 && cfg.HandledAccessNet == 0 && cfg.Scoped == 0 {
		return nil
	}
	if err := cfg.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("restrict with Landlock: %w", err)
	}
	st.Files = p.ConfineFiles
	st.TCP = (p.NoNetwork || proxied(p)) && st.LandlockABI >= 4
	st.ScopedIPC = p.ScopeIPC && st.LandlockABI >= 6
	if p.NoNetwork && !st.TCP {
		st.Missing = append(st.Missing, fmt.Sprintf("landlock: ABI %d has no TCP rules (4+), so only seccomp refuses the network", st.LandlockABI))
	}
	if proxied(p) && !st.TCP {
		st.Missing = append(st.Missing, fmt.Sprintf("landlock: ABI %d has no TCP rules (4+), so only the network namespace keeps TCP to the proxy", st.LandlockABI))
	}
	if p.ConfineFiles && st.LandlockABI < abiUnixSockets && !st.NoUnixSockets && !unixInTree(p, *st) {
		st.Missing = append(st.Missing, fmt.Sprintf("landlock: ABI %d does not confine unix socket files (%d+) and seccomp could not refuse unix sockets, so the kernel lets the jail reach local services; the audit hook refuses those outside the roots", st.LandlockABI, abiUnixSockets))
	}
	if p.ScopeIPC && !st.ScopedIPC {
		st.Missing = append(st.Missing, fmt.Sprintf("landlock: ABI %d has no signal scoping (6+), so other processes can be signalled", st.LandlockABI))
	}
	return nil
}

// Landlock ABI versions that matter here.
const (
	abiRefer       = 2 // renames and links across folders
	abiScoped      = 6 // signals and abstract unix sockets scoped
	abiUnixSockets = 9 // connecting to unix socket files
)

// unixInTree reports whether unix sockets reach nothing outside the jail
// without Landlock's socket-file rules: the process's tree holds only its
// roots (no service's socket file, no session host's, outside them), none
// of them a folder the user named read-only (which may hold one), and
// abstract sockets are scoped. Then a process may make them (a
// multiprocessing forkserver, a test's own server).
func unixInTree(p Policy, st protocol.KernelStatus) bool {
	return st.OnlyRoots && p.ScopeIPC && st.LandlockABI >= abiScoped && !p.UserReadOnlyRoots
}

// rootRules are the Landlock rules for the roots: directories with their
// trees, single files alone; a root that does not exist is skipped.
// Writable folders may take renames and links within them (refer), and
// unix sockets in them may be connected to. Refer is asked for only where
// the kernel has it: go-landlock's best effort drops every rule, silently,
// when a rule asks for refer on ABI 1.
func rootRules(readWrite, readOnly []string, abi int) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	add := func(paths []string, dirs func(...string) landlock.FSRule, files func(...string) landlock.FSRule) error {
		for _, path := range paths {
			info, err := os.Stat(path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				continue
			case err != nil:
				return fmt.Errorf("jail root %s: %w", path, err)
			case info.IsDir():
				rules = append(rules, dirs(path))
			default:
				rules = append(rules, files(path))
			}
		}
		return nil
	}
	rwDirs := func(p ...string) landlock.FSRule {
		r := landlock.RWDirs(p...).WithResolveUnix()
		if abi >= abiRefer {
			r = r.WithRefer()
		}
		return r
	}
	if err := add(readWrite, rwDirs, landlock.RWFiles); err != nil {
		return nil, err
	}
	if err := add(readOnly, landlock.RODirs, landlock.ROFiles); err != nil {
		return nil, err
	}
	return rules, nil
}
