/* Unit tests of the text helpers: strict UTF-8, UTF-16LE to UTF-8 with
 * surrogates and truncation on character boundaries, escaping for one line,
 * case folding. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/text.h"

static const char *esc(const char *s, size_t len)
{
	static char out[512];
	size_t need = text_escape(s, len, out, sizeof(out));
	CHECK(need == strlen(out));
	return out;
}

#define ESC(lit) esc(lit, sizeof(lit) - 1)

static void test_escape(void)
{
	char small[8];

	CHECK_STR(ESC("plain text, caf\xC3\xA9 \xF0\x9F\x98\x80"), "plain text, caf\xC3\xA9 \xF0\x9F\x98\x80");
	CHECK_STR(ESC(""), "");
	/* A forged journald line and terminal escapes stay on one line, visible. */
	CHECK_STR(ESC("x\n<0>dumpwatch: rule X fired"), "x\\n<0>dumpwatch: rule X fired");
	CHECK_STR(ESC("\x1b[31mred\x1b]0;title\x07"), "\\x1b[31mred\\x1b]0;title\\x07");
	CHECK_STR(ESC("a\tb\rc\\d"), "a\\tb\\rc\\\\d");
	CHECK_STR(ESC("\x00\x01\x1f\x7f"), "\\x00\\x01\\x1f\\x7f");
	/* C1 controls (U+009B is CSI on some terminals), separators, bidi. */
	CHECK_STR(ESC("\xC2\x9B"
	              "1m\xC2\x85\xC2\xA0"),
	          "\\u009b1m\\u0085\xC2\xA0");
	CHECK_STR(ESC("\xE2\x80\xA8|\xE2\x80\xAE|\xE2\x81\xA6|\xD8\x9C"), "\\u2028|\\u202e|\\u2066|\\u061c");
	/* Invalid UTF-8: each byte that begins no valid sequence. */
	CHECK_STR(ESC("\xC3\x28\xFF"), "\\xc3(\\xff");
	CHECK_STR(ESC("\xC0\xAF"), "\\xc0\\xaf");                   /* overlong */
	CHECK_STR(ESC("\xED\xA0\x80"), "\\xed\\xa0\\x80");          /* surrogate */
	CHECK_STR(ESC("ok\xE2\x82"), "ok\\xe2\\x82");               /* truncated */
	CHECK_STR(ESC("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */

	/* Cut only between whole escapes or characters; the result says how
	 * long the whole would be. */
	CHECK(text_escape("ab\ncd", 5, small, 4) == 6);
	CHECK_STR(small, "ab");
	CHECK(text_escape("ab\ncd", 5, small, 5) == 6);
	CHECK_STR(small, "ab\\n");
	CHECK(text_escape("\xC3\xA9\xC3\xA9", 4, small, 4) == 4);
	CHECK_STR(small, "\xC3\xA9");
	CHECK(text_escape("x", 1, small, 0) == 1);
	CHECK_STR(text_escape_str(NULL, small, sizeof(small)), "");
	CHECK_STR(text_escape_str("a\x1b", small, sizeof(small)), "a\\x1b");

	/* Every byte value, alone: the output is printable ASCII or valid UTF-8. */
	for (unsigned b = 0; b < 256; b++) {
		char in = (char)b, out[16];
		text_escape(&in, 1, out, sizeof(out));
		for (const char *c = out; *c; c++)
			CHECK_MSG((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7F, "byte 0x%02x gave %s", b, out);
	}

	CHECK(text_is_control(0) && text_is_control(0x1F) && text_is_control(0x7F) && text_is_control(0x9F));
	CHECK(!text_is_control(' ') && !text_is_control(0xA0) && !text_is_control(0xE9) && !text_is_control(0x1F600));

	CHECK(text_utf8_trim("ab\xE2\x82", 4) == 2);
	CHECK(text_utf8_trim("ab\xE2\x82\xAC", 5) == 5);
	CHECK(text_utf8_trim("ab\xF0\x9F\x98", 5) == 2);
	CHECK(text_utf8_trim("ab\xC3", 3) == 2);
	CHECK(text_utf8_trim("ab\xFF", 3) == 3); /* invalid, not truncated: kept for the escape */
	CHECK(text_utf8_trim("ab", 2) == 2);
	CHECK(text_utf8_trim("", 0) == 0);
	CHECK(text_utf8_trim("\x80\x80\x80\x80", 4) == 4);
}

/* text_put_markup of a literal with m, compared with want. */
static void markup(const char *in, size_t len, const struct text_markup *m, const char *want)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	text_put_markup(f, in, len, m);
	fclose(f);
	CHECK_STR(buf, want);
	free(buf);
}

/* The two policies the plot (XML) and the report (HTML) use; the escaped
 * line of the terminal, however long. */
static void test_markup(void)
{
	const struct text_markup xml = {.apos = "&apos;", .control = "\xEF\xBF\xBD", .maxwidth = 6};
	const struct text_markup html = {.apos = "&#39;", .control = "", .maxwidth = SIZE_MAX};
	static const char hostile[] = "<b a=\"'\">&\x1b\n\xff\xEF\xBF\xBE";
	markup(hostile, sizeof(hostile) - 1, &html, "&lt;b a=&quot;&#39;&quot;&gt;&amp; \xEF\xBF\xBD");
	markup("<'\x07", 3, &xml, "&lt;&apos;\xEF\xBF\xBD");
	markup("abcdefgh", 8, &xml, "abcdef\xE2\x80\xA6");
	markup("\xE4\xB8\xAD\xE4\xB8\xAD\xE4\xB8\xAD\xE4\xB8\xADx", 13, &xml,
	       "\xE4\xB8\xAD\xE4\xB8\xAD\xE4\xB8\xAD\xE2\x80\xA6"); /* two wide each */
	markup(NULL, 4, &html, "");

	char big[2000], *buf = NULL;
	size_t blen = 0;
	memset(big, '\x01', sizeof(big));
	FILE *f = open_memstream(&buf, &blen);
	text_put_escaped(f, big, sizeof(big));
	fclose(f);
	CHECK(blen == 4 * sizeof(big) && strncmp(buf, "\\x01\\x01", 8) == 0);
	free(buf);
}

/* The helpers several modules share: suffixes, quoting, edit distance. */
static void test_shared(void)
{
	char q[64];

	CHECK(text_ends_with("app.dll", 7, ".dll", 0) && !text_ends_with("app.DLL", 7, ".dll", 0));
	CHECK(text_ends_with("app.DLL", 7, ".dll", 1) && text_ends_with(".dll", 4, ".dll", 0));
	CHECK(!text_ends_with("dll", 3, ".dll", 1) && text_ends_with("app.dll-ignored", 7, ".dll", 0));
	text_quote(q, sizeof(q), "a\001b", SIZE_MAX, 40);
	CHECK_STR(q, "a?b");
	text_quote(q, sizeof(q), "abcdefgh", 5, 40);
	CHECK_STR(q, "abcde"); /* all of the 5 bytes asked for */
	text_quote(q, sizeof(q), "abcdefgh", SIZE_MAX, 3);
	CHECK_STR(q, "abc...");
	text_quote(q, sizeof(q), "abc", 3, 40);
	CHECK_STR(q, "abc");
	CHECK(text_edit_distance("size", "size") == 0 && text_edit_distance("szie", "size") == 1);
	CHECK(text_edit_distance("LOH-size", "loh-size") == 0 && text_edit_distance("loh", "loh-size") == 5);
	CHECK(text_edit_distance("", "ab") == 2);
	char lng[TEXT_EDIT_MAX + 2];
	memset(lng, 'a', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	CHECK(text_edit_distance(lng, "a") == SIZE_MAX);
}

int main(void)
{
	test_shared();
	uint32_t cp = 0;
	char out[16];
	size_t pos = 0;

	test_markup();
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
	/* text_utf16_scan: units before the NUL and the UTF-8 length, within a
	 * bound; the bound and the end of the data are told apart. */
	size_t units = 0, len = 0;
	CHECK(text_utf16_scan(s16, sizeof(s16), 4, &units, &len) == 0 && units == 4 && len == 7);
	CHECK(text_utf16_scan(s16, sizeof(s16), 3, &units, &len) == -E2BIG);
	CHECK(text_utf16_scan(s16, 9, 4, &units, &len) == -ENODATA);
	CHECK(text_utf16_scan(s16, 9, 3, &units, &len) == -E2BIG); /* too long wins, as nettrace reports it */
	CHECK(text_utf16_scan(s16, 0, 4, &units, NULL) == -ENODATA);
	CHECK(text_utf16_scan(lone, sizeof(lone), 8, &units, &len) == 0 && units == 2 && len == 4);
	static const uint8_t empty[] = {0, 0};
	CHECK(text_utf16_scan(empty, sizeof(empty), 0, &units, &len) == 0 && units == 0 && len == 0);
	/* The length it gives is what text_utf16_to_utf8 fills, given one byte more. */
	text_utf16_scan(s16, sizeof(s16), 4, &units, &len);
	text_utf16_to_utf8(s16, units, out, len + 1);
	CHECK(strlen(out) == len);
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
	test_escape();
	return check_done();
}
