#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include "pyembed/pyfind.h"
#include "pyembed/pymodule.h"
#include "written.h"

// The C API the hook and the module call, found in the loaded libpython.
static int (*p_PySys_AddAuditHook)(int (*)(const char *, void *, void *), void *);
static int (*p_PyImport_AppendInittab)(const char *, void *(*)(void));
static void *(*p_PyModuleDef_Init)(void *);
static ssize_t (*p_PyTuple_Size)(void *);
static void *(*p_PyTuple_GetItem)(void *, ssize_t);
static void *(*p_PyTuple_Pack)(ssize_t, ...);
static void *(*p_PyOS_FSPath)(void *);
static void *(*p_PyUnicode_EncodeFSDefault)(void *);
static void *(*p_PyUnicode_DecodeFSDefault)(const char *);
static const char *(*p_PyUnicode_AsUTF8)(void *);
static char *(*p_PyBytes_AsString)(void *);
static int (*p_PyObject_IsInstance)(void *, void *);
static long (*p_PyLong_AsLong)(void *);
static void *(*p_PyList_New)(ssize_t);
static int (*p_PyList_Append)(void *, void *);
static void *(*p_PyBool_FromLong)(long);
static void (*p_PyErr_Clear)(void);
static void (*p_DecRef)(void *);
static void *p_None, *p_LongType, *p_BytesType, *p_UnicodeType;

// The notes: at most MAX_NOTED distinct absolute paths (more: the host
// looks for the changed files itself), guarded by the GIL, which every
// audit hook and module function runs under.
#define MAX_NOTED 256
static char *noted[MAX_NOTED];
static int n_noted, more;

// The Python files opened for reading, for the child to compile ahead
// (vis_sandbox.ahead): at most MAX_READ, the others dropped.
#define MAX_READ 32
static char *read_noted[MAX_READ];
static int n_read;

static void *arg(void *args, ssize_t i) {
	return i < p_PyTuple_Size(args) ? p_PyTuple_GetItem(args, i) : NULL;
}

static int is_int(void *o) { return p_PyObject_IsInstance(o, p_LongType) == 1; }

// checked: the names sandbox/check checks (check.KindOf), by suffix; the
// first two are Python's.
static const char *const suffixes[] = {".py", ".pyi", ".json", ".toml", ".yaml", ".yml"};

static int has_suffix(const char *path, size_t kinds) {
	size_t n = strlen(path);
	for (size_t i = 0; i < kinds; i++) {
		size_t k = strlen(suffixes[i]);
		if (n > k && strcasecmp(path + n - k, suffixes[i]) == 0) {
			return 1;
		}
	}
	return 0;
}

static int checked(const char *path) { return has_suffix(path, sizeof suffixes / sizeof suffixes[0]); }

static int python(const char *path) { return has_suffix(path, 2); }

// note keeps path (a str, bytes or path-like object) in list (n of at
// most max; over it, *over is set) when keep says so, made absolute from
// the working folder.
static void note_in(void *path, int (*keep)(const char *), char **list, int *n, int max, int *over) {
	if (path == NULL || path == p_None || is_int(path)) {
		return;
	}
	void *fs = p_PyOS_FSPath(path);
	if (fs == NULL) {
		p_PyErr_Clear();
		return;
	}
	void *bytes = p_PyObject_IsInstance(fs, p_BytesType) == 1 ? fs : p_PyUnicode_EncodeFSDefault(fs);
	const char *s = bytes != NULL ? p_PyBytes_AsString(bytes) : NULL;
	char full[PATH_MAX];
	int ok = s != NULL && keep(s);
	if (ok && s[0] != '/') {
		char cwd[PATH_MAX];
		ok = getcwd(cwd, sizeof cwd) != NULL && (size_t)snprintf(full, sizeof full, "%s/%s", cwd, s) < sizeof full;
	} else if (ok) {
		ok = (size_t)snprintf(full, sizeof full, "%s", s) < sizeof full;
	}
	if (bytes != NULL && bytes != fs) {
		p_DecRef(bytes);
	}
	p_DecRef(fs);
	p_PyErr_Clear();
	if (!ok) {
		return;
	}
	for (int i = 0; i < *n; i++) {
		if (strcmp(list[i], full) == 0) {
			return;
		}
	}
	char *copy = *n < max ? strdup(full) : NULL;
	if (copy == NULL) {
		*over = 1;
		return;
	}
	list[(*n)++] = copy;
}

// in_git: a path through a folder named .git, a repository's hooks and
// settings, which git runs as the user: the host looks there after the
// block and names what changed (sandbox/host's gitnotice.go).
static int in_git(const char *path) { return strncmp(path, ".git/", 5) == 0 || strstr(path, "/.git/") != NULL; }

static int written(const char *path) { return checked(path) || in_git(path); }

static void note(void *path) { note_in(path, written, noted, &n_noted, MAX_NOTED, &more); }

static void note_read(void *path) {
	int dropped = 0;
	note_in(path, python, read_noted, &n_read, MAX_READ, &dropped);
}

