/* The classes of a snapshot's statics (heapstatics_name) against a live
 * process: the static roots of a walk recorded from GcLab
 * (tests/data/heap-net10.nettrace, 62 statics) are named from the
 * assemblies process PID maps, ROUNDS times. The cost is reading each
 * assembly's metadata and walking its static fields; the lookups of the
 * roots' names are a binary search each.
 *
 * Prints the assemblies read (and those not), the statics named, the best
 * and median time of a round, and the rise of the resident set's
 * high-water mark during the rounds.
 *   usage: bench_heapstatics PID [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/heaprec.h"
#include "dumpwatch/heapstatics.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long hwm_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_heapstatics PID [ROUNDS]\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	int rounds = argc > 2 ? atoi(argv[2]) : 10;
	if (rounds < 1 || rounds > 1000)
		rounds = 10;
	double *t = calloc((size_t)rounds, sizeof(*t));
	struct heapstatics_result res = {0};
	long before = 0;
	for (int i = 0; i < rounds; i++) {
		struct heapgraph *g = heaprec_graph("heap-net10.nettrace");
		if (!g) {
			fprintf(stderr, "cannot read %s/heap-net10.nettrace\n", DW_TEST_DATA);
			return 1;
		}
		if (i == 0)
			before = hwm_kb();
		double t0 = now();
		int r = heapstatics_name(pid, g, &res);
		t[i] = now() - t0;
		hg_free(g);
		if (r < 0) {
			fprintf(stderr, "heapstatics_name(%d): %s\n", (int)pid, strerror(-r));
			return 1;
		}
	}
	qsort(t, (size_t)rounds, sizeof(*t), cmp_d);
	printf("pid %d: %zu assemblies read, %zu not; %zu statics named, %zu ambiguous, %zu unknown; "
	       "%.1f ms best, %.1f ms median of %d; peak RSS +%ld KiB\n",
	       (int)pid, res.files, res.unread, res.named, res.ambiguous, res.unknown, t[0] * 1e3,
	       t[rounds / 2] * 1e3, rounds, hwm_kb() - before);
	free(t);
	return 0;
}
