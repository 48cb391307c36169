// A warm `sandbox run -c CODE` before Go starts. An agent driving a
// session from its shell runs one such command per block, and most of
// what one costs is vis-agent's own start (the Go runtime, package
// initializers, page faults of a large binary) before it writes one
// request. When the same command line (up to the code) runs again in the
// same folder with the same environment and none of the files the request
// was decided from (the user's settings, the binary) has changed, the
// request is the same but for its code: Go saved it (runpath_unsafe.go)
// as a run plan, and this constructor sends it, with the code and a
// client id of its own, to the session's running host, shows the events
// as Go's `sandbox run` does (cli/sandbox/run.go, runBlock; json.c
// reads them) and exits.
//
// It does what Go's client does to reach the host (sandbox/session): the
// socket must be a socket of this user, the host must run as this user
// (SO_PEERCRED), and the connection presents the session's key, read
// from its 0600 file after the connection is made. Anything it cannot
// confirm before the request is sent (no plan, a changed setting, a
// terminal, which gets escaped output; no host answering; a key it cannot
// read) leaves the run to Go, which decides afresh and saves a new plan.
// A host that closes the connection before answering anything also goes
// to Go, which starts a host and sends the block again, as Go's client
// retries once. Ctrl-C is forwarded as Go does: the first asks the host
// to cancel this block, the second leaves it running.
//
// A run plan is a file of NUL-terminated fields (runpath_unsafe.go
// writes them, internal/plan's plan.c reads them):
//   magic, the workspace (the kernel's path of the working folder), a
//   hash of environ, the arguments between `run` and the code (count,
//   tokens), observed paths (count, then path and stat signature pairs),
//   the session's socket, its key file, a remote session's stream header
//   and URL (both empty for a local one), the request's JSON object
//   without its opening brace, code and client (which this file adds),
//   "end".
//
// A session on another machine (--host) is reached the same way through
// its multiplexer (sandbox/remotemux), whose socket and key the plan
// names: the key, the stream's header and the request go in one write, as
// Go's client sends them, and the multiplexer's ack ('+') comes first.
// Without the ack nothing was passed on, and the run is left to Go; after
// it, a connection that ends before the result is Go's error for a
// dropped remote connection, never a second try (the block may run
// there).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal/plan/plan.h"
#include "json.h"
#include "runpath.h"

extern char **environ;

static int runpath_missed;

int vis_runpath_missed(void) { return runpath_missed; }

