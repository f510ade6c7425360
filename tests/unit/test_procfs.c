/* Unit tests for procfs.c: /proc lists this process, a file of it is read
 * NUL-terminated within the buffer, a missing process or file is -errno, and
 * the listing stops when asked. */
#include "check.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/procfs.h"

static int find_self(pid_t pid, void *ctx)
{
	int *found = ctx;
	if (pid == getpid())
		*found = 1;
	return 0;
}

static int stop_at_once(pid_t pid, void *ctx)
{
	(void)pid;
	(*(int *)ctx)++;
	return 1;
}

int main(void)
{
	char buf[4096], small[8];
	int found = 0, calls = 0;

	CHECK(procfs_each_pid(find_self, &found) == 0 && found);
	CHECK(procfs_each_pid(stop_at_once, &calls) == 0 && calls == 1);
	CHECK(procfs_read(getpid(), "status", buf, sizeof(buf)) > 0 && strstr(buf, "\nUid:") != NULL);
	CHECK(procfs_read(getpid(), "status", small, sizeof(small)) == 7 && strlen(small) == 7);
	CHECK(procfs_read(getpid(), "no-such-file", buf, sizeof(buf)) == -ENOENT);
	CHECK(procfs_read(getpid(), "status", buf, 0) == -EINVAL);
	return check_done();
}
