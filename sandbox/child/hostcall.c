#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hostcall.h"
#include "pyembed/pymodule.h"
#include "pyembed/pyfind.h"

// The C API the module uses, found in the loaded libpython (opened with
// RTLD_GLOBAL) when the module is registered.
static int (*p_PyImport_AppendInittab)(const char *, void *(*)(void));
static void *(*p_PyModuleDef_Init)(void *);
static void *(*p_PyEval_SaveThread)(void);
static void (*p_PyEval_RestoreThread)(void *);
static int (*p_PyErr_CheckSignals)(void);
static void (*p_PyErr_SetString)(void *, const char *);
static void *(*p_PyErr_NoMemory)(void);
static ssize_t (*p_PyTuple_Size)(void *);
static void *(*p_PyTuple_GetItem)(void *, ssize_t);
static void *(*p_PyTuple_Pack)(ssize_t, ...);
static int (*p_PyBytes_AsStringAndSize)(void *, char **, ssize_t *);
static void *(*p_PyBytes_FromStringAndSize)(const char *, ssize_t);
static char *(*p_PyBytes_AsString)(void *);
static void (*p_DecRef)(void *);
static void *p_None;
static void **p_TypeError, **p_ValueError, **p_ConnectionError, **p_RuntimeError;

// Bounds of one answer: its JSON header line and its payload.
#define MAX_HEADER (64 << 20)
#define MAX_PAYLOAD ((int64_t)1 << 32)

// The link: its descriptor, the next request id, and what has been read
// but not taken (a header line may arrive in pieces, and an interrupted
// call leaves the rest of its answer to be skipped by the next one).
static int link_fd = -1;
static sem_t link_lock; // a semaphore: sem_wait returns on a signal, a mutex would not
static uint64_t next_id;
static char *rbuf;
static size_t rlen, rcap;
static int64_t skip; // payload bytes of an answer nobody waits for any more
static int broken;   // the host sent what is not an answer: every call fails
// The thread holding the link: a signal handler that makes a call while
// its thread waits for an answer would wait for itself.
static pthread_t owner;
static int owned;

// Outcome of an I/O step made without the GIL.
enum { IO_OK = 0, IO_EINTR = 1, IO_ERROR = 2, IO_EOF = 3, IO_BAD = 4 };

static int write_all(const char *p, size_t n) {
	while (n > 0) {
		ssize_t w = send(link_fd, p, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR) {
				continue; // a request is never left half-written
			}
			return IO_ERROR;
		}
		p += w;
		n -= (size_t)w;
	}
	return IO_OK;
}

// fill reads more bytes into rbuf.
static int fill(void) {
	if (rlen == rcap) {
		size_t cap = rcap == 0 ? 64 << 10 : rcap * 2;
		char *grown = realloc(rbuf, cap);
		if (grown == NULL) {
			return IO_ERROR;
		}
		rbuf = grown;
		rcap = cap;
	}
	ssize_t n = read(link_fd, rbuf + rlen, rcap - rlen);
	if (n < 0) {
		return errno == EINTR ? IO_EINTR : IO_ERROR;
	}
	if (n == 0) {
		return IO_EOF;
	}
	rlen += (size_t)n;
	return IO_OK;
}

// take moves up to n buffered bytes to dst (NULL: drops them).
static size_t take(char *dst, size_t n) {
	if (n > rlen) {
		n = rlen;
	}
	if (dst != NULL) {
		memcpy(dst, rbuf, n);
	}
	memmove(rbuf, rbuf + n, rlen - n);
	rlen -= n;
	return n;
}

// drain skips the payload an interrupted call left.
static int drain(void) {
	while (skip > 0) {
		if (rlen == 0) {
			int st = fill();
			if (st != IO_OK) {
				return st;
			}
		}
		skip -= (int64_t)take(NULL, skip < (int64_t)rlen ? (size_t)skip : rlen);
	}
	return IO_OK;
}

// next_header waits for the next answer's header line, which starts
// {"id":N,"size":M. *len is its length without the newline; it stays in
// rbuf until the caller takes it.
static int next_header(uint64_t *id, int64_t *size, size_t *len) {
	int st = drain();
	if (st != IO_OK) {
		return st;
	}
	for (;;) {
		char *nl = rlen > 0 ? memchr(rbuf, '\n', rlen) : NULL;
		if (nl != NULL) {
			*len = (size_t)(nl - rbuf);
			*nl = '\0';
			int used = 0;
			int ok = sscanf(rbuf, "{\"id\":%" SCNu64 ",\"size\":%" SCNd64 "%n", id, size, &used) == 2 && used > 0;
			*nl = '\n';
			return ok && *size >= 0 && *size <= MAX_PAYLOAD ? IO_OK : IO_BAD;
		}
		if (rlen > MAX_HEADER) {
			return IO_BAD;
		}
		st = fill();
		if (st != IO_OK) {
			return st;
		}
	}
}