// out writes all of s to fd, as Go's unbuffered writes do.
static void out(int fd, const char *s, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void outs(int fd, const char *s) { out(fd, s, strlen(s)); }

// fail ends the run as Go's Main does for an error: its line, status 1.
static void fail(const char *msg, const char *detail) {
	vis_buf b = {0};
	vis_buf_str(&b, "vis-agent: ");
	vis_buf_str(&b, msg);
	vis_buf_str(&b, detail);
	vis_buf_str(&b, "\n");
	out(2, b.s, b.n);
	exit(1);
}

// size_text is cli's sizeText.
static void size_text(char *s, size_t n, long long size) {
	if (size < 1024) {
		snprintf(s, n, "%lld B", size);
		return;
	}
	double v = (double)size / 1024;
	const char *suffix = "KiB";
	if (v >= 1024) {
		v /= 1024;
		suffix = "MiB";
		if (v >= 1024) {
			v /= 1024;
			suffix = "GiB";
		}
	}
	snprintf(s, n, "%.1f %s", v, suffix);
}

// show_attachment prints one of the result's attachments as runBlock does.
static int show_attachment(vis_json *j) {
	vis_buf key = {0}, filename = {0}, media = {0}, id = {0};
	long long version = 0, size = 0;
	int first = 1, ok = 1;
	while (ok && vis_json_key(j, &key, &first)) {
		if (strcmp(key.s, "filename") == 0) {
			ok = vis_json_string(j, &filename);
		} else if (strcmp(key.s, "media_type") == 0) {
			ok = vis_json_string(j, &media);
		} else if (strcmp(key.s, "id") == 0) {
			ok = vis_json_string(j, &id);
		} else if (strcmp(key.s, "version") == 0) {
			ok = vis_json_int(j, &version);
		} else if (strcmp(key.s, "size") == 0) {
			ok = vis_json_int(j, &size);
		} else {
			ok = vis_json_skip(j, 2);
		}
	}
	if (ok && !j->bad) {
		char st[64];
		size_text(st, sizeof st, size);
		vis_buf line = {0};
		vis_buf_str(&line, "[attached ");
		vis_buf_str(&line, filename.s ? filename.s : "");
		char v[32];
		snprintf(v, sizeof v, " version %lld: ", version);
		vis_buf_str(&line, v);
		vis_buf_str(&line, media.s ? media.s : "");
		vis_buf_str(&line, ", ");
		vis_buf_str(&line, st);
		vis_buf_str(&line, ", id ");
		vis_buf_str(&line, id.s ? id.s : "");
		vis_buf_str(&line, "]\n");
		out(2, line.s, line.n);
		free(line.s);
	}
	free(key.s), free(filename.s), free(media.s), free(id.s);
	return ok && !j->bad;
}

// finish shows a block's result as runBlock does and exits with its
// status.
static void finish(vis_json *j) {
	vis_buf key = {0}, traceback = {0};
	int first = 1, ok = 1, raised = 0;
	while (ok && vis_json_key(j, &key, &first)) {
		if (strcmp(key.s, "error") == 0) {
			if (vis_json_null(j)) {
				continue;
			}
			raised = 1;
			int efirst = 1;
			vis_buf ekey = {0};
			while (ok && vis_json_key(j, &ekey, &efirst)) {
				ok = strcmp(ekey.s, "traceback") == 0 ? vis_json_string(j, &traceback) : vis_json_skip(j, 2);
			}
			ok = ok && !j->bad;
			free(ekey.s);
		} else if (strcmp(key.s, "attachments") == 0) {
			if (vis_json_null(j)) {
				continue;
			}
			if (!vis_json_eat(j, '[')) {
				ok = 0;
			} else if (!vis_json_eat(j, ']')) {
				do {
					ok = show_attachment(j);
				} while (ok && vis_json_eat(j, ','));
				ok = ok && vis_json_eat(j, ']');
			}
		} else {
			ok = vis_json_skip(j, 1);
		}
	}
	if (!ok || j->bad) {
		fail("read from the session's host: a malformed message", "");
	}
	if (traceback.s != NULL) {
		out(2, traceback.s, traceback.n);
	}
	exit(raised);
}

static volatile sig_atomic_t interrupts;

static void on_interrupt(int sig) {
	(void)sig;
	interrupts++;
}

// event handles one of the host's events as Go's client and runBlock do;
// it exits at the final one.
static void event(const char *line, size_t n) {
	vis_json j = {line, line + n, 0};
	vis_buf key = {0}, ev = {0}, stream = {0}, data = {0}, message = {0}, kind = {0};
	const char *result = NULL;
	int first = 1, ok = 1;
	while (ok && vis_json_key(&j, &key, &first)) {
		vis_buf *into = strcmp(key.s, "ev") == 0       ? &ev
		            : strcmp(key.s, "stream") == 0  ? &stream
		            : strcmp(key.s, "data") == 0    ? &data
		            : strcmp(key.s, "message") == 0 ? &message
		            : strcmp(key.s, "kind") == 0    ? &kind
		                                            : NULL;
		if (into != NULL) {
			into->n = 0;
			vis_buf_add(into, "", 0);
			ok = vis_json_string(&j, into);
		} else {
			if (strcmp(key.s, "result") == 0 && vis_json_null(&j)) {
				continue;
			}
			if (strcmp(key.s, "result") == 0) {
				vis_json_ws(&j);
				result = j.p;
			}
			ok = vis_json_skip(&j, 1);
		}
	}
	if (!ok || j.bad || ev.s == NULL) {
		fail("read from the session's host: a malformed message", "");
	}
	const char *e = ev.s;
	if (strcmp(e, "started") == 0) {
	} else if (strcmp(e, "wait") == 0) {
		vis_buf w = {0};
		vis_buf_str(&w, "vis-agent: ");
		vis_buf_add(&w, message.s ? message.s : "", message.n);
		vis_buf_str(&w, "\n");
		out(2, w.s, w.n);
		free(w.s);
	} else if (strcmp(e, "note") == 0) {
		vis_buf_str(&data, "\n");
		out(1, data.s, data.n);
	} else if (strcmp(e, "out") == 0 || strcmp(e, "data") == 0) {
		if (data.s != NULL) {
			out(stream.s != NULL && strcmp(stream.s, "stderr") == 0 ? 2 : 1, data.s, data.n);
		}
	} else if (strcmp(e, "error") == 0) {
		if (kind.s != NULL && strcmp(kind.s, "not_running") == 0) {
			fail("the session is not running", "");
		}
		fail(message.s ? message.s : "", "");
	} else if (result == NULL) {
		vis_buf q = {0};
		vis_json_quote(&q, e);
		vis_buf_str(&q, " to a block");
		fail("the session's host answered ", q.s);
	} else {
		vis_json r = {result, line + n, 0};
		finish(&r);
	}
	free(key.s), free(ev.s), free(stream.s), free(data.s), free(message.s), free(kind.s);
}

// send_all writes the whole request; 0 when the host is gone.
static int send_all(int fd, const char *s, size_t n) {
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return 0;
		}
		s += w;
		n -= (size_t)w;
	}
	return 1;
}

