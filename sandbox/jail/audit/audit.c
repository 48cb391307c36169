#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "audit.h"
#include "pyembed/pyfind.h"

// The C API the hook calls, found in the loaded libpython (opened with
// RTLD_GLOBAL) when the hook is installed.
typedef int (*vis_hook_fn)(const char *, void *, void *);
static int (*p_PySys_AddAuditHook)(vis_hook_fn, void *);
static ssize_t (*p_PyTuple_Size)(void *);
static void *(*p_PyTuple_GetItem)(void *, ssize_t);
static void *(*p_PyOS_FSPath)(void *);
static void *(*p_PyUnicode_EncodeFSDefault)(void *);
static char *(*p_PyBytes_AsString)(void *);
static int (*p_PyObject_IsInstance)(void *, void *);
static long (*p_PyLong_AsLong)(void *);
static const char *(*p_PyUnicode_AsUTF8)(void *);
static void *(*p_PyObject_Repr)(void *);
static void (*p_PyErr_SetString)(void *, const char *);
static void (*p_PyErr_Clear)(void);
static void (*p_DecRef)(void *);
static void *(*p_PyInterpreterState_Get)(void);
static void *(*p_PyInterpreterState_ThreadHead)(void *);
static void *(*p_PyThreadState_Next)(void *);
static void *p_None, *p_LongType, *p_UnicodeType, *p_BytesType;
static void **p_PermissionError, **p_RuntimeError, **p_ImportError;

// The policy: set before the interpreter starts, never changed after.
static int installed;
static int jail_on, processes_on, network_on = 1, thread_cap = -1;
// installed_pid is the process the hook was installed in: the session's
// interpreter, not a process it forked.
static pid_t installed_pid;
static char policy_name[256];
static char **roots_rw, **roots_ro;
static int n_rw, n_ro;

// canon makes path canonical: relative paths join the folder of dirfd (or
// the working folder), the deepest existing ancestor goes through
// realpath, and the rest is appended; a ".." in that rest cannot be
// resolved and fails. follow_last 0 resolves the parent only, for calls
// that act on a link itself (remove, rename, symlink). 0 or -1.
static int canon(const char *path, int dirfd, int follow_last, char *out) {
	char full[PATH_MAX], head[PATH_MAX], res[PATH_MAX], base[PATH_MAX];
	int n;
	if (path[0] == '/') {
		n = snprintf(full, sizeof full, "%s", path);
	} else {
		if (dirfd >= 0) {
			char link[64];
			snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
			ssize_t len = readlink(link, base, sizeof base - 1);
			if (len <= 0) {
				return -1;
			}
			base[len] = '\0';
		} else if (getcwd(base, sizeof base) == NULL) {
			return -1;
		}
		n = snprintf(full, sizeof full, "%s/%s", base, path);
	}
	if (n <= 0 || (size_t)n >= sizeof full) {
		return -1;
	}
	memcpy(head, full, (size_t)n + 1);
	const char *rest = "";
	if (!follow_last) {
		char *slash = strrchr(head, '/');
		rest = full + (slash - head) + 1;
		slash[slash == head ? 1 : 0] = '\0';
	}
	while (realpath(head, res) == NULL) {
		if (errno != ENOENT && errno != ENOTDIR) {
			return -1;
		}
		char *slash = strrchr(head, '/');
		if (slash == NULL) {
			return -1;
		}
		rest = full + (slash - head) + 1;
		slash[slash == head ? 1 : 0] = '\0';
	}
	size_t len = strlen(res);
	memcpy(out, res, len + 1);
	char part[PATH_MAX];
	while (*rest != '\0') {
		const char *end = strchr(rest, '/');
		size_t plen = end ? (size_t)(end - rest) : strlen(rest);
		memcpy(part, rest, plen);
		part[plen] = '\0';
		rest += plen + (end ? 1 : 0);
		if (plen == 0 || strcmp(part, ".") == 0) {
			continue;
		}
		if (strcmp(part, "..") == 0 || len + 1 + plen >= PATH_MAX) {
			return -1;
		}
		if (len > 1) {
			out[len++] = '/';
		}
		memcpy(out + len, part, plen + 1);
		len += plen;
	}
	return 0;
}

