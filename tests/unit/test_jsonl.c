/* Unit tests of the JSON-lines writer: exact output for every kind of value,
 * strings with control characters and invalid UTF-8, numbers that are not
 * finite or whose text is not JSON, depth limit, and a round trip through
 * json-c's strict parser. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "dumpwatch/jsonl.h"

static char line[4096];

/* o formatted (and consumed); "" on error. */
static const char *fmt(struct json_object *o)
{
	char *l = NULL;
	size_t len = 0;
	int r = jsonl_format(o, &l, &len);

	json_object_put(o);
	line[0] = '\0';
	if (r == 0) {
		CHECK(len == strlen(l) && len > 0 && l[len - 1] == '\n');
		snprintf(line, sizeof(line), "%s", l);
		free(l);
	}
	return line;
}

static struct json_object *str(const char *s)
{
	return json_object_new_string(s);
}

int main(void)
{
	struct json_object *o, *a;

	CHECK_STR(fmt(NULL), "null\n");
	CHECK_STR(fmt(json_object_new_boolean(1)), "true\n");
	CHECK_STR(fmt(json_object_new_boolean(0)), "false\n");
	CHECK_STR(fmt(json_object_new_int64(INT64_MIN)), "-9223372036854775808\n");
	CHECK_STR(fmt(json_object_new_uint64(UINT64_MAX)), "18446744073709551615\n");
	CHECK_STR(fmt(json_object_new_int(42)), "42\n");
	CHECK_STR(fmt(json_object_new_double(1.5)), "1.5\n");
	CHECK_STR(fmt(json_object_new_double(2)), "2.0\n");
	CHECK_STR(fmt(json_object_new_double(0.1)), "0.10000000000000001\n");
	/* The text a caller chose is kept when it is a JSON number. */
	CHECK_STR(fmt(json_object_new_double_s(1.23456, "1.235")), "1.235\n");
	/* Not finite: null. Text that is not a JSON number: the value's own. */
	CHECK_STR(fmt(json_object_new_double(NAN)), "null\n");
	CHECK_STR(fmt(json_object_new_double(INFINITY)), "null\n");
	CHECK_STR(fmt(json_object_new_double(-INFINITY)), "null\n");
	CHECK_STR(fmt(json_object_new_double_s(NAN, "1.0")), "null\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "NaN")), "2.5\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "2,5")), "2.5\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "2.5\"]")), "2.5\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "1e999")), "2.5\n"); /* reads back as infinity */
	CHECK_STR(fmt(json_object_new_double_s(2.5, ".5")), "2.5\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "05")), "2.5\n");
	CHECK_STR(fmt(json_object_new_double_s(2.5, "-0.5e-3")), "-0.5e-3\n");

	/* Strings: escapes, controls as \u, invalid bytes as U+FFFD, valid UTF-8 as is. */
	CHECK_STR(fmt(str("a\"b\\c/d")), "\"a\\\"b\\\\c/d\"\n");
	CHECK_STR(fmt(str("l1\nl2\r\t\b\f")), "\"l1\\nl2\\r\\t\\b\\f\"\n");
	CHECK_STR(fmt(str("\x01\x1b[31m\x1f\x7f")), "\"\\u0001\\u001b[31m\\u001f\\u007f\"\n");
	CHECK_STR(fmt(str("\xC2\x9B\xC2\xA0\xE2\x80\xA8\xE2\x80\xAE")), "\"\\u009b\xC2\xA0\\u2028\\u202e\"\n");
	CHECK_STR(fmt(str("caf\xC3\xA9 \xF0\x9D\x84\x9E")), "\"caf\xC3\xA9 \xF0\x9D\x84\x9E\"\n");
	CHECK_STR(fmt(str("arg\xC3\x28\xFF")), "\"arg\\ufffd(\\ufffd\"\n");
	CHECK_STR(fmt(str("\xC0\xAF")), "\"\\ufffd\\ufffd\"\n");            /* overlong '/' */
	CHECK_STR(fmt(str("\xE2\x82")), "\"\\ufffd\\ufffd\"\n");            /* truncated */
	CHECK_STR(fmt(str("\xED\xA0\x80")), "\"\\ufffd\\ufffd\\ufffd\"\n"); /* surrogate */
	CHECK_STR(fmt(json_object_new_string_len("a\0b", 3)), "\"a\\u0000b\"\n");

	/* Containers, order kept, keys escaped like strings. */
	o = json_object_new_object();
	json_object_object_add(o, "time", str("t"));
	json_object_object_add(o, "k\n\xFF", json_object_new_int(1));
	json_object_object_add(o, "null", NULL);
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_double(NAN));
	json_object_array_add(a, json_object_new_array());
	json_object_array_add(a, json_object_new_object());
	json_object_array_add(a, NULL);
	json_object_object_add(o, "a", a);
	CHECK_STR(fmt(o), "{\"time\":\"t\",\"k\\n\\ufffd\":1,\"null\":null,\"a\":[null,[],{},null]}\n");

	/* Depth: JSONL_MAX_DEPTH levels are written, one more is refused. */
	for (int depth = JSONL_MAX_DEPTH; depth <= JSONL_MAX_DEPTH + 1; depth++) {
		char *l = NULL;
		o = json_object_new_int(0);
		for (int i = 0; i < depth; i++) {
			a = json_object_new_array();
			json_object_array_add(a, o);
			o = a;
		}
		int r = jsonl_format(o, &l, NULL);
		CHECK(depth == JSONL_MAX_DEPTH ? r == 0 : r == -EINVAL);
		free(l);
		json_object_put(o);
	}

	/* A hostile record reads back through json-c's strict parser, with
	 * UTF-8 validation, as the same strings (invalid bytes as U+FFFD). */
	o = json_object_new_object();
	json_object_object_add(o, "name", str("x\n<0>dumpwatch: rule X fired\x1b]0;t\x07"));
	json_object_object_add(o, "cmd", str("a\xC3\x28\xFF"));
	char *l = NULL;
	size_t len = 0;
	CHECK(jsonl_format(o, &l, &len) == 0);
	json_object_put(o);
	struct json_tokener *tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, l, (int)len - 1);
	CHECK(o != NULL && json_tokener_get_error(tok) == json_tokener_success);
	if (o) {
		struct json_object *v;
		CHECK(json_object_object_get_ex(o, "name", &v) &&
		      strcmp(json_object_get_string(v), "x\n<0>dumpwatch: rule X fired\x1b]0;t\x07") == 0);
		CHECK(json_object_object_get_ex(o, "cmd", &v) &&
		      strcmp(json_object_get_string(v), "a\xEF\xBF\xBD(\xEF\xBF\xBD") == 0);
	}
	json_object_put(o);
	json_tokener_free(tok);
	free(l);

	/* jsonl_print: the line on a stream. */
	char *m = NULL;
	size_t mlen = 0;
	FILE *f = open_memstream(&m, &mlen);
	o = str("\x1b");
	CHECK(jsonl_print(f, o) == 0);
	json_object_put(o);
	fclose(f);
	CHECK_STR(m, "\"\\u001b\"\n");
	free(m);
	return check_done();
}
