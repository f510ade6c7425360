/* Unit tests for rulefile.c: good files with all defaults, a table of bad
 * files with their exact "line:column: message", bounds on hostile input,
 * filter matching, the example files under examples/, the dump.dir
 * containment, and which files look like rule files (whose content messages
 * may quote). `dumpwatch check` is test_rulecheck.c's. */
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dumpwatch/rulefile.h"
#include "dumpwatch/rulefile_io.h"

#define RULES_DIR DW_TEST_DATA "/rules"
#define EXAMPLES_DIR DW_TEST_DATA "/../../examples"
#define NS(s) ((int64_t)(s)*1000000000LL)

static char *slurp(const char *path, size_t *len)
{
	char err[512], *text = NULL;

	if (rulefile_read(path, &text, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	return text;
}

/* Parses text; on error, the first diagnostic as "line:column: message". */
static int parse(const char *text, size_t len, struct file_rule **rules, char *first, size_t firstlen, size_t *ndiags)
{
	struct rule_diag d[16];
	size_t nd = 0;
	int n = rulefile_parse(text, len, rules, d, 16, &nd);

	first[0] = '\0';
	if (nd > 0) {
		if (d[0].line > 0)
			snprintf(first, firstlen, "%d:%d: %s", d[0].line, d[0].column, d[0].message);
		else
			snprintf(first, firstlen, "%s", d[0].message);
	}
	if (ndiags)
		*ndiags = nd;
	return n;
}

static int parse_file(const char *name, struct file_rule **rules, char *first, size_t firstlen, size_t *ndiags)
{
	char path[512];
	size_t len;
	char *text;
	int n;

	snprintf(path, sizeof(path), "%s/%s", RULES_DIR, name);
	text = slurp(path, &len);
	if (!text)
		return -ENOENT;
	n = parse(text, len, rules, first, firstlen, ndiags);
	free(text);
	return n;
}

static void test_good_single(void)
{
	struct file_rule *r = NULL;
	char first[600];
	int n = parse_file("good-single.json", &r, first, sizeof(first), NULL);

	CHECK_MSG(n == 1, "n=%d %s", n, first);
	if (n != 1)
		return;
	CHECK_STR(r[0].rule.name, "loh-balloon");
	CHECK_STR(r[0].description, "free text");
	CHECK_STR(r[0].filter.name, "webapi*");
	CHECK_STR(r[0].filter.cmdline, "*--urls*");
	CHECK(r[0].filter.has_user && strcmp(r[0].filter.user, "www-data") == 0);
	CHECK(r[0].filter.has_pid && r[0].filter.pid == 123);
	CHECK(r[0].rule.n_conds == 2);
	CHECK(r[0].rule.conds[0].metric.id == M_LOH_SIZE);
	CHECK(r[0].rule.conds[0].op == COND_GT);
	CHECK(r[0].rule.conds[0].threshold == 500e6);
	CHECK(r[0].rule.conds[0].for_ns == NS(10));
	CHECK_STR(r[0].rule.conds[0].text, "loh-size > 500MB for 10s");
	CHECK(r[0].rule.conds[1].metric.id == M_GC_PAUSE);
	CHECK(r[0].rule.conds[1].threshold == 1000.0);
	CHECK_STR(r[0].rule.conds[1].text, "gc-pause > 1s");
	CHECK(r[0].rule.dump_type == DUMP_FULL);
	CHECK_STR(r[0].dump_dir, "/var/lib/dumpwatch/dumps");
	CHECK_STR(r[0].name_template, "{name}-{pid}-{rule}-{time}.core");
	CHECK(r[0].rule.limits.max_dumps == 3);
	CHECK(r[0].rule.limits.window_ns == NS(3600));
	CHECK(r[0].rule.limits.cooldown_ns == NS(300));
	CHECK(r[0].enabled == 0);
	CHECK(r[0].line == 1);
	CHECK(r[0].name_line == 2 && r[0].name_column == 11);
	free(r);
}

static void test_good_list(void)
{
	static const char desc2[] = "\xc3\xbcn\xc3\xaf"
	                            "c\xc3\xb6"
	                            "d\xc3\xa9 \"quoted\" \\ text";
	struct file_rule *r = NULL;
	char first[600];
	int n = parse_file("good-list.json", &r, first, sizeof(first), NULL);

	CHECK_MSG(n == 3, "n=%d %s", n, first);
	if (n != 3)
		return;
	/* All defaults. */
	CHECK_STR(r[0].rule.name, "defaults");
	CHECK(r[0].line == 3);
	CHECK(r[0].name_line == 3 && r[0].name_column == 13); /* a tab counts as one column */
	CHECK(r[0].enabled == 1);
	CHECK(r[0].rule.dump_type == DUMP_WITHHEAP);
	CHECK(r[0].rule.limits.max_dumps == 1);
	CHECK(r[0].rule.limits.window_ns == 0);
	CHECK(r[0].rule.limits.cooldown_ns == NS(600));
	CHECK(r[0].description[0] == '\0' && r[0].dump_dir[0] == '\0' && r[0].name_template[0] == '\0');
	CHECK(r[0].filter.name[0] == '\0' && r[0].filter.cmdline[0] == '\0');
	CHECK(!r[0].filter.has_pid && !r[0].filter.has_user);
	CHECK(r[0].rule.n_conds == 1 && r[0].rule.conds[0].metric.id == M_HEAP_SIZE);
	CHECK(r[0].rule.conds[0].for_ns == 0);
	/* \u escape in a value; a plain number for a count; a uid as a number. */
	CHECK_STR(r[1].rule.name, "below-count");
	CHECK(r[1].line == 4);
	CHECK(r[1].rule.conds[0].op == COND_LT && r[1].rule.conds[0].threshold == 2.0);
	CHECK_STR(r[1].rule.conds[0].text, "System.Runtime/threadpool-thread-count < 2");
	CHECK(r[1].filter.has_user && strcmp(r[1].filter.user, "1000") == 0);
	CHECK_STR(r[2].description, desc2);
	CHECK(r[2].rule.conds[0].metric.unit == UNIT_PERCENT && r[2].rule.conds[0].threshold == 90.0);
	free(r);
}

struct bad_file {
	const char *file;
	const char *first; /* "line:column: message" of the first diagnostic */
	size_t ndiags;
};

static const struct bad_file bad_files[] = {
    {"bad-syntax.json", "4:1: invalid JSON: unexpected character", 1},
    {"bad-unknown-key.json", "4:3: unknown key \"limit\" in rule; did you mean \"limits\"?", 1},
    {"bad-metric.json", "5:27: unknown metric \"loh-sise\"; did you mean \"loh-size\"?", 1},
    {"bad-unit.json", "3:44: \"above\": \"500\" needs a unit: a size such as 500MB or 1.5GiB", 1},
    {"bad-duration.json", "4:27: \"cooldown\": unknown duration unit in \"5 parsecs\": use ms, s, m (or min), h or d",
     1},
    {"bad-above-below.json", "3:51: condition has both \"above\" and \"below\"; give one (two conditions make a range)",
     1},
    {"bad-dup-name.json", "3:12: rule name \"same\" is also defined at 2:12", 1},
    {"bad-template.json",
     "4:21: dump name: unknown placeholder \"{host}\"; use {name}, {pid}, {rule}, {time}, {container} or {pod}", 1},
    {"bad-types.json", "4:13: \"enabled\" must be true or false", 3},
};

static void test_bad_files(void)
{
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		struct file_rule *r = (struct file_rule *)&r; /* must come back NULL */
		char first[600];
		size_t nd = 0;
		int n = parse_file(bad_files[i].file, &r, first, sizeof(first), &nd);

		CHECK_MSG(n == -EINVAL, "%s: n=%d", bad_files[i].file, n);
		CHECK(r == NULL);
		CHECK_MSG(strcmp(first, bad_files[i].first) == 0, "%s: \"%s\"", bad_files[i].file, first);
		CHECK_MSG(nd == bad_files[i].ndiags, "%s: %zu diagnostics", bad_files[i].file, nd);
	}
}

static void test_bad_types_all(void)
{
	struct rule_diag d[8];
	struct file_rule *r;
	char path[512], *text;
	size_t len, nd = 0;

	snprintf(path, sizeof(path), "%s/bad-types.json", RULES_DIR);
	text = slurp(path, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	CHECK(rulefile_parse(text, len, &r, d, 8, &nd) == -EINVAL);
	free(text);
	CHECK(nd == 3);
	if (nd != 3)
		return;
	CHECK(d[1].line == 5 && d[1].column == 27);
	CHECK_STR(d[1].message, "\"max-dumps\" must be a non-negative integer (0 = no limit; at most 1000000)");
	CHECK(d[2].line == 6 && d[2].column == 13);
	CHECK_STR(d[2].message, "\"process\" must be an object");
}

struct bad_text {
	const char *text;
	const char *first;
};

#define RULE_HEAD "{\"name\": \"x\", \"when\": \"loh-size > 1MB\", "

static const struct bad_text bad_texts[] = {
    {"", "the file is empty; it must hold a rule object or {\"rules\": [...]}"},
    {"  \n ", "the file is empty; it must hold a rule object or {\"rules\": [...]}"},
    {"{\"name\": \"x\",\n \"when\": \"loh-size > 1MB\"", "2:26: invalid JSON: unexpected end of file"},
    {"{\"name\": \"x\" \"when\": 1}", "1:14: invalid JSON: object value separator ',' expected"},
    {"{\"name\": \"x\", \"when\": \"gc-pause > 1s\"} x", "1:40: invalid JSON: unexpected character"},
    {"{'name': \"x\", 'when': \"gc-pause > 1s\"}", "1:2: invalid JSON: strings must be in double quotes"},
    {"{\"name\": \"\xff\"}", "1:11: invalid JSON: invalid utf-8 string"},
    {"[]", "1:1: a rule file must hold a rule object or {\"rules\": [...]}"},
    {"{\"rules\": {}}", "1:11: \"rules\" must be an array of rule objects"},
    {"{\"rules\": [1]}", "1:12: each entry of \"rules\" must be a rule object"},
    {"{\"rules\": [], \"rule\": 1}", "1:15: unknown key \"rule\" in rule file; did you mean \"rules\"?"},
    {"{\"nam\": \"x\", \"when\": \"gc-pause > 1s\"}",
     "1:1: rule has no \"name\"; add one such as \"name\": \"loh-balloon\""},
    {"{\"name\": \"x\"}", "1:1: rule has no \"when\"; add a condition such as \"when\": \"loh-size > 500MB\""},
    {"{\"name\": \"a b\", \"when\": \"gc-pause > 1s\"}",
     "1:10: rule name \"a b\" may only hold letters, digits, '.', '_' and '-'"},
    {"{\"name\": \"\", \"when\": \"gc-pause > 1s\"}", "1:10: rule name is empty"},
    {"{\"name\": \"a234567890123456789012345678901234567890123456789012345678901234\", \"when\": \"gc-pause > 1s\"}",
     "1:10: \"name\" is too long (at most 63 bytes)"},
    {"{\"name\": 7, \"when\": \"gc-pause > 1s\"}", "1:10: \"name\" must be a string"},
    {RULE_HEAD "\"enabled\": 1}", "1:52: \"enabled\" must be true or false"},
    {RULE_HEAD "\"frob\": 1}", "1:41: unknown key \"frob\" in rule; the keys are name, description, process, when, "
                               "dump, limits, enabled, hooks, upload, rules"},
    {RULE_HEAD "\"\\u006cimit\": {}}", "1:41: unknown key \"limit\" in rule; did you mean \"limits\"?"},
    {RULE_HEAD "\"name\": \"y\"}", "1:41: key \"name\" appears twice in rule (first at 1:2)"},
    {RULE_HEAD "\"process\": {\"nmae\": \"a\"}}", "1:53: unknown key \"nmae\" in process; did you mean \"name\"?"},
    {RULE_HEAD "\"process\": {\"pid\": -3}}", "1:60: \"pid\" must be a positive integer"},
    {RULE_HEAD "\"process\": {\"user\": true}}", "1:61: \"user\" must be a user name or a uid"},
    {RULE_HEAD "\"dump\": {\"type\": \"heap\"}}",
     "1:58: dump type \"heap\" is not one of normal, withheap, triage, full, gcdump"},
    {RULE_HEAD "\"dump\": {\"dir\": \"dumps\"}}",
     "1:57: dump dir \"dumps\" must be an absolute path, such as \"/var/lib/dumpwatch/dumps\""},
    {RULE_HEAD "\"dump\": {\"name\": \"a/{pid}\"}}", "1:58: dump name \"a/{pid}\" must be a file name, without '/'"},
    {RULE_HEAD "\"dump\": {\"name\": \"{pid\"}}", "1:58: dump name \"{pid\" has a '{' without its '}'"},
    {RULE_HEAD "\"dump\": {\"name\": \"pid}\"}}", "1:58: dump name \"pid}\" has a '}' without its '{'"},
    {RULE_HEAD "\"limits\": {\"max-dumps\": -1}}",
     "1:65: \"max-dumps\" must be a non-negative integer (0 = no limit; at most 1000000)"},
    {RULE_HEAD "\"limits\": {\"max-dumps\": \"3\"}}",
     "1:65: \"max-dumps\" must be a non-negative integer (0 = no limit; at most 1000000)"},
    {RULE_HEAD "\"limits\": {\"window\": 60}}", "1:62: \"window\" must be a duration string such as \"1h\""},
    {RULE_HEAD "\"limits\": {\"cooldown\": \"-5m\"}}", "1:64: \"cooldown\": \"-5m\": a duration cannot be negative"},
    {"{\"name\": \"x\", \"when\": 3}",
     "1:23: a condition must be a string such as \"loh-size > 500MB\" or an object with \"metric\""},
    {"{\"name\": \"x\", \"when\": []}", "1:23: \"when\" is empty; give at least one condition"},
    {"{\"name\": \"x\", \"when\": [\"gc-pause > 1s\", \"gc-pause > 1s\", \"gc-pause > 1s\", \"gc-pause > 1s\", "
     "\"gc-pause > 1s\", \"gc-pause > 1s\", \"gc-pause > 1s\", \"gc-pause > 1s\", \"gc-pause > 1s\"]}",
     "1:23: \"when\" has 9 conditions; a rule takes at most 8"},
    {"{\"name\": \"x\", \"when\": \"gc-pause > 3\"}",
     "1:23: \"3\" needs a unit: a duration such as 3ms or 1.5s (gc-pause is measured in milliseconds)"},
    {"{\"name\": \"x\", \"when\": [\"gc-pause > 1s\", \"loh-sise > 1MB\"]}",
     "1:41: unknown metric \"loh-sise\"; did you mean \"loh-size\"?"},
    {"{\"name\": \"x\", \"when\": {\"above\": \"1MB\"}}",
     "1:23: condition has no \"metric\"; write one such as {\"metric\": \"loh-size\", \"above\": \"500MB\"}"},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"loh-size\"}}",
     "1:23: condition needs \"above\" or \"below\", as in \"above\": \"200MB\""},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"loh-size\", \"abov\": \"1MB\"}}",
     "1:23: condition needs \"above\" or \"below\", as in \"above\": \"200MB\""},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"loh-size\", \"above\": 500}}",
     "1:55: \"above\" needs a unit for loh-size: write a string such as \"200MB\""},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"gc-count\", \"above\": -1}}",
     "1:55: \"above\" must be a finite non-negative number"},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"loh-size\", \"above\": \"1MB\", \"for\": 10}}",
     "1:69: \"for\" must be a duration string such as \"10s\""},
    {"{\"name\": \"x\", \"when\": {\"metric\": \"loh-size\", \"above\": \"1MB\", \"for\": \"10\"}}",
     "1:69: \"for\": \"10\" needs a unit: a duration such as 10s or 500ms"},
    /* Columns count characters: the UTF-8 in the description is 3 characters in 6 bytes. */
    {"{\"description\": \"\xc3\xbc\xc3\xbc\xc3\xbc\", \"name\": 1, \"when\": \"gc-pause > 1s\"}",
     "1:32: \"name\" must be a string"},
    {"{\"description\": \"\\\"}\\\\\", \"name\": 1, \"when\": \"gc-pause > 1s\"}", "1:34: \"name\" must be a string"},
};

