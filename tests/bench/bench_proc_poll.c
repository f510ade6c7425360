/* The cost of one poll of /proc (procstat_read) on a live process, measured
 * in CPU time of this thread (what the guard's loop spends) and wall time:
 * reading /proc/PID/status alone (rss, private-memory, swap, threads), and
 * with the descriptor count (fds) as well. tests/bench/proc.sh runs it
 * against a real .NET process.
 *   usage: bench_proc_poll PID [POLLS]   POLLS: per figure (default 20000) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dumpwatch/discovery.h"
#include "dumpwatch/procstat.h"

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int run(pid_t pid, unsigned long long st, int want_fds, int polls)
{
	struct procstat *ps;
	struct proc_sample s;
	char err[256];
	int64_t *wall = calloc((size_t)polls, sizeof(*wall));

	if (!wall || procstat_open(pid, st, want_fds, &ps, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_proc_poll: %s\n", wall ? err : "out of memory");
		free(wall);
		return 1;
	}
	int64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (int i = 0; i < polls; i++) {
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);
		if (procstat_read(ps, &s, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_proc_poll: %s\n", err);
			procstat_close(ps);
			free(wall);
			return 1;
		}
		wall[i] = clock_ns(CLOCK_MONOTONIC) - t0;
	}
	int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	qsort(wall, (size_t)polls, sizeof(*wall), cmp);
	double per = (double)cpu / polls / 1e3;
	printf("%-34s %6.2f us CPU per poll; wall median %.2f us, p99 %.2f us, max %.2f us\n",
	       want_fds ? "status + fds (fstat of fd/):" : "status (rss, private, swap, threads):", per,
	       (double)wall[polls / 2] / 1e3, (double)wall[polls * 99 / 100] / 1e3, (double)wall[polls - 1] / 1e3);
	printf("%-34s %6.3f %% of a core per process at 10 ms, %.4f %% at 100 ms\n", "", per / 1e4 * 100,
	       per / 1e5 * 100);
	printf("%-34s (%llu threads, %llu descriptors, rss %.1f MB)\n", "", (unsigned long long)s.threads,
	       (unsigned long long)s.fds, (double)s.rss / 1e6);
	procstat_close(ps);
	free(wall);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long st;
	pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : 0;
	int polls = argc > 2 ? atoi(argv[2]) : 20000;

	if (pid <= 0 || polls <= 0 || discovery_starttime(pid, &st) < 0) {
		fprintf(stderr, "usage: bench_proc_poll PID [POLLS]  (PID: a live process)\n");
		return 2;
	}
	return run(pid, st, 0, polls) || run(pid, st, 1, polls);
}
