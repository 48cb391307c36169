// The jail's audit hook: a CPython audit hook written in C, its policy in
// C memory, installed before the interpreter starts. No Python object
// holds the policy, so nothing Python code can reach (gc.get_objects,
// sys.addaudithook, swapping builtins.open) weakens it.
#ifndef VIS_JAIL_AUDIT_H
#define VIS_JAIL_AUDIT_H

// vis_audit_add_root adds a file root (writable or read only) to the
// policy, made canonical (realpath of its deepest existing ancestor). It
// returns NULL, or why it cannot (the hook is already installed, the path
// is not absolute or too long).
const char *vis_audit_add_root(const char *path, int writable);

// vis_audit_install fixes the policy and installs the hook; the library
// must be loaded, and the interpreter not yet started. jail confines files
// to the roots and refuses CPython's test modules, and new processes and
// signals to others unless processes; network 0 refuses
// sockets but AF_UNIX and name lookups; max_threads caps the Python threads
// (-1: no cap), also without the jail; policy names the policy in every
// refusal. It returns NULL or what went wrong; a second call is refused.
const char *vis_audit_install(int jail, int processes, int network, int max_threads, const char *policy);

#endif
