/* Unit tests of the text helpers: strict UTF-8, UTF-16LE to UTF-8 with
 * surrogates and truncation on character boundaries, case folding. */
#include <string.h>

#include "check.h"
#include "dumpwatch/text.h"

int main(void)
{
	uint32_t cp = 0;
	char out[16];
	size_t pos = 0;

	CHECK(text_utf8_decode((const unsigned char *)"A", 1, &cp) == 1 && cp == 'A');
	CHECK(text_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp) == 2 && cp == 0xE9);
	CHECK(text_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp) == 4 && cp == 0x1F600);
	CHECK(text_utf8_decode((const unsigned char *)"\xC0\x80", 2, &cp) == 0);         /* overlong */
	CHECK(text_utf8_decode((const unsigned char *)"\xED\xA0\x80", 3, &cp) == 0);     /* surrogate */
	CHECK(text_utf8_decode((const unsigned char *)"\xF0\x9F\x98", 3, &cp) == 0);     /* truncated */
	CHECK(text_utf8_decode((const unsigned char *)"\xF5\x80\x80\x80", 4, &cp) == 0); /* > U+10FFFF */
	CHECK(text_utf8_decode((const unsigned char *)"", 0, &cp) == 0);

	CHECK(text_utf8_put(out, 3, &pos, 'a') == 0 && pos == 1);
	CHECK(text_utf8_put(out, 3, &pos, 0xE9) == -1 && pos == 1); /* 2 bytes + NUL do not fit */

	/* "aé😀" then NUL then junk; a lone high surrogate becomes U+FFFD. */
	static const uint8_t s16[] = {'a', 0, 0xE9, 0, 0x3D, 0xD8, 0x00, 0xDE, 0, 0, 'x', 0};
	CHECK(text_utf16_read(s16, sizeof(s16), out, sizeof(out)) == 10);
	CHECK_STR(out, "a\xC3\xA9\xF0\x9F\x98\x80");
	CHECK(text_utf16_read(s16, 9, out, sizeof(out)) == 0); /* no NUL within 9 bytes */
	CHECK(text_utf16_read(s16, sizeof(s16), NULL, 0) == 10);
	static const uint8_t lone[] = {0x3D, 0xD8, 'b', 0, 0, 0};
	CHECK(text_utf16_read(lone, sizeof(lone), out, sizeof(out)) == 6);
	CHECK_STR(out, "\xEF\xBF\xBD"
	               "b");
	/* Truncation never splits a character: 4 bytes of room holds "aé" only. */
	text_utf16_to_utf8(s16, 4, out, 5);
	CHECK_STR(out, "a\xC3\xA9");
	text_utf16_to_utf8(s16, 4, out, 4);
	CHECK_STR(out, "a\xC3\xA9");
	text_utf16_to_utf8(s16, 4, out, 3);
	CHECK_STR(out, "a");

	CHECK(text_lower('Q') == 'q' && text_lower('q') == 'q' && text_lower('1') == '1');
	CHECK(text_eq_nocase("System.Runtime", "system.RUNTIME"));
	CHECK(!text_eq_nocase("System.Runtime", "System.Runtim"));
	return check_done();
}
