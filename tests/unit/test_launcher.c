/* Unit tests for launcher.c: which user the launcher runs as. As root only
 * the user who ran sudo, named by well-formed SUDO_UID/SUDO_GID, and never
 * root; as anyone else, that user. */
#include "dumpwatch/launcher.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int user_of(const char *su, const char *sg, uid_t *uid, gid_t *gid)
{
	char why[256] = "";

	if (su)
		setenv("SUDO_UID", su, 1);
	else
		unsetenv("SUDO_UID");
	if (sg)
		setenv("SUDO_GID", sg, 1);
	else
		unsetenv("SUDO_GID");
	int r = launcher_user(uid, gid, why, sizeof(why));
	CHECK_MSG(r == 0 || why[0], "a refusal says why");
	return r;
}

int main(void)
{
	uid_t uid = 12345;
	gid_t gid = 12345;

	if (getuid() != 0) {
		/* Not root: its own user, whatever SUDO_UID says. */
		CHECK(user_of("0", "0", &uid, &gid) == 0 && uid == getuid() && gid == getgid());
		return check_done();
	}
	CHECK(user_of(NULL, NULL, &uid, &gid) == -1);    /* root, not through sudo */
	CHECK(user_of("0", "0", &uid, &gid) == -1);      /* sudo run by root */
	CHECK(user_of("1000", NULL, &uid, &gid) == -1);  /* no group */
	CHECK(user_of("abc", "1000", &uid, &gid) == -1); /* not a number */
	CHECK(user_of("1000x", "1000", &uid, &gid) == -1);
	CHECK(user_of("-1", "1000", &uid, &gid) == -1);
	CHECK(user_of("", "1000", &uid, &gid) == -1);
	CHECK(user_of("99999999999", "1000", &uid, &gid) == -1);
	CHECK(user_of("1000", "1000 ", &uid, &gid) == -1);
	CHECK(uid == 12345 && gid == 12345); /* untouched by a refusal */
	CHECK(user_of("1000", "1001", &uid, &gid) == 0 && uid == 1000 && gid == 1001);
	CHECK(launcher_start("off", 0) == NULL);
	CHECK(launcher_start(NULL, 0) == NULL);
	launcher_stop(NULL);
	launcher_count(NULL, 1);
	launcher_progress(NULL, 0.5);
	launcher_urgent(NULL, 1);
	return check_done();
}
