package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The policy a session's child runs under, what the kernel put in force of
// it, and the limits of a block that host and clients share.

// Timeouts of a block, shared by the host, which enforces them, and the
// clients, which say what a requested timeout becomes.
const (
	DefaultTimeout = 300 * time.Second
	MinTimeout     = 3 * time.Second
	MaxTimeout     = 35 * time.Minute
)

// ClampTimeout keeps a requested timeout within [MinTimeout, MaxTimeout];
// zero is the default.
func ClampTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultTimeout
	case d < MinTimeout:
		return MinTimeout
	case d > MaxTimeout:
		return MaxTimeout
	}
	return d
}

// Policy is the jail of a session's interpreter child, fixed when the
// child starts.
type Policy struct {
	// Jail confines files to the roots and refuses new processes, signals
	// to other processes and foreign code (the audit hook and the kernel).
	Jail bool `json:"jail"`
	// Network: sockets and name lookups allowed.
	Network bool `json:"network"`
	// Hosts, with Network, is an allow list: the child and its commands
	// reach nothing but the host's proxy, which lets through the hosts
	// it allows (sandbox/netpolicy's patterns, sets expanded).
	Hosts *Hosts `json:"hosts,omitempty"`
	// MaxThreads caps the interpreter's threads, also without the jail
	// (0: no cap).
	MaxThreads int `json:"max_threads"`
	// MemoryMB caps the child's address space, also without the jail (0:
	// no cap).
	MemoryMB int `json:"memory_mb"`
	// Roots and ReadOnlyRoots are extra folders the jailed code may write,
	// or read, besides the workspace, the session's folder and Python's.
	Roots         []string `json:"roots,omitempty"`
	ReadOnlyRoots []string `json:"read_only_roots,omitempty"`
}

// Hosts are the allow and deny lists of a session's network.
type Hosts struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny,omitempty"`
}

// Proxied reports whether p's network is the host's proxy alone.
func (p Policy) Proxied() bool { return p.Network && p.Hosts != nil }

// NetworkText is the network of p in a few words: "off", "on", or
// "allow pypi.org, files.pythonhosted.org (deny x.org)".
func (p Policy) NetworkText() string {
	switch {
	case !p.Network:
		return "off"
	case p.Hosts == nil:
		return "on"
	}
	s := "allow " + strings.Join(p.Hosts.Allow, ", ")
	if len(p.Hosts.Allow) == 0 {
		s = "allow nothing"
	}
	if len(p.Hosts.Deny) > 0 {
		s += " (deny " + strings.Join(p.Hosts.Deny, ", ") + ")"
	}
	return s
}

// Equal reports whether p and q are the same policy.
func (p Policy) Equal(q Policy) bool {
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(q)
	return string(a) == string(b)
}

// String is a short description for notices and listings:
// "jail on, network on, 64 threads, 4096 MB".
func (p Policy) String() string {
	onOff := map[bool]string{true: "on", false: "off"}
	s := fmt.Sprintf("jail %s, network %s", onOff[p.Jail], p.NetworkText())
	if p.MaxThreads > 0 {
		s += fmt.Sprintf(", %d threads", p.MaxThreads)
	}
	if p.MemoryMB > 0 {
		s += fmt.Sprintf(", %d MB", p.MemoryMB)
	}
	switch n := len(p.Roots) + len(p.ReadOnlyRoots); n {
	case 0:
	case 1:
		s += ", 1 extra root"
	default:
		s += fmt.Sprintf(", %d extra roots", n)
	}
	return s
}

