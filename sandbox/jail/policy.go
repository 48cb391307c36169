package jail

// Policy is what the kernel layer enforces. The zero value restricts
// nothing; each field turns one restriction on.
type Policy struct {
	// ConfineFiles limits file access to ReadWrite and ReadOnly (plus the
	// system files in SystemReadOnly and SystemReadWrite, which the caller
	// adds when it wants them). Roots that do not exist are skipped. On a
	// kernel whose Landlock cannot confine unix socket files (ABI < 9) it
	// also refuses new unix sockets (seccomp): socket(AF_UNIX, ...), and
	// socketpair but of stream sockets, which reach nothing but their
	// pair; otherwise a socket file outside the roots (a local service,
	// a session's own host) would be one connect or sendmsg away. Not
	// where the process's tree holds only its roots and abstract sockets
	// are scoped (Shield, ScopeIPC): no such file is there to reach.
	ConfineFiles bool
	ReadWrite    []string
	ReadOnly     []string
	// NoNetwork refuses TCP bind and connect (Landlock), every socket
	// family but AF_UNIX (seccomp: UDP, MPTCP, raw and netlink sockets, and
	// with them name lookups), io_uring, and reaching into other processes
	// (ptrace, process_vm_*, pidfd_getfd), module loading, kexec and bpf.
	NoNetwork bool
	// ProxyPort, when not 0 (and NoNetwork is not set), is the network of
	// a session with an allow list: the process must run in a network
	// namespace that holds nothing but a loopback (its own, made before
	// its first thread: protocol.NetworkFlag, or bubblewrap's), on which its host's
	// proxy listens at 127.0.0.1:ProxyPort; Apply refuses to go on in any
	// other. Landlock lets TCP connect to that port only and bind none;
	// seccomp lets sockets be made of the families unix, inet and inet6
	// only (no netlink, packet or vsock, which no namespace holds back)
	// and refuses every way to enter or make a namespace, so the process
	// stays where the proxy is the only way out; and, as under NoNetwork,
	// io_uring and reaching into other processes.
	ProxyPort int
	// NoNewProcesses refuses fork, vfork and clone without CLONE_THREAD:
	// threads still start, processes do not.
	NoNewProcesses bool
	// ProcessesInTaskGroup lifts NoNewProcesses once the pids cgroup of
	// MaxThreads holds the process: every process the jailed code starts,
	// and theirs, counts against its cap and inherits the whole kernel
	// layer, and the host ends them all with the process (EndTaskGroup),
	// whatever session or process group they made. Without the cgroup no
	// process starts.
	ProcessesInTaskGroup bool
	// PrivateShm gives the process's tree (Shield) an empty tmpfs of its
	// own at /dev/shm, writable (multiprocessing's semaphores live there),
	// never the machine's.
	PrivateShm bool
	// UserReadOnlyRoots: the read-only roots include folders the user
	// named (--read-only-root), which may hold a service's socket file;
	// where Landlock cannot confine socket files, unix sockets stay
	// refused even in a tree of only the roots.
	UserReadOnlyRoots bool
	// TmpAt, when not "", is a writable root the tree (Shield) shows at
	// a short path too, /tmp (or /var/tmp where a root is in /tmp): the
	// interpreter's temp folder (a unix socket's path is at most 107
	// bytes; multiprocessing's forkserver binds one in the temp folder).
	TmpAt string
	// NoOtherProcesses refuses (seccomp) the calls that change another
	// process named by its pid, its process group or its user: limits
	// (prlimit), priority, CPUs and scheduling, I/O priority, memory
	// placement; and kcmp, process_madvise and process_mrelease. Signals
	// are Landlock's (ScopeIPC), ptrace and process_vm_* NoNetwork's and
	// DropPrivileges'.
	NoOtherProcesses bool
	// NoSysVIPC refuses System V IPC (shared memory, semaphores, message
	// queues; seccomp), which another process's namespace would share.
	NoSysVIPC bool
	// DropPrivileges drops every capability (effective, permitted,
	// inheritable, ambient and the bounding set), so a process running as
	// root cannot chroot, mount, open raw sockets, ptrace, raise an rlimit
	// or change owners, and an exec cannot give them back; it also refuses
	// those and the other administrative system calls with seccomp, and
	// every way to make a namespace (unshare, setns, clone's CLONE_NEW*
	// flags; clone3, whose flags seccomp cannot read, says ENOSYS).
	DropPrivileges bool
	// ScopeIPC keeps signals and abstract unix sockets inside the jail: a
	// jailed process cannot signal or connect to a process outside it,
	// while the parent can still signal it (Landlock ABI 6).
	ScopeIPC bool
	// MemoryBytes, when not 0, caps the address space (RLIMIT_AS, soft and
	// hard): an allocation past it fails (MemoryError in Python).
	MemoryBytes uint64
	// Shield keeps files inside the writable roots read-only (and other
	// sessions out of sight) through a mount namespace of the process's
	// own, made before its first thread (protocol.DropPrivilegesFlag):
	// without one, Apply refuses, saying why and how.
	Shield Shield
	// MaxThreads, when not 0, caps the threads of the thread calling
	// Apply, which must be the one that runs the untrusted code, through a
	// pids cgroup of its own: that thread and every thread it (or they)
	// start count, a few more are left for the Go runtime, and past it no
	// thread starts, whatever starts it.
	MaxThreads int
}

