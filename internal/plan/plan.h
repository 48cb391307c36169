// Plans: files of NUL-terminated fields that Go saves for a command line,
// and that a C constructor acts on before the Go runtime starts when the
// same command line runs again (pyembed's fastpath.c replays python runs,
// sandbox/client/runpath's runpath.c carries a warm `sandbox run` block
// to its session's host). plan.c holds these helpers; Go writes plans
// with plan.go's Writer.
#ifndef VIS_PLAN_H
#define VIS_PLAN_H

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

// vis_plan_observed_hold reads the observed paths (a count, then path and
// signature pairs) and reports whether each still has its signature.
int vis_plan_observed_hold(vis_plan_fields *f);

// FNV-1a, 64 bits, of n bytes, and of each variable of env with its NUL.
#define VIS_PLAN_FNV_OFFSET 14695981039346656037ULL
uint64_t vis_plan_fnv(uint64_t h, const char *s, size_t n);
uint64_t vis_plan_env_hash(uint64_t h, char **env);

// vis_plan_act reads the plan in file (a regular file of this user that
// nobody else may write, not a link) and hands its fields to act with
// the working folder and the command line (act returns when the run is
// left to Go); nothing when there is no such plan.
void vis_plan_act(const char *file, void (*act)(vis_plan_fields *, const char *, int, char **), const char *cwd, int argc,
                  char **argv);

// vis_plan_path names the plan called name (hex) in $VIS_HOME/python/dir
// (default ~/.vis/python/dir); 0 when there is no such folder to name.
int vis_plan_path(char *buf, size_t size, const char *dir, uint64_t name);

#endif
