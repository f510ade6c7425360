/* Unit tests for jsonpos.c, the JSON scanner that keeps positions: the node
 * tree with the offset of every key and value, member lookup by key, string
 * decoding as json-c does it, lines and columns in characters, and the bounds
 * (nesting, number of values, what strict JSON does not allow). The rule-file
 * messages built on it are test_rulefile.c's. */
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/jsonpos.h"

static int scan(struct jsonpos *jp, const char *text, int max_depth, size_t *ret_off)
{
	jsonpos_init(jp, text, strlen(text));
	return jsonpos_scan(jp, max_depth, ret_off);
}

static void test_tree(void)
{
	/* {"a": 1, "b": [true, {"c": "x"}], "d": {}}: the key "a" at 1, its
	 * value at 6; "b" at 9, its [ at 14, true at 15, { at 21, "x" at 27. */
	const char *t = "{\"a\": 1, \"b\": [true, {\"c\": \"x\"}], \"d\": {}}";
	struct jsonpos jp;
	size_t off = 0;
	int b, arr1;

	CHECK(scan(&jp, t, 32, &off) == 0);
	CHECK(jp.n == 7);
	/* node 0, the object; its members a, b, d in order */
	CHECK(jp.nodes[0].parent == -1 && jp.nodes[0].val_off == 0 && jp.nodes[0].key_off == JSONPOS_NONE);
	CHECK(jp.nodes[1].key_off == 1 && jp.nodes[1].val_off == 6 && jp.nodes[1].parent == 0);
	b = jp.nodes[1].next_sibling;
	CHECK(b == 2 && jp.nodes[b].key_off == 9 && t[jp.nodes[b].val_off] == '[');
	/* b's elements: no keys */
	CHECK(jp.nodes[b].first_child == 3 && jp.nodes[3].key_off == JSONPOS_NONE && jp.nodes[3].val_off == 15);
	arr1 = jp.nodes[3].next_sibling;
	CHECK(arr1 == 4 && t[jp.nodes[arr1].val_off] == '{' && jp.nodes[arr1].parent == b);
	CHECK(jp.nodes[5].parent == arr1 && t[jp.nodes[5].val_off] == '"' && jp.nodes[5].next_sibling == -1);
	CHECK(jp.nodes[b].next_sibling == 6 && jp.nodes[6].first_child == -1 && jp.nodes[6].next_sibling == -1);

	CHECK(jsonpos_member(&jp, 0, "a") == 1);
	CHECK(jsonpos_member(&jp, 0, "d") == 6);
	CHECK(jsonpos_member(&jp, 0, "c") == -1); /* not a member of the top */
	CHECK(jsonpos_member(&jp, arr1, "c") == 5);
	jsonpos_free(&jp);
	jsonpos_free(&jp); /* twice is fine */
	CHECK(jp.nodes == NULL && jp.n == 0);

	/* A scalar at the top, and whitespace around. */
	CHECK(scan(&jp, " \n\t42 \r\n", 32, &off) == 0 && jp.n == 1 && jp.nodes[0].val_off == 3);
	jsonpos_free(&jp);
}

