// Which command lines pyembed's C constructors act on (shim.c's prefetch
// and command note, fastpath.c's replay), read before Go parses them.
// internal/earlyargv's test feeds them the command lines Go builds
// (protocol.ChildArgs, HostArgs) and `python` ones.
#ifndef VIS_PYEMBED_ARGV_H
#define VIS_PYEMBED_ARGV_H

#include <stddef.h>
#include <string.h>

// vis_python_command reports whether argv is `vis-agent python ...`.
static inline int vis_python_command(int argc, char **argv) {
	return argc >= 2 && argv != NULL && strcmp(argv[1], "python") == 0;
}

// vis_loads_python reports whether the command line is one that loads
// libpython at once: `python`, and a sandbox session's interpreter child
// (`sandbox child`), whose start is on the way to a new session's first
// block.
static inline int vis_loads_python(int argc, char **argv) {
	return vis_python_command(argc, argv) ||
		   (argc >= 3 && argv != NULL && strcmp(argv[1], "sandbox") == 0 && strcmp(argv[2], "child") == 0);
}

// vis_loads_no_library predicts `vis-agent python [VIS OPTIONS] uv SUB ...`
// without --shared or --active and with SUB other than pip: those exec uv
// and load no libpython (uv pip and --shared uv sync load it to find their
// environment). The python-run planner decides; a wrong guess costs only
// time.
static inline int vis_loads_no_library(int argc, char **argv) {
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "uv") == 0) {
			return i + 1 >= argc || strcmp(argv[i + 1], "pip") != 0;
		}
		if (strcmp(a, "--env") == 0) {
			i++;
		} else if (strcmp(a, "--no-env") != 0 && strcmp(a, "--no-network") != 0 && strncmp(a, "--env=", 6) != 0) {
			return 0; // --shared, --active or anything else: a python run, or a uv run that loads
		}
	}
	return 0;
}

#endif
