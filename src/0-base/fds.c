/* Open file descriptors; see fds.h. */
#include "dumpwatch/fds.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <sys/resource.h>

int fds_raise_limit(struct fds_limit *out)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	out->soft_before = out->soft = (uint64_t)rl.rlim_cur;
	out->hard = (uint64_t)rl.rlim_max;
	if (rl.rlim_cur == rl.rlim_max)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	out->soft = (uint64_t)rl.rlim_cur;
	return 0;
}

int fds_count_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}
