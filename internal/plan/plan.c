// The reading half of plans (plan.h): fields, counts, observed paths and
// their signatures, the name hash, and the plan file itself.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan.h"

const char *vis_plan_field(vis_plan_fields *f) {
	if (f->at >= f->end) {
		return NULL;
	}
	const char *s = f->at;
	const char *nul = memchr(s, '\0', (size_t)(f->end - s));
	if (nul == NULL) {
		return NULL;
	}
	f->at = nul + 1;
	return s;
}

// vis_plan_count reads a count field; -1 when it is not a small number.
long vis_plan_count(vis_plan_fields *f) {
	const char *s = vis_plan_field(f);
	if (s == NULL || *s == '\0') {
		return -1;
	}
	char *e;
	errno = 0;
	long n = strtol(s, &e, 10);
	if (*e != '\0' || errno != 0 || n < 0 || n > 100000) {
		return -1;
	}
	return n;
}

static int append_stat(char *buf, size_t size, const struct stat *st) {
	return snprintf(buf, size, "%llu:%llu:%o:%lld:%lld.%09ld:%lld.%09ld", (unsigned long long)st->st_dev,
	                (unsigned long long)st->st_ino, (unsigned)st->st_mode, (long long)st->st_size,
	                (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
	                st->st_ctim.tv_nsec);
}

// stat_signature is what a plan remembers of a path (plan.go's
// statSignature): its lstat, and for a link its target's stat after ">", or
// "-" when it does not exist. A file's content cannot change without its
// change time (ctime) changing.
static void stat_signature(const char *path, char *buf, size_t size) {
	struct stat st;
	if (lstat(path, &st) != 0) {
		snprintf(buf, size, "-");
		return;
	}
	int n = append_stat(buf, size, &st);
	if (!S_ISLNK(st.st_mode) || n < 0 || (size_t)n >= size) {
		return;
	}
	if (stat(path, &st) != 0) {
		snprintf(buf + n, size - (size_t)n, ">-");
	} else {
		buf[n] = '>';
		append_stat(buf + n + 1, size - (size_t)n - 1, &st);
	}
}

int vis_plan_observed_hold(vis_plan_fields *f) {
	long nobserved = vis_plan_count(f);
	if (nobserved < 0) {
		return 0;
	}
	char sig[256];
	for (long i = 0; i < nobserved; i++) {
		const char *path = vis_plan_field(f);
		const char *want = vis_plan_field(f);
		if (path == NULL || want == NULL) {
			return 0;
		}
		stat_signature(path, sig, sizeof sig);
		if (strcmp(sig, want) != 0) {
			return 0;
		}
	}
	return 1;
}

// FNV-1a, 64 bits: a plan's file name (fastpath.c's plan_name, runpath.c's
// run_name). Two keys with the same name only share a file; the plan
// compares them in full.
uint64_t vis_plan_fnv(uint64_t h, const char *s, size_t n) {
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

uint64_t vis_plan_env_hash(uint64_t h, char **env) {
	for (char **e = env; e != NULL && *e != NULL; e++) {
		h = vis_plan_fnv(h, *e, strlen(*e) + 1);
	}
	return h;
}

// read_plan reads the plan file into a malloc'd buffer, if it is a regular
// file of this user that nobody else may write (and not a link to one).
static char *read_plan(const char *path, size_t *len) {
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		return NULL;
	}
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0 &&
	    st.st_size > 0 && st.st_size <= (1 << 20)) {
		buf = malloc((size_t)st.st_size);
		if (buf != NULL && read(fd, buf, (size_t)st.st_size) != st.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)st.st_size;
	}
	close(fd);
	return buf;
}

void vis_plan_act(const char *file, void (*act)(vis_plan_fields *, const char *, int, char **), const char *cwd, int argc,
                  char **argv) {
	size_t len = 0;
	char *plan = read_plan(file, &len);
	if (plan == NULL) {
		return;
	}
	vis_plan_fields f = {plan, plan + len};
	act(&f, cwd, argc, argv);
	free(plan);
}

int vis_plan_path(char *buf, size_t size, const char *dir, uint64_t name) {
	const char *vis_home = getenv("VIS_HOME");
	const char *home = getenv("HOME");
	int n;
	if (vis_home != NULL && vis_home[0] != '\0') {
		n = snprintf(buf, size, "%s/python/%s/%016llx", vis_home, dir, (unsigned long long)name);
	} else if (home != NULL && home[0] != '\0') {
		n = snprintf(buf, size, "%s/.vis/python/%s/%016llx", home, dir, (unsigned long long)name);
	} else {
		return 0;
	}
	return n > 0 && (size_t)n < size;
}