static void test_bad_texts(void)
{
	for (size_t i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
		struct file_rule *r = NULL;
		char first[600];
		int n = parse(bad_texts[i].text, strlen(bad_texts[i].text), &r, first, sizeof(first), NULL);

		CHECK_MSG(n == -EINVAL, "#%zu: n=%d", i, n);
		CHECK_MSG(strcmp(first, bad_texts[i].first) == 0, "#%zu: \"%s\"", i, first);
		if (n >= 0)
			free(r);
	}
}

static void test_nul_and_length(void)
{
	static const char t[] = "{\"name\": \"x\",\n\"when\": \"gc-pause > 1s\"\0}";
	struct file_rule *r = NULL;
	char first[600];

	CHECK(parse(t, sizeof(t) - 1, &r, first, sizeof(first), NULL) == -EINVAL);
	CHECK_STR(first, "2:24: invalid JSON: a NUL byte");
	/* len is honoured: the text need not be NUL-terminated. */
	CHECK(parse(t, sizeof(t) - 3, &r, first, sizeof(first), NULL) == -EINVAL);
	CHECK_STR(first, "2:24: invalid JSON: unexpected end of file");
}

/* A rule whose description is nested depth levels deep in all (the rule
 * object is the first), with inner ("0" or "") in the innermost array. */
