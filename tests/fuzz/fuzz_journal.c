/* Fuzz target: the JSON-lines writer (jsonl_format) that the journal, the
 * views' JSON lines, `ps --json` and the state file use. The input is a
 * little program that builds a json-c tree: objects and arrays (nested, past
 * the depth limit too), strings and keys of arbitrary bytes, integers,
 * doubles of any bit pattern (NaN, infinities) and doubles carrying a text
 * of arbitrary bytes (json_object_new_double_s), booleans and null. The
 * output must be exactly one line ending in '\n', valid UTF-8 with no control
 * character, and json-c's strict parser (UTF-8 validated) must read it back
 * as the same tree: strings with each invalid byte as U+FFFD, non-finite
 * numbers as null (json-c reads NaN and Infinity even in strict mode, so the
 * comparison is what catches them). The record also goes through
 * journal_write (to /dev/null), which puts "time" and "event" first. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/journal.h"
#include "dumpwatch/jsonl.h"
#include "dumpwatch/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: abort, in the replay build too (NDEBUG). */
#define REQUIRE(cond)                                                                                                  \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                     \
			abort();                                                                                       \
		}                                                                                                      \
	} while (0)

/* Trees a little deeper than the writer accepts. */
#define BUILD_MAX_DEPTH (JSONL_MAX_DEPTH + 4)

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t take(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static void take_bytes(struct input *in, void *out, size_t n)
{
	uint8_t *o = out;
	for (size_t i = 0; i < n; i++)
		o[i] = take(in);
}

/* Up to max bytes as a NUL-terminated copy (a NUL in the input ends it
 * early when nul_ends, as a C string would); *ret_len its length. */
static char *take_text(struct input *in, size_t max, int nul_ends, size_t *ret_len)
{
	size_t want = take(in) % (max + 1), len = 0;
	char *s = malloc(want + 1);

	REQUIRE(s);
	for (size_t i = 0; i < want; i++) {
		char c = (char)take(in);
		if (c == '\0' && nul_ends)
			break;
		s[len++] = c;
	}
	s[len] = '\0';
	*ret_len = len;
	return s;
}

static struct json_object *build(struct input *in, int depth)
{
	uint8_t op = take(in);
	size_t len;
	char *s;
	struct json_object *o;

	switch (op % 10) {
	case 0:
		return NULL;
	case 1:
		return json_object_new_boolean((op & 0x10) != 0);
	case 2: {
		int64_t v;
		take_bytes(in, &v, sizeof(v));
		return json_object_new_int64(v);
	}
	case 3: {
		uint64_t v;
		take_bytes(in, &v, sizeof(v));
		return json_object_new_uint64(v);
	}
	case 4: {
		double d;
		take_bytes(in, &d, sizeof(d));
		return json_object_new_double(d);
	}
	case 5: {
		double d;
		take_bytes(in, &d, sizeof(d));
		s = take_text(in, 40, 1, &len);
		o = json_object_new_double_s(d, s);
		free(s);
		return o;
	}
	case 6:
		s = take_text(in, 255, 0, &len);
		o = json_object_new_string_len(s, (int)len);
		free(s);
		return o;
	case 7: {
		size_t n = take(in) % 8;
		o = json_object_new_array();
		for (size_t i = 0; i < n && depth < BUILD_MAX_DEPTH; i++)
			json_object_array_add(o, build(in, depth + 1));
		return o;
	}
	case 8: {
		size_t n = take(in) % 8;
		o = json_object_new_object();
		for (size_t i = 0; i < n && depth < BUILD_MAX_DEPTH; i++) {
			s = take_text(in, 31, 1, &len);
			json_object_object_add(o, s, build(in, depth + 1));
			free(s);
		}
		return o;
	}
	default: {
		/* A chain of single-element arrays: reaches the depth limit
		 * with few input bytes. */
		int n = take(in) % (BUILD_MAX_DEPTH + 1);
		if (n > BUILD_MAX_DEPTH - depth)
			n = BUILD_MAX_DEPTH - depth;
		o = build(in, depth + n);
		for (int i = 0; i < n; i++) {
			struct json_object *a = json_object_new_array();
			json_object_array_add(a, o);
			o = a;
		}
		return o;
	}
	}
}

/* Levels of containers: a scalar 0, an empty container 1. */
static int height(struct json_object *o)
{
	int h = 0;

	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			int c = height(json_object_array_get_idx(o, i));
			h = c > h ? c : h;
		}
		return h + 1;
	}
	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v)
		{
			(void)k;
			int c = height(v);
			h = c > h ? c : h;
		}
		return h + 1;
	}
	return 0;
}

/* What the writer promises a string becomes: each byte that begins no
 * valid UTF-8 sequence replaced by U+FFFD. malloc'd; *ret_len its length. */
