/* The dump store's disk guards; see store.h. */
#include "dumpwatch/store.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dumpwatch/units.h"

/* Scanning stops here: a store is meant to hold tens of dumps. */
#define STORE_SCAN_MAX 4096

int store_is_dump(int fd, uid_t uid)
{
	struct stat st;
	Elf64_Ehdr eh;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return 0;
	return memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_type == ET_CORE;
}

static int cmp_age(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

int store_scan(int dirfd, struct store_state *out)
{
	struct statvfs vfs;
	DIR *d;
	struct dirent *de;
	int dfd;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	if (fstatvfs(dirfd, &vfs) < 0)
		return -errno;
	out->fs_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	out->free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	/* readdir consumes the descriptor: list through a copy. */
	dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	while ((de = readdir(d)) != NULL && out->n < STORE_SCAN_MAX) {
		struct stat st;
		int fd;

		if (de->d_name[0] == '.' || strlen(de->d_name) > NAME_MAX)
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue;
		if (!store_is_dump(fd, geteuid()) || fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		close(fd);
		if (out->n == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct store_entry *ne = realloc(out->entries, c * sizeof(*ne));
			if (!ne) {
				closedir(d);
				store_state_free(out);
				return -ENOMEM;
			}
			out->entries = ne;
			cap = c;
		}
		struct store_entry *e = &out->entries[out->n++];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->bytes = (uint64_t)st.st_blocks * 512;
		e->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		out->stored_bytes += e->bytes;
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->entries, out->n, sizeof(*out->entries), cmp_age);
	return 0;
}

void store_state_free(struct store_state *s)
{
	if (!s)
		return;
	free(s->entries);
	s->entries = NULL;
	s->n = 0;
}

/* What is wrong with writing estimate bytes given free, stored and count, or
 * NULL when nothing is. */
static const char *violation(const struct store_state *s, const struct store_limits *l, uint64_t estimate,
                             uint64_t free_bytes, uint64_t stored, size_t count, char *why, size_t whylen)
{
	char a[32], b[32], c[32];
	uint64_t after = free_bytes > estimate ? free_bytes - estimate : 0;

	if (l->min_free_bytes && after < l->min_free_bytes) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would leave %s free on the dump file system, under the minimum "
		         "%s (--min-free)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)),
		         units_format((double)after, UNIT_BYTES, b, sizeof(b)),
		         units_format((double)l->min_free_bytes, UNIT_BYTES, c, sizeof(c)));
		return why;
	}
	if (l->min_free_pct > 0 && s->fs_bytes > 0 && (double)after * 100.0 / (double)s->fs_bytes < l->min_free_pct) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would leave %s free on the dump file system (%.1f%%), under the "
		         "minimum %g%% (--min-free)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)),
		         units_format((double)after, UNIT_BYTES, b, sizeof(b)),
		         (double)after * 100.0 / (double)s->fs_bytes, l->min_free_pct);
		return why;
	}
	if (l->max_bytes && stored + estimate > l->max_bytes) {
		snprintf(why, whylen,
		         "the dump (estimated %s) would bring the stored dumps (%zu, %s) over the maximum %s "
		         "(--store-max-size)",
		         units_format((double)estimate, UNIT_BYTES, a, sizeof(a)), count,
		         units_format((double)stored, UNIT_BYTES, b, sizeof(b)),
		         units_format((double)l->max_bytes, UNIT_BYTES, c, sizeof(c)));
		return why;
	}
	if (l->max_count && count + 1 > l->max_count) {
		snprintf(why, whylen, "the store already holds %zu dump(s), the maximum (--store-max-count %u)", count,
		         l->max_count);
		return why;
	}
	return NULL;
}

int store_admit(const struct store_state *s, const struct store_limits *l, uint64_t estimate, size_t *ret_n_delete,
                char *why, size_t whylen)
{
	uint64_t free_bytes = s->free_bytes, stored = s->stored_bytes;
	size_t k = 0;
	char first[512];

	*ret_n_delete = 0;
	if (!violation(s, l, estimate, free_bytes, stored, s->n, first, sizeof(first)))
		return 0;
	if (l->delete_oldest) {
		/* Deleting a dump gives back what it takes on disk. */
		while (k < s->n) {
			free_bytes += s->entries[k].bytes;
			stored -= s->entries[k].bytes;
			k++;
			if (!violation(s, l, estimate, free_bytes, stored, s->n - k, why, whylen)) {
				*ret_n_delete = k;
				return 0;
			}
		}
		snprintf(why, whylen, "%s; deleting all %zu stored dump(s) would not be enough", first, s->n);
		return -ENOSPC;
	}
	snprintf(why, whylen, "%s", first);
	return -ENOSPC;
}

/* A field of /proc/pid/smaps_rollup in bytes, or 0. */
static uint64_t rollup_field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	unsigned long long kb;

	if (!p || sscanf(p + strlen(key), " %llu kB", &kb) != 1)
		return 0;
	return (uint64_t)kb * 1024;
}

uint64_t store_estimate(pid_t pid, enum dump_type type)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* Measured with MemSpike holding 300 MB of LOH on .NET 10.0.12: Rss
	 * 408 MB, Anonymous 358 MB; createdump wrote 408 MB (--full), 365 MB
	 * (--withheap), 6.3 MB (--normal and --triage). A heap dump is the
	 * anonymous memory plus the runtime's images; a full one everything
	 * resident. The small kinds grow with threads and modules, not heap. */
	uint64_t rss = rollup_field(buf, "\nRss:"), anon = rollup_field(buf, "\nAnonymous:");
	switch (type) {
	case DUMP_FULL:
		return rss + rss / 10;
	case DUMP_WITHHEAP:
		return anon + anon / 10 + 32u * 1024 * 1024;
	default:
		return 64u * 1024 * 1024;
	}
}
