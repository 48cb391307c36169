#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <wchar.h>

#include "argv.h"
#include "pymodule.h"
#include "shim.h"

static void *lib;
static char errbuf[512];

static const char *(*p_Py_GetVersion)(void);
static int (*p_Py_BytesMain)(int, char **);
static wchar_t *(*p_Py_DecodeLocale)(const char *, size_t *);
static void (*p_Py_SetPythonHome)(const wchar_t *);
static int (*p_PyImport_AppendInittab)(const char *, void *(*)(void));
static void *(*p_PyModuleDef_Init)(void *);
static void *(*p_PyModule_GetDict)(void *);
static void *(*p_Py_CompileString)(const char *, const char *, int);
static void *(*p_PyEval_EvalCode)(void *, void *, void *);
static void (*p_Py_DecRef)(void *);
static void (*p_Py_SetProgramName)(const wchar_t *);
static void (*p_Py_InitializeEx)(int);
static void *(*p_PyDict_New)(void);
static int (*p_PyDict_SetItemString)(void *, const char *, void *);
static void *(*p_PyDict_GetItemString)(void *, const char *);
static void *(*p_PyUnicode_FromStringAndSize)(const char *, ssize_t);
static const char *(*p_PyUnicode_AsUTF8AndSize)(void *, ssize_t *);
static void *(*p_PyEval_GetBuiltins)(void);
static void (*p_PyErr_Fetch)(void **, void **, void **);
static void (*p_PyErr_NormalizeException)(void **, void **, void **);
static int (*p_PyException_SetTraceback)(void *, void *);
static void *(*p_PyObject_CallFunctionObjArgs)(void *, ...);
static void (*p_PyErr_Clear)(void);

// PEP 741, CPython 3.14+: configuration by option name, no struct layouts.
static void *(*p_PyInitConfig_Create)(void);
static void (*p_PyInitConfig_Free)(void *);
static int (*p_PyInitConfig_SetInt)(void *, const char *, int64_t);
static int (*p_PyInitConfig_SetStr)(void *, const char *, const char *);
static int (*p_PyInitConfig_GetError)(void *, const char **);
static int (*p_Py_InitializeFromInitConfig)(void *);

// Prefetch: loading libpython (mapping and relocating several MB) costs
// about as much as the Go runtime's start-up, so it runs on a helper thread
// while Go initializes and the two overlap. It only predicts; Go still
// decides which library to load. The prediction is VIS_PYTHON_NATIVE_PATH
// when it names a file, else the library the last run loaded (the hint file
// Go keeps). The library is opened RTLD_LOCAL so a wrong guess never puts
// its symbols in the global namespace.
//
// A constructor makes the prediction; the thread starts later, from the
// first package initializers (package pyembed/early), once the Go runtime
// has started its own threads: glibc's dlopen holds the lock
// pthread_create needs for a new thread's TLS, and a dlopen started before
// Go kept the runtime's first pthread_create (its sysmon thread) waiting
// until the library was loaded, so the two did not overlap.
static pthread_t prefetch_thread;
static int prefetching;
static int prefetch_wanted;
static void *prefetched;
static char prefetch_path[PATH_MAX];

// prefetch_state: the thread claims the load (PREFETCH_RUNNING) when it
// starts, unless Go asked for the library first (PREFETCH_DROPPED): on a
// loaded machine a new thread can wait milliseconds for a CPU, and Go then
// loads the library itself rather than wait for a load not yet begun.
enum { PREFETCH_PENDING, PREFETCH_RUNNING, PREFETCH_DROPPED };
static atomic_int prefetch_state;

static void *prefetch_run(void *arg) {
	(void)arg;
	int pending = PREFETCH_PENDING;
	if (atomic_compare_exchange_strong(&prefetch_state, &pending, PREFETCH_RUNNING)) {
		prefetched = dlopen(prefetch_path, RTLD_LAZY | RTLD_LOCAL);
	}
	return NULL;
}

