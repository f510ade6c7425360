/* A growing buffer: see strbuf.h. */
#include "dumpwatch/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for more bytes and the NUL, or failed. */
static int reserve(struct strbuf *b, size_t more)
{
	if (b->failed || (b->max && more > b->max - b->len)) {
		b->failed = 1;
		return -1;
	}
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	if (b->max && cap > b->max + 1)
		cap = b->max + 1;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int strbuf_add(struct strbuf *b, const void *s, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int strbuf_str(struct strbuf *b, const char *s)
{
	return strbuf_add(b, s, strlen(s));
}

int strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return -1;
	}
	if ((size_t)n < sizeof(small))
		return strbuf_add(b, small, (size_t)n);
	if (reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void strbuf_free(struct strbuf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}