static char *nested(int depth, const char *inner)
{
	size_t cap = (size_t)depth * 2 + 128, o = 0;
	char *s = malloc(cap);

	o += (size_t)snprintf(s, cap, "{\"name\": \"x\", \"when\": \"gc-pause > 1s\", \"description\": ");
	for (int i = 0; i < depth - 1; i++)
		s[o++] = '[';
	o += (size_t)snprintf(s + o, cap - o, "%s", inner);
	for (int i = 0; i < depth - 1; i++)
		s[o++] = ']';
	s[o++] = '}';
	s[o] = '\0';
	return s;
}

static void test_bounds(void)
{
	struct file_rule *r = NULL;
	char first[600], *s;
	size_t len;
	int n;

	/* 32 levels are valid JSON for us (the description is then a wrong type). */
	for (int empty = 0; empty <= 1; empty++) {
		s = nested(32, empty ? "" : "0");
		CHECK(parse(s, strlen(s), &r, first, sizeof(first), NULL) == -EINVAL);
		CHECK_STR(first, "1:55: \"description\" must be a string");
		free(s);
		/* The 33rd level opens at column 55 + 31. */
		s = nested(33, empty ? "" : "0");
		CHECK(parse(s, strlen(s), &r, first, sizeof(first), NULL) == -EINVAL);
		CHECK_STR(first, "1:86: nesting is too deep (at most 32 levels)");
		free(s);
		s = nested(100000, empty ? "" : "0");
		CHECK(parse(s, strlen(s), &r, first, sizeof(first), NULL) == -EINVAL);
		CHECK_STR(first, "1:86: nesting is too deep (at most 32 levels)");
		free(s);
	}

	/* Over 1 MiB: refused before parsing. */
	len = RULEFILE_SIZE_MAX + 1;
	s = malloc(len);
	memset(s, ' ', len);
	s[0] = '{';
	s[len - 1] = '}';
	CHECK(parse(s, len, &r, first, sizeof(first), NULL) == -EINVAL);
	CHECK_STR(first, "the file is too large (1048577 bytes; a rule file may have at most 1048576)");
	free(s);

	/* 1000 rules are fine, 1001 are not. */
	len = 64 + 1001 * 64;
	s = malloc(len);
	for (int count = 1000; count <= 1001; count++) {
		size_t o = (size_t)snprintf(s, len, "{\"rules\": [");
		for (int i = 0; i < count; i++)
			o += (size_t)snprintf(s + o, len - o, "%s\n{\"name\": \"r%d\", \"when\": \"gc-pause > 1s\"}",
			                      i ? "," : "", i);
		o += (size_t)snprintf(s + o, len - o, "]}");
		n = parse(s, o, &r, first, sizeof(first), NULL);
		if (count == 1000) {
			CHECK_MSG(n == 1000, "n=%d %s", n, first);
			if (n == 1000) {
				CHECK_STR(r[999].rule.name, "r999");
				CHECK(r[999].line == 1001);
				free(r);
			}
		} else {
			CHECK(n == -EINVAL);
			CHECK_STR(first, "1:11: the file has 1001 rules; at most 1000 are allowed");
		}
	}
	free(s);
}