// hook notes "open" for writing (path, mode, flags; mode None for os.open),
// and for reading, the destination of "os.rename" (os.rename, os.replace: src, dst,
// src_dir_fd, dst_dir_fd) when it is not relative to a descriptor, and
// what "os.link" and "os.symlink" (src, dst, …) make a second way to
// inside a .git. Other events cost a comparison; it never refuses one.
static int hook(const char *event, void *args, void *data) {
	(void)data;
	if (event[0] != 'o') {
		return 0;
	}
	if (strcmp(event, "open") == 0) {
		void *mode = arg(args, 1), *flags = arg(args, 2);
		int write = 0;
		if (mode != NULL && mode != p_None && p_PyObject_IsInstance(mode, p_UnicodeType) == 1) {
			const char *m = p_PyUnicode_AsUTF8(mode);
			write = m != NULL && strpbrk(m, "wax+") != NULL;
		}
		if (flags != NULL && is_int(flags)) {
			long f = p_PyLong_AsLong(flags);
			write = write || (f != -1 && (f & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0);
		}
		p_PyErr_Clear();
		if (write) {
			note(arg(args, 0));
		} else {
			note_read(arg(args, 0));
		}
	} else if (strcmp(event, "os.rename") == 0) {
		void *dirfd = arg(args, 3);
		if (dirfd == NULL || dirfd == p_None || (is_int(dirfd) && p_PyLong_AsLong(dirfd) == -1)) {
			note(arg(args, 1));
		}
		p_PyErr_Clear();
	} else if (strcmp(event, "os.link") == 0 || strcmp(event, "os.symlink") == 0) {
		note_in(arg(args, 0), in_git, noted, &n_noted, MAX_NOTED, &more);
	}
	return 0;
}

// take() -> (paths, more): the files noted since the last take, and
// whether there were more than it keeps; the notes start again empty.
// as_list is the n paths of list as a Python list (NULL on failure).
static void *as_list(char **list, int n) {
	void *out = p_PyList_New(0);
	if (out == NULL) {
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		void *s = p_PyUnicode_DecodeFSDefault(list[i]);
		if (s == NULL || p_PyList_Append(out, s) != 0) {
			if (s != NULL) {
				p_DecRef(s);
			}
			p_DecRef(out);
			return NULL;
		}
		p_DecRef(s);
	}
	return out;
}

static void clear(char **list, int *n) {
	for (int i = 0; i < *n; i++) {
		free(list[i]);
	}
	*n = 0;
}

static void *written_take(void *self, void *unused) {
	(void)self;
	(void)unused;
	void *list = as_list(noted, n_noted);
	if (list == NULL) {
		return NULL;
	}
	void *flag = p_PyBool_FromLong(more);
	void *result = flag == NULL ? NULL : p_PyTuple_Pack(2, list, flag);
	p_DecRef(list);
	if (flag != NULL) {
		p_DecRef(flag);
	}
	if (result != NULL) {
		clear(noted, &n_noted);
		more = 0;
	}
	return result;
}

// take_read() -> paths: the Python files opened for reading since the
// last take_read (at most MAX_READ); the notes start again empty.
static void *written_take_read(void *self, void *unused) {
	(void)self;
	(void)unused;
	void *list = as_list(read_noted, n_read);
	if (list != NULL) {
		clear(read_noted, &n_read);
	}
	return list;
}

#define VIS_METH_NOARGS 4

static vis_methoddef written_methods[] = {
	{"take", (void *)written_take, VIS_METH_NOARGS,
	 "take() -> (paths, more): the checked files opened for writing or renamed onto, and the paths in a .git written or linked to, since the last take()."},
	{"take_read", (void *)written_take_read, VIS_METH_NOARGS,
	 "take_read() -> paths: the Python files opened for reading since the last take_read() (at most 32)."},
	{NULL, NULL, 0, NULL},
};

static vis_moduledef written_def = {
	VIS_MODULEDEF_HEAD,
	"_vis_written", "The files a sandbox session's code wrote, for the host's check (vis_sandbox.checks).", 0,
	written_methods, NULL, NULL, NULL, NULL,
};

static void *written_init(void) { return p_PyModuleDef_Init(&written_def); }

static int installed;

const char *vis_written_install(void) {
	if (installed) {
		return "the write notes are already installed";
	}
	VIS_FIND(p_PySys_AddAuditHook, "PySys_AddAuditHook");
	VIS_FIND(p_PyImport_AppendInittab, "PyImport_AppendInittab");
	VIS_FIND(p_PyModuleDef_Init, "PyModuleDef_Init");
	VIS_FIND(p_PyTuple_Size, "PyTuple_Size");
	VIS_FIND(p_PyTuple_GetItem, "PyTuple_GetItem");
	VIS_FIND(p_PyTuple_Pack, "PyTuple_Pack");
	VIS_FIND(p_PyOS_FSPath, "PyOS_FSPath");
	VIS_FIND(p_PyUnicode_EncodeFSDefault, "PyUnicode_EncodeFSDefault");
	VIS_FIND(p_PyUnicode_DecodeFSDefault, "PyUnicode_DecodeFSDefault");
	VIS_FIND(p_PyUnicode_AsUTF8, "PyUnicode_AsUTF8");
	VIS_FIND(p_PyBytes_AsString, "PyBytes_AsString");
	VIS_FIND(p_PyObject_IsInstance, "PyObject_IsInstance");
	VIS_FIND(p_PyLong_AsLong, "PyLong_AsLong");
	VIS_FIND(p_PyList_New, "PyList_New");
	VIS_FIND(p_PyList_Append, "PyList_Append");
	VIS_FIND(p_PyBool_FromLong, "PyBool_FromLong");
	VIS_FIND(p_PyErr_Clear, "PyErr_Clear");
	VIS_FIND(p_DecRef, "Py_DecRef");
	VIS_FIND(p_None, "_Py_NoneStruct");
	VIS_FIND(p_LongType, "PyLong_Type");
	VIS_FIND(p_BytesType, "PyBytes_Type");
	VIS_FIND(p_UnicodeType, "PyUnicode_Type");
	if (p_PyImport_AppendInittab("_vis_written", written_init) != 0) {
		return "PyImport_AppendInittab failed";
	}
	// Before Py_Initialize the hook goes into the runtime's own list.
	if (p_PySys_AddAuditHook(hook, NULL) != 0) {
		return "PySys_AddAuditHook failed";
	}
	installed = 1;
	return NULL;
}
