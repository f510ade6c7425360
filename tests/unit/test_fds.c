/* Unit tests of the descriptor helpers: the count follows opens and closes,
 * the soft limit is raised to the hard one, and the room rule. */
#include "dumpwatch/fds.h"

#include "check.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

int main(void)
{
	int before = fds_count_open(), fd[10];

	CHECK(before >= 3);
	for (int i = 0; i < 10; i++)
		fd[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fds_count_open() == before + 10);
	for (int i = 0; i < 10; i++)
		close(fd[i]);
	CHECK(fds_count_open() == before);

	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_max > 64) {
		struct rlimit low = {64, rl.rlim_max};
		struct fds_limit l;

		CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
		CHECK(fds_raise_limit(&l) == 0);
		CHECK(l.soft_before == 64);
		CHECK(l.soft == (uint64_t)rl.rlim_max && l.hard == (uint64_t)rl.rlim_max);
		CHECK(getrlimit(RLIMIT_NOFILE, &low) == 0 && low.rlim_cur == rl.rlim_max);
		/* Already there: nothing to do. */
		CHECK(fds_raise_limit(&l) == 0 && l.soft_before == l.soft);
	}

	CHECK(fds_room(100, 2, 32, 134));
	CHECK(!fds_room(100, 2, 32, 133));
	CHECK(fds_room(0, 0, 0, 0));
	return check_done();
}