/* With room for 2 diagnostics, the first of each kind stays. (Most keys are
 * known, so that the file looks like a rule file and its keys are quoted.) */
static void test_diag_kinds_kept(void)
{
	static const char t[] = "{\"name\": \"x\", \"when\": \"gc-pause > 1s\",\n"
	                        "\"a1\": 1, \"a2\": 2, \"enabled\": 0}";
	struct rule_diag d[2];
	struct file_rule *r;
	size_t nd = 0;

	CHECK(rulefile_parse(t, strlen(t), &r, d, 2, &nd) == -EINVAL);
	CHECK(nd == 2);
	CHECK(d[0].line == 2 && d[0].column == 1 && strncmp(d[0].message, "unknown key \"a1\"", 16) == 0);
	CHECK(d[1].line == 2 && d[1].column == 30);
	CHECK_STR(d[1].message, "\"enabled\" must be true or false");
	/* No room at all is fine too. */
	CHECK(rulefile_parse(t, strlen(t), &r, NULL, 0, &nd) == -EINVAL && nd == 0);
}

static void test_format_diag(void)
{
	struct rule_diag d = {3, 7, "bad thing"};
	char buf[128];

	rulefile_format_diag("r.json", &d, buf, sizeof(buf));
	CHECK_STR(buf, "r.json:3:7: bad thing");
	d.line = d.column = 0;
	rulefile_format_diag("r.json", &d, buf, sizeof(buf));
	CHECK_STR(buf, "r.json: bad thing");
}

