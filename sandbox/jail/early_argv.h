// Which command line early_linux.c's constructor acts on: a sandbox child
// given protocol.DropPrivilegesFlag (protocol.ChildArgs writes it).
// internal/earlyargv's test feeds Go's command lines to it.
#ifndef VIS_JAIL_EARLY_ARGV_H
#define VIS_JAIL_EARLY_ARGV_H

#include <stddef.h>
#include <string.h>

// vis_child_flag reports whether argv is `vis-agent sandbox child ...
// flag ...`.
static inline int vis_child_flag(int argc, char **argv, const char *flag) {
	if (argc < 4 || argv == NULL || strcmp(argv[1], "sandbox") != 0 || strcmp(argv[2], "child") != 0) {
		return 0;
	}
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], flag) == 0) {
			return 1;
		}
	}
	return 0;
}

static inline int vis_drop_privileges_wanted(int argc, char **argv) {
	return vis_child_flag(argc, argv, "--drop-privileges");
}

// protocol.NetworkEnv.
#define VIS_OWN_NETWORK_ENV "VIS_AGENT_OWN_NETWORK"

// vis_own_network_wanted reports whether the process gets a network
// namespace of its own: a child given protocol.NetworkFlag, or any command
// whose NetworkEnv (env: its value, NULL when unset) is 1.
static inline int vis_own_network_wanted(int argc, char **argv, const char *env) {
	return vis_child_flag(argc, argv, "--own-network") || (env != NULL && strcmp(env, "1") == 0);
}

#endif