static char *expected_string(const char *s, size_t len, size_t *ret_len)
{
	char *out = malloc(3 * len + 1);
	size_t o = 0;

	REQUIRE(out);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = text_utf8_decode((const unsigned char *)s + i, len - i, &cp);
		if (n == 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

static int is_number(struct json_object *o)
{
	return json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double);
}

/* Whether the tree read back (got) is what the tree written (want) must become. */
static int same(struct json_object *want, struct json_object *got)
{
	switch (json_object_get_type(want)) {
	case json_type_null:
		return got == NULL;
	case json_type_boolean:
		return json_object_is_type(got, json_type_boolean) &&
		       !json_object_get_boolean(got) == !json_object_get_boolean(want);
	case json_type_int:
		if (!json_object_is_type(got, json_type_int))
			return 0;
		if (json_object_get_int64(want) == INT64_MAX)
			return json_object_get_uint64(got) == json_object_get_uint64(want);
		return json_object_get_int64(got) == json_object_get_int64(want);
	case json_type_double: {
		double d = json_object_get_double(want);
		if (!isfinite(d))
			return got == NULL;
		if (!is_number(got))
			return 0;
		/* A chosen text is kept when it is a JSON number: its value
		 * is the text's. Without one, %.17g gives the value back. */
		return json_object_get_userdata(want) || json_object_get_double(got) == d;
	}
	case json_type_string: {
		size_t elen;
		char *e =
		    expected_string(json_object_get_string(want), (size_t)json_object_get_string_len(want), &elen);
		int ok = json_object_is_type(got, json_type_string) &&
		         (size_t)json_object_get_string_len(got) == elen &&
		         memcmp(json_object_get_string(got), e, elen) == 0;
		free(e);
		return ok;
	}
	case json_type_array: {
		size_t n = json_object_array_length(want);
		if (!json_object_is_type(got, json_type_array) || json_object_array_length(got) != n)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!same(json_object_array_get_idx(want, i), json_object_array_get_idx(got, i)))
				return 0;
		return 1;
	}
	case json_type_object: {
		/* Keys with invalid bytes may collide once replaced: the
		 * parser keeps one of them. Distinct keys keep their value. */
		struct json_object *keys = json_object_new_object();
		int ok = json_object_is_type(got, json_type_object);
		json_object_object_foreach(want, k, v)
		{
			size_t elen;
			char *e = expected_string(k, strlen(k), &elen);
			struct json_object *cnt;
			int32_t c = json_object_object_get_ex(keys, e, &cnt) ? json_object_get_int(cnt) : 0;
			(void)v;
			json_object_object_add(keys, e, json_object_new_int(c + 1));
			free(e);
		}
		ok = ok && json_object_object_length(got) == json_object_object_length(keys);
		json_object_object_foreach(want, k2, v2)
		{
			size_t elen;
			char *e = expected_string(k2, strlen(k2), &elen);
			struct json_object *gv, *cnt;
			if (!ok || strlen(e) != elen || !json_object_object_get_ex(got, e, &gv))
				ok = 0;
			else if (json_object_object_get_ex(keys, e, &cnt) && json_object_get_int(cnt) == 1)
				ok = same(v2, gv);
			free(e);
		}
		json_object_put(keys);
		return ok;
	}
	default:
		return 0;
	}
}

static void check_line(const char *line, size_t len)
{
	/* One line: '\n' last and nowhere else, no NUL, no control byte. */
	REQUIRE(len > 0 && line[len - 1] == '\n' && strlen(line) == len);
	for (size_t i = 0; i + 1 < len;) {
		uint32_t cp;
		size_t n = text_utf8_decode((const unsigned char *)line + i, len - 1 - i, &cp);
		REQUIRE(n > 0);                /* valid UTF-8 */
		REQUIRE(!text_is_control(cp)); /* escaped, every one */
		i += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct journal *journal;
	struct input in = {data, size};
	struct json_object *tree = build(&in, 0), *back;
	struct json_tokener *tok;
	char *line = NULL, err[256];
	size_t len = 0;
	int r = jsonl_format(tree, &line, &len);

	if (height(tree) > JSONL_MAX_DEPTH) {
		REQUIRE(r == -EINVAL);
		json_object_put(tree);
		return 0;
	}
	REQUIRE(r == 0);
	check_line(line, len);
	tok = json_tokener_new_ex(JSONL_MAX_DEPTH + 1);
	REQUIRE(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	back = json_tokener_parse_ex(tok, line, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success || json_tokener_get_parse_end(tok) + 1 < len) {
		fprintf(stderr, "does not parse back (%s): %s", json_tokener_error_desc(json_tokener_get_error(tok)),
		        line);
		abort();
	}
	if (!same(tree, back)) {
		fprintf(stderr, "read back differently: %s", line);
		abort();
	}
	json_object_put(back);
	json_tokener_free(tok);
	free(line);

	/* The journal's record around it. */
	if (!journal && journal_open("/dev/null", &journal, err, sizeof(err)) < 0)
		abort();
	if (json_object_is_type(tree, json_type_object))
		journal_write(journal, "fuzz", json_object_get(tree));
	json_object_put(tree);
	return 0;
}
