// The replay of a python run before Go starts. A `vis-agent python` run
// spends about 3 ms in the Go runtime's start-up and vis-agent's package
// initializers before CPython starts; python spends none. When the same
// command line runs again in the same folder with the same environment,
// and none of the files the run was decided from has changed, the decision
// is the same: Go saved it (pyembed/fastpath_unsafe.go) as a plan, and this
// constructor replays it (loads the library, sets the environment, runs
// CPython's main and exits) without starting Go at all. Anything it cannot
// confirm leaves the run to Go, which decides afresh and saves a new plan;
// a wrong or damaged plan costs time, never a different run.
//
// A plan is a file of NUL-terminated fields (fastpath_unsafe.go writes them):
//   magic, cwd, a hash of environ, argument prefix (count, tokens),
//   how many arguments must follow it, whether none may follow ("1"/"0"),
//   observed paths (count, then path and stat signature pairs), library,
//   minor version, home, start-up source, argv[0], CPython's arguments for
//   the prefix (count, tokens), a program to exec instead of running
//   CPython ("" for none: `vis-agent python uv …` execs uv), whether that
//   program's environment drops the empty variables ("1"/"0"), the
//   variables it adds (count, entries), "end".
// A plan holds a hash of the environment, never its values (which may be
// secrets).
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argv.h"
#include "internal/plan/plan.h"
#include "shim.h"

extern char **environ;

static int fastpath_missed;

int vis_fastpath_missed(void) { return fastpath_missed; }

// go_cwd is the working folder as Go's os.Getwd names it: $PWD when it is
// absolute and names the same folder as ".", else the kernel's path.
static int go_cwd(char *buf, size_t size) {
	const char *pwd = getenv("PWD");
	struct stat dot, st;
	if (pwd != NULL && pwd[0] == '/' && strlen(pwd) < size && stat(".", &dot) == 0 && stat(pwd, &st) == 0 &&
	    dot.st_dev == st.st_dev && dot.st_ino == st.st_ino) {
		strcpy(buf, pwd);
		return 1;
	}
	return getcwd(buf, size) != NULL;
}

// plan_name: the working folder, the environment, the first argument and,
// after uv, its subcommand, so that `uv sync` and `uv lock` keep a plan
// each.
static uint64_t plan_name(const char *cwd, char **env, int argc, char **argv) {
	const char *first = argc > 2 ? argv[2] : "";
	const char *sub = argc > 3 && strcmp(first, "uv") == 0 ? argv[3] : "";
	uint64_t h = vis_plan_fnv(VIS_PLAN_FNV_OFFSET, cwd, strlen(cwd) + 1);
	h = vis_plan_fnv(vis_plan_env_hash(h, env), "\1", 1);
	h = vis_plan_fnv(h, first, strlen(first) + 1);
	return vis_plan_fnv(h, sub, strlen(sub) + 1);
}

// exec_env is the environment of a plan's program: the process's (without
// the empty variables when drop_empty), then the nadd variables at adds.
static char **exec_env(int drop_empty, vis_plan_fields adds, long nadd) {
	long n = 0;
	while (environ[n] != NULL) {
		n++;
	}
	char **env = calloc((size_t)(n + nadd + 1), sizeof *env);
	if (env == NULL) {
		return NULL;
	}
	n = 0;
	for (char **e = environ; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		if (!drop_empty || (eq != NULL && eq[1] != '\0')) {
			env[n++] = *e;
		}
	}
	for (long i = 0; i < nadd; i++) {
		env[n++] = (char *)vis_plan_field(&adds);
	}
	return env;
}

