/* Unit tests of the /proc poller: the status parser on a file recorded from
 * a real .NET process and on hand-made malformed ones; the live reader on
 * this process (memory it writes, threads, descriptors), on a child that
 * exits, on a pid whose start time does not match, and on a child that
 * names itself to forge a status line. */
#include "dumpwatch/procstat.h"

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpwatch/discovery.h"

static size_t read_all(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 ? (size_t)n : 0;
}

static void test_recorded(void)
{
	char buf[8192], path[512];
	struct proc_sample s = {0};

	snprintf(path, sizeof(path), "%s/tests/data/proc/status-memspike-net10.txt", DW_SOURCE_DIR);
	size_t n = read_all(path, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK(procstat_parse_status(buf, n, &s) ==
	      (PROC_HAVE_RSS | PROC_HAVE_ANON | PROC_HAVE_SWAP | PROC_HAVE_THREADS));
	CHECK(s.rss == 26324ull * 1024);
	CHECK(s.anon == 2200ull * 1024);
	CHECK(s.swap == 0);
	CHECK(s.threads == 8);
	/* Cut inside the file: what lies whole before the cut is read. */
	const char *cut = strstr(buf, "RssFile:");
	CHECK(cut != NULL);
	memset(&s, 0, sizeof(s));
	CHECK(procstat_parse_status(buf, (size_t)(cut - buf), &s) == (PROC_HAVE_RSS | PROC_HAVE_ANON));
	/* Cut inside a number: "VmRSS:\t   263" is a shorter number with no
	 * unit, refused. */
	cut = strstr(buf, "VmRSS:");
	memset(&s, 0, sizeof(s));
	CHECK(procstat_parse_status(buf, (size_t)(cut - buf) + 13, &s) == 0);
}

static void test_malformed(void)
{
	struct proc_sample s;
	static const struct {
		const char *text;
		unsigned have;
		uint64_t rss;
	} cases[] = {
	    {"", 0, 0},
	    {"VmRSS:", 0, 0},
	    {"VmRSS:\t kB\n", 0, 0},
	    {"VmRSS:\t12\n", 0, 0},                                       /* no unit */
	    {"VmRSS:\t12 MB\n", 0, 0},                                    /* not kB */
	    {"VmRSS:\t-12 kB\n", 0, 0},                                   /* negative */
	    {" VmRSS:\t12 kB\n", 0, 0},                                   /* not at a line's start */
	    {"Name:\tVmRSS:\t12 kB\n", 0, 0},                             /* inside another line */
	    {"VmRSS:\t99999999999999999999 kB\n", 0, 0},                  /* overflows */
	    {"VmRSS:\t18014398509481984 kB\n", 0, 0},                     /* overflows in bytes */
	    {"VmRSS:\t12 kB\nVmRSS:\t13 kB\n", PROC_HAVE_RSS, 12 * 1024}, /* the first wins */
	    {"VmRSS:\t12 kB", PROC_HAVE_RSS, 12 * 1024},                  /* no newline at the end */
	    {"VmRSS:\t12kB\n", PROC_HAVE_RSS, 12 * 1024},
	    {"\n\n\nVmRSS:    0 kB\n", PROC_HAVE_RSS, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&s, 0, sizeof(s));
		unsigned have = procstat_parse_status(cases[i].text, strlen(cases[i].text), &s);
		CHECK_MSG(have == cases[i].have, "case %zu: have %#x", i, have);
		CHECK_MSG(s.rss == cases[i].rss, "case %zu: rss %llu", i, (unsigned long long)s.rss);
	}
	/* A NUL inside is just a byte that is not a key. */
	const char nul[] = "Name:\tx\0y\nThreads:\t3\n";
	memset(&s, 0, sizeof(s));
	CHECK(procstat_parse_status(nul, sizeof(nul) - 1, &s) == PROC_HAVE_THREADS && s.threads == 3);
}

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static void test_self(void)
{
	unsigned long long st;
	struct procstat *ps = NULL;
	struct proc_sample a, b;
	char err[256];

	CHECK(discovery_starttime(getpid(), &st) == 0);
	CHECK_MSG(procstat_open(getpid(), st, 1, &ps, err, sizeof(err)) == 0, "%s", err);
	if (!ps)
		return;
	CHECK(procstat_fds(ps) == 2);
	CHECK(procstat_read(ps, &a, err, sizeof(err)) == 0);
	CHECK(a.have == (PROC_HAVE_RSS | PROC_HAVE_ANON | PROC_HAVE_SWAP | PROC_HAVE_THREADS | PROC_HAVE_FDS));

	/* 64 MB written: private memory and rss grow by about that much. */
	size_t len = 64u << 20;
	char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	for (size_t i = 0; i < len; i += 4096)
		mem[i] = 1;
	int fds[5];
	for (int i = 0; i < 5; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, sleeper, NULL);
	CHECK(procstat_read(ps, &b, err, sizeof(err)) == 0);
	/* Bounds, not equalities: under valgrind (scripts/memcheck.sh) its own
	 * memory for this process's (about 13 MB for these 64) counts too. */
	CHECK_MSG(b.anon >= a.anon + len - (1u << 20) && b.anon <= a.anon + len + (32u << 20), "anon %llu -> %llu",
	          (unsigned long long)a.anon, (unsigned long long)b.anon);
	CHECK(b.rss >= a.rss + len - (1u << 20));
	CHECK_MSG(b.fds == a.fds + 5, "fds %llu -> %llu", (unsigned long long)a.fds, (unsigned long long)b.fds);
	CHECK_MSG(b.threads == a.threads + 3, "threads %llu -> %llu", (unsigned long long)a.threads,
	          (unsigned long long)b.threads);
	struct proc_sample c = b; /* before the unmap */
	munmap(mem, len);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	for (int i = 0; i < 3; i++) {
		pthread_cancel(th[i]);
		pthread_join(th[i], NULL);
	}
	/* A joined thread leaves the thread group a moment after the join
	 * returns (the kernel clears its tid before it is released): wait
	 * for the count, up to a second. */
	for (int i = 0; i < 100; i++) {
		CHECK(procstat_read(ps, &b, err, sizeof(err)) == 0);
		if (b.threads == a.threads)
			break;
		usleep(10000);
	}
	CHECK_MSG(b.fds == a.fds && b.threads == a.threads, "fds %llu threads %llu", (unsigned long long)b.fds,
	          (unsigned long long)b.threads);
	CHECK_MSG(b.anon + len - (16u << 20) <= c.anon, "anon %llu after the unmap, %llu before",
	          (unsigned long long)b.anon, (unsigned long long)c.anon);
	procstat_close(ps);
	procstat_close(NULL);

	/* Another process's start time: refused, nothing left open. */
	ps = NULL;
	CHECK(procstat_open(getpid(), st + 1, 0, &ps, err, sizeof(err)) == -ESRCH && ps == NULL);
	CHECK(procstat_open(0x3fffffff, 1, 0, &ps, err, sizeof(err)) == -ESRCH && ps == NULL);
}

static void test_exit(void)
{
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(pipefd[1]);
		(void)read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(pipefd[0]);
	unsigned long long st;
	struct procstat *ps = NULL;
	struct proc_sample s;
	char err[256];
	CHECK(discovery_starttime(child, &st) == 0);
	CHECK(procstat_open(child, st, 1, &ps, err, sizeof(err)) == 0);
	CHECK(ps && procstat_read(ps, &s, err, sizeof(err)) == 0);
	close(pipefd[1]);
	CHECK(waitpid(child, NULL, 0) == child);
	/* Reaped: the kept files say so, even if the pid came round again. */
	if (ps) {
		CHECK_MSG(procstat_read(ps, &s, err, sizeof(err)) == -ESRCH, "%s", err);
		procstat_close(ps);
	}
}

/* A process names itself (comm, the one status field it chooses) to forge
 * VmRSS and Threads lines: the kernel escapes the newline, the real lines are
 * read. */
static void test_forged_name(void)
{
	int pipefd[2], ready[2];
	CHECK(pipe(pipefd) == 0 && pipe(ready) == 0);
	pid_t child = fork();
	if (child == 0) {
		char c = 'r';
		close(pipefd[1]);
		prctl(PR_SET_NAME, "\nVmRSS:\t1 kB\nThreads:\t99", 0, 0, 0);
		(void)write(ready[1], &c, 1);
		(void)read(pipefd[0], &c, 1);
		_exit(0);
	}
	char c;
	CHECK(read(ready[0], &c, 1) == 1);
	unsigned long long st;
	struct procstat *ps = NULL;
	struct proc_sample s;
	char err[256];
	CHECK(discovery_starttime(child, &st) == 0);
	CHECK(procstat_open(child, st, 0, &ps, err, sizeof(err)) == 0);
	if (ps) {
		CHECK(procstat_read(ps, &s, err, sizeof(err)) == 0);
		CHECK_MSG(s.rss != 1024 && s.rss > 64 * 1024, "rss %llu", (unsigned long long)s.rss);
		CHECK(s.threads == 1);
		CHECK(procstat_fds(ps) == 1 && !(s.have & PROC_HAVE_FDS));
		procstat_close(ps);
	}
	close(pipefd[1]);
	waitpid(child, NULL, 0);
}

int main(void)
{
	test_recorded();
	test_malformed();
	test_self();
	test_exit();
	test_forged_name();
	return check_done();
}
