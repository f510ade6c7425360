/* Unit tests for strbuf.c: growth, bytes with NULs, printf past the small
 * buffer, the bound (a write past it fails, and every write after it), free
 * and reuse. */
#include "check.h"

#include <string.h>

#include "dumpwatch/strbuf.h"

int main(void)
{
	struct strbuf b = {0};

	CHECK(strbuf_str(&b, "abc") == 0 && b.len == 3 && strcmp(b.p, "abc") == 0);
	CHECK(strbuf_add(&b, "d\0e", 3) == 0 && b.len == 6 && memcmp(b.p, "abcd\0e", 7) == 0);
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(strbuf_printf(&b, "[%s]%d", big, 42) == 0 && b.len == 6 + 1 + 999 + 1 + 2);
	CHECK(b.p[b.len] == '\0' && strcmp(b.p + b.len - 3, "]42") == 0);
	strbuf_free(&b);
	CHECK(b.p == NULL && b.len == 0 && !b.failed);
	strbuf_free(&b);
	strbuf_free(NULL);

	/* Bounded: 8 bytes fit, the 9th fails, and so does what follows. */
	struct strbuf s = {.max = 8};
	CHECK(strbuf_str(&s, "12345678") == 0 && s.len == 8);
	CHECK(strbuf_str(&s, "9") == -1 && s.failed && s.len == 8 && strcmp(s.p, "12345678") == 0);
	CHECK(strbuf_str(&s, "") == -1);
	strbuf_free(&s);
	CHECK(s.max == 8 && strbuf_printf(&s, "%d", 1234567) == 0 && strbuf_printf(&s, "%d", 89) == -1);
	strbuf_free(&s);
	return check_done();
}