// connect_host connects to the socket at path when it is a socket of this
// user whose listener runs as this user; -1 otherwise.
static int connect_host(const char *path) {
	struct stat st;
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
	    strlen(path) >= sizeof addr.sun_path) {
		return -1;
	}
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -1;
	}
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
		close(fd);
		return -1;
	}
	return fd;
}

// read_key reads the session's key as session.readKey does: a regular
// file (not a link) of at most 64 bytes.
static int read_key(const char *path, char *key, size_t size) {
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		return 0;
	}
	struct stat st = {0};
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size < size) {
		n = read(fd, key, size - 1);
	}
	close(fd);
	if (n != st.st_size || memchr(key, '\0', (size_t)n) != NULL) {
		return 0;
	}
	key[n] = '\0';
	for (ssize_t i = 0; i < n; i++) {
		if (key[i] == '"' || key[i] == '\\' || (unsigned char)key[i] < 0x20) {
			return 0;
		}
	}
	return 1;
}

// multiplexer_ack reads a remote session's multiplexer's ack, which it
// sends once it has opened the request's stream (remotemux), within Go's
// client's 10 seconds.
static int multiplexer_ack(int fd) {
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n;
	while ((n = poll(&p, 1, 10000)) < 0 && errno == EINTR) {
	}
	char ack = 0;
	ssize_t r = -1;
	if (n == 1) {
		while ((r = read(fd, &ack, 1)) < 0 && errno == EINTR) {
		}
	}
	return r == 1 && ack == VIS_RUNPATH_MUX_ACK;
}

// run_name names the plan of a command line: the workspace, the
// environment and the arguments between `run` and the code
// (runpath_unsafe.go's planName).
static uint64_t run_name(const char *ws, int argc, char **argv) {
	uint64_t h = vis_plan_fnv(VIS_PLAN_FNV_OFFSET, ws, strlen(ws) + 1);
	h = vis_plan_fnv(vis_plan_env_hash(h, environ), "\2", 1);
	for (int i = 3; i < argc - 1; i++) {
		h = vis_plan_fnv(h, argv[i], strlen(argv[i]) + 1);
	}
	return h;
}