static int read_hint(void) {
	char file[PATH_MAX];
	const char *vis_home = getenv("VIS_HOME");
	const char *home = getenv("HOME");
	int n;
	if (vis_home != NULL && vis_home[0] != '\0') {
		n = snprintf(file, sizeof file, "%s/python/" VIS_HINT_FILE, vis_home);
	} else if (home != NULL && home[0] != '\0') {
		n = snprintf(file, sizeof file, "%s/.vis/python/" VIS_HINT_FILE, home);
	} else {
		return 0;
	}
	if (n <= 0 || (size_t)n >= sizeof file) {
		return 0;
	}
	FILE *f = fopen(file, "re");
	if (f == NULL) {
		return 0;
	}
	size_t len = fread(prefetch_path, 1, sizeof prefetch_path - 1, f);
	fclose(f);
	while (len > 0 && (prefetch_path[len - 1] == '\n' || prefetch_path[len - 1] == '\r')) {
		len--;
	}
	prefetch_path[len] = '\0';
	return len > 0;
}

__attribute__((constructor)) static void vis_prefetch(int argc, char **argv, char **envp) {
	(void)envp;
	if (!vis_loads_python(argc, argv)) {
		return;
	}
	const char *env = getenv("VIS_PYTHON_NATIVE_PATH");
	struct stat st;
	if (env != NULL && env[0] != '\0') {
		if (stat(env, &st) != 0 || !S_ISREG(st.st_mode) || strlen(env) >= sizeof prefetch_path) {
			return;
		}
		strcpy(prefetch_path, env);
	} else if (!read_hint()) {
		return;
	}
	prefetch_wanted = !vis_loads_no_library(argc, argv);
}

