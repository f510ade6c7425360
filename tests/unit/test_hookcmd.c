/* Unit tests for hookcmd.c: splitting a command as a shell would without
 * expanding anything, its bounds and refusals, and formatting it back. */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dumpwatch/hookcmd.h"

static void test_parse(void)
{
	struct hook_cmd c;
	char err[256], shown[512];

	CHECK(hook_cmd_parse("/usr/bin/notify  --to ops\t'two words' \"a \\\"q\\\" b\" x\\ y $(id) ''", &c, err,
	                     sizeof(err)) == 0);
	CHECK(c.argc == 8);
	CHECK_STR(hook_cmd_arg(&c, 0), "/usr/bin/notify");
	CHECK_STR(hook_cmd_arg(&c, 1), "--to");
	CHECK_STR(hook_cmd_arg(&c, 2), "ops");
	CHECK_STR(hook_cmd_arg(&c, 3), "two words");
	CHECK_STR(hook_cmd_arg(&c, 4), "a \"q\" b");
	CHECK_STR(hook_cmd_arg(&c, 5), "x y");
	CHECK_STR(hook_cmd_arg(&c, 6), "$(id)");
	CHECK_STR(hook_cmd_arg(&c, 7), "");
	CHECK(hook_cmd_arg(&c, 8) == NULL);
	hook_cmd_format(&c, shown, sizeof(shown));
	CHECK_STR(shown, "/usr/bin/notify --to ops 'two words' 'a \"q\" b' 'x y' $(id) ''");

	CHECK(hook_cmd_parse("notify --to ops", &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "hook program \"notify\" must be an absolute path (it runs without a shell or PATH)");
	CHECK(hook_cmd_parse("   ", &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "hook command is empty");
	CHECK(hook_cmd_parse("/bin/x 'open", &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "hook command: a ' quote is not closed");
	CHECK(hook_cmd_parse("/bin/x \"open", &c, err, sizeof(err)) == -EINVAL);
}

static void test_bounds(void)
{
	struct hook_cmd c;
	char err[256], text[4096];
	size_t n = 0;

	/* HOOK_ARGS_MAX words fit, one more does not. */
	n = (size_t)snprintf(text, sizeof(text), "/bin/x");
	for (int i = 1; i < HOOK_ARGS_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " a");
	CHECK(hook_cmd_parse(text, &c, err, sizeof(err)) == 0 && c.argc == HOOK_ARGS_MAX);
	snprintf(text + n, sizeof(text) - n, " b");
	CHECK(hook_cmd_parse(text, &c, err, sizeof(err)) == -E2BIG);
	/* A word longer than the whole buffer. */
	memset(text, 'a', sizeof(text) - 1);
	text[0] = '/';
	text[sizeof(text) - 1] = '\0';
	CHECK(hook_cmd_parse(text, &c, err, sizeof(err)) == -E2BIG);
	memset(&c, 0, sizeof(c));
	CHECK(hook_cmd_add(&c, "/bin/x") == 0);
	CHECK(hook_cmd_add(&c, text) == -E2BIG);
	CHECK(c.argc == 1);
}

int main(void)
{
	test_parse();
	test_bounds();
	return check_done();
}