static void test_filter(void)
{
	struct rule_filter f;

	memset(&f, 0, sizeof(f));
	CHECK(rulefile_filter_match(&f, "anything", "x y", 10, 1000, -1));
	CHECK(rulefile_filter_match(&f, NULL, NULL, 10, 1000, -1));

	snprintf(f.name, sizeof(f.name), "webapi*");
	CHECK(rulefile_filter_match(&f, "webapi", "", 1, 0, -1));
	CHECK(rulefile_filter_match(&f, "webapi-orders", "", 1, 0, -1));
	CHECK(!rulefile_filter_match(&f, "mywebapi", "", 1, 0, -1));
	CHECK(!rulefile_filter_match(&f, NULL, "", 1, 0, -1));
	snprintf(f.name, sizeof(f.name), "w?b[a-c]pi");
	CHECK(rulefile_filter_match(&f, "webapi", "", 1, 0, -1));
	CHECK(!rulefile_filter_match(&f, "webdpi", "", 1, 0, -1));
	f.name[0] = '\0';

	/* '*' spans '/' and spaces in a command line. */
	snprintf(f.cmdline, sizeof(f.cmdline), "*--urls*");
	CHECK(rulefile_filter_match(&f, "x", "/usr/bin/dotnet /srv/app.dll --urls http://*:80", 1, 0, -1));
	CHECK(!rulefile_filter_match(&f, "x", "/usr/bin/dotnet /srv/app.dll", 1, 0, -1));
	f.cmdline[0] = '\0';

	f.has_pid = 1;
	f.pid = 123;
	CHECK(rulefile_filter_match(&f, "x", "", 123, 0, -1));
	CHECK(!rulefile_filter_match(&f, "x", "", 124, 0, -1));
	f.has_pid = 0;

	f.has_user = 1;
	snprintf(f.user, sizeof(f.user), "www-data");
	CHECK(rulefile_filter_match(&f, "x", "", 1, 33, 33));
	CHECK(!rulefile_filter_match(&f, "x", "", 1, 34, 33));
	CHECK(!rulefile_filter_match(&f, "x", "", 1, 33, -1)); /* no such user */
	snprintf(f.user, sizeof(f.user), "1000");
	CHECK(rulefile_filter_match(&f, "x", "", 1, 1000, -1));
	CHECK(!rulefile_filter_match(&f, "x", "", 1, 1001, -1));
	snprintf(f.user, sizeof(f.user), "99999999999999999999");
	CHECK(!rulefile_filter_match(&f, "x", "", 1, 1000, -1));

	/* All filters must match. */
	snprintf(f.user, sizeof(f.user), "1000");
	snprintf(f.name, sizeof(f.name), "webapi");
	f.has_pid = 1;
	f.pid = 5;
	CHECK(rulefile_filter_match(&f, "webapi", "", 5, 1000, -1));
	CHECK(!rulefile_filter_match(&f, "webapi", "", 6, 1000, -1));
	CHECK(!rulefile_filter_match(&f, "other", "", 5, 1000, -1));
	CHECK(!rulefile_filter_match(&f, "webapi", "", 5, 0, -1));
}

