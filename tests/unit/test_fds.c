/* Unit tests of the descriptor helpers: the count follows opens and closes,
 * the soft limit is raised to the hard one, and the room rule; a file
 * written whole (its mode whatever the umask, no temporary left, an existing
 * one kept under noreplace, never written through a link). */
#include "dumpwatch/fds.h"

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void slurp(int dirfd, const char *name, char *out, size_t outlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, outlen - 1) : -1;
	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static void test_write_file(void)
{
	char dir[] = "/tmp/dw-fds-XXXXXX", buf[64];
	struct stat st;
	DIR *d;
	struct dirent *de;
	int n = 0;

	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	mode_t old = umask(077);
	CHECK(fds_write_file(dfd, "a.prom", "one\n", 4, 0644, 0) == 0);
	umask(old);
	slurp(dfd, "a.prom", buf, sizeof(buf));
	CHECK_STR(buf, "one\n");
	CHECK(fstatat(dfd, "a.prom", &st, 0) == 0 && (st.st_mode & 07777) == 0644);
	CHECK(fds_write_file(dfd, "a.prom", "two\n", 4, 0600, 0) == 0);
	slurp(dfd, "a.prom", buf, sizeof(buf));
	CHECK_STR(buf, "two\n");
	/* noreplace: the file there stays as it was. */
	CHECK(fds_write_file(dfd, "a.prom", "three\n", 6, 0644, 1) == -EEXIST);
	slurp(dfd, "a.prom", buf, sizeof(buf));
	CHECK_STR(buf, "two\n");
	/* A link planted under the temporary name is not written through. */
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".b.prom.tmp.%d", (int)getpid());
	CHECK(symlinkat("a.prom", dfd, tmp) == 0);
	CHECK(fds_write_file(dfd, "b.prom", "four\n", 5, 0644, 0) == 0);
	slurp(dfd, "a.prom", buf, sizeof(buf));
	CHECK_STR(buf, "two\n");
	slurp(dfd, "b.prom", buf, sizeof(buf));
	CHECK_STR(buf, "four\n");
	/* Nothing else is left: a.prom and b.prom. */
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
			n++;
	if (d)
		closedir(d);
	CHECK_MSG(n == 2, "%d entries", n);
	/* By path: the directory is opened for the call; a missing one is
	 * -ENOENT, a path beyond PATH_MAX -ENAMETOOLONG. */
	char path[PATH_MAX + 64], big[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/c.html", dir);
	CHECK(fds_write_path(path, "five", 4, 0644, 0) == 0);
	slurp(dfd, "c.html", buf, sizeof(buf));
	CHECK_STR(buf, "five");
	CHECK(fds_write_path(path, "six", 3, 0644, 1) == -EEXIST);
	snprintf(path, sizeof(path), "%s/missing/c.html", dir);
	CHECK(fds_write_path(path, "x", 1, 0644, 0) == -ENOENT);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(fds_write_path(big, "x", 1, 0644, 0) == -ENAMETOOLONG);
	unlinkat(dfd, "c.html", 0);
	unlinkat(dfd, "a.prom", 0);
	unlinkat(dfd, "b.prom", 0);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	test_write_file();
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
