// The parts of CPython's stable ABI that vis-agent's built-in modules need
// (an object's head, PyMethodDef, PyModuleDef, PyModuleDef_Slot), as laid
// out by release builds that are not free-threaded, which is all
// vis-agent loads: no CPython header is needed at build time. shim.c's
// start-up module and sandbox/child's _vis_host and _vis_written use them.
#ifndef VIS_PYEMBED_PYMODULE_H
#define VIS_PYEMBED_PYMODULE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
	ssize_t refcnt;
	void *type;
} vis_object_head;

typedef struct {
	vis_object_head head;
	void *(*init)(void);
	ssize_t index;
	void *copy;
} vis_moduledef_base;

typedef struct {
	int slot;
	void *value;
} vis_moduledef_slot;

typedef struct {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
} vis_methoddef;

typedef struct {
	vis_moduledef_base base;
	const char *name;
	const char *doc;
	ssize_t size;
	vis_methoddef *methods;
	vis_moduledef_slot *slots;
	void *traverse, *clear, *free;
} vis_moduledef;

// The head of a static module definition, which is never freed: its
// reference count is the one CPython 3.12+ gives immortal objects, and too
// large to reach zero before.
#define VIS_MODULEDEF_HEAD {{0xFFFFFFFF, NULL}, NULL, 0, NULL}

#endif
