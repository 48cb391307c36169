// The C half of pyembed: dlopen libpython and call it through function
// pointers, so nothing links against any one CPython at build time.
#ifndef VIS_PYEMBED_SHIM_H
#define VIS_PYEMBED_SHIM_H

// vis_py_open loads the library with global symbols and resolves the entry
// points every run needs. It returns NULL on success, or a message (owned by
// the shim, valid until the next call) describing what is wrong.
const char *vis_py_open(const char *path);

// vis_py_version is Py_GetVersion() of the loaded library.
const char *vis_py_version(void);

// vis_py_main runs CPython's own command line (Py_BytesMain) and returns its
// exit status. home, when not NULL, overrides the interpreter's home.
int vis_py_main(int argc, char **argv, const char *home);

#endif
