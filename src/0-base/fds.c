/* Open file descriptors; see fds.h. */
#include "dumpwatch/fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

void fds_close_from(unsigned lowfd)
{
	if (syscall(SYS_close_range, lowfd, ~0U, 0U) == 0)
		return;
	for (int fd = (int)lowfd; fd < 65536; fd++)
		close(fd);
}

int fds_write_file(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int noreplace)
{
	char tmp[NAME_MAX + 1];
	const char *p = data;
	int fd, r = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* Left by a write of ours that died half-way: the same pid. */
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0)
		r = -errno;
	while (r == 0 && len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat2(dirfd, tmp, dirfd, name, noreplace ? RENAME_NOREPLACE : 0) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	fsync(dirfd);
	return 0;
}

int fds_write_path(const char *path, const void *data, size_t len, mode_t mode, int noreplace)
{
	char dir[PATH_MAX], base[PATH_MAX];
	int dirfd, r;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(base, dir, sizeof(base));
	dirfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	r = fds_write_file(dirfd, basename(base), data, len, mode, noreplace);
	close(dirfd);
	return r;
}

int64_t fds_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int fds_wait(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int t = -1, r;

		if (deadline_ms >= 0) {
			int64_t left = deadline_ms - fds_now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			t = left > INT_MAX ? INT_MAX : (int)left;
		}
		r = poll(&p, 1, t);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			continue; /* the next round sees the deadline */
		if (p.revents & POLLNVAL)
			return -EBADF;
		return 0;
	}
}
