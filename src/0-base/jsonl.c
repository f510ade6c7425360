/* The JSON-lines writer; see jsonl.h. RFC 8259 is the grammar followed:
 * strings (section 7) escape '"', '\\' and U+0000-U+001F, and must be UTF-8
 * (section 8.1); numbers (section 6) have no NaN or Infinity. What may be
 * escaped is escaped beyond that (DEL, C1 controls, line separators,
 * bidirectional controls), so that a journal shown on a terminal cannot drive
 * it. */
#include "dumpwatch/jsonl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/text.h"

struct jbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct jbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (n >= b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (n >= cap - b->len) {
			if (cap > SIZE_MAX / 2) {
				b->err = -ENOMEM;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void put_str(struct jbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void put_string(struct jbuf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	put(b, "\"", 1);
	while (i < len) {
		size_t run = i, n;
		uint32_t cp = 0;
		char esc[8];

		/* Plain printable ASCII goes in runs. */
		while (run < len && p[run] >= 0x20 && p[run] < 0x7F && p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			put(b, s + i, run - i);
			i = run;
			continue;
		}
		n = text_utf8_decode(p + i, len - i, &cp);
		if (n == 0) {
			put(b, "\\ufffd", 6);
			i++;
			continue;
		}
		switch (cp) {
		case '"':
			put(b, "\\\"", 2);
			break;
		case '\\':
			put(b, "\\\\", 2);
			break;
		case '\b':
			put(b, "\\b", 2);
			break;
		case '\f':
			put(b, "\\f", 2);
			break;
		case '\n':
			put(b, "\\n", 2);
			break;
		case '\r':
			put(b, "\\r", 2);
			break;
		case '\t':
			put(b, "\\t", 2);
			break;
		default:
			if (text_is_control(cp)) {
				snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
				put(b, esc, 6);
			} else {
				put(b, s + i, n);
			}
		}
		i += n;
	}
	put(b, "\"", 1);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether s is exactly one number of RFC 8259 section 6. */
static int number_valid(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (is_digit(*s))
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!is_digit(*++s))
			return 0;
		while (is_digit(*s))
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!is_digit(*s))
			return 0;
		while (is_digit(*s))
			s++;
	}
	return *s == '\0';
}

/* A double as json-c would write it (keeping the text a caller chose with
 * json_object_new_double_s, e.g. "%.3f"), when that text is a JSON number
 * that reads back as a finite value; otherwise "%.17g"; null when not finite. */
static void put_double(struct jbuf *b, struct json_object *o)
{
	double d = json_object_get_double(o);
	const char *t;
	char num[64];

	if (!isfinite(d)) {
		put_str(b, "null");
		return;
	}
	t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (t && number_valid(t) && isfinite(strtod(t, NULL))) {
		put_str(b, t);
		return;
	}
	snprintf(num, sizeof(num), "%.17g", d);
	for (char *c = num; *c; c++)
		if (*c == ',') /* a locale's decimal comma */
			*c = '.';
	put_str(b, number_valid(num) ? num : "null");
}

static void put_value(struct jbuf *b, struct json_object *o, int depth)
{
	char num[32];

	if (b->err)
		return;
	switch (json_object_get_type(o)) {
	case json_type_null:
		put_str(b, "null");
		break;
	case json_type_boolean:
		put_str(b, json_object_get_boolean(o) ? "true" : "false");
		break;
	case json_type_int: {
		int64_t v = json_object_get_int64(o);
		/* An int64 saturates: the value may be a larger uint64. */
		if (v == INT64_MAX)
			snprintf(num, sizeof(num), "%" PRIu64, json_object_get_uint64(o));
		else
			snprintf(num, sizeof(num), "%" PRId64, v);
		put_str(b, num);
		break;
	}
	case json_type_double:
		put_double(b, o);
		break;
	case json_type_string:
		put_string(b, json_object_get_string(o), (size_t)json_object_get_string_len(o));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(o);
		if (depth >= JSONL_MAX_DEPTH) {
			b->err = -EINVAL;
			return;
		}
		put(b, "[", 1);
		for (size_t i = 0; i < n; i++) {
			if (i)
				put(b, ",", 1);
			put_value(b, json_object_array_get_idx(o, i), depth + 1);
		}
		put(b, "]", 1);
		break;
	}
	case json_type_object: {
		int first = 1;
		if (depth >= JSONL_MAX_DEPTH) {
			b->err = -EINVAL;
			return;
		}
		put(b, "{", 1);
		json_object_object_foreach(o, key, val)
		{
			if (!first)
				put(b, ",", 1);
			first = 0;
			put_string(b, key, strlen(key));
			put(b, ":", 1);
			put_value(b, val, depth + 1);
		}
		put(b, "}", 1);
		break;
	}
	default:
		put_str(b, "null");
	}
}

int jsonl_format(struct json_object *o, char **ret_line, size_t *ret_len)
{
	struct jbuf b = {0};

	put_value(&b, o, 0);
	put(&b, "\n", 2); /* the line and its NUL */
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*ret_line = b.p;
	if (ret_len)
		*ret_len = b.len - 1;
	return 0;
}

int jsonl_print(FILE *f, struct json_object *o)
{
	char *line;
	size_t len;
	int r = jsonl_format(o, &line, &len);

	if (r < 0)
		return r;
	if (fwrite(line, 1, len, f) != len || fflush(f) != 0)
		r = -EIO;
	free(line);
	return r;
}