static void test_examples(void)
{
	DIR *d = opendir(EXAMPLES_DIR);
	struct dirent *de;
	int files = 0;

	CHECK(d != NULL);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		char path[1024], *text;
		struct file_rule *r = NULL;
		char first[600];
		size_t len;
		int n;

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || strstr(de->d_name, ".schema.json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", EXAMPLES_DIR, de->d_name);
		text = slurp(path, &len);
		CHECK(text != NULL);
		if (!text)
			continue;
		n = parse(text, len, &r, first, sizeof(first), NULL);
		CHECK_MSG(n > 0, "%s: %s", de->d_name, first);
		for (int i = 0; i < n; i++)
			CHECK_MSG(r[i].description[0] != '\0', "%s: rule %s has no description", de->d_name,
			          r[i].rule.name);
		if (n >= 0)
			free(r);
		free(text);
		files++;
	}
	closedir(d);
	CHECK(files >= 3);
}

static void test_dump_dirs(void)
{
	static const char t[] =
	    "{\"rules\": [\n"
	    "{\"name\": \"a\", \"when\": \"gc-pause > 1s\", \"dump\": {\"dir\": \"/var/dumps\"}},\n"
	    "{\"name\": \"b\", \"when\": \"gc-pause > 1s\", \"dump\": {\"dir\": \"/var/dumps2\"}},\n"
	    "{\"name\": \"c\", \"when\": \"gc-pause > 1s\", \"dump\": {\"dir\": \"/var/dumps/../etc\"}},\n"
	    "{\"name\": \"d\", \"when\": \"gc-pause > 1s\", \"dump\": {\"dir\": \"//var//dumps/./x/\"}},\n"
	    "{\"name\": \"e\", \"when\": \"gc-pause > 1s\", \"dump\": {\"dir\": \"/srv/more/y\"}},\n"
	    "{\"name\": \"f\", \"when\": \"gc-pause > 1s\"}\n"
	    "]}";
	const char *dirs[] = {"/var/dumps", "/srv/more"};
	struct file_rule *r = NULL;
	struct rule_diag d[8];
	size_t nd = 0;
	int n = rulefile_parse(t, strlen(t), &r, d, 8, &nd);

	CHECK_MSG(n == 6, "n=%d %s", n, nd ? d[0].message : "");
	if (n != 6)
		return;
	CHECK(r[0].dump_dir_line == 2 && r[0].dump_dir_column == 56);
	CHECK(r[5].dump_dir_line == 0);
	CHECK(rulefile_check_dump_dirs(r, 6, dirs, 2, d, 8, &nd) == -EINVAL);
	CHECK(nd == 2);
	CHECK(d[0].line == 3 && d[0].column == 56);
	CHECK_STR(d[0].message, "dump dir \"/var/dumps2\" is not inside an allowed dump directory (/var/dumps, "
	                        "/srv/more): dumps go only below the daemon's --dump-dir and its --allow-dump-dir "
	                        "directories");
	CHECK(d[1].line == 4 && d[1].column == 56);
	CHECK_STR(d[1].message, "dump dir \"/var/dumps/../etc\" has a \"..\" component; write the directory it means");
	/* Within the first directory alone, d and f pass; no directories: not checked. */
	CHECK(rulefile_check_dump_dirs(r + 3, 1, dirs, 1, d, 8, &nd) == 0 && nd == 0);
	CHECK(rulefile_check_dump_dirs(r + 5, 1, dirs, 1, d, 8, &nd) == 0);
	CHECK(rulefile_check_dump_dirs(r, 6, NULL, 0, d, 8, &nd) == 0);
	/* "/" allows everything that is absolute and has no "..". */
	{
		const char *root[] = {"/"};
		CHECK(rulefile_check_dump_dirs(r, 6, root, 1, d, 8, &nd) == -EINVAL && nd == 1 && d[0].line == 4);
	}
	free(r);
}