// within: p is one of roots or below one, at a '/' boundary.
static int within(const char *p, char **roots, int n) {
	for (int i = 0; i < n; i++) {
		size_t len = strlen(roots[i]);
		if (len == 1 || (strncmp(p, roots[i], len) == 0 && (p[len] == '\0' || p[len] == '/'))) {
			return 1;
		}
	}
	return 0;
}

// fmt is always a literal of this file taking a, b and the policy's name,
// in that order (three %s), which -Wformat cannot see through the call.
static int refuse(void *type, const char *fmt, const char *a, const char *b) {
	char msg[PATH_MAX + 512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(msg, sizeof msg, fmt, a, b, policy_name);
#pragma GCC diagnostic pop
	p_PyErr_SetString(*(void **)type, msg);
	return -1;
}

static int is_int(void *o) { return p_PyObject_IsInstance(o, p_LongType) == 1; }

// repr_of writes repr(o) into buf, for messages.
static const char *repr_of(void *o, char *buf, size_t n) {
	void *r = p_PyObject_Repr(o);
	const char *s = r ? p_PyUnicode_AsUTF8(r) : NULL;
	snprintf(buf, n, "%s", s ? s : "?");
	if (r) {
		p_DecRef(r);
	}
	p_PyErr_Clear();
	return buf;
}

// fd_path: the file an open descriptor refers to, or 0 when it is not a
// file (a pipe, a socket) or is unknown.
static int fd_path(long fd, char *buf, size_t n) {
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%ld", fd);
	ssize_t len = readlink(link, buf, n - 1);
	if (len <= 0 || buf[0] != '/') {
		return 0;
	}
	buf[len] = '\0';
	return 1;
}

// check_path refuses a path argument outside the roots (outside the
// writable roots for write). obj may be a str, bytes, os.PathLike, an
// open descriptor or None; dirfd_obj the call's dir_fd (NULL or None:
// none). 0 allowed, -1 refused with the exception set.
static int check_path(const char *event, void *obj, void *dirfd_obj, int write, int follow_last) {
	char path[PATH_MAX], canonical[PATH_MAX];
	if (obj == NULL || obj == p_None) {
		return 0;
	}
	if (is_int(obj)) {
		if (!fd_path(p_PyLong_AsLong(obj), path, sizeof path)) {
			p_PyErr_Clear();
			return 0;
		}
	} else {
		void *fs = p_PyOS_FSPath(obj);
		if (fs == NULL) {
			p_PyErr_Clear();
			return 0; // not a path; the call itself will reject it
		}
		void *bytes = p_PyObject_IsInstance(fs, p_BytesType) == 1 ? fs : p_PyUnicode_EncodeFSDefault(fs);
		const char *s = bytes ? p_PyBytes_AsString(bytes) : NULL;
		int ok = s != NULL && strlen(s) < sizeof path;
		if (ok) {
			strcpy(path, s);
		}
		if (bytes != NULL && bytes != fs) {
			p_DecRef(bytes);
		}
		p_DecRef(fs);
		if (!ok) {
			p_PyErr_Clear();
			return refuse(p_PermissionError, "%s %s: refused by %s (an unreadable path)", event, "?");
		}
	}
	int dirfd = -1;
	if (dirfd_obj != NULL && dirfd_obj != p_None && is_int(dirfd_obj)) {
		dirfd = (int)p_PyLong_AsLong(dirfd_obj);
	}
	if (canon(path, dirfd, follow_last, canonical) != 0) {
		return refuse(p_PermissionError, "%s %s: refused by %s (the path cannot be resolved inside its roots)", event, path);
	}
	if (within(canonical, roots_rw, n_rw) || (!write && within(canonical, roots_ro, n_ro))) {
		return 0;
	}
	return refuse(p_PermissionError, write ? "%s %s: refused by %s (outside its writable roots)" : "%s %s: refused by %s (outside its roots)", event, canonical);
}

static void *arg(void *args, ssize_t i) {
	return i < p_PyTuple_Size(args) ? p_PyTuple_GetItem(args, i) : NULL;
}

// File events: the arguments that are paths, the dir_fd each is relative
// to (-1: none), whether they write, and whether the last component is
// followed.
typedef struct {
	const char *event;
	signed char path[2], dirfd[2], write[2];
	char follow_last;
} file_rule;

static const file_rule file_rules[] = {
	{"os.chmod", {0, -1}, {2, -1}, {1, 0}, 1},
	{"os.chown", {0, -1}, {3, -1}, {1, 0}, 1},
	{"os.link", {0, 1}, {2, 3}, {1, 1}, 0},
	{"os.mkdir", {0, -1}, {2, -1}, {1, 0}, 0},
	{"os.remove", {0, -1}, {1, -1}, {1, 0}, 0},
	{"os.rename", {0, 1}, {2, 3}, {1, 1}, 0},
	{"os.rmdir", {0, -1}, {1, -1}, {1, 0}, 0},
	{"os.symlink", {1, -1}, {2, -1}, {1, 0}, 0},
	{"os.truncate", {0, -1}, {-1, -1}, {1, 0}, 1},
	{"os.utime", {0, -1}, {3, -1}, {1, 0}, 1},
	{"os.chflags", {0, -1}, {-1, -1}, {1, 0}, 1},
	{"os.lchflags", {0, -1}, {-1, -1}, {1, 0}, 0},
	{"os.setxattr", {0, -1}, {-1, -1}, {1, 0}, 1},
	{"os.removexattr", {0, -1}, {-1, -1}, {1, 0}, 1},
	{"os.getxattr", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"os.listxattr", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"os.listdir", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"os.scandir", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"os.chdir", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"glob.glob", {0, -1}, {-1, -1}, {0, 0}, 1},
	{"glob.glob/2", {0, 2}, {3, 3}, {0, 0}, 1},
	{"shutil.copyfile", {0, 1}, {-1, -1}, {0, 1}, 1},
	{"shutil.copymode", {0, 1}, {-1, -1}, {0, 1}, 1},
	{"shutil.copystat", {0, 1}, {-1, -1}, {0, 1}, 1},
	{"shutil.copytree", {0, 1}, {-1, -1}, {0, 1}, 1},
	{"shutil.rmtree", {0, -1}, {1, -1}, {1, 0}, 0},
	{"shutil.move", {0, 1}, {-1, -1}, {1, 1}, 0},
	{"shutil.chown", {0, -1}, {-1, -1}, {1, 0}, 1},
	{"shutil.make_archive", {0, 2}, {-1, -1}, {1, 0}, 1},
	{"shutil.unpack_archive", {0, 1}, {-1, -1}, {0, 1}, 1},
};

static const char *const process_events[] = {
	"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
	"os.fork", "os.forkpty", "os.startfile", "os.killpg",
};

// Modules a jailed interpreter may not load: CPython's test modules,
// which reach the interpreter's internals and no user's code needs.
// Matched on a module name's last part, so a spec of another name that
// would find the same PyInit function is refused too. ctypes loads: the
// hook is no boundary (ctypes, cffi or any C extension can undo it), the
// kernel layer is, and refusing ctypes broke imports users need (scipy's
// _ccallback calls into it as it imports).
static const char *const refused_modules[] = {
	"_testcapi", "_testinternalcapi", "_testlimitedcapi", "_testbuffer",
	"_testmultiphase", "_testsinglephase", "_testimportmultiple", "_testclinic", "_testclinic_limited",
	"_testexternalinspection", "_ctypes_test",
};

static const char *const lookup_events[] = {
	"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int in_list(const char *event, const char *const *list, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (strcmp(event, list[i]) == 0) {
			return 1;
		}
	}
	return 0;
}

