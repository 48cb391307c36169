// Package jail applies the kernel layer of vis-agent's jail to the current
// process: Landlock file roots and TCP rules, a seccomp filter, no_new_privs,
// no capabilities, rlimits and a pids cgroup, on every thread, before
// untrusted code runs.
//
// It is the layer under the C audit hook (sandbox/jail/audit): the hook
// refuses with a clear Python error, the kernel layer still holds when the
// hook is bypassed (ctypes, a C extension, a child process). Restrictions are
// one-way: nothing in a jailed process, its threads or its children can
// lift them.
//
// Every layer is applied to all threads of the process, including threads
// started before Apply (Go's own and any pthread): Landlock and
// no_new_privs through libpsx (go-landlock), capabilities through libcap's
// cap package (also psx), seccomp with SECCOMP_FILTER_FLAG_TSYNC. The
// seccomp filter is assembled here with golang.org/x/net/bpf rather than
// with go-seccomp-bpf, because that library lets a syscall from a foreign
// architecture (int 0x80 on amd64) through to its default action, which
// for a deny list is "allow".
//
// Where the kernel lacks a layer, Apply does what it can and Status says
// what is missing, for the caller to show.
package jail
