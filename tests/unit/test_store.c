/* Unit tests of the dump store's disk guards: the admission decision (pure)
 * with each limit, deletion of the oldest to make room, and the scan, which
 * counts only ELF core files of ours and never dot-files or anything else;
 * and the check of what is published: hand-made cores, good and broken. */
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

static struct store_entry entries[3] = {
    {"a.core", 100 * MB, 1, 0, 0}, {"b.core", 200 * MB, 2, 0, 0}, {"c.core", 300 * MB, 3, 0, 0}};

static struct store_state state(uint64_t fs, uint64_t free_bytes)
{
	struct store_state s = {fs, free_bytes, entries, 3, 600 * MB, 0};
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

/* Context files: named after their dump; counted with it; on their own when
 * the dump was not taken (not a dump for the count, but deleted oldest first
 * like one); deleted with their dump; written with the dump's owner and
 * mode, never through a link. */
static void test_context(void)
{
	char j[NAME_MAX + 8], v[NAME_MAX + 8];
	store_context_names("app-1-r-20261123T101010.000Z.core", j, sizeof(j), v, sizeof(v));
	CHECK_STR(j, "app-1-r-20261123T101010.000Z.json");
	CHECK_STR(v, "app-1-r-20261123T101010.000Z.svg");
	store_context_names("app.dmp", j, sizeof(j), v, sizeof(v));
	CHECK_STR(j, "app.dmp.json");
	CHECK_STR(v, "app.dmp.svg");
	store_context_names("x.json", j, sizeof(j), v, sizeof(v));
	CHECK_STR(j, "x.json.json");
	CHECK_STR(v, "x.json.svg");

	char dir[] = "/tmp/dw-store.XXXXXX";
	struct store_state s;
	char err[512];
	CHECK(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	write_file(dfd, "a.core", 1, 8192, 1000);
	write_file(dfd, "b.core", 1, 8192, 3000);
	CHECK(store_put_context(dfd, "a.core", NULL, "{\"a\":1}", 7, "<svg/>", 6, err, sizeof(err)) == 0);
	CHECK(store_put_context(dfd, "skipped.core", NULL, "{}", 2, "<svg/>", 6, err, sizeof(err)) == 0);
	struct timespec ts[2] = {{2000, 0}, {2000, 0}};
	CHECK(utimensat(dfd, "skipped.json", ts, 0) == 0 && utimensat(dfd, "skipped.svg", ts, 0) == 0);
	CHECK(utimensat(dfd, "a.json", ts, 0) == 0);
	struct stat st;
	CHECK(fstatat(dfd, "a.json", &st, 0) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid());
	CHECK(fchmodat(dfd, "b.core", 0640, 0) == 0);
	CHECK(store_put_context(dfd, "b.core", NULL, "{}", 2, "<svg/>", 6, err, sizeof(err)) == 0);
	CHECK(fstatat(dfd, "b.svg", &st, 0) == 0 && (st.st_mode & 07777) == 0640);
	CHECK(faccessat(dfd, ".a.json.partial", F_OK, 0) < 0);
	/* A link in the place of a context file is replaced, not followed. */
	CHECK(symlinkat("/tmp/dw-store-not-there", dfd, "c.json") == 0);
	write_file(dfd, "c.core", 1, 4096, 4000);
	CHECK(store_put_context(dfd, "c.core", NULL, "{}", 2, "<svg/>", 6, err, sizeof(err)) == 0);
	CHECK(fstatat(dfd, "c.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode));
	CHECK(access("/tmp/dw-store-not-there", F_OK) < 0);
	/* A free-space minimum no file system here keeps. */
	struct store_limits l = {.min_free_pct = 100};
	CHECK(store_put_context(dfd, "d.core", &l, "{}", 2, "<svg/>", 6, err, sizeof(err)) == -ENOSPC);
	CHECK(strstr(err, "context files not written") != NULL);

	CHECK(store_scan(dfd, &s) == 0);
	CHECK_MSG(s.n == 4, "%zu entries", s.n);
	CHECK(s.n_context_only == 1);
	if (s.n == 4) {
		CHECK_STR(s.entries[0].name, "a.core");
		CHECK(!s.entries[0].context_only && s.entries[0].bytes >= 8192 + 2 * 512);
		CHECK(s.entries[1].context_only);
		CHECK(strncmp(s.entries[1].name, "skipped.", 8) == 0);
		CHECK_STR(s.entries[2].name, "b.core");
		uint64_t sum = 0;
		for (size_t i = 0; i < s.n; i++)
			sum += s.entries[i].bytes;
		CHECK(s.stored_bytes == sum);
		/* Room for one more dump of at most 3: the context-only entry
		 * does not count, so nothing need go. */
		struct store_limits lc = {.max_count = 4, .delete_oldest = 1};
		size_t nd = 99;
		CHECK(store_admit(&s, &lc, 1, &nd, err, sizeof(err)) == 0 && nd == 0);
		/* At most 2: a.core, then b.core; the skipped context is not a
		 * dump, so deleting it would not help. */
		lc.max_count = 2;
		CHECK(store_admit(&s, &lc, 1, &nd, err, sizeof(err)) == 0 && nd == 2);
		CHECK(s.entries[0].doomed && !s.entries[1].doomed && s.entries[2].doomed && !s.entries[3].doomed);
		/* Short of space: the oldest go whatever they are, until enough. */
		struct store_limits lb = {.max_bytes = s.stored_bytes - s.entries[0].bytes, .delete_oldest = 1};
		CHECK(store_admit(&s, &lb, s.entries[1].bytes, &nd, err, sizeof(err)) == 0 && nd == 2);
		CHECK(s.entries[0].doomed && s.entries[1].doomed && !s.entries[2].doomed);
		CHECK(store_delete(dfd, &s.entries[0]) == 0);
		CHECK(store_delete(dfd, &s.entries[1]) == 0);
	}
	store_state_free(&s);
	CHECK(faccessat(dfd, "a.core", F_OK, 0) < 0 && faccessat(dfd, "a.json", F_OK, 0) < 0 &&
	      faccessat(dfd, "a.svg", F_OK, 0) < 0);
	CHECK(faccessat(dfd, "skipped.json", F_OK, 0) < 0 && faccessat(dfd, "skipped.svg", F_OK, 0) < 0);
	CHECK(faccessat(dfd, "b.json", F_OK, 0) == 0);
	const char *names[] = {"b.core", "b.json", "b.svg", "c.core", "c.json", "c.svg"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(unlinkat(dfd, names[i], 0) == 0);
	close(dfd);
	CHECK(rmdir(dir) == 0);
}

static void test_estimate(void)
{
	/* Readable mappings count, touched or not; anonymous ones (inode 0)
	 * make a heap dump; PROT_NONE reservations (the GC's) count nowhere. */
	static const char maps[] = "55d0c0000000-55d0c0100000 r-xp 00000000 08:01 1234 /usr/bin/dotnet\n"
	                           "7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \n"
	                           "7f0010000000-7f4000000000 ---p 00000000 00:00 0 \n"
	                           "7ffd00000000-7ffd00100000 rw-p 00000000 00:00 0                          [stack]\n"
	                           "garbage line\n"
	                           "7f5000000000-7f5000001000 r--p 00000000 08:01 99 /lib/x.so";
	struct store_estimate e;
	const uint64_t readable = 0x100000ull + 0x10000000ull + 0x100000ull + 0x1000ull;
	const uint64_t anon = 0x10000000ull + 0x100000ull;

	store_estimate_from_maps(maps, sizeof(maps) - 1, DUMP_FULL, &e);
	CHECK(e.bytes == readable + readable / 10);
	CHECK(e.bound == readable + readable / 4 + 256ull * 1024 * 1024);
	store_estimate_from_maps(maps, sizeof(maps) - 1, DUMP_WITHHEAP, &e);
	CHECK(e.bytes == anon + anon / 10 + 32ull * 1024 * 1024);
	CHECK(e.bound == readable + readable / 4 + 256ull * 1024 * 1024);
	store_estimate_from_maps(maps, sizeof(maps) - 1, DUMP_TRIAGE, &e);
	CHECK(e.bytes == 64ull * 1024 * 1024);
	store_estimate_from_maps("", 0, DUMP_FULL, &e);
	CHECK(e.bytes == 0 && e.bound == 0);

	/* This process, and one that does not exist. */
	store_estimate(getpid(), DUMP_FULL, &e);
	CHECK(e.bytes > 0 && e.bound > e.bytes);
	store_estimate(-1, DUMP_FULL, &e);
	CHECK(e.bytes == 0 && e.bound == 0);
}

/* A core like createdump's: header, program headers (a note, then loads),
 * then the segments' bytes; phnum_field as written in the header. */
struct fake_core {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[3];
	unsigned char data[3 * 4096];
};

static struct fake_core fake_core(void)
{
	struct fake_core c;
	uint64_t off = sizeof(c.eh) + sizeof(c.ph);

	memset(&c, 0, sizeof(c));
	memcpy(c.eh.e_ident, ELFMAG, SELFMAG);
	c.eh.e_ident[EI_CLASS] = ELFCLASS64;
	c.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	c.eh.e_ident[EI_VERSION] = EV_CURRENT;
	c.eh.e_type = ET_CORE;
	c.eh.e_machine = EM_X86_64;
	c.eh.e_version = EV_CURRENT;
	c.eh.e_phoff = sizeof(c.eh);
	c.eh.e_ehsize = sizeof(c.eh);
	c.eh.e_phentsize = sizeof(Elf64_Phdr);
	c.eh.e_phnum = 3;
	for (int i = 0; i < 3; i++) {
		c.ph[i].p_type = i == 0 ? PT_NOTE : PT_LOAD;
		c.ph[i].p_offset = off + (uint64_t)i * 4096;
		c.ph[i].p_filesz = 4096;
	}
	return c;
}

/* Writes len bytes of p to a new temporary file, then extends it to size
 * (sparse) when size is larger. Returns its descriptor. */
static int temp_file(const void *p, size_t len, uint64_t size)
{
	char path[] = "/tmp/dw-core.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, p, len) != (ssize_t)len || (size > len && ftruncate(fd, (off_t)size) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int check_core(const struct fake_core *c, uint64_t size, uint64_t bound, char *why, size_t whylen)
{
	int fd = temp_file(c, sizeof(*c) < size ? sizeof(*c) : (size_t)size, size);
	int r;

	if (fd < 0)
		return 12345;
	r = store_check_core(fd, size, bound, why, whylen);
	close(fd);
	return r;
}

static void test_core_check(void)
{
	struct fake_core c = fake_core();
	char why[512];

	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == 0);
	CHECK(check_core(&c, sizeof(c), 64 * MB, why, sizeof(why)) == 0);
	CHECK(check_core(&c, sizeof(c), sizeof(c) - 1, why, sizeof(why)) == -EFBIG);
	/* A little padding after the last segment is taken, megabytes are not. */
	CHECK(check_core(&c, sizeof(c) + 4096, 0, why, sizeof(why)) == 0);
	CHECK(check_core(&c, sizeof(c) + 2 * 1024 * 1024, 0, why, sizeof(why)) == -EBADMSG);
	CHECK(strstr(why, "after its last segment") != NULL);

	/* Not a core, or not ELF at all. */
	c.eh.e_type = ET_EXEC;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	CHECK_STR(why, "it is an ELF file but not a 64-bit core (class 2, type 2)");
	c = fake_core();
	c.eh.e_ident[EI_CLASS] = ELFCLASS32;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	c = fake_core();
	CHECK(check_core(&c, 20, 0, why, sizeof(why)) == -EBADMSG);
	CHECK_STR(why, "it is not an ELF file (20 bytes)");
	memset(&c, 0, sizeof(c));
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	CHECK(strstr(why, "it is not an ELF file (") != NULL);

	/* Program headers outside the file, or absurd in number or size. */
	c = fake_core();
	c.eh.e_phoff = sizeof(c) - 10;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	CHECK(strstr(why, "program headers lie outside the file") != NULL);
	c = fake_core();
	c.eh.e_phoff = UINT64_MAX - 8;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	c = fake_core();
	c.eh.e_phnum = 0;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	c = fake_core();
	c.eh.e_phentsize = 32;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);

	/* A segment past the end, and one whose end overflows. */
	c = fake_core();
	c.ph[2].p_filesz = 8192;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	CHECK(strstr(why, "segment 2 (offset") != NULL);
	c = fake_core();
	c.ph[1].p_offset = 100;
	c.ph[1].p_filesz = UINT64_MAX - 50;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);

	/* No note: not a process's core. */
	c = fake_core();
	c.ph[0].p_type = PT_LOAD;
	CHECK(check_core(&c, sizeof(c), 0, why, sizeof(why)) == -EBADMSG);
	CHECK(strstr(why, "no note segment") != NULL);

	/* More than 65534 segments: the count from section header 0. Here the
	 * header claims PN_XNUM and a section header says 3. */
	{
		struct {
			struct fake_core c;
			Elf64_Shdr sh;
		} x;
		memset(&x, 0, sizeof(x));
		x.c = fake_core();
		x.c.eh.e_phnum = PN_XNUM;
		x.c.eh.e_shoff = sizeof(x.c);
		x.c.eh.e_shentsize = sizeof(Elf64_Shdr);
		x.c.eh.e_shnum = 0;
		x.sh.sh_info = 3;
		x.c.ph[2].p_filesz = 4096 + sizeof(Elf64_Shdr);
		int fd = temp_file(&x, sizeof(x), sizeof(x));
		CHECK(fd >= 0 && store_check_core(fd, sizeof(x), 0, why, sizeof(why)) == 0);
		x.sh.sh_info = 2000000;
		if (fd >= 0)
			close(fd);
		fd = temp_file(&x, sizeof(x), sizeof(x));
		CHECK(fd >= 0 && store_check_core(fd, sizeof(x), 0, why, sizeof(why)) == -EBADMSG);
		if (fd >= 0)
			close(fd);
	}

	/* A huge (sparse) file dressed as a core: its headers fit, but its size
	 * is far beyond the estimate of the process's memory. */
	c = fake_core();
	c.ph[2].p_filesz = 100 * GB;
	CHECK(check_core(&c, c.ph[2].p_offset + 100 * GB, 800 * MB, why, sizeof(why)) == -EFBIG);
	CHECK_STR(why, "it is 100.0GB, more than a dump of that process can be (at most 800.0MB)");
	/* Without a bound, only the structure is checked. */
	CHECK(check_core(&c, c.ph[2].p_offset + 100 * GB, 0, why, sizeof(why)) == 0);
}

static void test_check_free(void)
{
	struct store_limits l = {.min_free_pct = 5.0};
	char why[512];

	CHECK(store_check_free(100 * GB, 10 * GB, &l, 1 * GB, "x", why, sizeof(why)) == 0);
	CHECK(store_check_free(100 * GB, 10 * GB, &l, 6 * GB,
	                       "the file system of /tmp in the mount namespace of process 7", why,
	                       sizeof(why)) == -ENOSPC);
	CHECK_STR(why, "the dump (estimated 6.0GB) would leave 4.0GB free on the file system of /tmp in the mount "
	               "namespace of process 7 (4.0%), under the minimum 5% (--min-free)");
}

int main(void)
{
	test_core_check();
	test_check_free();
	test_admit();
	test_scan();
	test_context();
	test_estimate();
	return check_done();
}
