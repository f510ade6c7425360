/* Rule files on disk: reading one (bounded, after the trust checks when it
 * may give orders) and listing the rule files of a directory, for the
 * ruleset (the daemon) and `dumpwatch check`. The parser itself (rulefile.c)
 * does no I/O. */
#include "dumpwatch/rulefile_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/rulefile.h"
#include "dumpwatch/trust.h"

int rulefile_read_fd(int fd, const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	struct stat st;
	size_t cap = RULEFILE_SIZE_MAX + 1, n = 0;
	char *buf;
	int e;

	*ret_text = NULL;
	*ret_len = 0;
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	buf = malloc(cap + 1);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*ret_text = buf;
	*ret_len = n;
	return 0;
}

int rulefile_read(const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	int fd, r;

	*ret_text = NULL;
	*ret_len = 0;
	/* O_NONBLOCK so that a FIFO cannot hang the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
		return -e;
	}
	r = rulefile_read_fd(fd, path, ret_text, ret_len, err, errlen);
	close(fd);
	return r;
}

int rulefile_read_trusted(const char *path, uid_t self, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	char abs[PATH_MAX], cwd[PATH_MAX], why[2 * PATH_MAX + 256];
	int fd, r;

	*ret_text = NULL;
	*ret_len = 0;
	if (path[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", path);
	} else if (!getcwd(cwd, sizeof(cwd)) || (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= sizeof(abs)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = trust_open(abs, self, why, sizeof(why));
	if (fd < 0) {
		if (fd == -EPERM)
			snprintf(err, errlen, "%s: refused: %s", path, why);
		else
			snprintf(err, errlen, "%s: %s", path, why);
		return fd;
	}
	r = rulefile_read_fd(fd, path, ret_text, ret_len, err, errlen);
	close(fd);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rulefile_is_rule_file_name(const char *n)
{
	size_t l = strlen(n);

	if (n[0] == '.' || l < 6 || strcmp(n + l - 5, ".json") != 0)
		return 0;
	return !(l >= 12 && strcmp(n + l - 12, ".schema.json") == 0);
}

void rulefile_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int rulefile_list_dir(const char *dir, char ***ret, size_t *ret_n, int *ret_truncated)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	*ret = NULL;
	*ret_n = 0;
	*ret_truncated = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!rulefile_is_rule_file_name(de->d_name))
			continue;
		if (n == RULEFILE_DIR_MAX) {
			*ret_truncated = 1;
			break;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 16;
			char **p = realloc(names, c * sizeof(*p));
			if (!p) {
				rulefile_free_names(names, n);
				closedir(d);
				return -ENOMEM;
			}
			names = p;
			cap = c;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rulefile_free_names(names, n);
			closedir(d);
			return -ENOMEM;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*ret = names;
	*ret_n = n;
	return 0;
}
