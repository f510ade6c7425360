/* Unit tests of the typed JSON reading: members of the wrong type, nulls,
 * non-objects, strings with NULs, numbers that are strings, non-finite and
 * out-of-range numbers. */
#include "dumpwatch/jsonget.h"

#include "check.h"

#include <stdint.h>

static struct json_object *parse(const char *text)
{
	struct json_object *o = json_tokener_parse(text);
	CHECK_MSG(o != NULL, "cannot parse %s", text);
	return o;
}

static void test_members(void)
{
	struct json_object *o =
	    parse("{\"s\":\"a\\u0000b\",\"n\":null,\"i\":7,\"d\":2.5,\"a\":[1],\"o\":{},\"t\":true}");
	size_t len = 99;

	CHECK(jv_member(o, "s") != NULL);
	CHECK(jv_member(o, "n") == NULL); /* null is absent */
	CHECK(jv_member(o, "missing") == NULL);
	CHECK(jv_member(NULL, "s") == NULL);
	CHECK(jv_member(o, NULL) == NULL);
	CHECK(jv_member(jv_member(o, "a"), "s") == NULL); /* not an object */
	CHECK(jv_typed(o, "a", json_type_array) != NULL);
	CHECK(jv_typed(o, "a", json_type_object) == NULL);
	CHECK(jv_typed(o, "o", json_type_object) != NULL);
	CHECK(jv_typed(o, "n", json_type_null) == NULL);
	CHECK(jv_typed(o, "t", json_type_boolean) != NULL);

	const char *s = jv_str(o, "s", &len);
	CHECK(s && len == 3 && s[0] == 'a' && s[1] == '\0' && s[2] == 'b');
	CHECK(jv_str(o, "s", NULL) == s);
	len = 99;
	CHECK(jv_str(o, "i", &len) == NULL && len == 0);
	CHECK(jv_str(o, "n", NULL) == NULL);
	json_object_put(o);
}

static void test_numbers(void)
{
	struct json_object *o = parse("{\"i\":-42,\"d\":0.125,\"s\":\"12\",\"b\":true,\"big\":1e400,\"n\":null,"
	                              "\"max\":9223372036854775807,\"over\":9223372036854775808,"
	                              "\"way_over\":99999999999999999999999,\"min\":-9223372036854775808}");
	double d = -1;
	int64_t x = -1;

	CHECK(jv_num(o, "i", &d) == 1 && d == -42.0);
	CHECK(jv_num(o, "d", &d) == 1 && d == 0.125);
	d = -1;
	CHECK(jv_num(o, "s", &d) == 0 && d == -1); /* a string is not a number */
	CHECK(jv_num(o, "b", &d) == 0);
	CHECK(jv_num(o, "big", &d) == 0); /* not finite */
	CHECK(jv_num(o, "n", &d) == 0);
	CHECK(jv_num(o, "missing", &d) == 0);
	CHECK(jv_num_of(NULL, &d) == 0);

	CHECK(jv_int64(o, "i", &x) == 1 && x == -42);
	CHECK(jv_int64(o, "max", &x) == 1 && x == INT64_MAX);
	CHECK(jv_int64(o, "min", &x) == 1 && x == INT64_MIN);
	x = 5;
	CHECK(jv_int64(o, "over", &x) == 0 && x == 5);
	CHECK(jv_int64(o, "way_over", &x) == 0 && x == 5);
	CHECK(jv_int64(o, "d", &x) == 0); /* a double is not an integer */
	CHECK(jv_int64(o, "s", &x) == 0);
	CHECK(jv_int64(o, "n", &x) == 0);
	json_object_put(o);
}

int main(void)
{
	test_members();
	test_numbers();
	return check_done();
}