// KernelStatus says which layers of the kernel (sandbox/jail) are in force
// after jail.Apply; its JSON form is what a session shows (session.access)
// and what `sandbox confine` reports to the host.
type KernelStatus struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 when it has none.
	LandlockABI int  `json:"landlock_abi"`
	Files       bool `json:"files"`      // file roots enforced (Landlock)
	TCP         bool `json:"tcp"`        // TCP bind/connect refused (Landlock ABI 4)
	ScopedIPC   bool `json:"scoped_ipc"` // signals and abstract sockets scoped (Landlock ABI 6)
	Seccomp     bool `json:"seccomp"`    // the seccomp filter is loaded on every thread
	// NoUnixSockets: seccomp refuses new unix sockets (socketpair of
	// stream sockets only), where Landlock cannot confine socket files.
	NoUnixSockets bool `json:"no_unix_sockets"`
	// ProxyPort: the process's network namespace holds only a loopback,
	// where the proxy listens at this port, the one TCP connect allows.
	ProxyPort int `json:"proxy_port,omitempty"`
	// NoOtherProcesses: seccomp refuses calls that change another process.
	NoOtherProcesses bool `json:"no_other_processes"`
	// NoSysVIPC: seccomp refuses System V IPC.
	NoSysVIPC   bool   `json:"no_sysv_ipc"`
	NoNewPrivs  bool   `json:"no_new_privs"` // on every thread
	NoCaps      bool   `json:"no_caps"`      // no capability left that an exec could use
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// ReadOnlyMounts: every mount but the writable roots is read-only
	// (Shield), so no file outside them changes mode, times or extended
	// attributes. ReadOnly are the paths inside the writable roots kept
	// read-only; HiddenSessions, the sessions folder shown empty but for
	// the session's own.
	ReadOnlyMounts bool     `json:"read_only_mounts"`
	ReadOnly       []string `json:"read_only,omitempty"`
	HiddenSessions string   `json:"hidden_sessions,omitempty"`
	// OnlyRoots: the process's mount tree holds only its roots (and a
	// /proc of its own): a path outside them does not exist for it.
	OnlyRoots bool `json:"only_roots"`
	// Namespaces are the kernel namespaces the process has of its own
	// rather than the user's: mount, ipc, uts, cgroup, network.
	Namespaces []string `json:"namespaces,omitempty"`
	// Processes: the process may start others, all inside its pids
	// cgroup (ProcessesInTaskGroup).
	Processes bool `json:"processes"`
	// OwnShm: /dev/shm is an empty tmpfs of the process's own.
	OwnShm bool `json:"own_shm"`
	// TmpAlias is where the tree shows TmpAt too, "" nowhere.
	TmpAlias string `json:"tmp_alias,omitempty"`
	// MaxTasks is the pids.max of the process's cgroup, 0 when none.
	MaxTasks int `json:"max_tasks,omitempty"`
	// Missing names, one sentence each, what the policy asked for and the
	// kernel could not enforce.
	Missing []string `json:"missing,omitempty"`
}

// String is a one-line summary for a user.
func (s KernelStatus) String() string {
	var on []string
	add := func(ok bool, name string) {
		if ok {
			on = append(on, name)
		}
	}
	if s.LandlockABI > 0 {
		on = append(on, fmt.Sprintf("landlock ABI %d", s.LandlockABI))
	}
	add(s.Files, "file roots")
	add(s.TCP, "no TCP")
	add(s.ScopedIPC, "scoped signals")
	add(s.Seccomp, "seccomp")
	add(s.NoUnixSockets, "no unix sockets")
	add(s.NoOtherProcesses, "other processes untouchable")
	add(s.NoSysVIPC, "no System V IPC")
	add(s.NoNewPrivs, "no_new_privs")
	add(s.NoCaps, "no capabilities")
	if s.MemoryBytes > 0 {
		on = append(on, fmt.Sprintf("address space %d MiB", s.MemoryBytes>>20))
	}
	if s.MaxTasks > 0 {
		on = append(on, fmt.Sprintf("%d tasks", s.MaxTasks))
	}
	add(s.Processes, "processes in the pids cgroup")
	add(s.ReadOnlyMounts, "read-only mounts")
	add(s.OnlyRoots, "only the roots in sight")
	if len(s.Namespaces) > 0 {
		on = append(on, "own namespaces: "+strings.Join(s.Namespaces, " "))
	}
	if len(s.ReadOnly) > 0 {
		on = append(on, "read-only "+strings.Join(s.ReadOnly, " "))
	}
	text := "kernel layer: " + strings.Join(on, ", ")
	if len(on) == 0 {
		text = "kernel layer: none"
	}
	if len(s.Missing) > 0 {
		text += "; missing: " + strings.Join(s.Missing, "; ")
	}
	return text
}
