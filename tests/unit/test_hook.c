/* Unit tests for hook.c: the user hooks run as (a transient uid by default;
 * root and nobody refused). Running them is tested for real in
 * tests/integration/test_hooks.sh and test_attack_hooks.sh. */
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
		/* nobody is every daemon's: refused, saying why and what to do. */
		CHECK(hook_user_resolve("nobody", &u, err, sizeof(err)) == -EPERM);
		CHECK(strstr(err, "take the dump") != NULL && strstr(err, "leave --hook-user out") != NULL);
		CHECK(hook_user_resolve("65534", &u, err, sizeof(err)) == -EPERM);
		/* By default, a uid of its own per run. */
		CHECK(hook_user_resolve(NULL, &u, err, sizeof(err)) == 0 && u.transient &&
		      strcmp(u.name, "transient") == 0);
		CHECK(hook_user_warning(&u, err, sizeof(err)) == 0);
		/* A named user whose uid a process runs as: warned about. */
		CHECK(hook_user_resolve("daemon", &u, err, sizeof(err)) == 0 && !u.transient && u.uid == 1);
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
