#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <wchar.h>

#include "shim.h"

static void *lib;
static char errbuf[512];

static const char *(*p_Py_GetVersion)(void);
static int (*p_Py_BytesMain)(int, char **);
static wchar_t *(*p_Py_DecodeLocale)(const char *, size_t *);
static void (*p_Py_SetPythonHome)(const wchar_t *);

#define RESOLVE(name)                                                        \
	do {                                                                     \
		*(void **)(&p_##name) = dlsym(lib, #name);                           \
		if (p_##name == NULL) {                                              \
			snprintf(errbuf, sizeof errbuf, "lacks the symbol %s", #name);   \
			return errbuf;                                                   \
		}                                                                    \
	} while (0)

const char *vis_py_open(const char *path) {
	lib = dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
	if (lib == NULL) {
		snprintf(errbuf, sizeof errbuf, "%s", dlerror());
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
	sigemptyset(&dfl.sa_mask);
	dfl.sa_flags = 0;
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
	return p_Py_BytesMain(argc, argv);
}
