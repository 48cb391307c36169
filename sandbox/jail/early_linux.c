// The part of a jailed sandbox child's kernel layer that is cheap before
// the Go runtime starts and costly (or impossible) after: a mount
// namespace of its own, dropping the capability bounding set and setting
// no_new_privs. All are per thread, and unshare(CLONE_NEWUSER) wants a
// single-threaded process. Here the process has one thread, and every
// thread Go starts later inherits them; once Go runs, each of the ~41
// bounding-set drops is a psx call that stops every thread (3 ms of a new
// session's first block, more under load).
//
// It runs only for `vis-agent sandbox child ... --drop-privileges ...`, the
// command line a host gives a child whose policy drops privileges (see
// EarlyFlag in early_linux.go). Apply still checks and completes the
// privileges: a drop the kernel refused here (no CAP_SETPCAP) is left to
// it. The mount namespace is only made here; Apply mounts in it what the
// policy's Shield keeps read-only, when there is anything to keep (and
// refuses to start when there is and the namespace could not be made).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_CAPBSET_READ
#define PR_CAPBSET_READ 23
#endif
#ifndef PR_CAPBSET_DROP
#define PR_CAPBSET_DROP 24
#endif
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif

// mount_ns_errno is 0 once the process has a mount namespace of its own,
// else why not (an errno); -1 when it was not asked for.
static int mount_ns_errno = -1;

int vis_jail_mount_ns_errno(void) { return mount_ns_errno; }

static int early_wanted(int argc, char **argv) {
	if (argc < 4 || argv == NULL || strcmp(argv[1], "sandbox") != 0 || strcmp(argv[2], "child") != 0) {
		return 0;
	}
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--drop-privileges") == 0) {
			return 1;
		}
	}
	return 0;
}

static int write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	ssize_t n = write(fd, text, strlen(text));
	int saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

// own_mount_namespace unshares the mount namespace: as root (or with
// CAP_SYS_ADMIN) directly, else inside a user namespace of its own where
// the process keeps its uid and gid (and the capabilities to mount, which
// Apply drops with the rest).
static int own_mount_namespace(void) {
	if (unshare(CLONE_NEWNS) == 0) {
		return 0;
	}
	if (errno != EPERM) {
		return errno;
	}
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
		return errno;
	}
	char map[64];
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0) {
		return errno;
	}
	if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
		return errno;
	}
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) != 0) {
		return errno;
	}
	return 0;
}

__attribute__((constructor)) static void vis_jail_early(int argc, char **argv, char **envp) {
	(void)envp;
	if (!early_wanted(argc, argv)) {
		return;
	}
	// First: a new user namespace gives a full bounding set again.
	mount_ns_errno = own_mount_namespace();
	// PR_CAPBSET_READ fails past the kernel's last capability.
	for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++) {
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