// open: (path, mode, flags); mode is None for os.open. A descriptor
// (CPython's own stdin, open(fd)) is allowed: wrapping one the process
// already holds opens nothing new.
static int check_open(void *args) {
	void *path = arg(args, 0), *mode = arg(args, 1), *flags = arg(args, 2);
	if (path == NULL || is_int(path)) {
		return 0;
	}
	int write = 0;
	if (mode != NULL && mode != p_None) {
		const char *m = p_PyUnicode_AsUTF8(mode);
		write = m != NULL && strpbrk(m, "wax+") != NULL;
		p_PyErr_Clear();
	}
	if (flags != NULL && is_int(flags)) {
		long f = p_PyLong_AsLong(flags);
		write = write || (f & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
	}
	return check_path("open", path, NULL, write, 1);
}

// sqlite3.connect: (database); a "file:" URI names its path before "?".
static int check_sqlite(void *args) {
	void *db = arg(args, 0);
	if (db == NULL || db == p_None || is_int(db)) {
		return 0;
	}
	// str, or bytes on CPython 3.10, where the event carries the encoded name.
	const char *s = p_PyObject_IsInstance(db, p_UnicodeType) == 1 ? p_PyUnicode_AsUTF8(db)
	                : p_PyObject_IsInstance(db, p_BytesType) == 1 ? p_PyBytes_AsString(db)
	                                                               : NULL;
	p_PyErr_Clear();
	if (s == NULL) {
		return check_path("sqlite3.connect", db, NULL, 1, 1);
	}
	if (s[0] == '\0' || strcmp(s, ":memory:") == 0) {
		return 0;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", strncmp(s, "file:", 5) == 0 ? s + 5 : s);
	path[strcspn(path, "?")] = '\0';
	if (path[0] == '\0' || strcmp(path, ":memory:") == 0) {
		return 0;
	}
	// Checked as a write: SQLite may create or change the file.
	char canonical[PATH_MAX];
	if (canon(path, -1, 1, canonical) != 0 || !within(canonical, roots_rw, n_rw)) {
		return refuse(p_PermissionError, "%s %s: refused by %s (outside its writable roots)", "sqlite3.connect", path);
	}
	return 0;
}

// thread_count counts the interpreter's thread states: its Python threads.
static int thread_count(void) {
	int n = 0;
	for (void *ts = p_PyInterpreterState_ThreadHead(p_PyInterpreterState_Get()); ts != NULL; ts = p_PyThreadState_Next(ts)) {
		n++;
	}
	return n;
}

// is_unix_address: a str or bytes socket address names a unix socket.
static int is_unix_address(void *addr) {
	return p_PyObject_IsInstance(addr, p_UnicodeType) == 1 || p_PyObject_IsInstance(addr, p_BytesType) == 1;
}

// check_unix_socket: in the jail, a unix socket file outside the writable
// roots is a local service outside it (a container daemon's socket);
// abstract addresses (a leading NUL) are left to the kernel's scoping.
static int check_unix_socket(const char *event, void *args) {
	void *addr = arg(args, 1);
	if (addr == NULL || addr == p_None || !is_unix_address(addr)) {
		return 0;
	}
	const char *s = p_PyObject_IsInstance(addr, p_BytesType) == 1 ? p_PyBytes_AsString(addr) : p_PyUnicode_AsUTF8(addr);
	p_PyErr_Clear();
	if (s == NULL || s[0] == '\0') {
		return 0;
	}
	return check_path(event, addr, NULL, 1, 1);
}

// check_import: "import" is raised by the import statement (the module's
// full name) and by every load of a C extension, _imp.create_dynamic
// included (name and file): the refused modules, as an ImportError.
static int check_import(void *args) {
	void *name_obj = arg(args, 0);
	const char *name = name_obj != NULL && p_PyObject_IsInstance(name_obj, p_UnicodeType) == 1 ? p_PyUnicode_AsUTF8(name_obj) : NULL;
	if (name == NULL) {
		p_PyErr_Clear();
		return 0;
	}
	const char *last = strrchr(name, '.');
	last = last ? last + 1 : name;
	if (!in_list(last, refused_modules, COUNT(refused_modules))) {
		return 0;
	}
	return refuse(p_ImportError, "import %s%s: refused by %s (CPython's test modules reach the interpreter's internals)", name, "");
}

static int check_network(const char *event, void *args) {
	char target[256] = "";
	if (strcmp(event, "socket.__new__") == 0) {
		void *family = arg(args, 1);
		long f = family != NULL && is_int(family) ? p_PyLong_AsLong(family) : -1;
		if (f == AF_UNIX || f == -1) {
			return 0;
		}
		snprintf(target, sizeof target, "family %ld", f);
	} else if (in_list(event, lookup_events, COUNT(lookup_events))) {
		void *a0 = arg(args, 0);
		if (a0 != NULL) {
			repr_of(a0, target, sizeof target);
		}
	} else {
		// connect, bind, sendto, sendmsg: a str or bytes address is a unix
		// socket's path, anything else an internet address.
		void *addr = arg(args, 1);
		if (addr == NULL || addr == p_None || is_unix_address(addr)) {
			return 0;
		}
		repr_of(addr, target, sizeof target);
	}
	return refuse(p_PermissionError, "network access is refused: %3$s (%1$s %2$s)", event, target);
}

static int is_network_event(const char *event) {
	return strcmp(event, "socket.__new__") == 0 || strcmp(event, "socket.connect") == 0 ||
	       strcmp(event, "socket.bind") == 0 || strcmp(event, "socket.sendto") == 0 ||
	       strcmp(event, "socket.sendmsg") == 0 || in_list(event, lookup_events, COUNT(lookup_events));
}

static int hook(const char *event, void *args, void *data) {
	(void)data;
	if (thread_cap >= 0 && (strcmp(event, "_thread.start_new_thread") == 0 || strcmp(event, "_thread.start_joinable_thread") == 0)) {
		if (thread_count() >= thread_cap) {
			char cap[32];
			snprintf(cap, sizeof cap, "%d", thread_cap);
			return refuse(p_RuntimeError, "can't start a new thread: the cap of %s threads is reached%s (%s)", cap, "");
		}
		return 0;
	}
	if (!network_on && strncmp(event, "socket.", 7) == 0 && is_network_event(event)) {
		if (check_network(event, args) != 0) {
			return -1;
		}
	}
	if (!jail_on) {
		return 0;
	}
	if (strcmp(event, "open") == 0) {
		return check_open(args);
	}
	if (strcmp(event, "import") == 0) {
		return check_import(args);
	}
	if (strcmp(event, "socket.connect") == 0 || strcmp(event, "socket.bind") == 0 || strcmp(event, "socket.sendto") == 0) {
		return check_unix_socket(event, args);
	}
	for (size_t i = 0; i < COUNT(file_rules); i++) {
		const file_rule *r = &file_rules[i];
		if (strcmp(event, r->event) != 0) {
			continue;
		}
		for (int j = 0; j < 2 && r->path[j] >= 0; j++) {
			void *dirfd = r->dirfd[j] >= 0 ? arg(args, r->dirfd[j]) : NULL;
			if (check_path(event, arg(args, r->path[j]), dirfd, r->write[j], r->follow_last) != 0) {
				return -1;
			}
		}
		return 0;
	}
	if (strcmp(event, "mmap.__new__") == 0) {
		// (fileno, length, access, offset): the file behind the descriptor;
		// ACCESS_WRITE (2) writes it.
		void *fd = arg(args, 0), *access = arg(args, 2);
		int write = access != NULL && is_int(access) && p_PyLong_AsLong(access) == 2;
		if (fd != NULL && is_int(fd) && p_PyLong_AsLong(fd) == -1) {
			return 0; // anonymous memory
		}
		return check_path(event, fd, NULL, write, 1);
	}
	if (strcmp(event, "sqlite3.connect") == 0) {
		return check_sqlite(args);
	}
	// With processes, what they reach (and whom they signal) is the
	// kernel's to refuse: the jail holds them all. An exec in the
	// session's own interpreter would end the session: a clear error
	// (a process it forked may exec).
	if (processes_on) {
		if (strcmp(event, "os.exec") == 0 && getpid() == installed_pid) {
			return refuse(p_PermissionError, "%s%s: refused by %s (it would replace the session's own Python process: run the program with subprocess)", event, "");
		}
		return 0;
	}
	if (in_list(event, process_events, COUNT(process_events))) {
		return refuse(p_PermissionError, "%s%s: refused by %s (no new processes)", event, "");
	}
	if (strcmp(event, "os.kill") == 0) {
		void *pid = arg(args, 0);
		if (pid != NULL && is_int(pid) && p_PyLong_AsLong(pid) == (long)getpid()) {
			return 0;
		}
		char target[64];
		return refuse(p_PermissionError, "%s %s: refused by %s (only this process may be signalled)", event, pid ? repr_of(pid, target, sizeof target) : "?");
	}
	return 0;
}

const char *vis_audit_add_root(const char *path, int writable) {
	static char err[PATH_MAX + 64];
	char canonical[PATH_MAX];
	if (installed) {
		return "the audit hook is installed: its policy is fixed";
	}
	if (path[0] != '/' || canon(path, -1, 1, canonical) != 0) {
		snprintf(err, sizeof err, "root %s: not an absolute path that can be resolved", path);
		return err;
	}
	char ***roots = writable ? &roots_rw : &roots_ro;
	int *n = writable ? &n_rw : &n_ro;
	char **grown = realloc(*roots, sizeof(char *) * (size_t)(*n + 1));
	char *copy = strdup(canonical);
	if (grown == NULL || copy == NULL) {
		free(copy);
		return "out of memory";
	}
	grown[(*n)++] = copy;
	*roots = grown;
	return NULL;
}


const char *vis_audit_install(int jail, int processes, int network, int max_threads, const char *policy) {
	if (installed) {
		return "the audit hook is already installed";
	}
	VIS_FIND(p_PySys_AddAuditHook, "PySys_AddAuditHook");
	VIS_FIND(p_PyTuple_Size, "PyTuple_Size");
	VIS_FIND(p_PyTuple_GetItem, "PyTuple_GetItem");
	VIS_FIND(p_PyOS_FSPath, "PyOS_FSPath");
	VIS_FIND(p_PyUnicode_EncodeFSDefault, "PyUnicode_EncodeFSDefault");
	VIS_FIND(p_PyBytes_AsString, "PyBytes_AsString");
	VIS_FIND(p_PyObject_IsInstance, "PyObject_IsInstance");
	VIS_FIND(p_PyLong_AsLong, "PyLong_AsLong");
	VIS_FIND(p_PyUnicode_AsUTF8, "PyUnicode_AsUTF8");
	VIS_FIND(p_PyObject_Repr, "PyObject_Repr");
	VIS_FIND(p_PyErr_SetString, "PyErr_SetString");
	VIS_FIND(p_PyErr_Clear, "PyErr_Clear");
	VIS_FIND(p_DecRef, "Py_DecRef");
	VIS_FIND(p_PyInterpreterState_Get, "PyInterpreterState_Get");
	VIS_FIND(p_PyInterpreterState_ThreadHead, "PyInterpreterState_ThreadHead");
	VIS_FIND(p_PyThreadState_Next, "PyThreadState_Next");
	VIS_FIND(p_None, "_Py_NoneStruct");
	VIS_FIND(p_LongType, "PyLong_Type");
	VIS_FIND(p_UnicodeType, "PyUnicode_Type");
	VIS_FIND(p_BytesType, "PyBytes_Type");
	VIS_FIND(p_PermissionError, "PyExc_PermissionError");
	VIS_FIND(p_RuntimeError, "PyExc_RuntimeError");
	VIS_FIND(p_ImportError, "PyExc_ImportError");
	jail_on = jail;
	processes_on = processes;
	installed_pid = getpid();
	network_on = network;
	thread_cap = max_threads;
	snprintf(policy_name, sizeof policy_name, "%s", policy);
	// Before Py_Initialize the hook goes into the runtime's own list, which
	// initialization keeps; it runs for every event from then on.
	if (p_PySys_AddAuditHook(hook, NULL) != 0) {
		return "PySys_AddAuditHook failed";
	}
	installed = 1;
	return NULL;
}
