/* The processes in /proc: see procfs.h. */
#include "dumpwatch/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int procfs_each_pid(int (*fn)(pid_t pid, void *ctx), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end || pid <= 0)
			continue;
		if (fn((pid_t)pid, ctx))
			break;
	}
	closedir(d);
	return 0;
}

ssize_t procfs_read(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}