void vis_py_prefetch_start(void) {
	if (!prefetch_wanted || prefetching) {
		return;
	}
	// The helper thread takes no signals: they belong to Go now and to
	// CPython's main thread later.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	prefetching = pthread_create(&prefetch_thread, NULL, prefetch_run, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

// python_command records whether this process is `vis-agent python`, read
// before Go parses the command line.
static int python_command;

__attribute__((constructor)) static void vis_note_command(int argc, char **argv, char **envp) {
	(void)envp;
	python_command = vis_python_command(argc, argv);
}

int vis_py_python_command(void) { return python_command; }

const char *vis_py_prefetched(void) { return prefetch_path; }

#define RESOLVE(name)                                                        \
	do {                                                                     \
		*(void **)(&p_##name) = dlsym(lib, #name);                           \
		if (p_##name == NULL) {                                              \
			snprintf(errbuf, sizeof errbuf, "lacks the symbol %s", #name);   \
			return errbuf;                                                   \
		}                                                                    \
	} while (0)

const char *vis_py_open(const char *path) {
	if (prefetching) {
		int pending = PREFETCH_PENDING;
		if (atomic_compare_exchange_strong(&prefetch_state, &pending, PREFETCH_DROPPED)) {
			pthread_detach(prefetch_thread); // it has not started; it ends at once when it does
		} else {
			pthread_join(prefetch_thread, NULL); // loading: dlopen below would wait for it anyway
		}
		prefetching = 0;
	}
	// RTLD_GLOBAL: extension modules are not linked against libpython and
	// find the C API in the global namespace. It also promotes a prefetched
	// copy of the same file. RTLD_LAZY as python's own loader does: binding
	// every symbol up front costs start-up time for functions never called.
	lib = dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
	if (lib == NULL) {
		snprintf(errbuf, sizeof errbuf, "%s", dlerror());
	}
	if (prefetched != NULL) {
		// Drop the prefetch's reference: the same file stays loaded through
		// lib, a wrong guess is unloaded.
		dlclose(prefetched);
		prefetched = NULL;
	}
	if (lib == NULL) {
		return errbuf;
	}
	// Py_GetVersion first: a library without it is not CPython at all.
	*(void **)(&p_Py_GetVersion) = dlsym(lib, "Py_GetVersion");
	if (p_Py_GetVersion == NULL) {
		return "not a CPython library (no Py_GetVersion)";
	}
	return NULL;
}

const char *vis_py_resolve(int minor) {
	RESOLVE(Py_BytesMain);
	RESOLVE(Py_DecodeLocale);
	RESOLVE(Py_SetPythonHome);
	RESOLVE(PyImport_AppendInittab);
	RESOLVE(PyModuleDef_Init);
	RESOLVE(PyModule_GetDict);
	RESOLVE(Py_CompileString);
	RESOLVE(PyEval_EvalCode);
	RESOLVE(Py_DecRef);
	RESOLVE(PyDict_New);
	RESOLVE(PyDict_SetItemString);
	RESOLVE(PyDict_GetItemString);
	RESOLVE(PyUnicode_FromStringAndSize);
	RESOLVE(PyUnicode_AsUTF8AndSize);
	RESOLVE(PyEval_GetBuiltins);
	RESOLVE(PyErr_Fetch);
	RESOLVE(PyErr_NormalizeException);
	RESOLVE(PyException_SetTraceback);
	RESOLVE(PyObject_CallFunctionObjArgs);
	RESOLVE(PyErr_Clear);
	if (minor >= 14) {
		RESOLVE(PyInitConfig_Create);
		RESOLVE(PyInitConfig_Free);
		RESOLVE(PyInitConfig_SetInt);
		RESOLVE(PyInitConfig_SetStr);
		RESOLVE(PyInitConfig_GetError);
		RESOLVE(Py_InitializeFromInitConfig);
	} else {
		RESOLVE(Py_SetProgramName);
		RESOLVE(Py_InitializeEx);
	}
	return NULL;
}

const char *vis_py_version(void) { return p_Py_GetVersion(); }

// The dispositions this process inherited, read by a constructor before the
// Go runtime installs its handlers: after exec a signal is either ignored or
// default. Go installs its own handler for most signals even when they were
// ignored (it respects an inherited SIG_IGN only for SIGHUP and SIGINT).
static unsigned char inherited_ignored[NSIG];
// The inherited mask of blocked signals, which the Go runtime trims.
static sigset_t inherited_mask;

// The inherited limit on open files: Go raises the soft limit to the hard
// one when it starts (and lowers it again only for the programs it execs);
// CPython and the programs it starts get the inherited one, as python's do.
static struct rlimit inherited_nofile;
static int have_inherited_nofile;

// Priority 101: before fastpath.c's constructor, which may start CPython.
__attribute__((constructor(101))) static void vis_record_signals(void) {
	have_inherited_nofile = getrlimit(RLIMIT_NOFILE, &inherited_nofile) == 0;
	pthread_sigmask(SIG_BLOCK, NULL, &inherited_mask);
	struct sigaction sa;
	for (int sig = 1; sig < NSIG; sig++) {
		inherited_ignored[sig] = sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
	}
}

// Give every signal the disposition python would have inherited: ignored
// stays ignored (nohup, `trap '' TERM`, the SIGINT and SIGQUIT of a
// background job), everything else is default. CPython then installs its own
// SIGINT handler (KeyboardInterrupt) and SIG_IGN for SIGPIPE and SIGXFSZ,
// reads SIG_DFL or SIG_IGN for every other signal (signal.getsignal), and a
// fault kills the process the way it kills python instead of printing a Go
// stack dump. That includes SIGURG, which Go uses to preempt goroutines:
// while CPython runs, goroutines are only preempted at their own safe
// points. 32 and 33 belong to glibc, which refuses them.
static void reset_signals(void) {
	struct sigaction old, want;
	memset(&want, 0, sizeof want);
	sigemptyset(&want.sa_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) != 0) {
			continue;
		}
		want.sa_handler = inherited_ignored[sig] ? SIG_IGN : SIG_DFL;
		if (old.sa_handler != want.sa_handler) {
			sigaction(sig, &want, NULL);
		}
	}
}

int vis_py_restore_signals(void) {
	reset_signals();
	return pthread_sigmask(SIG_SETMASK, &inherited_mask, NULL);
}

// The start-up hook: a built-in module named sitecustomize, which site
// imports after it has set up sys.path and before the program runs. Its
// body is Python source the Go side composes.
#define VIS_PY_MOD_EXEC 2
#define VIS_PY_FILE_INPUT 257

static const char *startup_source;

static int startup_exec(void *module) {
	void *dict = p_PyModule_GetDict(module); // borrowed
	void *code = p_Py_CompileString(startup_source, "<vis-agent startup>", VIS_PY_FILE_INPUT);
	if (code == NULL) {
		return -1;
	}
	void *result = p_PyEval_EvalCode(code, dict, dict);
	p_Py_DecRef(code);
	if (result == NULL) {
		return -1;
	}
	p_Py_DecRef(result);
	return 0;
}

static vis_moduledef_slot startup_slots[] = {
	{VIS_PY_MOD_EXEC, (void *)startup_exec},
	{0, NULL},
};

static vis_moduledef startup_def = {
	VIS_MODULEDEF_HEAD,
	"sitecustomize", NULL, 0, NULL, startup_slots, NULL, NULL, NULL,
};

static void *startup_init(void) { return p_PyModuleDef_Init(&startup_def); }

int vis_py_main(int argc, char **argv, const char *home, const char *startup) {
	if (home != NULL) {
		// CPython keeps the pointer: it must outlive the interpreter.
		wchar_t *whome = p_Py_DecodeLocale(home, NULL);
		if (whome == NULL) {
			fprintf(stderr, "vis-agent: cannot decode the Python home %s\n", home);
			return 1;
		}
		p_Py_SetPythonHome(whome);
	}
	if (startup != NULL) {
		startup_source = startup;
		p_PyImport_AppendInittab("sitecustomize", startup_init);
	}
	reset_signals();
	if (have_inherited_nofile) {
		setrlimit(RLIMIT_NOFILE, &inherited_nofile);
	}
	// CPython's main thread, and the threads it starts, block what python's
	// would. Go's own threads keep their masks: a process-directed signal
	// python blocks can still reach one of them.
	sigset_t go_mask;
	pthread_sigmask(SIG_SETMASK, &inherited_mask, &go_mask);
	int status = p_Py_BytesMain(argc, argv);
	pthread_sigmask(SIG_SETMASK, &go_mask, NULL);
	// Some exits (--version, --help-env, option errors) print with C stdio
	// and return without finalizing it; python's exit() flushes it, Go's
	// os.Exit does not.
	fflush(NULL);
	return status;
}

// In-process use (vis-agent's own commands): an interpreter without site,
// environment variables or signal handlers, initialized once.

// format_error is the function format_error.py defines; it lives as long as
// the interpreter.
static void *format_error;

// copy_text copies len bytes of text into a new NUL-terminated buffer.
static char *copy_text(const char *text, size_t len, size_t *out_len) {
	char *out = malloc(len + 1);
	if (out == NULL) {
		return NULL;
	}
	memcpy(out, text, len);
	out[len] = '\0';
	*out_len = len;
	return out;
}

// take_error clears the exception CPython has set and returns it as
// "type\0message\0traceback" (malloc'd, *len bytes), or NULL when memory ran
// out. The text is what format_error.py makes of it.
static char *take_error(size_t *len) {
	static const char unformatted[] = "SystemError\0vis-agent could not format the exception\0";
	void *type = NULL, *value = NULL, *tb = NULL;
	p_PyErr_Fetch(&type, &value, &tb);
	p_PyErr_NormalizeException(&type, &value, &tb);
	if (value != NULL && tb != NULL) {
		p_PyException_SetTraceback(value, tb);
	}
	char *out = NULL;
	void *text = NULL;
	if (format_error != NULL && value != NULL) {
		text = p_PyObject_CallFunctionObjArgs(format_error, value, NULL);
	}
	if (text != NULL) {
		ssize_t n = 0;
		const char *utf8 = p_PyUnicode_AsUTF8AndSize(text, &n);
		if (utf8 != NULL) {
			out = copy_text(utf8, (size_t)n, len);
		}
		p_Py_DecRef(text);
	}
	if (out == NULL) {
		p_PyErr_Clear();
		out = copy_text(unformatted, sizeof unformatted - 1, len);
	}
	p_Py_DecRef(type);
	p_Py_DecRef(value);
	p_Py_DecRef(tb);
	return out;
}

// new_namespace is a module namespace holding __builtins__: imports from C
// (PyImport_Import, as the \N{...} escape does for unicodedata) look it up
// in the globals.
static void *new_namespace(void) {
	void *globals = p_PyDict_New();
	if (globals != NULL && p_PyDict_SetItemString(globals, "__builtins__", p_PyEval_GetBuiltins()) != 0) {
		p_Py_DecRef(globals);
		return NULL;
	}
	return globals;
}

// start_legacy is how 3.10-3.13 start: the global flags and setters PEP 741
// replaces.
static const char *start_legacy(const char *program, const char *home) {
	int *no_site = dlsym(lib, "Py_NoSiteFlag");
	int *ignore_env = dlsym(lib, "Py_IgnoreEnvironmentFlag");
	if (no_site != NULL) {
		*no_site = 1;
	}
	if (ignore_env != NULL) {
		*ignore_env = 1;
	}
	// CPython keeps both strings for the life of the interpreter.
	wchar_t *wprogram = p_Py_DecodeLocale(program, NULL);
	if (wprogram == NULL) {
		return "cannot decode the program name";
	}
	p_Py_SetProgramName(wprogram);
	if (home != NULL) {
		wchar_t *whome = p_Py_DecodeLocale(home, NULL);
		if (whome == NULL) {
			return "cannot decode the Python home";
		}
		p_Py_SetPythonHome(whome);
	}
	p_Py_InitializeEx(0);
	return NULL;
}

// start_config is how 3.14+ start (PEP 741). PyInitConfig_Create begins
// from the isolated configuration: no environment variables, no user site,
// no signal handlers. Strings are UTF-8 and copied; UTF-8 mode makes
// CPython turn the paths back into the same bytes.
static const char *start_config(const char *program, const char *home) {
	void *config = p_PyInitConfig_Create();
	if (config == NULL) {
		return "out of memory";
	}
	const char *msg = NULL;
	if (p_PyInitConfig_SetInt(config, "site_import", 0) != 0 ||
	    p_PyInitConfig_SetInt(config, "use_environment", 0) != 0 ||
	    p_PyInitConfig_SetInt(config, "install_signal_handlers", 0) != 0 ||
	    p_PyInitConfig_SetInt(config, "utf8_mode", 1) != 0 ||
	    p_PyInitConfig_SetStr(config, "program_name", program) != 0 ||
	    (home != NULL && p_PyInitConfig_SetStr(config, "home", home) != 0) ||
	    p_Py_InitializeFromInitConfig(config) != 0) {
		if (p_PyInitConfig_GetError(config, &msg) != 1 || msg == NULL) {
			msg = "unknown error";
		}
		// The message lives in config, which is freed below.
		snprintf(errbuf, sizeof errbuf, "%s", msg);
		msg = errbuf;
	}
	p_PyInitConfig_Free(config);
	return msg;
}

const char *vis_py_initialize(const char *program, const char *home, const char *formatter) {
	// vis_py_resolve found the PEP 741 functions for 3.14+ only.
	const char *msg = p_PyInitConfig_Create != NULL ? start_config(program, home) : start_legacy(program, home);
	if (msg != NULL) {
		return msg;
	}
	// The formatter is vis-agent's own code: if it cannot load, nothing can
	// explain why in Python terms.
	void *globals = new_namespace();
	void *code = globals == NULL ? NULL : p_Py_CompileString(formatter, "format_error.py", VIS_PY_FILE_INPUT);
	void *result = code == NULL ? NULL : p_PyEval_EvalCode(code, globals, globals);
	format_error = result == NULL ? NULL : p_PyDict_GetItemString(globals, "format_error"); // borrowed from globals, kept
	p_Py_DecRef(result);
	p_Py_DecRef(code);
	if (format_error == NULL) {
		p_PyErr_Clear();
		p_Py_DecRef(globals);
		return "cannot load format_error.py";
	}
	return NULL;
}

int vis_py_run(void *code, const char *input, size_t input_len, char **output, size_t *output_len) {
	*output = NULL;
	void *globals = new_namespace();
	void *in = globals == NULL ? NULL : p_PyUnicode_FromStringAndSize(input, (ssize_t)input_len);
	void *result = NULL;
	if (in != NULL && p_PyDict_SetItemString(globals, "INPUT", in) == 0) {
		result = p_PyEval_EvalCode(code, globals, globals);
	}
	int status = VIS_PY_RAISED;
	if (result != NULL) {
		void *out = p_PyDict_GetItemString(globals, "OUTPUT"); // borrowed
		ssize_t n = 0;
		// Not a str: AsUTF8AndSize raises TypeError.
		const char *utf8 = out == NULL ? NULL : p_PyUnicode_AsUTF8AndSize(out, &n);
		if (out == NULL) {
			status = VIS_PY_NO_OUTPUT;
		} else if (utf8 != NULL) {
			*output = copy_text(utf8, (size_t)n, output_len);
			status = *output == NULL ? VIS_PY_NOMEM : VIS_PY_OK;
		}
		p_Py_DecRef(result);
	}
	if (status == VIS_PY_RAISED) {
		*output = take_error(output_len);
		if (*output == NULL) {
			status = VIS_PY_NOMEM;
		}
	}
	p_Py_DecRef(in);
	p_Py_DecRef(globals);
	return status;
}

int vis_py_compile(const char *source, const char *filename, void **code, char **err, size_t *err_len) {
	*err = NULL;
	*code = p_Py_CompileString(source, filename, VIS_PY_FILE_INPUT);
	if (*code != NULL) {
		return VIS_PY_OK;
	}
	*err = take_error(err_len);
	return *err == NULL ? VIS_PY_NOMEM : VIS_PY_RAISED;
}
