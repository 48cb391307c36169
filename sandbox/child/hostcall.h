// The host-call bridge of a sandbox child: the built-in module _vis_host,
// whose call() sends one request to the session's host over an inherited
// socket and returns its answer (framing: sandbox/protocol's calls.go,
// "Host calls"). The socket's number lives in C memory only.
#ifndef VIS_CHILD_HOSTCALL_H
#define VIS_CHILD_HOSTCALL_H

// vis_host_install registers _vis_host as a built-in module calling the
// host over socket fd (made close-on-exec); the library must be loaded and
// the interpreter not yet started. NULL, or what went wrong.
const char *vis_host_install(int fd);

#endif
