// A new session's first interpreter child, started by a C constructor of
// `vis-agent sandbox host` before the host's Go runtime: the child's own
// start (exec, the Go runtime, loading libpython, planning its run) then
// overlaps the host's, instead of following it. The host adopts it
// (early_unsafe_linux.go) when it starts its first child, and sends it its
// session's description as it would to any child; one it does not adopt
// dies with it (SIGKILL on the host's exit, or EOF on its link).
// VIS_SANDBOX_EARLY_CHILD=0 turns it off: the host then starts its first
// child from Go, as it starts every later one.
//
// The child gets what startChild gives one: file descriptors 0 /dev/null,
// 1 and 2 pipes to the host, 3 the protocol link, 4 the stacks pipe, 5 the
// host-call link; its own process group; SIGKILL when the host dies; the
// host's environment; the command line of the Go side's Config.ChildArgs
// (`sandbox child --dir DIR`), with jail.EarlyFlag when the host's
// --policy drops privileges (a jailed one) and protocol.NetworkFlag when
// its network is an allow list (the child makes its namespace and hands
// the host its listener, as one started from Go). A host started without
// --policy (it then reads the user's settings) starts none.
//
// Descriptors: whatever the process that started a host or a child left
// open without close-on-exec (a user's shell: `exec 7<secret` before the
// first `sandbox run`; Go's exec.Command passes such descriptors on) is
// closed here, before Go or any Python runs, so that nothing the sandbox
// starts holds it. A host keeps 0-2 and its ready pipe 3; a child keeps
// 0-5 (see sandbox/child), its own 3-5 close-on-exec from here on, so
// that what it runs before its jail gets none of them.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "early_argv.h"
#include "early_linux.h"

static struct vis_early early = {.pid = -1};

// close_from closes every descriptor from first on.
static void close_from(int first) {
	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0U) == 0) {
		return;
	}
	// Before Linux 5.9: the open ones, as /proc lists them.
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		for (int fd = first; fd < 65536; fd++) {
			close(fd);
		}
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd >= first && fd != dirfd(d)) {
			close(fd);
		}
	}
	closedir(d);
}

static void close_all(int *fds, int n) {
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
		}
	}
}

// in_child sets up the forked child and execs it; it never returns.
static void in_child(pid_t host, char **args, int link, int stacks, int calls, int out, int err) {
	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != host) {
		_exit(1);
	}
	// Out of the way of 0-5 first: the sources may have any of those
	// numbers (the host's fd 3 is its ready pipe).
	int src[5] = {link, stacks, calls, out, err};
	for (int i = 0; i < 5; i++) {
		if ((src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0) {
			_exit(1);
		}
	}
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || (null = fcntl(null, F_DUPFD_CLOEXEC, 10)) < 0) {
		_exit(1);
	}
	// dup2 clears close-on-exec on the copies: the child keeps 0-5 only.
	if (dup2(null, 0) < 0 || dup2(src[3], 1) < 0 || dup2(src[4], 2) < 0 || dup2(src[0], VIS_LINK_FD) < 0 ||
		dup2(src[1], VIS_STACKS_FD) < 0 || dup2(src[2], VIS_CALLS_FD) < 0) {
		_exit(1);
	}
	close_from(VIS_CALLS_FD + 1);
	execv("/proc/self/exe", args);
	_exit(127);
}

__attribute__((constructor)) static void vis_child_descriptors(int argc, char **argv, char **envp) {
	(void)envp;
	if (!vis_sandbox_command(argc, argv, "child")) {
		return;
	}
	close_from(VIS_CALLS_FD + 1);
	for (int fd = VIS_LINK_FD; fd <= VIS_CALLS_FD; fd++) {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
}

__attribute__((constructor)) static void vis_host_early(int argc, char **argv, char **envp) {
	(void)envp;
	if (!vis_sandbox_command(argc, argv, "host")) {
		return;
	}
	close_from(VIS_HOST_READY_FD + 1);
	if (argc < 5) {
		return;
	}
	const char *dir = vis_arg(argc, argv, "--dir");
	const char *policy = vis_arg(argc, argv, "--policy");
	const char *off = getenv("VIS_SANDBOX_EARLY_CHILD");
	if (dir == NULL || policy == NULL || (off != NULL && strcmp(off, "0") == 0)) {
		return;
	}
	early.drops_privileges = vis_policy_jailed(policy);
	early.own_network = vis_policy_proxied(policy);
	char *args[8];
	vis_child_args(args, argv[0], dir, early.drops_privileges, early.own_network);
	int link[2] = {-1, -1}, calls[2] = {-1, -1}, stacks[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link) != 0 ||
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, calls) != 0 || pipe2(stacks, O_CLOEXEC) != 0 ||
		pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		int all[] = {link[0], link[1], calls[0], calls[1], stacks[0], stacks[1], out[0], out[1], err[0], err[1]};
		close_all(all, 10);
		return;
	}
	pid_t host = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		in_child(host, args, link[1], stacks[1], calls[1], out[1], err[1]);
	}
	int child_ends[] = {link[1], calls[1], stacks[1], out[1], err[1]};
	close_all(child_ends, 5);
	if (pid < 0) {
		int ours[] = {link[0], calls[0], stacks[0], out[0], err[0]};
		close_all(ours, 5);
		return;
	}
	// The host reads its ends through Go's poller, as those of os.Pipe.
	int ours[] = {stacks[0], out[0], err[0]};
	for (int i = 0; i < 3; i++) {
		fcntl(ours[i], F_SETFL, fcntl(ours[i], F_GETFL) | O_NONBLOCK);
	}
	early.pid = pid;
	early.link = link[0];
	early.calls = calls[0];
	early.stacks = stacks[0];
	early.out = out[0];
	early.err = err[0];
}

int vis_host_take_early(struct vis_early *e) {
	if (early.pid < 0) {
		return 0;
	}
	*e = early;
	early.pid = -1;
	return 1;
}