static void test_bounds(void)
{
	struct jsonpos jp;
	size_t off = 0;
	char *big;

	/* Nesting: level max_depth + 1 is refused at its bracket. */
	CHECK(scan(&jp, "[[[1]]]", 3, &off) == 0);
	jsonpos_free(&jp);
	CHECK(scan(&jp, "[[[[1]]]]", 3, &off) == -ELOOP && off == 3);
	jsonpos_free(&jp);
	CHECK(jsonpos_too_deep("[{\"a\": [[1]]}]", 14, 3) == 8);
	CHECK(jsonpos_too_deep("[\"[[[[\"]", 8, 3) == 8); /* brackets in strings do not count */
	CHECK(jsonpos_too_deep("[[1]]", 5, 3) == 5);

	/* What strict JSON does not allow stops the scan where it is. */
	CHECK(scan(&jp, "{'a': 1}", 32, &off) == -EINVAL && off == 1);
	jsonpos_free(&jp);
	CHECK(scan(&jp, "[1, 'x']", 32, &off) == -EINVAL && off == 4);
	jsonpos_free(&jp);
	CHECK(scan(&jp, "{\"a\" 1}", 32, &off) == -EINVAL && off == 5);
	jsonpos_free(&jp);
	CHECK(scan(&jp, "[1,", 32, &off) == -EINVAL && off == 3);
	jsonpos_free(&jp);
	CHECK(scan(&jp, "", 32, &off) == -EINVAL && off == 0);
	jsonpos_free(&jp);

	/* At most JSONPOS_NODES_MAX values. */
	big = malloc(2 * JSONPOS_NODES_MAX + 8);
	CHECK(big != NULL);
	if (!big)
		return;
	big[0] = '[';
	for (size_t i = 0; i < JSONPOS_NODES_MAX - 1; i++) {
		big[1 + 2 * i] = '0';
		big[2 + 2 * i] = ',';
	}
	big[2 * JSONPOS_NODES_MAX - 2] = ']';
	big[2 * JSONPOS_NODES_MAX - 1] = '\0';
	CHECK(scan(&jp, big, 32, &off) == 0 && jp.n == JSONPOS_NODES_MAX);
	jsonpos_free(&jp);
	big[2 * JSONPOS_NODES_MAX - 2] = ',';
	strcpy(big + 2 * JSONPOS_NODES_MAX - 1, "0]");
	CHECK(scan(&jp, big, 32, &off) == -E2BIG);
	jsonpos_free(&jp);
	free(big);
}

static void test_decode(void)
{
	const char *t = "[\"a\\n\\\"\\u00e9\\ud834\\udd1e\\ud800x\", \"ab\\u0000cd\", \"abcdef\"]";
	struct jsonpos jp;
	char out[32];
	size_t off = 0;

	CHECK(scan(&jp, t, 32, &off) == 0 && jp.n == 4);
	CHECK(jsonpos_decode_string(&jp, jp.nodes[1].val_off, out, sizeof(out)) == 0);
	CHECK_STR(out, "a\n\"\xC3\xA9\xF0\x9D\x84\x9E\xEF\xBF\xBDx");
	CHECK(jsonpos_decode_string(&jp, jp.nodes[2].val_off, out, sizeof(out)) == 0);
	CHECK_STR(out, "ab"); /* stops at \u0000, as json-c does */
	CHECK(jsonpos_decode_string(&jp, jp.nodes[3].val_off, out, 7) == 0);
	CHECK_STR(out, "abcdef");
	CHECK(jsonpos_decode_string(&jp, jp.nodes[3].val_off, out, 6) == -1); /* does not fit */
	jsonpos_free(&jp);
}

static void test_line_col(void)
{
	/* A tab and a UTF-8 sequence are one column each. */
	const char *t = "{\n\t\"\xC3\xA9\": 1,\n  \"b\": 2\n}";
	struct jsonpos jp;
	int line, col;

	jsonpos_init(&jp, t, strlen(t));
	jsonpos_line_col(&jp, 0, &line, &col);
	CHECK(line == 1 && col == 1);
	jsonpos_line_col(&jp, 3, &line, &col); /* the key's quote */
	CHECK(line == 2 && col == 2);
	jsonpos_line_col(&jp, 9, &line, &col); /* its value, after "é": */
	CHECK(line == 2 && col == 7);
	jsonpos_line_col(&jp, 14, &line, &col); /* "b", the cursor going on */
	CHECK(line == 3 && col == 3);
	jsonpos_line_col(&jp, 3, &line, &col); /* back again: from the top */
	CHECK(line == 2 && col == 2);
	jsonpos_line_col(&jp, 1000, &line, &col); /* past the end: the end */
	CHECK(line == 4 && col == 2);
	CHECK(jsonpos_skip_ws(" \t\r\n x", 6, 0) == 5 && jsonpos_skip_ws("  ", 2, 0) == 2);
}

int main(void)
{
	test_tree();
	test_bounds();
	test_decode();
	test_line_col();
	return check_done();
}