/* What makes a file a rule file, whose keys and values messages may quote;
 * anything else gets one message that shows nothing of it. */
static void test_not_rule_files(void)
{
	static const char generic[] = "this does not look like a rule file (a rule object with \"name\" and \"when\", "
	                              "or {\"rules\": [rule, ...]}), so nothing of it is shown";
	static const struct {
		const char *text;
		int rule_like;
	} cases[] = {
	    /* Secrets: not one of our keys, or too few of them. */
	    {"{\"aws_secret_access_key\": \"wJalrXUtnFEMI\", \"password\": \"hunter2\"}", 0},
	    {"{\"name\": \"db prod\", \"password\": \"hunter2\", \"host\": \"h\"}", 0},
	    {"{\"name\": \"db prod\", \"password\": \"hunter2\"}", 0},
	    {"{\"when\": \"2026-11-23\", \"where\": \"x\", \"who\": \"y\"}", 0},
	    {"{}", 0},
	    {"{\"rules\": [], \"password\": \"hunter2\"}", 0},
	    {"{\"rules\": [{\"name\": \"x\", \"when\": \"gc-pause > 1s\"}, {\"user\": \"u\", \"token\": \"t\"}]}", 0},
	    {"{\"rules\": [{\"name\": \"x\", \"when\": \"gc-pause > 1s\"}, {\"name\": \"y\", \"token\": \"t\", "
	     "\"secret\": \"s\"}]}",
	     0},
	    /* Rule files with mistakes: quoted as before. */
	    {"{\"name\": \"x\"}", 1},
	    {"{\"nam\": \"x\", \"when\": \"gc-pause > 1s\"}", 1},
	    {"{\"name\": \"x\", \"when\": \"gc-pause > 1s\", \"frob\": 1}", 1},
	    {"{\"name\": \"x\", \"when\": \"gc-pause > 1s\", \"limit\": {}, \"dumps\": {}}", 1},
	    {"{\"rules\": [], \"rule\": 1}", 1},
	    {"{\"rules\": {}}", 1},
	    {"{\"rules\": [1, {\"name\": \"x\", \"whn\": \"gc-pause > 1s\"}]}", 1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct file_rule *r = NULL;
		char first[600];
		size_t nd = 0;
		int n = parse(cases[i].text, strlen(cases[i].text), &r, first, sizeof(first), &nd);

		CHECK_MSG(n == -EINVAL, "#%zu: n=%d", i, n);
		if (!cases[i].rule_like) {
			/* One message, with a position and nothing of the text. */
			CHECK_MSG(nd == 1, "#%zu: %zu diagnostics", i, nd);
			CHECK_MSG(strstr(first, generic) != NULL, "#%zu: %s", i, first);
		} else {
			CHECK_MSG(strstr(first, "does not look like") == NULL, "#%zu: %s", i, first);
		}
		if (n >= 0)
			free(r);
	}
	{
		/* The position is that of the object that does not look like a rule. */
		static const char t[] = "{\"rules\": [\n  {\"name\": \"x\", \"when\": \"gc-pause > 1s\"},\n"
		                        "  {\"api_key\": \"k\", \"token\": \"t\"}\n]}";
		struct file_rule *r = NULL;
		char first[600];
		CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) == -EINVAL);
		CHECK(strncmp(first, "3:3: this does not look like a rule file", 40) == 0);
	}
}