// read_payload reads *left more payload bytes into dst.
static int read_payload(char *dst, int64_t *left) {
	while (*left > 0) {
		if (rlen > 0) {
			size_t n = take(dst, *left < (int64_t)rlen ? (size_t)*left : rlen);
			dst += n;
			*left -= (int64_t)n;
			continue;
		}
		ssize_t n = read(link_fd, dst, *left < (int64_t)SSIZE_MAX ? (size_t)*left : SSIZE_MAX);
		if (n < 0) {
			if (errno == EINTR) {
				return IO_EINTR;
			}
			return IO_ERROR;
		}
		if (n == 0) {
			return IO_EOF;
		}
		dst += n;
		*left -= n;
	}
	return IO_OK;
}

// fail sets the exception for an I/O outcome; the link is unusable after
// a malformed answer or the host's end.
static void *fail(int st) {
	switch (st) {
	case IO_BAD:
		broken = 1;
		p_PyErr_SetString(*p_ConnectionError, "the sandbox host sent a malformed answer; tools are unavailable until the session restarts");
		break;
	case IO_EOF:
		broken = 1;
		p_PyErr_SetString(*p_ConnectionError, "the sandbox host closed the tool link; tools are unavailable until the session restarts");
		break;
	default: {
		char msg[160];
		snprintf(msg, sizeof msg, "the tool link to the sandbox host failed: %s", strerror(errno));
		p_PyErr_SetString(*p_ConnectionError, msg);
	}
	}
	return NULL;
}

// release gives the link to the next caller.
static void release(void) {
	owned = 0;
	sem_post(&link_lock);
}

// interrupted is called without the GIL after EINTR: it takes the GIL and
// runs the signal handlers. 1 when one raised (the call gives up, its
// exception set, holding the GIL); 0 when the call goes on (GIL released
// again through *ts).
static int interrupted(void **ts) {
	p_PyEval_RestoreThread(*ts);
	if (p_PyErr_CheckSignals() != 0) {
		return 1;
	}
	*ts = p_PyEval_SaveThread();
	return 0;
}

// call(header: bytes, payload: bytes | None) -> (header: bytes, payload: bytes | None)
static void *host_call(void *self, void *args) {
	(void)self;
	char *head = NULL, *data = NULL;
	ssize_t head_len = 0, data_len = 0;
	void *payload_obj = p_PyTuple_Size(args) == 2 ? p_PyTuple_GetItem(args, 1) : NULL;
	if (payload_obj == NULL || p_PyBytes_AsStringAndSize(p_PyTuple_GetItem(args, 0), &head, &head_len) != 0 ||
	    (payload_obj != p_None && p_PyBytes_AsStringAndSize(payload_obj, &data, &data_len) != 0)) {
		p_PyErr_SetString(*p_TypeError, "call(header: bytes, payload: bytes | None)");
		return NULL;
	}
	if (head_len < 3 || head[0] != '{' || head[1] != '"' || memchr(head, '\n', (size_t)head_len) != NULL) {
		p_PyErr_SetString(*p_ValueError, "the header is one JSON object with at least one field, on one line");
		return NULL;
	}
	if (link_fd < 0 || broken) {
		p_PyErr_SetString(*p_ConnectionError, "no tool link to the sandbox host in this process");
		return NULL;
	}
	if (owned && pthread_equal(owner, pthread_self())) {
		p_PyErr_SetString(*p_RuntimeError, "a tool call from a signal handler that interrupted a tool call of the same thread");
		return NULL;
	}
	// The bytes objects stay alive (args holds them) and never change, so
	// they are read without the GIL.
	void *ts = p_PyEval_SaveThread();
	while (sem_wait(&link_lock) != 0) {
		if (errno != EINTR) {
			int saved = errno;
			p_PyEval_RestoreThread(ts);
			errno = saved;
			return fail(IO_ERROR);
		}
		if (interrupted(&ts)) {
			return NULL;
		}
	}
	owner = pthread_self();
	owned = 1;
	uint64_t id = ++next_id;
	char prefix[64];
	int plen = snprintf(prefix, sizeof prefix, "{\"id\":%" PRIu64 ",\"size\":%zd,", id, data_len);
	int st = write_all(prefix, (size_t)plen);
	if (st == IO_OK) {
		st = write_all(head + 1, (size_t)head_len - 1);
	}
	if (st == IO_OK) {
		st = write_all("\n", 1);
	}
	if (st == IO_OK && data_len > 0) {
		st = write_all(data, (size_t)data_len);
	}
	void *answer = NULL, *body = NULL;
	while (st == IO_OK) {
		uint64_t got;
		int64_t size;
		size_t len;
		st = next_header(&got, &size, &len);
		if (st == IO_EINTR) {
			if (interrupted(&ts)) {
				release();
				return NULL; // the answer is skipped when it comes: its id is old
			}
			st = IO_OK;
			continue;
		}
		if (st != IO_OK) {
			break;
		}
		if (got != id) {
			take(NULL, len + 1); // an answer to a call that was interrupted
			skip = size;
			continue;
		}
		p_PyEval_RestoreThread(ts);
		answer = p_PyBytes_FromStringAndSize(rbuf, (ssize_t)len);
		body = size > 0 ? p_PyBytes_FromStringAndSize(NULL, (ssize_t)size) : p_None;
		ts = p_PyEval_SaveThread();
		take(NULL, len + 1);
		if (answer == NULL || body == NULL) {
			skip = size;
			p_PyEval_RestoreThread(ts);
			release();
			p_DecRef(answer);
			if (body != p_None) {
				p_DecRef(body);
			}
			return p_PyErr_NoMemory();
		}
		if (size == 0) {
			break;
		}
		char *dst = p_PyBytes_AsString(body);
		int64_t left = size;
		while ((st = read_payload(dst + (size - left), &left)) == IO_EINTR) {
			if (interrupted(&ts)) {
				skip = left;
				release();
				p_DecRef(answer);
				p_DecRef(body);
				return NULL;
			}
		}
		break;
	}
	int saved = errno; // for fail's message
	release();
	p_PyEval_RestoreThread(ts);
	errno = saved;
	if (st != IO_OK) {
		p_DecRef(answer);
		if (body != p_None) {
			p_DecRef(body);
		}
		return fail(st);
	}
	void *result = p_PyTuple_Pack(2, answer, body);
	p_DecRef(answer);
	if (body != p_None) {
		p_DecRef(body);
	}
	return result;
}

