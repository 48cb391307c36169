// The C half of pyembed: dlopen libpython and call it through function
// pointers, so nothing links against any one CPython at build time.
#ifndef VIS_PYEMBED_SHIM_H
#define VIS_PYEMBED_SHIM_H

// VIS_HINT_FILE, under $VIS_HOME/python (default ~/.vis/python), names the
// library the last run loaded, so the next one can start loading it early.
#define VIS_HINT_FILE "last-library"

// A python run's plan, which the next identical run replays before Go
// starts (fastpath.c), lives in $VIS_HOME/python/VIS_FASTPATH_DIR, and
// begins with VIS_FASTPATH_MAGIC, which changes with the format.
#define VIS_FASTPATH_DIR "fastpath"
#define VIS_FASTPATH_MAGIC "vis-fastpath-1"

// vis_fastpath_missed reports whether this `vis-agent python` run looked
// for a plan and could not replay one, so Go should save its own.
int vis_fastpath_missed(void);

// vis_py_prefetched is the library a constructor predicted a python run
// loads ("" when none).
const char *vis_py_prefetched(void);

// vis_py_prefetch_start starts loading the predicted library on a helper
// thread (once; nothing when there is no prediction). Package pyembed/early
// calls it from one of the first package initializers.
void vis_py_prefetch_start(void);

// vis_py_python_command reports whether the command line is `vis-agent
// python ...`, before Go has parsed it.
int vis_py_python_command(void);

// vis_py_open loads the library with global symbols and finds
// Py_GetVersion. It returns NULL on success, or a message (owned by the
// shim, valid until the next call) describing what is wrong.
const char *vis_py_open(const char *path);

// vis_py_resolve finds the other entry points vis-agent calls, once the
// version (3.minor) is known to be supported; NULL or what is missing.
const char *vis_py_resolve(int minor);

// vis_py_version is Py_GetVersion() of the loaded library.
const char *vis_py_version(void);

// vis_py_restore_signals gives the process the signal dispositions it
// inherited and the calling thread the inherited mask, for an exec of
// another program; 0, or pthread_sigmask's error number.
int vis_py_restore_signals(void);

// vis_py_main runs CPython's own command line (Py_BytesMain) and returns its
// exit status. home, when not NULL, overrides the interpreter's home;
// startup, when not NULL, is Python source run as sitecustomize.
int vis_py_main(int argc, char **argv, const char *home, const char *startup);

// vis_py_initialize starts an interpreter in this process for vis-agent's
// own use: no site, no environment variables, no signal handlers. program
// is the python CPython computes its paths from; home may be NULL;
// formatter is the source of format_error.py. NULL on success, else what
// went wrong.
const char *vis_py_initialize(const char *program, const char *home, const char *formatter);

// What vis_py_compile and vis_py_run return.
#define VIS_PY_OK 0
// The code raised: the text is "type\0message\0traceback" (malloc'd).
#define VIS_PY_RAISED 1
// vis_py_run's code left no OUTPUT.
#define VIS_PY_NO_OUTPUT 2
// Memory ran out.
#define VIS_PY_NOMEM (-1)

// vis_py_compile compiles Python source (file mode) into *code, or sets
// *err (malloc'd, *err_len bytes) to the exception.
int vis_py_compile(const char *source, const char *filename, void **code, char **err, size_t *err_len);

// vis_py_run runs compiled code in a fresh namespace holding the str INPUT.
// *output (malloc'd, *output_len bytes, to free) is the str the code left
// in OUTPUT, or the exception when it raised.
int vis_py_run(void *code, const char *input, size_t input_len, char **output, size_t *output_len);

#endif
