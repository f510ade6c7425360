/* The cost of dump contexts, measured (tests/bench/context.sh prints it with
 * the guard's memory over 200 real processes):
 * - the memory of one process's history (ctxtrack_bytes) after the whole
 *   window, for a busy process (every metric moves in every slot: the bound)
 *   and an idle one (nothing moves), with its rules' metrics added;
 * - the time to publish a context (the JSON, the plot, both files written,
 *   synced and renamed) from the busy history, and the files' sizes.
 * Metric values are fed through real metrics state: synthetic GC heap stats
 * and allocation ticks, one GC every 200 ms and 20 allocation ticks between
 * (busy), or nothing after the first GC (idle).
 *   usage: bench_context [DIR] [RUNS]   DIR: where the files go (a fresh
 *   directory of ours; default a temporary one), RUNS: publishes (20). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/ctxtrack.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/dump.h"
#include "dumpwatch/rules.h"

#define MS 1000000LL

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void heap_stats(struct ev_record *r, uint64_t loh)
{
	memset(r, 0, sizeof(*r));
	r->type = EV_GC_HEAP_STATS;
	r->u.heap_stats.size[0] = 1000000;
	r->u.heap_stats.size[1] = 2000000;
	r->u.heap_stats.size[2] = 30000000;
	r->u.heap_stats.size[3] = loh;
	r->u.heap_stats.size[4] = 100000;
	r->u.heap_stats.has_poh = 1;
}

/* Feeds window_ns of events into a fresh tracker; returns it. */
static struct ctxtrack *fill(int busy, struct metrics *m, const struct rule *r, int64_t start, int64_t window_ns)
{
	struct ctxtrack *ct = ctxtrack_new(window_ns);
	struct ev_record ev;
	int64_t t = start;

	ctxtrack_add_conditions(ct, r);
	metrics_start(m, t);
	heap_stats(&ev, 50000000);
	metrics_on_event(m, &ev, t);
	ctxtrack_on_event(ct, m, &ev, t);
	for (uint64_t i = 0; t < start + window_ns; i++) {
		t += 10 * MS;
		if (busy) {
			if (i % 20 == 0) {
				heap_stats(&ev, 50000000 + (i * 7919) % 400000000);
			} else {
				memset(&ev, 0, sizeof(ev));
				ev.type = EV_GC_ALLOC_TICK;
				ev.u.alloc.kind = (i % 3 == 0) ? 1 : 0;
				ev.u.alloc.amount = 100000 + i % 1000;
			}
			metrics_on_event(m, &ev, t);
			ctxtrack_on_event(ct, m, &ev, t);
		}
		if (i % 25 == 0)
			ctxtrack_tick(ct, m, t);
	}
	return ct;
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/dw-bench-context.XXXXXX";
	const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
	int runs = argc > 2 ? atoi(argv[2]) : 20;
	struct rule r = {0};
	char err[512];

	if (!dir) {
		perror("mkdtemp");
		return 1;
	}
	/* Opened once, as a fire opens its store for the dump and its context. */
	int dfd = dump_open_store(dir, err, sizeof(err));
	if (dfd < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	snprintf(r.name, sizeof(r.name), "loh-balloon");
	const char *conds[] = {"loh-size > 300MB for 5s", "System.Runtime/cpu-usage > 90%", "gc-pause > 200ms"};
	for (size_t i = 0; i < 3; i++)
		if (rule_cond_parse(conds[i], &r.conds[r.n_conds++], err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
	r.dump_type = DUMP_WITHHEAP;

	int64_t start = 1000 * 1000 * MS;
	struct metrics *mi = metrics_new(), *mb = metrics_new();
	struct ctxtrack *idle = fill(0, mi, &r, start, DW_DEFAULT_HISTORY_NS);
	struct ctxtrack *busy = fill(1, mb, &r, start, DW_DEFAULT_HISTORY_NS);
	printf("history of one process, %d s window at %lld ms:\n", (int)(DW_DEFAULT_HISTORY_NS / 1000000000LL),
	       (long long)(DW_DEFAULT_HISTORY_NS / DW_HISTORY_POINTS / MS));
	printf("  idle: %zu bytes\n", ctxtrack_bytes(idle));
	printf("  busy: %zu bytes (sizes, rates and pauses moving; the counter never reported)\n",
	       ctxtrack_bytes(busy));
	size_t per = (DW_HISTORY_POINTS + 1) * HISTORY_POINT_BYTES;
	printf("  bound: idle + %zu bytes per metric that moves in every slot; %d metrics at most: %zu bytes\n", per,
	       HISTORY_SERIES_MAX, ctxtrack_bytes(idle) + HISTORY_SERIES_MAX * per);

	struct file_rule fr = {0};
	fr.rule = r;
	fr.line = 3;
	double total = 0, min = 1e18, max = 0;
	struct stat js, ss;
	for (int k = 0; k < runs; k++) {
		struct dumpctx_input in = {0};
		char name[64], jp[PATH_MAX], sp[PATH_MAX];
		snprintf(name, sizeof(name), "bench-%d.core", k);
		in.outcome = DUMPCTX_DUMP;
		in.rule = &fr;
		in.rule_file = "/etc/dumpwatch/rules.d/bench.json";
		in.fire_ns = start + DW_DEFAULT_HISTORY_NS;
		in.fire_unix_ns = 1795460604639000000LL;
		in.dump_dir = dir;
		in.dump_name = name;
		in.dump_bytes = 494000000;
		in.dump_start_unix_ns = in.fire_unix_ns + 1000000;
		in.dump_end_unix_ns = in.fire_unix_ns + 1100000000;
		in.dump_duration_ms = 1099;
		in.via = "runtime";
		in.pid = 4807;
		in.process_name = "MemSpike";
		in.cmdline = "/app/MemSpike --tag bench";
		in.user = "app";
		in.runtime_version = "10.0.12";
		in.read[0] = 1;
		in.value[0] = 351e6;
		int64_t t0 = mono();
		if (ctxtrack_publish(busy, &in, dfd, NULL, jp, sp, err, sizeof(err)) < 0) {
			fprintf(stderr, "publish: %s\n", err);
			return 1;
		}
		double ms = (double)(mono() - t0) / 1e6;
		total += ms;
		if (ms < min)
			min = ms;
		if (ms > max)
			max = ms;
		stat(jp, &js);
		stat(sp, &ss);
		unlink(jp);
		unlink(sp);
	}
	printf("publishing the context of the busy history (%d runs): min %.1f ms, mean %.1f ms, max %.1f ms\n", runs,
	       min, total / runs, max);
	printf("  NAME.json %lld bytes, NAME.svg %lld bytes\n", (long long)js.st_size, (long long)ss.st_size);
	ctxtrack_free(idle);
	ctxtrack_free(busy);
	metrics_free(mi);
	metrics_free(mb);
	close(dfd);
	if (argc <= 1)
		rmdir(dir);
	return 0;
}