static void test_hooks_upload(void)
{
	struct file_rule *r = NULL;
	char first[600];
	const char *t =
	    "{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-fire\": [\"/bin/a\", \"x y\"], "
	    "\"on-dump\": \"/bin/b '1 2' 3\", \"timeout\": \"2m\"}, \"upload\": {\"prefix\": \"team/a\", "
	    "\"keep-local\": false}}";

	CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) == 1);
	if (r) {
		CHECK(r[0].on_fire.argc == 2 && strcmp(hook_cmd_arg(&r[0].on_fire, 1), "x y") == 0);
		CHECK(r[0].on_dump.argc == 3 && strcmp(hook_cmd_arg(&r[0].on_dump, 1), "1 2") == 0);
		CHECK(r[0].hook_timeout_ns == 120LL * 1000000000LL);
		CHECK(r[0].upload == 1 && strcmp(r[0].upload_prefix, "team/a") == 0 && r[0].upload_keep == 0);
	}
	free(r);
	t = "{\"name\": \"h\", \"when\": \"loh-size > 1MB\"}";
	CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) == 1);
	CHECK(r && r[0].upload == -1 && r[0].upload_keep == -1 && r[0].on_fire.argc == 0);
	free(r);
	t = "{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"upload\": false}";
	CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) == 1);
	CHECK(r && r[0].upload == 0);
	free(r);

	static const struct {
		const char *text, *first;
	} bad[] = {
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-fire\": \"notify me\"}}",
	     "1:62: \"on-fire\": hook program \"notify\" must be an absolute path (it runs without a shell or PATH)"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-dump\": [\"rel\"]}}",
	     "1:62: \"on-dump\": the program must be an absolute path (hooks run without a shell or PATH)"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-dump\": [\"/bin/x\", 3]}}",
	     "1:62: \"on-dump\": every word of the command must be a string"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-dump\": []}}",
	     "1:62: \"on-dump\" must be a command: an array such as [\"/usr/local/bin/notify\", \"--dump\"] or a "
	     "string"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"timeout\": \"0s\"}}",
	     "1:62: hook \"timeout\" must be from 1s to 24h"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"hooks\": {\"on-fyre\": \"/bin/x\"}}",
	     "1:51: unknown key \"on-fyre\" in hooks; did you mean \"on-fire\"?"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"upload\": {\"prefix\": \"../x\"}}",
	     "1:62: upload prefix \"../x\" may only hold letters, digits, '.', '_', '-' and '/', not start with '/' "
	     "nor "
	     "hold \"..\""},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"upload\": {\"bucket\": \"x\"}}",
	     "1:52: unknown key \"bucket\" in upload; the keys are prefix, keep-local"},
	    {"{\"name\": \"h\", \"when\": \"loh-size > 1MB\", \"upload\": \"yes\"}",
	     "1:51: \"upload\" must be true, false or an object such as {\"prefix\": \"orders/\", \"keep-local\": "
	     "false}"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = NULL;
		CHECK(parse(bad[i].text, strlen(bad[i].text), &r, first, sizeof(first), NULL) == -EINVAL);
		CHECK_STR(first, bad[i].first);
		free(r);
	}
}

/* {container} and {pod} are placeholders of dump names; near misses are not. */
static void test_template_ids(void)
{
	const char *t = "{\"rules\": [{\"name\": \"a\", \"when\": \"gc-pause > 1s\", "
	                "\"dump\": {\"name\": \"{name}-{container}-{pod}-{pid}.core\"}}]}";
	struct file_rule *r = NULL;
	char first[512];

	CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) == 1);
	if (r)
		CHECK_STR(r[0].name_template, "{name}-{container}-{pod}-{pid}.core");
	free(r);
	r = NULL;
	t = "{\"rules\": [{\"name\": \"a\", \"when\": \"gc-pause > 1s\", \"dump\": {\"name\": \"{containerid}\"}}]}";
	CHECK(parse(t, strlen(t), &r, first, sizeof(first), NULL) < 0);
	CHECK(strstr(first, "unknown placeholder \"{containerid}\"; use {name}, {pid}, {rule}, {time}, {container} or "
	                    "{pod}") != NULL);
	free(r);
}

int main(void)
{
	test_hooks_upload();
	test_good_single();
	test_template_ids();
	test_good_list();
	test_bad_files();
	test_bad_types_all();
	test_bad_texts();
	test_nul_and_length();
	test_bounds();
	test_diag_kinds_kept();
	test_format_diag();
	test_filter();
	test_examples();
	test_dump_dirs();
	test_not_rule_files();
	return check_done();
}