// carry sends the plan's request when it still holds, and shows the
// block's events until its result, and exits; it returns when the run
// must be left to Go.
static void carry(vis_plan_fields *f, const char *ws, int argc, char **argv) {
	const char *s = vis_plan_field(f);
	if (s == NULL || strcmp(s, VIS_RUNPATH_MAGIC) != 0 || (s = vis_plan_field(f)) == NULL || strcmp(s, ws) != 0) {
		return;
	}
	char hash[17];
	snprintf(hash, sizeof hash, "%016llx", (unsigned long long)vis_plan_env_hash(VIS_PLAN_FNV_OFFSET, environ));
	if ((s = vis_plan_field(f)) == NULL || strcmp(s, hash) != 0) {
		return;
	}
	if (vis_plan_count(f) != argc - 4) {
		return;
	}
	for (int i = 3; i < argc - 1; i++) {
		if ((s = vis_plan_field(f)) == NULL || strcmp(s, argv[i]) != 0) {
			return;
		}
	}
	if (!vis_plan_observed_hold(f)) {
		return;
	}
	const char *sock = vis_plan_field(f), *keyfile = vis_plan_field(f), *header = vis_plan_field(f),
	           *url = vis_plan_field(f), *body = vis_plan_field(f);
	if (sock == NULL || keyfile == NULL || header == NULL || url == NULL || body == NULL ||
	    (s = vis_plan_field(f)) == NULL || strcmp(s, "end") != 0) {
		return;
	}
	int remote = header[0] != '\0';
	unsigned char raw[8];
	if (getrandom(raw, sizeof raw, 0) != sizeof raw) {
		return;
	}
	int fd = connect_host(sock);
	if (fd < 0) {
		return;
	}
	char key[65];
	if (!read_key(keyfile, key, sizeof key)) {
		close(fd);
		return;
	}
	char id[17];
	for (size_t i = 0; i < sizeof raw; i++) {
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	}
	vis_buf req = {0};
	vis_buf_str(&req, "{\"v\":" VIS_RUNPATH_VERSION ",\"key\":\"");
	vis_buf_str(&req, key);
	vis_buf_str(&req, "\"}\n");
	if (remote) {
		vis_buf_str(&req, header);
		vis_buf_str(&req, "\n");
	}
	vis_buf_str(&req, "{\"code\":");
	vis_json_quote(&req, argv[argc - 1]);
	vis_buf_str(&req, ",\"client\":{\"kind\":\"run\",\"id\":\"");
	vis_buf_str(&req, id);
	vis_buf_str(&req, "\"},");
	vis_buf_str(&req, body);
	vis_buf_str(&req, "\n");
	// SIGINT is blocked but while the read waits (ppoll), so that one
	// arriving at any moment ends that wait.
	struct sigaction sa = {.sa_handler = on_interrupt}, old;
	sigset_t intr, mask;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&intr);
	sigaddset(&intr, SIGINT);
	sigprocmask(SIG_BLOCK, &intr, &mask);
	sigaction(SIGINT, &sa, &old);
	sigset_t waiting = mask;
	sigdelset(&waiting, SIGINT);
	// A remote session's multiplexer passes nothing on before its ack.
	int sent = send_all(fd, req.s, req.n) && (!remote || multiplexer_ack(fd));
	free(req.s);
	vis_buf in = {0};
	int answered = 0, cancelled = 0;
	while (sent) {
		if (interrupts > 1) {
			outs(2, "vis-agent: left the block running in the session\n");
			exit(130);
		}
		if (interrupts > 0 && !cancelled) {
			static const char cancel[] = "{\"v\":" VIS_RUNPATH_VERSION ",\"op\":\"cancel\"}\n";
			cancelled = 1;
			send_all(fd, cancel, sizeof cancel - 1);
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (ppoll(&p, 1, NULL, &waiting) < 0) {
			continue; // EINTR: Ctrl-C, seen above
		}
		char chunk[65536];
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0 && errno != ECONNRESET) {
			fail("read from the session's host: ", strerror(errno));
		}
		if (r <= 0) {
			break;
		}
		// in holds the message under way, of which the first scanned bytes
		// hold no newline.
		size_t scanned = in.n, from = 0;
		vis_buf_add(&in, chunk, (size_t)r);
		char *nl;
		while ((nl = memchr(in.s + scanned, '\n', in.n - scanned)) != NULL) {
			answered = 1;
			event(in.s + from, (size_t)(nl - (in.s + from)));
			from = scanned = (size_t)(nl - in.s) + 1;
		}
		// Only the message under way stays: a read ends anywhere in one
		// (a remote session's multiplexer cuts the stream as it likes),
		// and the messages handled before it must not pile up.
		if (from > 0) {
			memmove(in.s, in.s + from, in.n - from);
			in.n -= from;
		}
		if (in.n > VIS_RUNPATH_MAX_LINE) {
			fail("read from the session's host: a message longer than " VIS_RUNPATH_MAX_LINE_TEXT " bytes", "");
		}
	}
	close(fd);
	free(in.s);
	if (remote && sent) {
		// remote.go's dropped(url, answered, "").
		vis_buf msg = {0};
		vis_buf_str(&msg, answered ? "the connection to " : "");
		vis_buf_str(&msg, url);
		vis_buf_str(&msg, answered ? " ended (the connection dropped); a block goes on running there" : ": the connection ended");
		fail("no answer from the remote session: ", msg.s);
	}
	if (answered || cancelled) {
		fail("the session's host stopped before it answered", "");
	}
	// Nothing answered (or, remote, nothing passed on): Go's client would
	// start a host (a multiplexer) and send the block again; Go does, from
	// the start.
	sigaction(SIGINT, &old, NULL);
	sigprocmask(SIG_SETMASK, &mask, NULL);
}

// Runs with fastpath.c's constructor; each acts on its own command lines.
__attribute__((constructor(103))) static void vis_runpath(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 5 || strcmp(argv[1], "sandbox") != 0 || strcmp(argv[2], "run") != 0 ||
	    (strcmp(argv[argc - 2], "-c") != 0 && strcmp(argv[argc - 2], "--code") != 0)) {
		return;
	}
	const char *off = getenv("VIS_PYTHON_FASTPATH");
	if ((off != NULL && strcmp(off, "0") == 0) || isatty(1) || isatty(2)) {
		return;
	}
	char ws[PATH_MAX], file[PATH_MAX];
	if (getcwd(ws, sizeof ws) == NULL || !vis_plan_path(file, sizeof file, VIS_RUNPATH_DIR, run_name(ws, argc, argv))) {
		return;
	}
	runpath_missed = 1;
	vis_plan_act(file, carry, ws, argc, argv);
}
