// VIS_FIND, for the C files that call the loaded libpython without the
// shim's table (sandbox/jail/audit's hook, sandbox/child's modules), which
// include this header through their cgo flags: point name at the C API
// symbol sym, found in the global namespace libpython was opened into
// (RTLD_GLOBAL), or return from the enclosing function with a message.
#ifndef VIS_PYEMBED_PYFIND_H
#define VIS_PYEMBED_PYFIND_H

#include <dlfcn.h>

#define VIS_FIND(name, sym)                                                \
	do {                                                                   \
		*(void **)(&(name)) = dlsym(RTLD_DEFAULT, sym);                    \
		if ((name) == NULL) {                                              \
			return "the loaded libpython lacks " sym;                      \
		}                                                                  \
	} while (0)

#endif