#define VIS_METH_VARARGS 1

static vis_methoddef host_methods[] = {
	{"call", (void *)host_call, VIS_METH_VARARGS,
	 "call(header, payload) -> (header, payload): one request to the sandbox host and its answer."},
	{NULL, NULL, 0, NULL},
};

static vis_moduledef host_def = {
	VIS_MODULEDEF_HEAD,
	"_vis_host", "The sandbox host's entry point (vis_sandbox.tools uses it).", 0, host_methods, NULL, NULL, NULL, NULL,
};

static void *host_init(void) { return p_PyModuleDef_Init(&host_def); }


const char *vis_host_install(int fd) {
	if (link_fd >= 0) {
		return "the host-call module is already registered";
	}
	VIS_FIND(p_PyImport_AppendInittab, "PyImport_AppendInittab");
	VIS_FIND(p_PyModuleDef_Init, "PyModuleDef_Init");
	VIS_FIND(p_PyEval_SaveThread, "PyEval_SaveThread");
	VIS_FIND(p_PyEval_RestoreThread, "PyEval_RestoreThread");
	VIS_FIND(p_PyErr_CheckSignals, "PyErr_CheckSignals");
	VIS_FIND(p_PyErr_SetString, "PyErr_SetString");
	VIS_FIND(p_PyErr_NoMemory, "PyErr_NoMemory");
	VIS_FIND(p_PyTuple_Size, "PyTuple_Size");
	VIS_FIND(p_PyTuple_GetItem, "PyTuple_GetItem");
	VIS_FIND(p_PyTuple_Pack, "PyTuple_Pack");
	VIS_FIND(p_PyBytes_AsStringAndSize, "PyBytes_AsStringAndSize");
	VIS_FIND(p_PyBytes_FromStringAndSize, "PyBytes_FromStringAndSize");
	VIS_FIND(p_PyBytes_AsString, "PyBytes_AsString");
	VIS_FIND(p_DecRef, "Py_DecRef");
	VIS_FIND(p_None, "_Py_NoneStruct");
	VIS_FIND(p_TypeError, "PyExc_TypeError");
	VIS_FIND(p_ValueError, "PyExc_ValueError");
	VIS_FIND(p_ConnectionError, "PyExc_ConnectionError");
	VIS_FIND(p_RuntimeError, "PyExc_RuntimeError");
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		return "the host-call socket is not open";
	}
	if (sem_init(&link_lock, 0, 1) != 0) {
		return "cannot make the host-call lock";
	}
	if (p_PyImport_AppendInittab("_vis_host", host_init) != 0) {
		return "PyImport_AppendInittab failed";
	}
	link_fd = fd;
	return NULL;
}
