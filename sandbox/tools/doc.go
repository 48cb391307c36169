// Package tools runs the tools a sandbox session offers its code from the
// host: cat, grep and patch on files inside the session's roots, and shell
// commands confined with bubblewrap. Results are plain structs that encode
// to JSON, for the host to hand to the session's Python.
//
// Files: every path is made absolute (relative to the workspace) and
// resolved as the kernel would (symlinks, then ".."), then must be under a
// root (a writable one for patch) and not hidden, unless the session is
// unconfined; the resolved path is then opened relative to a descriptor of
// the root that holds it, beneath it and refusing any symlink on the way
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), and grep walks folders one
// name at a time from their descriptors, so a folder swapped for a link
// after the check leads nowhere.
//
// Commands: unconfined, `/bin/sh -c` runs as the host does. Confined, it
// runs under bubblewrap, where the command finds: /usr and the /bin, /sbin,
// /lib* links or folders read-only; of /etc only what programs need (the
// loader's cache, passwd and group, resolver files, certificates, time
// zone, Debian's alternatives); the read-only roots read-only and the
// writable roots writable; a private empty /tmp (also HOME); its own /proc
// and a minimal /dev; nothing else (no /root, /home, /var, /run, the
// host's socket or store). It has no capability even as root, no_new_privs,
// its own PID, IPC and UTS namespaces, its own session, and without the
// network its own network namespace with only a loopback. Its environment
// is PATH, HOME, TMPDIR, TERM, PWD and the host's locale. Where bubblewrap
// is missing or cannot create namespaces, confined commands are refused
// with the way to enable them; they never run unconfined.
package tools
