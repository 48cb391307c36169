// The part of a jailed sandbox child's kernel layer that is cheap before
// the Go runtime starts and costly (or impossible) after: mount, IPC and
// UTS namespaces of its own, the pids cgroup that holds every thread and
// process of the child, dropping the capability bounding set and setting
// no_new_privs. All are per thread, and unshare(CLONE_NEWUSER) wants a
// single-threaded process. Here the process has one thread, and every
// thread Go starts later inherits them; once Go runs, each of the ~41
// bounding-set drops is a psx call that stops every thread (3 ms of a new
// session's first block, more under load).
//
// It runs only for `vis-agent sandbox child ... --drop-privileges ...`, the
// command line a host gives a child whose policy drops privileges (see
// protocol.DropPrivilegesFlag), and for a proxied network (NetworkFlag,
// NetworkEnv), whose network namespace is made here too. Apply still
// checks and completes the
// privileges: a drop the kernel refused here (no CAP_SETPCAP) is left to
// it. The mount namespace is only made here; Apply mounts in it what the
// policy's Shield keeps read-only, when there is anything to keep (and
// refuses to start when there is and the namespace could not be made).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// mount_ns_errno is 0 once the process has a mount namespace of its own,
// else why not (an errno); -1 when it was not asked for.
static int mount_ns_errno = -1;

int vis_jail_mount_ns_errno(void) { return mount_ns_errno; }

// net_ns_errno is the same for the network namespace of a proxied
// network.
static int net_ns_errno = -1;

int vis_jail_net_ns_errno(void) { return net_ns_errno; }

// in_user_ns: this process made a user namespace of its own here.
static int in_user_ns = 0;

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

// own_namespace unshares the namespace of flag (mounts, network): as root
// (or with CAP_SYS_ADMIN) directly, else inside a user namespace of its
// own, made once, where the process keeps its uid and gid (and the
// capabilities to mount and to bring the loopback up, which Apply drops
// with the rest).
static int own_namespace(int flag) {
	if (unshare(flag) == 0) {
		return 0;
	}
	if (errno != EPERM || in_user_ns) {
		return errno;
	}
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | flag) != 0) {
		return errno;
	}
	in_user_ns = 1;
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

// own_network unshares the network namespace (inside the user namespace
// made for the mounts, or one of its own, when not root) and brings its
// loopback up: all it holds.
static int own_network(void) {
	int e = own_namespace(CLONE_NEWNET);
	if (e != 0) {
		return e;
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		return errno;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (rc == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	e = rc == 0 ? 0 : errno;
	close(s);
	return e;
}

// has_word reports whether the comma-separated list holds word.
static int has_word(const char *list, const char *word) {
	size_t n = strlen(word);
	for (const char *p = list; p != NULL; p = strchr(p, ',')) {
		if (*p == ',') {
			p++;
		}
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0' || p[n] == '\n')) {
			return 1;
		}
	}
	return 0;
}

// pids_v1_group writes to dir (size n) the folder of this process's
// cgroup in the cgroup v1 hierarchy of the pids controller: its mount
// point (/proc/self/mountinfo) joined with the process's path in it
// (/proc/self/cgroup). 0 when there is none (cgroup v2 alone).
static int pids_v1_group(char *dir, size_t n) {
	char mount[4096] = "", path[4096] = "", line[8192];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL) {
		return 0;
	}
	// ID parent major:minor root mountpoint options [optional...] - type source super-options
	while (mount[0] == '\0' && fgets(line, sizeof line, f) != NULL) {
		char *sep = strstr(line, " - ");
		char point[4096], type[64], source[256], opts[4096];
		if (sep != NULL && sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    sscanf(sep + 3, "%63s %255s %4095s", type, source, opts) == 3 &&
		    strcmp(type, "cgroup") == 0 && has_word(opts, "pids")) {
			snprintf(mount, sizeof mount, "%s", point);
		}
	}
	fclose(f);
	if (mount[0] == '\0' || (f = fopen("/proc/self/cgroup", "re")) == NULL) {
		return 0;
	}
	// hierarchy-ID:controllers:path
	while (path[0] == '\0' && fgets(line, sizeof line, f) != NULL) {
		char *controllers = strchr(line, ':');
		char *own = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
		if (own == NULL) {
			continue;
		}
		*own++ = '\0';
		own[strcspn(own, "\n")] = '\0';
		if (has_word(controllers + 1, "pids")) {
			snprintf(path, sizeof path, "%s", own);
		}
	}
	fclose(f);
	return path[0] != '\0' && (size_t)snprintf(dir, n, "%s%s", mount, path) < n;
}

// join_task_group puts the process, while it has one thread, into the
// pids cgroup jail.limitTasks makes for it (tasks_linux.go: the folder
// taskGroupDir, "vis-agent", of its own pids cgroup, then its pid), on a
// cgroup v1 hierarchy: there a cgroup holds threads, and "0" written to
// its tasks moves the calling thread alone (without the wait for an RCU
// grace period that moving a whole process costs). Moved now, before the
// Go runtime starts its threads, the process's every thread is in it, as
// every thread and process they start: none can start a process outside
// the cgroup that the host ends with the child (a block's signal handler
// run on a runtime thread could). limitTasks sets its pids.max; where
// this fails, it moves the whole process itself.
static void join_task_group(void) {
	char base[4096], group[4200], tasks[4300];
	if (!pids_v1_group(base, sizeof base)) {
		return;
	}
	snprintf(group, sizeof group, "%s/vis-agent", base);
	if (mkdir(group, 0755) != 0 && errno != EEXIST) {
		return;
	}
	snprintf(group, sizeof group, "%s/vis-agent/%d", base, (int)getpid());
	snprintf(tasks, sizeof tasks, "%s/tasks", group);
	// Another process's sweep removes an empty group: try again.
	for (int try = 0; try < 3; try++) {
		if ((mkdir(group, 0755) != 0 && errno != EEXIST) || write_file(tasks, "0") == 0 || errno != ENOENT) {
			return;
		}
	}
}

__attribute__((constructor)) static void vis_jail_early(int argc, char **argv, char **envp) {
	(void)envp;
	// A proxied network: a session's child (NetworkFlag), or the program
	// `vis-agent python --allow-host` runs (NetworkEnv).
	int drop = vis_drop_privileges_wanted(argc, argv);
	int net = vis_own_network_wanted(argc, argv, getenv(VIS_OWN_NETWORK_ENV));
	if (!drop && !net) {
		return;
	}
	// First: a new user namespace gives a full bounding set again. With
	// the mounts go the kernel objects a jailed child has no business
	// sharing with the user's processes: SysV IPC and POSIX message queues
	// (a 0600 shared memory segment of the user's is the user's, not the
	// jail's), and the host name. Both are per thread, hence here.
	if (drop) {
		join_task_group();
		mount_ns_errno = own_namespace(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS);
	}
	if (net) {
		net_ns_errno = own_network();
	}
	if (!drop) {
		return;
	}
	// PR_CAPBSET_READ fails past the kernel's last capability.
	for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++) {
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
