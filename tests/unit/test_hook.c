/* Unit tests for hook.c: the user hooks run as, root refused. (Running them
 * is tested for real in tests/integration/test_hooks.sh.) */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/hook.h"

static void test_user(void)
{
	struct hook_user u;
	char err[256];

	if (geteuid() == 0) {
		CHECK(hook_user_resolve("root", &u, err, sizeof(err)) == -EPERM);
		CHECK(hook_user_resolve("0", &u, err, sizeof(err)) == -EPERM);
		CHECK(hook_user_resolve("nobody", &u, err, sizeof(err)) == 0 && u.uid == 65534);
		CHECK(hook_user_resolve(NULL, &u, err, sizeof(err)) == 0 && strcmp(u.name, "nobody") == 0);
	} else {
		CHECK(hook_user_resolve(NULL, &u, err, sizeof(err)) == 0 && u.uid == geteuid());
	}
	CHECK(hook_user_resolve("no-such-user-here", &u, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "does not exist") != NULL);
}

int main(void)
{
	test_user();
	return check_done();
}
