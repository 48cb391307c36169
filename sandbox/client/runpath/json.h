// The JSON of runpath.c, split from its run loop: a growing byte buffer,
// a JSON string writer, and a reader of the host's events that takes just
// what runBlock reads of them.
#ifndef VIS_RUNPATH_JSON_H
#define VIS_RUNPATH_JSON_H

#include <stddef.h>

// vis_buf is a growing byte buffer, its bytes always NUL-terminated; a
// failed allocation ends the process, as Go's would.
typedef struct {
	char *s;
	size_t n, cap;
} vis_buf;

void vis_buf_add(vis_buf *b, const char *s, size_t n);
void vis_buf_str(vis_buf *b, const char *s);

// vis_json_quote adds s as a JSON string.
void vis_json_quote(vis_buf *b, const char *s);

// vis_json reads a JSON text from p to end; bad says it is malformed.
typedef struct {
	const char *p, *end;
	int bad;
} vis_json;

// Each reader returns 0 when what comes is not what it reads.
void vis_json_ws(vis_json *j);
int vis_json_eat(vis_json *j, char c);
// vis_json_string reads a string into out (decoded; NULL: skipped).
int vis_json_string(vis_json *j, vis_buf *out);
int vis_json_int(vis_json *j, long long *v);
// vis_json_skip skips a value, nested at most 64 deep.
int vis_json_skip(vis_json *j, int depth);
// vis_json_key reads the next key of an object and its ':'; first says
// the object's '{' is still to read. 0 at its end (or when it is
// malformed: j->bad).
int vis_json_key(vis_json *j, vis_buf *key, int *first);
// vis_json_null reads a null, if that is what comes.
int vis_json_null(vis_json *j);

#endif
