// How the host's C constructors (early_linux.c) read the command lines
// that sandbox/protocol builds (HostArgs, ChildArgs), and the descriptors
// a child inherits. internal/earlyargv's test feeds Go's command lines to
// these functions and compares the numbers with protocol's.
#ifndef VIS_HOST_EARLY_ARGV_H
#define VIS_HOST_EARLY_ARGV_H

#include <stddef.h>
#include <string.h>

// protocol.HostReadyFD: a host keeps it and closes every descriptor past it.
#define VIS_HOST_READY_FD 3

// protocol.LinkFD, StacksFD, CallsFD.
#define VIS_LINK_FD 3
#define VIS_STACKS_FD 4
#define VIS_CALLS_FD 5

// vis_sandbox_command reports whether argv is `vis-agent sandbox NAME ...`.
static inline int vis_sandbox_command(int argc, char **argv, const char *name) {
	return argc >= 3 && argv != NULL && strcmp(argv[1], "sandbox") == 0 && strcmp(argv[2], name) == 0;
}

// vis_arg is the value of the option name in `vis-agent sandbox NAME ...`
// (`--name VALUE` only: protocol.HostArgs writes it so), or NULL.
static inline const char *vis_arg(int argc, char **argv, const char *name) {
	for (int i = 3; i + 1 < argc; i++) {
		if (strcmp(argv[i], name) == 0) {
			return argv[i + 1];
		}
	}
	return NULL;
}

// vis_policy_jailed reports whether a host's --policy has the jail. The Go
// side marshals protocol.Policy with "jail" first.
static inline int vis_policy_jailed(const char *policy) {
	return policy != NULL && strncmp(policy, "{\"jail\":true,", 13) == 0;
}

// vis_policy_proxied reports whether a host's --policy is an allow list
// (protocol.Policy.Proxied: the network on, with hosts). The Go side
// marshals "hosts" right after "network".
static inline int vis_policy_proxied(const char *policy) {
	return policy != NULL && strstr(policy, "\"network\":true,\"hosts\":{") != NULL;
}

// vis_child_args fills args (8 slots) with the command line of an
// interpreter child of the session in dir, as protocol.ChildArgs writes it.
static inline void vis_child_args(char **args, char *argv0, const char *dir, int drop_privileges, int own_network) {
	int n = 0;
	args[n++] = argv0;
	args[n++] = "sandbox";
	args[n++] = "child";
	args[n++] = "--dir";
	args[n++] = (char *)dir;
	if (drop_privileges) {
		args[n++] = "--drop-privileges";
	}
	if (own_network) {
		args[n++] = "--own-network";
	}
	args[n] = NULL;
}

#endif
