#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "shim.h"

static void *lib;
static char errbuf[512];

static const char *(*p_Py_GetVersion)(void);
static int (*p_Py_BytesMain)(int, char **);
static wchar_t *(*p_Py_DecodeLocale)(const char *, size_t *);
static void (*p_Py_SetPythonHome)(const wchar_t *);

// Prefetch: loading libpython (mapping and relocating several MB) costs
// about as much as the Go runtime's start-up, so a constructor starts it on
// a helper thread before Go initializes and the two overlap. It only
// predicts; Go still decides which library to load. The prediction is
// VIS_PYTHON_NATIVE_PATH when it names a file, else the library the last
// run loaded (the hint file Go keeps). The library is opened RTLD_LOCAL so
// a wrong guess never puts its symbols in the global namespace.
static pthread_t prefetch_thread;
static int prefetching;
static void *prefetched;
static char prefetch_path[PATH_MAX];

static void *prefetch_run(void *arg) {
	(void)arg;
	prefetched = dlopen(prefetch_path, RTLD_LAZY | RTLD_LOCAL);
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
	if (argc < 2 || argv == NULL || strcmp(argv[1], "python") != 0) {
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
	// The helper thread takes no signals: they belong to Go now and to
	// CPython's main thread later.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	prefetching = pthread_create(&prefetch_thread, NULL, prefetch_run, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

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
		pthread_join(prefetch_thread, NULL);
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
	RESOLVE(Py_BytesMain);
	RESOLVE(Py_DecodeLocale);
	RESOLVE(Py_SetPythonHome);
	return NULL;
}

const char *vis_py_version(void) { return p_Py_GetVersion(); }

// Give every signal the Go runtime took back its default disposition, as a
// fresh python process has it: CPython then installs its own SIGINT handler
// (KeyboardInterrupt), SIG_IGN for SIGPIPE and SIGXFSZ, and a fault kills the
// process the way it kills python instead of printing a Go stack dump.
// Signals ignored at start (nohup) stay ignored. SIGURG stays with Go, which
// uses it to preempt goroutines; 32 and 33 belong to glibc.
static void reset_signals(void) {
	struct sigaction old, dfl;
	memset(&dfl, 0, sizeof dfl);
	sigemptyset(&dfl.sa_mask);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGURG) {
			continue;
		}
		if (sigaction(sig, NULL, &old) != 0) {
			continue;
		}
		if (old.sa_handler == SIG_IGN || old.sa_handler == SIG_DFL) {
			continue;
		}
		sigaction(sig, &dfl, NULL);
	}
}

int vis_py_main(int argc, char **argv, const char *home) {
	if (home != NULL) {
		// CPython keeps the pointer: it must outlive the interpreter.
		wchar_t *whome = p_Py_DecodeLocale(home, NULL);
		if (whome != NULL) {
			p_Py_SetPythonHome(whome);
		}
	}
	reset_signals();
	int status = p_Py_BytesMain(argc, argv);
	// Some exits (--version, --help-env, option errors) print with C stdio
	// and return without finalizing it; python's exit() flushes it, Go's
	// os.Exit does not.
	fflush(NULL);
	return status;
}
