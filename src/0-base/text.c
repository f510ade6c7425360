/* Text helpers; see text.h. */
#include "dumpwatch/text.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t text_utf8_decode(const unsigned char *s, size_t len, uint32_t *ret_cp)
{
	uint32_t c, min;
	size_t n, i;

	if (len == 0)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*ret_cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		c &= 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		c &= 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3Fu);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*ret_cp = c;
	return n;
}

int text_utf8_put(char *out, size_t outlen, size_t *pos, uint32_t cp)
{
	unsigned char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xC0 | (cp >> 6));
		b[1] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xE0 | (cp >> 12));
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xF0 | (cp >> 18));
		b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (unsigned char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	if (*pos + n + 1 > outlen)
		return -1;
	memcpy(out + *pos, b, n);
	*pos += n;
	return 0;
}

static uint32_t utf16_unit(const uint8_t *p, size_t i)
{
	return (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
}

/* The code point at unit *i of p[0..units) (UTF-16LE), advancing *i past it:
 * a surrogate pair is one code point, an unpaired surrogate U+FFFD. The one
 * UTF-16 decoder: every conversion and measurement goes through it. */
static uint32_t utf16_next(const uint8_t *p, size_t units, size_t *i)
{
	uint32_t u = utf16_unit(p, *i);

	(*i)++;
	if (u >= 0xD800 && u <= 0xDBFF && *i < units) {
		uint32_t lo = utf16_unit(p, *i);

		if (lo < 0xDC00 || lo > 0xDFFF)
			return 0xFFFD;
		(*i)++;
		return 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (u >= 0xD800 && u <= 0xDFFF)
		return 0xFFFD;
	return u;
}

/* Bytes of the UTF-8 encoding of cp (as text_utf8_put writes it). */
static size_t utf8_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

void text_utf16_to_utf8(const uint8_t *p, size_t units, char *out, size_t outlen)
{
	size_t pos = 0, i = 0;

	if (outlen == 0)
		return;
	while (i < units) {
		uint32_t cp = utf16_next(p, units, &i);

		if (cp == 0 || text_utf8_put(out, outlen, &pos, cp) < 0)
			break;
	}
	out[pos] = '\0';
}

int text_utf16_scan(const uint8_t *p, size_t avail, size_t max_units, size_t *ret_units, size_t *ret_utf8_len)
{
	size_t avail_units = avail / 2, n = 0;

	while (n < avail_units && n <= max_units && utf16_unit(p, n) != 0)
		n++;
	if (n > max_units)
		return -E2BIG;
	if (n == avail_units)
		return -ENODATA;
	*ret_units = n;
	if (ret_utf8_len) {
		size_t len = 0, i = 0;

		while (i < n)
			len += utf8_len(utf16_next(p, n, &i));
		*ret_utf8_len = len;
	}
	return 0;
}

size_t text_utf16_read(const uint8_t *p, size_t avail, char *out, size_t outlen)
{
	size_t units;

	if (text_utf16_scan(p, avail, SIZE_MAX, &units, NULL) < 0)
		return 0;
	if (out && outlen)
		text_utf16_to_utf8(p, units, out, outlen);
	return 2 * units + 2;
}

char text_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

int text_eq_nocase(const char *a, const char *b)
{
	while (*a && *b && text_lower(*a) == text_lower(*b)) {
		a++;
		b++;
	}
	return *a == '\0' && *b == '\0';
}

int text_ends_with(const char *s, size_t len, const char *suffix, int nocase)
{
	size_t n = strlen(suffix);

	if (len < n)
		return 0;
	return nocase ? strncasecmp(s + len - n, suffix, n) == 0 : memcmp(s + len - n, suffix, n) == 0;
}

void text_quote(char *dst, size_t dstlen, const char *src, size_t srclen, size_t max)
{
	size_t n = strnlen(src, srclen < max ? srclen : max);

	if (dstlen == 0)
		return;
	snprintf(dst, dstlen, "%.*s%s", (int)n, src, n < srclen && src[n] ? "..." : "");
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
}

size_t text_edit_distance(const char *a, const char *b)
{
	size_t rows[3][TEXT_EDIT_MAX + 1];
	size_t la = strlen(a), lb = strlen(b);
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2], *t;

	if (la > TEXT_EDIT_MAX || lb > TEXT_EDIT_MAX)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = text_lower(a[i - 1]) == text_lower(b[j - 1]) ? 0 : 1;
			size_t best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (prev[j - 1] + cost < best)
				best = prev[j - 1] + cost;
			if (i > 1 && j > 1 && text_lower(a[i - 1]) == text_lower(b[j - 2]) &&
			    text_lower(a[i - 2]) == text_lower(b[j - 1]) && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

int text_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C ||
	       cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t text_escape(const char *s, size_t len, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, pos = 0, need = 0;
	int cut = 0;

	while (i < len) {
		char esc[8];
		const char *piece = esc;
		size_t plen, n;
		uint32_t cp = 0;

		n = text_utf8_decode(p + i, len - i, &cp);
		if (n == 0) {
			snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
			n = 1;
		} else if (cp == '\\') {
			piece = "\\\\";
		} else if (cp == '\n') {
			piece = "\\n";
		} else if (cp == '\r') {
			piece = "\\r";
		} else if (cp == '\t') {
			piece = "\\t";
		} else if (text_is_control(cp)) {
			snprintf(esc, sizeof(esc), cp < 0x80 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
		} else {
			piece = s + i;
		}
		plen = piece == s + i ? n : strlen(piece);
		if (!cut && pos + plen < outlen) {
			memcpy(out + pos, piece, plen);
			pos += plen;
		} else {
			cut = 1;
		}
		need += plen;
		i += n;
	}
	if (outlen)
		out[pos] = '\0';
	return need;
}

const char *text_escape_str(const char *s, char *out, size_t outlen)
{
	if (!s)
		s = "";
	text_escape(s, strlen(s), out, outlen);
	return out;
}

size_t text_utf8_trim(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t lead = len, want;

	/* The last byte that is not a continuation byte, within a sequence's reach. */
	while (lead > 0 && len - lead < 4 && (p[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead == 0 || len - lead >= 4)
		return len;
	lead--;
	if (p[lead] >= 0xC2 && p[lead] <= 0xDF)
		want = 2;
	else if (p[lead] >= 0xE0 && p[lead] <= 0xEF)
		want = 3;
	else if (p[lead] >= 0xF0 && p[lead] <= 0xF4)
		want = 4;
	else
		return len;
	return len - lead < want ? lead : len;
}

void text_put_escaped(FILE *out, const char *s, size_t len)
{
	char small[512], *buf = small;
	size_t need = text_escape(s, len, small, sizeof(small));

	if (need >= sizeof(small)) {
		buf = malloc(need + 1);
		if (!buf) {
			fputs(small, out); /* cut, but still escaped */
			return;
		}
		text_escape(s, len, buf, need + 1);
	}
	fputs(buf, out);
	if (buf != small)
		free(buf);
}

void text_put_markup(FILE *out, const char *s, size_t len, const struct text_markup *m)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, width = 0;

	while (s && i < len) {
		uint32_t cp = 0;
		size_t n = text_utf8_decode(p + i, len - i, &cp);
		width += n != 0 && cp >= 0x1100 ? 2 : 1;
		if (width > m->maxwidth) {
			fputs("\xE2\x80\xA6", out); /* U+2026 HORIZONTAL ELLIPSIS */
			return;
		}
		if (n == 0) {
			fputs("\xEF\xBF\xBD", out); /* U+FFFD REPLACEMENT CHARACTER */
			i++;
			continue;
		}
		switch (cp) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs(m->apos, out);
			break;
		case '\t':
		case '\n':
		case '\r':
			fputc(' ', out); /* words a newline separated stay apart */
			break;
		default:
			if (text_is_control(cp) || cp == 0xFFFE || cp == 0xFFFF)
				fputs(m->control, out);
			else
				fwrite(p + i, 1, n, out);
		}
		i += n;
	}
}