// SystemReadOnly are the files every program on this system reads: shared
// libraries, the loader's cache, time zones, random devices, and the
// CPUs' topology (os.cpu_count, psutil, loky and mypy count them there).
var SystemReadOnly = []string{
	"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache",
	"/etc/localtime", "/usr/share/zoneinfo", "/dev/urandom", "/dev/random", "/dev/zero",
	"/sys/devices/system/cpu",
}

// SystemReadWrite are the files every program may write: /dev/null.
var SystemReadWrite = []string{"/dev/null"}

// SystemDirs are the folders of the system's programs and libraries,
// read-only in every jailed process's tree (where one is a symlink,
// Debian's merged /usr, the same symlink is made inside).
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// SystemEtc are the files of /etc a program needs: the loader's cache,
// users and groups (no passwords: /etc/shadow stays out), time zone,
// Debian's alternatives (the targets of /usr/bin/awk and friends) and
// fontconfig's configuration (matplotlib runs fc-list to find the fonts,
// which without it printed "Fontconfig error: Cannot load default config
// file" into the block's output). The rest of /etc stays out; NetworkEtc
// comes with the network.
var SystemEtc = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone",
	"/etc/mime.types", "/etc/os-release", "/etc/debian_version", "/etc/fonts",
}

// NetworkEtc are what name lookups and TLS read: the resolver's files
// and the certificates.
var NetworkEtc = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
	"/etc/services", "/etc/protocols", "/etc/ssl", "/usr/share/ca-certificates", "/etc/ca-certificates",
}

// shmDir is where PrivateShm mounts its tmpfs.
const shmDir = "/dev/shm"

// Session is the policy of a jailed sandbox session's child: files
// confined to the writable and read-only roots (the system's own files,
// programs and libraries added, not NetworkEtc: the caller adds it with
// the network; and a /dev/shm of its own), new processes
// only inside its pids cgroup, other processes untouchable, no System V
// IPC, no privileges, IPC scoped, the network as asked, the address
// space of each process capped at memoryBytes (0: no cap).
// A proxied network is set on the result (ProxyPort).
func Session(readWrite, readOnly []string, network bool, memoryBytes uint64) Policy {
	ro := append(append([]string(nil), readOnly...), SystemReadOnly...)
	ro = append(append(ro, SystemDirs...), SystemEtc...)
	return Policy{
		ConfineFiles:         true,
		ReadWrite:            append(append([]string(nil), readWrite...), SystemReadWrite...),
		ReadOnly:             ro,
		NoNetwork:            !network,
		NoNewProcesses:       true,
		ProcessesInTaskGroup: true,
		PrivateShm:           true,
		NoOtherProcesses:     true,
		NoSysVIPC:            true,
		DropPrivileges:       true,
		ScopeIPC:             true,
		MemoryBytes:          memoryBytes,
	}
}

// Command is the policy of a command a jailed session runs (shell()):
// the child's kernel layer but for new processes, which a command needs.
// Files are confined to the writable and read-only roots, which the
// caller gives with what bubblewrap mounts around them; other processes
// are untouchable, privileges and namespaces gone, signals and abstract
// sockets scoped, the network as asked, and the address space of each
// process capped at memoryBytes (0: no cap).
func Command(readWrite, readOnly []string, network bool, memoryBytes uint64) Policy {
	p := Session(readWrite, readOnly, network, memoryBytes)
	p.NoNewProcesses, p.ProcessesInTaskGroup, p.PrivateShm, p.TmpAt = false, false, false, ""
	return p
}

// NoNetwork is the policy of `vis-agent python --no-network`: the network
// refused, everything else as python has it.
func NoNetwork() Policy { return Policy{NoNetwork: true} }
