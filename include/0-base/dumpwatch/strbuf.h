/* A growing buffer of bytes, kept NUL-terminated, with a bound: what the
 * wire messages, the exposition text and the S3 query are built in. A
 * write past the bound (max, 0: none) or beyond memory fails, and so does
 * every write after it (failed stays set), so that a builder checks once at
 * the end; what was written before stays. strbuf_free(NULL) is a no-op, and
 * a zeroed strbuf is empty and ready. */
#ifndef DUMPWATCH_STRBUF_H
#define DUMPWATCH_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *p; /* NUL-terminated; NULL until something is written */
	size_t len, cap;
	size_t max; /* the most bytes it may hold (the NUL not counted); 0: no bound */
	int failed; /* a write did not fit or found no memory */
};

/* Appends n bytes at s (which may hold NULs). 0, or -1 (failed). */
int strbuf_add(struct strbuf *b, const void *s, size_t n);

/* Appends the NUL-terminated s. */
int strbuf_str(struct strbuf *b, const char *s);

/* Appends printf's text. */
__attribute__((format(printf, 2, 3))) int strbuf_printf(struct strbuf *b, const char *fmt, ...);

/* Frees what b holds and empties it (max kept). */
void strbuf_free(struct strbuf *b);

#endif
