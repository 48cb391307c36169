// The part of a jailed sandbox child's kernel layer that is cheap before
// the Go runtime starts and costly after: dropping the capability bounding
// set and setting no_new_privs. Both are per thread. Here the process has
// one thread, and every thread Go starts later inherits them; once Go runs,
// each of the ~41 bounding-set drops is a psx call that stops every thread
// (3 ms of a new session's first block, more under load).
//
// It runs only for `vis-agent sandbox child ... --drop-privileges ...`, the
// command line a host gives a child whose policy drops privileges (see
// protocol.DropPrivilegesFlag). Apply still checks and completes both: a
// drop the kernel refused here (no CAP_SETPCAP) is left to it.
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>

#include "early_argv.h"

#ifndef PR_CAPBSET_READ
#define PR_CAPBSET_READ 23
#endif
#ifndef PR_CAPBSET_DROP
#define PR_CAPBSET_DROP 24
#endif
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif

__attribute__((constructor)) static void vis_jail_early(int argc, char **argv, char **envp) {
	(void)envp;
	if (!vis_drop_privileges_wanted(argc, argv)) {
		return;
	}
	// PR_CAPBSET_READ fails past the kernel's last capability.
	for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++) {
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
