// The JSON runpath.c speaks (json.h): a request's strings written, and
// just what runBlock reads of the host's events read.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

// A failed allocation ends the process, as Go's would.
void vis_buf_add(vis_buf *b, const char *s, size_t n) {
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->n + n + 1 > cap) {
			cap *= 2;
		}
		char *s2 = realloc(b->s, cap);
		if (s2 == NULL) {
			static const char msg[] = "vis-agent: out of memory\n";
			(void)!write(2, msg, sizeof msg - 1);
			_exit(1);
		}
		b->s = s2;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

void vis_buf_str(vis_buf *b, const char *s) { vis_buf_add(b, s, strlen(s)); }

// vis_buf_utf8 adds code point c as UTF-8.
static void vis_buf_utf8(vis_buf *b, unsigned long c) {
	char u[4];
	if (c < 0x80) {
		u[0] = (char)c;
		vis_buf_add(b, u, 1);
	} else if (c < 0x800) {
		u[0] = (char)(0xC0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3F));
		vis_buf_add(b, u, 2);
	} else if (c < 0x10000) {
		u[0] = (char)(0xE0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[2] = (char)(0x80 | (c & 0x3F));
		vis_buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xF0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[3] = (char)(0x80 | (c & 0x3F));
		vis_buf_add(b, u, 4);
	}
}

// vis_json_quote adds s as a JSON string. Invalid UTF-8 passes as it is:
// Go's decoder on the host reads it as U+FFFD, as Go's encoder would have
// written it.
void vis_json_quote(vis_buf *b, const char *s) {
	static const char hex[] = "0123456789abcdef";
	vis_buf_add(b, "\"", 1);
	for (const char *p = s; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			vis_buf_add(b, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			vis_buf_add(b, e, 6);
		} else {
			vis_buf_add(b, (const char *)&c, 1);
		}
	}
	vis_buf_add(b, "\"", 1);
}


void vis_json_ws(vis_json *j) {
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) {
		j->p++;
	}
}

int vis_json_eat(vis_json *j, char c) {
	vis_json_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int vis_json_hex4(vis_json *j, unsigned long *v) {
	if (j->end - j->p < 4) {
		return 0;
	}
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = *j->p++;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0) {
			return 0;
		}
		*v = *v << 4 | (unsigned long)d;
	}
	return 1;
}

// vis_json_string reads a string into out (decoded; NULL: skipped).
int vis_json_string(vis_json *j, vis_buf *out) {
	if (!vis_json_eat(j, '"')) {
		return 0;
	}
	while (j->p < j->end) {
		const char *run = j->p;
		while (j->p < j->end && *j->p != '"' && *j->p != '\\') {
			j->p++;
		}
		if (out != NULL) {
			vis_buf_add(out, run, (size_t)(j->p - run));
		}
		if (j->p >= j->end) {
			return 0;
		}
		if (*j->p++ == '"') {
			return 1;
		}
		if (j->p >= j->end) {
			return 0;
		}
		char c = *j->p++, lit = 0;
		unsigned long u;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			lit = c;
			break;
		case 'b':
			lit = '\b';
			break;
		case 'f':
			lit = '\f';
			break;
		case 'n':
			lit = '\n';
			break;
		case 'r':
			lit = '\r';
			break;
		case 't':
			lit = '\t';
			break;
		case 'u':
			if (!vis_json_hex4(j, &u)) {
				return 0;
			}
			if (u >= 0xD800 && u < 0xDC00) {
				unsigned long lo;
				vis_json save = *j;
				if (j->end - j->p >= 2 && j->p[0] == '\\' && j->p[1] == 'u' && (j->p += 2, vis_json_hex4(j, &lo)) &&
				    lo >= 0xDC00 && lo < 0xE000) {
					u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
				} else {
					*j = save;
					u = 0xFFFD;
				}
			} else if (u >= 0xDC00 && u < 0xE000) {
				u = 0xFFFD;
			}
			if (out != NULL) {
				vis_buf_utf8(out, u);
			}
			continue;
		default:
			return 0;
		}
		if (out != NULL) {
			vis_buf_add(out, &lit, 1);
		}
	}
	return 0;
}

// vis_json_int reads an integer (the events' numbers are).
int vis_json_int(vis_json *j, long long *v) {
	vis_json_ws(j);
	int neg = j->p < j->end && *j->p == '-';
	j->p += neg;
	const char *start = j->p;
	long long n = 0;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9' && n < LLONG_MAX / 10 - 10) {
		n = n * 10 + (*j->p++ - '0');
	}
	*v = neg ? -n : n;
	return j->p > start;
}

// vis_json_key reads the next key of an object into key and its ':';
// first says the object's '{' is still to read. 0 at its end (or when it
// is malformed: j->bad).
int vis_json_key(vis_json *j, vis_buf *key, int *first) {
	if (*first) {
		*first = 0;
		if (!vis_json_eat(j, '{')) {
			j->bad = 1;
			return 0;
		}
		if (vis_json_eat(j, '}')) {
			return 0;
		}
	} else if (!vis_json_eat(j, ',')) {
		if (!vis_json_eat(j, '}')) {
			j->bad = 1;
		}
		return 0;
	}
	key->n = 0;
	vis_buf_add(key, "", 0);
	if (!vis_json_string(j, key) || !vis_json_eat(j, ':')) {
		j->bad = 1;
		return 0;
	}
	return 1;
}

int vis_json_skip(vis_json *j, int depth) {
	vis_json_ws(j);
	if (j->p >= j->end || depth > 64) {
		return 0;
	}
	char c = *j->p;
	if (c == '"') {
		return vis_json_string(j, NULL);
	}
	if (c == '{' || c == '[') {
		j->p++;
		char close = c == '{' ? '}' : ']';
		if (vis_json_eat(j, close)) {
			return 1;
		}
		do {
			if (c == '{' && (!vis_json_string(j, NULL) || !vis_json_eat(j, ':'))) {
				return 0;
			}
			if (!vis_json_skip(j, depth + 1)) {
				return 0;
			}
		} while (vis_json_eat(j, ','));
		return vis_json_eat(j, close);
	}
	const char *start = j->p;
	while (j->p < j->end && strchr("-+.eE0123456789truefalsn", *j->p) != NULL) {
		j->p++;
	}
	return j->p > start;
}

// vis_json_null reads a null, if that is what comes.
int vis_json_null(vis_json *j) {
	vis_json_ws(j);
	if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
		j->p += 4;
		return 1;
	}
	return 0;
}
