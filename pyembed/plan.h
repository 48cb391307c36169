// Plans: files of NUL-terminated fields that Go saves for a command line,
// and that a C constructor acts on before the Go runtime starts when the
// same command line runs again (fastpath.c replays python runs,
// runpath.c carries a warm `sandbox run` block to its session's host).
// fastpath.c holds these helpers; fastpath.go and runpath.go write plans.
#ifndef VIS_PYEMBED_PLAN_H
#define VIS_PYEMBED_PLAN_H

#include <stddef.h>
#include <stdint.h>

// vis_plan_fields walks a plan's NUL-terminated fields.
typedef struct {
	const char *at, *end;
} vis_plan_fields;

// vis_plan_field is the next field, NULL past the end.
const char *vis_plan_field(vis_plan_fields *f);

// vis_plan_count reads a count field; -1 when it is not a small number.
long vis_plan_count(vis_plan_fields *f);

// vis_plan_signature is what a plan remembers of a path (fastpath.go's
// statSignature).
void vis_plan_signature(const char *path, char *buf, size_t size);

// vis_plan_go_cwd is the working folder as Go's os.Getwd names it.
int vis_plan_go_cwd(char *buf, size_t size);

// FNV-1a, 64 bits, of n bytes, and of each variable of env with its NUL.
#define VIS_PLAN_FNV_OFFSET 14695981039346656037ULL
uint64_t vis_plan_fnv(uint64_t h, const char *s, size_t n);
uint64_t vis_plan_env_hash(uint64_t h, char **env);

// vis_plan_read reads a plan file (a regular file of this user that nobody
// else may write, not a link) into a malloc'd buffer; NULL otherwise.
char *vis_plan_read(const char *path, size_t *len);

// vis_plan_path names the plan called name (hex) in $VIS_HOME/python/dir
// (default ~/.vis/python/dir); 0 when there is no such folder to name.
int vis_plan_path(char *buf, size_t size, const char *dir, uint64_t name);

#endif