// replay runs the plan when every field still holds, and does not return;
// it returns when the run must be left to Go.
static void replay(vis_plan_fields *f, const char *cwd, int argc, char **argv) {
	const char *s = vis_plan_field(f);
	if (s == NULL || strcmp(s, VIS_FASTPATH_MAGIC) != 0) {
		return;
	}
	if ((s = vis_plan_field(f)) == NULL || strcmp(s, cwd) != 0) {
		return;
	}
	char hash[17];
	snprintf(hash, sizeof hash, "%016llx", (unsigned long long)vis_plan_env_hash(VIS_PLAN_FNV_OFFSET, environ));
	if ((s = vis_plan_field(f)) == NULL || strcmp(s, hash) != 0) {
		return;
	}
	// The command line: the prefix Go parsed, then what it left to the
	// program (a -c CODE's code, a script's arguments).
	long nprefix = vis_plan_count(f);
	if (nprefix < 0 || nprefix > argc - 2) {
		return;
	}
	for (long i = 0; i < nprefix; i++) {
		if ((s = vis_plan_field(f)) == NULL || strcmp(s, argv[2 + i]) != 0) {
			return;
		}
	}
	long rest = argc - 2 - nprefix;
	long need = vis_plan_count(f);
	const char *exact = vis_plan_field(f);
	if (need < 0 || rest < need || exact == NULL || (strcmp(exact, "1") == 0 && rest != 0)) {
		return;
	}
	if (!vis_plan_observed_hold(f)) {
		return;
	}
	const char *library = vis_plan_field(f);
	long minor = vis_plan_count(f);
	const char *home = vis_plan_field(f);
	const char *startup = vis_plan_field(f);
	const char *argv0 = vis_plan_field(f);
	long nhead = vis_plan_count(f);
	if (library == NULL || minor < 0 || home == NULL || startup == NULL || argv0 == NULL || nhead < 0) {
		return;
	}
	char **args = calloc((size_t)(1 + nhead + rest + 1), sizeof *args);
	if (args == NULL) {
		return;
	}
	args[0] = (char *)argv0;
	for (long i = 0; i < nhead; i++) {
		if ((args[1 + i] = (char *)vis_plan_field(f)) == NULL) {
			free(args);
			return;
		}
	}
	memcpy(args + 1 + nhead, argv + 2 + nprefix, (size_t)rest * sizeof *args);
	const char *program = vis_plan_field(f);
	const char *drop_empty = vis_plan_field(f);
	long nadd = vis_plan_count(f);
	vis_plan_fields adds = *f;
	for (long i = 0; i < nadd; i++) {
		vis_plan_field(f);
	}
	s = vis_plan_field(f);
	if (program == NULL || drop_empty == NULL || nadd < 0 || s == NULL || strcmp(s, "end") != 0) {
		free(args);
		return;
	}
	if (program[0] != '\0') {
		// As Go would: the program inherits the signal dispositions and
		// mask this process did, which Go has not touched yet.
		char **env = exec_env(strcmp(drop_empty, "1") == 0, adds, nadd);
		if (env != NULL) {
			execve(program, args, env);
		}
		free(env);
		free(args);
		return; // Go explains why it failed
	}
	// A python plan's environment is the process's.
	// From here on the run is CPython's; a library that no longer loads
	// goes back to Go, which explains why.
	if (vis_py_open(library) != NULL || vis_py_resolve((int)minor) != NULL) {
		free(args);
		return;
	}
	int status = vis_py_main((int)(1 + nhead + rest), args, home[0] != '\0' ? home : NULL,
	                         startup[0] != '\0' ? startup : NULL);
	exit(status);
}

// Runs after vis_record_signals (priority 101), which vis_py_main relies on.
__attribute__((constructor(102))) static void vis_fastpath(int argc, char **argv, char **envp) {
	(void)envp;
	if (!vis_python_command(argc, argv)) {
		return;
	}
	const char *off = getenv("VIS_PYTHON_FASTPATH");
	if (off != NULL && strcmp(off, "0") == 0) {
		return;
	}
	char cwd[PATH_MAX], file[PATH_MAX];
	if (!go_cwd(cwd, sizeof cwd) ||
	    !vis_plan_path(file, sizeof file, VIS_FASTPATH_DIR, plan_name(cwd, environ, argc, argv))) {
		return;
	}
	fastpath_missed = 1;
	vis_plan_act(file, replay, cwd, argc, argv);
}
