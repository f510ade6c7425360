/* Unit tests of the dump store's disk guards: the admission decision (pure)
 * with each limit, deletion of the oldest to make room, and the scan, which
 * counts only ELF core files of ours and never dot-files or anything else. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/store.h"

#define MB (1000ull * 1000)
#define GB (1000ull * MB)

static struct store_entry entries[3] = {{"a.core", 100 * MB, 1}, {"b.core", 200 * MB, 2}, {"c.core", 300 * MB, 3}};

static struct store_state state(uint64_t fs, uint64_t free_bytes)
{
	struct store_state s = {fs, free_bytes, entries, 3, 600 * MB};
	return s;
}

static void test_admit(void)
{
	struct store_state s = state(10 * GB, 2 * GB);
	struct store_limits l = {0};
	size_t n = 99;
	char why[768];

	/* No limits: admitted. */
	CHECK(store_admit(&s, &l, 5 * GB, &n, why, sizeof(why)) == 0 && n == 0);

	/* Minimum free bytes. */
	l.min_free_bytes = 1 * GB;
	CHECK(store_admit(&s, &l, 900 * MB, &n, why, sizeof(why)) == 0 && n == 0);
	CHECK(store_admit(&s, &l, 1200 * MB, &n, why, sizeof(why)) == -ENOSPC);
	CHECK_STR(why, "the dump (estimated 1.2GB) would leave 800.0MB free on the dump file system, under the "
	               "minimum 1.0GB (--min-free)");
	/* The oldest dumps give back 100 + 200 MB: two must go. */
	l.delete_oldest = 1;
	CHECK(store_admit(&s, &l, 1200 * MB, &n, why, sizeof(why)) == 0 && n == 2);
	/* Not enough even with all of them gone. */
	CHECK(store_admit(&s, &l, 2 * GB, &n, why, sizeof(why)) == -ENOSPC && n == 0);
	CHECK(strstr(why, "deleting all 3 stored dump(s) would not be enough") != NULL);
	l = (struct store_limits){0};

	/* Minimum free percentage: 10% of 10 GB. */
	l.min_free_pct = 10;
	CHECK(store_admit(&s, &l, 1 * GB, &n, why, sizeof(why)) == 0);
	CHECK(store_admit(&s, &l, 1100 * MB, &n, why, sizeof(why)) == -ENOSPC);
	CHECK(strstr(why, "(9.0%), under the minimum 10% (--min-free)") != NULL);
	/* A dump bigger than the free space leaves nothing, never wraps. */
	CHECK(store_admit(&s, &l, 50 * GB, &n, why, sizeof(why)) == -ENOSPC);
	CHECK(strstr(why, "would leave 0B free") != NULL);
	l = (struct store_limits){0};

	/* Maximum total size of the store. */
	l.max_bytes = 1 * GB;
	CHECK(store_admit(&s, &l, 400 * MB, &n, why, sizeof(why)) == 0);
	CHECK(store_admit(&s, &l, 401 * MB, &n, why, sizeof(why)) == -ENOSPC);
	CHECK_STR(why, "the dump (estimated 401.0MB) would bring the stored dumps (3, 600.0MB) over the maximum "
	               "1.0GB (--store-max-size)");
	l.delete_oldest = 1;
	CHECK(store_admit(&s, &l, 401 * MB, &n, why, sizeof(why)) == 0 && n == 1);
	CHECK(store_admit(&s, &l, 1100 * MB, &n, why, sizeof(why)) == -ENOSPC);
	l = (struct store_limits){0};

	/* Maximum count. */
	l.max_count = 4;
	CHECK(store_admit(&s, &l, 1, &n, why, sizeof(why)) == 0);
	l.max_count = 3;
	CHECK(store_admit(&s, &l, 1, &n, why, sizeof(why)) == -ENOSPC);
	CHECK_STR(why, "the store already holds 3 dump(s), the maximum (--store-max-count 3)");
	l.delete_oldest = 1;
	CHECK(store_admit(&s, &l, 1, &n, why, sizeof(why)) == 0 && n == 1);
	l.max_count = 1;
	CHECK(store_admit(&s, &l, 1, &n, why, sizeof(why)) == 0 && n == 3);
}

static void write_file(int dfd, const char *name, int core, size_t size, time_t mtime)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char *buf = calloc(1, size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

	CHECK(fd >= 0 && buf && size >= sizeof(*eh));
	if (core) {
		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_type = ET_CORE;
	}
	CHECK(write(fd, buf, size) == (ssize_t)size);
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	CHECK(futimens(fd, ts) == 0);
	close(fd);
	free(buf);
}

static void test_scan(void)
{
	char dir[] = "/tmp/dw-store.XXXXXX";
	struct store_state s;
	int dfd;

	CHECK(mkdtemp(dir) != NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	write_file(dfd, "new.core", 1, 8192, 3000);
	write_file(dfd, "old.dmp", 1, 4096, 1000);
	write_file(dfd, ".old.core.partial", 1, 4096, 10);      /* in progress: not stored */
	write_file(dfd, "notes.txt", 0, 4096, 5);               /* not a core */
	CHECK(symlinkat("/etc/passwd", dfd, "link.core") == 0); /* never followed */
	CHECK(mkdirat(dfd, "sub.core", 0700) == 0);

	CHECK(store_scan(dfd, &s) == 0);
	CHECK(s.n == 2);
	if (s.n == 2) {
		CHECK_STR(s.entries[0].name, "old.dmp");
		CHECK_STR(s.entries[1].name, "new.core");
		CHECK(s.entries[0].bytes >= 4096 && s.entries[1].bytes >= 8192);
		CHECK(s.stored_bytes == s.entries[0].bytes + s.entries[1].bytes);
	}
	CHECK(s.fs_bytes > 0 && s.free_bytes <= s.fs_bytes);
	store_state_free(&s);
	store_state_free(NULL);

	const char *names[] = {"new.core", "old.dmp", ".old.core.partial", "notes.txt", "link.core"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dfd, names[i], 0);
	unlinkat(dfd, "sub.core", AT_REMOVEDIR);
	close(dfd);
	CHECK(rmdir(dir) == 0);
}

static void test_estimate(void)
{
	/* This process: some resident memory; the small kinds a fixed figure. */
	uint64_t full = store_estimate(getpid(), DUMP_FULL), heap = store_estimate(getpid(), DUMP_WITHHEAP);
	CHECK(full > 0 && heap > 0);
	CHECK(store_estimate(getpid(), DUMP_TRIAGE) == 64u * 1024 * 1024);
	CHECK(store_estimate(-1, DUMP_FULL) == 0);
}

int main(void)
{
	test_admit();
	test_scan();
	test_estimate();
	return check_done();
}
