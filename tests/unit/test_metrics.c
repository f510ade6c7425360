/* Unit tests of the metric state: heap sizes at GC end raised live by
 * allocation ticks, pauses, rates over their windows, counters. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/metrics.h"

#define MS 1000000LL
#define SEC 1000000000LL

static struct metric_ref ref_of(enum metric_id id)
{
	struct metric_ref r;
	memset(&r, 0, sizeof(r));
	r.id = id;
	r.scale = 1;
	return r;
}

static double val(struct metrics *m, enum metric_id id, int64_t now, int64_t *sample)
{
	struct metric_ref r = ref_of(id);
	double v = NAN;
	int64_t s = 0;
	if (!metrics_read(m, &r, now, &v, &s))
		return NAN;
	if (sample)
		*sample = s;
	return v;
}

static void tick(struct metrics *m, int64_t t, uint32_t kind, uint64_t amount)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = EV_GC_ALLOC_TICK;
	r.u.alloc.kind = kind;
	r.u.alloc.amount = amount;
	metrics_on_event(m, &r, t);
}

static void heap(struct metrics *m, int64_t t, uint64_t g0, uint64_t loh, uint64_t poh)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = EV_GC_HEAP_STATS;
	r.u.heap_stats.size[0] = g0;
	r.u.heap_stats.size[3] = loh;
	r.u.heap_stats.size[4] = poh;
	r.u.heap_stats.promoted[0] = 1000;
	r.u.heap_stats.has_poh = 1;
	metrics_on_event(m, &r, t);
}

static void simple(struct metrics *m, int64_t t, enum ev_type type)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = type;
	if (type == EV_GC_SUSPEND_EE_BEGIN)
		r.u.suspend.reason = 1; /* for GC */
	metrics_on_event(m, &r, t);
}

static void test_empty(void)
{
	struct metrics *m = metrics_new();
	CHECK(isnan(val(m, M_LOH_SIZE, SEC, NULL)));
	CHECK(isnan(val(m, M_GC_PAUSE, SEC, NULL)));
	CHECK(isnan(val(m, M_ALLOC_RATE, SEC, NULL)));
	CHECK(val(m, M_GC_COUNT, SEC, NULL) == 0);
	metrics_free(m);
	metrics_free(NULL);
}

static void test_loh_live_estimate(void)
{
	struct metrics *m = metrics_new();
	int64_t s;

	heap(m, 10 * SEC, 5000, 1000000, 0);
	CHECK(val(m, M_LOH_SIZE, 10 * SEC, &s) == 1000000);
	CHECK(s == 10 * SEC);
	/* Ticks after the GC raise the estimate, each kind its own generation. */
	tick(m, 10 * SEC + 100 * MS, EV_ALLOC_LARGE, 100000000);
	tick(m, 10 * SEC + 200 * MS, EV_ALLOC_LARGE, 150000000);
	tick(m, 10 * SEC + 250 * MS, EV_ALLOC_SMALL, 100000);
	CHECK(val(m, M_LOH_SIZE, 11 * SEC, &s) == 251000000);
	CHECK(s == 10 * SEC + 250 * MS);
	CHECK(val(m, M_POH_SIZE, 11 * SEC, NULL) == 0);
	CHECK(val(m, M_HEAP_SIZE, 11 * SEC, NULL) == 5000 + 1000000 + 250000000 + 100000);
	/* A tick stamped before the last heap statistics is already counted in them. */
	heap(m, 12 * SEC, 5000, 2000000, 0);
	tick(m, 11 * SEC, EV_ALLOC_LARGE, 50000000);
	CHECK(val(m, M_LOH_SIZE, 12 * SEC, NULL) == 2000000);
	/* The next GC end resets the estimate to the exact size. */
	tick(m, 13 * SEC, EV_ALLOC_PINNED, 3000000);
	CHECK(val(m, M_POH_SIZE, 13 * SEC, NULL) == 3000000);
	heap(m, 14 * SEC, 0, 0, 1000000);
	CHECK(val(m, M_POH_SIZE, 14 * SEC, NULL) == 1000000);
	CHECK(val(m, M_LOH_SIZE, 14 * SEC, NULL) == 0);
	metrics_free(m);
}

/* Events of different threads reach us in per-thread blocks, so a background
 * GC's heap statistics can arrive after allocation ticks stamped later than
 * it. The estimate must go by timestamps, not by arrival: seen in a real
 * trace, where a LOH growing to 300 MB was estimated at 161 MB. */
static void test_out_of_order_arrival(void)
{
	struct metrics *m = metrics_new();

	heap(m, 10 * SEC, 0, 28000000, 0);
	/* Ticks from 10.1 s to 10.3 s arrive first ... */
	for (int i = 0; i < 30; i++)
		tick(m, 10 * SEC + 100 * MS + i * 7 * MS, EV_ALLOC_LARGE, 10000000);
	CHECK(val(m, M_LOH_SIZE, 11 * SEC, NULL) == 28000000 + 300000000);
	/* ... then the background GC's statistics from 10.2 s: 15 ticks (10.100 to
	 * 10.198 s) are in it, the 15 later ones are not. */
	heap(m, 10 * SEC + 200 * MS, 0, 168000000, 0);
	CHECK_MSG(val(m, M_LOH_SIZE, 11 * SEC, NULL) == 168000000 + 150000000, "LOH %.0f",
	          val(m, M_LOH_SIZE, 11 * SEC, NULL));
	/* Statistics older than the newest ones describe the past: ignored. */
	heap(m, 10 * SEC + 150 * MS, 0, 1000, 0);
	CHECK(val(m, M_LOH_SIZE, 11 * SEC, NULL) == 168000000 + 150000000);
	/* A late tick stamped before the newest statistics is already in them. */
	tick(m, 10 * SEC + 199 * MS, EV_ALLOC_LARGE, 10000000);
	CHECK(val(m, M_LOH_SIZE, 11 * SEC, NULL) == 168000000 + 150000000);
	/* A later GC resets to its exact figure. */
	heap(m, 12 * SEC, 0, 5000000, 0);
	CHECK(val(m, M_LOH_SIZE, 12 * SEC, NULL) == 5000000);
	metrics_free(m);
}

static void test_rates(void)
{
	struct metrics *m = metrics_new();

	metrics_start(m, 99 * SEC);
	/* 50 ticks of 1 MB over 500 ms: 50 MB in the 1 s window. */
	for (int i = 0; i < 50; i++)
		tick(m, 100 * SEC + i * 10 * MS, EV_ALLOC_LARGE, 1000000);
	CHECK(fabs(val(m, M_LOH_ALLOC_RATE, 100 * SEC + 500 * MS, NULL) - 50e6) < 1);
	CHECK(val(m, M_SOH_ALLOC_RATE, 100 * SEC + 500 * MS, NULL) == 0);
	CHECK(fabs(val(m, M_ALLOC_RATE, 100 * SEC + 500 * MS, NULL) - 50e6) < 1);
	/* The window slides: 2 s later nothing is left. */
	CHECK(val(m, M_LOH_ALLOC_RATE, 102 * SEC + 500 * MS, NULL) == 0);
	/* Half the ticks fall out 750 ms after the last; with the stream quiet,
	 * the window ends 200 ms before now (events arrive up to 100 ms late). */
	double half = val(m, M_LOH_ALLOC_RATE, 101 * SEC + 445 * MS, NULL);
	CHECK_MSG(half > 20e6 && half < 30e6, "half-window rate %g", half);
	CHECK(val(m, M_APPDOMAIN_ALLOCATED, 103 * SEC, NULL) == 50e6);
	metrics_free(m);
}

static void test_pause_and_gc_rate(void)
{
	struct metrics *m = metrics_new();
	struct ev_record r;
	int64_t s;

	metrics_start(m, 0);
	for (int i = 0; i < 3; i++) {
		int64_t t0 = (int64_t)(i + 1) * SEC;
		simple(m, t0, EV_GC_SUSPEND_EE_BEGIN);
		memset(&r, 0, sizeof(r));
		r.type = EV_GC_START;
		r.u.gc_start.count = (uint32_t)i + 1;
		r.u.gc_start.depth = i == 2 ? 2 : 0;
		metrics_on_event(m, &r, t0 + 1 * MS);
		memset(&r, 0, sizeof(r));
		r.type = EV_GC_END;
		r.u.gc_end.count = (uint32_t)i + 1;
		r.u.gc_end.depth = i == 2 ? 2 : 0;
		metrics_on_event(m, &r, t0 + (i + 2) * MS);
		heap(m, t0 + (i + 2) * MS, 100, 200, 300);
		simple(m, t0 + (i + 3) * MS, EV_GC_RESTART_EE_END);
	}
	CHECK(fabs(val(m, M_GC_PAUSE, 4 * SEC, &s) - 5.0) < 1e-9);
	CHECK(s == 3 * SEC + 5 * MS);
	CHECK(val(m, M_GC_COUNT, 4 * SEC, NULL) == 3);
	/* The window is not full yet: over the 4 s since the start. */
	CHECK(fabs(val(m, M_GC_RATE, 4 * SEC, NULL) - 3.0 / 4) < 1e-9);
	CHECK(fabs(val(m, M_GEN2_GC_RATE, 4 * SEC, NULL) - 1.0 / 4) < 1e-9);
	CHECK(fabs(val(m, M_GEN0_GC_RATE, 4 * SEC, NULL) - 2.0 / 4) < 1e-9);
	CHECK(fabs(val(m, M_GC_RATE, 60 * SEC, NULL) - 3.0 / 60) < 1e-9);
	CHECK(val(m, M_GEN2_GC_RATE, 70 * SEC, NULL) == 0);
	metrics_free(m);
}

/* time-in-gc: the share of the last 10 s spent in GC suspensions; other
 * suspensions do not count. */
static void test_time_in_gc(void)
{
	struct metrics *m = metrics_new();
	struct ev_record r;

	simple(m, 0, EV_GC_END); /* the session's first event at t=0 */
	/* 1 s into the session: 100 ms suspended -> 10 %. */
	simple(m, 900 * MS, EV_GC_SUSPEND_EE_BEGIN);
	simple(m, 1000 * MS, EV_GC_RESTART_EE_END);
	CHECK(fabs(val(m, M_TIME_IN_GC, 1 * SEC, NULL) - 10.0) < 1e-9);
	/* A debugger's suspension is not GC. */
	memset(&r, 0, sizeof(r));
	r.type = EV_GC_SUSPEND_EE_BEGIN;
	r.u.suspend.reason = 5;
	metrics_on_event(m, &r, 1100 * MS);
	simple(m, 1900 * MS, EV_GC_RESTART_EE_END);
	CHECK(fabs(val(m, M_TIME_IN_GC, 2 * SEC, NULL) - 5.0) < 1e-9);
	/* A 3 s pause at 20 s: 30 % of the 10 s window, then it slides out. */
	simple(m, 20 * SEC, EV_GC_SUSPEND_EE_BEGIN);
	simple(m, 23 * SEC, EV_GC_RESTART_EE_END);
	CHECK(fabs(val(m, M_TIME_IN_GC, 25 * SEC, NULL) - 30.0) < 1e-9);
	CHECK(fabs(val(m, M_TIME_IN_GC, 31 * SEC, NULL) - 20.0) < 1e-9); /* 2 s of it left in the window */
	CHECK(val(m, M_TIME_IN_GC, 40 * SEC, NULL) == 0);
	CHECK(fabs(val(m, M_GC_PAUSE, 40 * SEC, NULL) - 3000.0) < 1e-9);
	metrics_free(m);
}

/* AppDomain figures: allocated from the allocation counter plus later ticks,
 * survived = heap after the last GC, freed = allocated since the first GC
 * minus heap growth; the runtime's own events win when they come. */
static void test_appdomain(void)
{
	struct metrics *m = metrics_new();
	struct ev_record r;

	tick(m, 1 * SEC, EV_ALLOC_SMALL, 10000000);
	heap(m, 2 * SEC, 50000000, 0, 0); /* first GC: 50 MB on the heap */
	CHECK(val(m, M_APPDOMAIN_SURVIVED, 2 * SEC, NULL) == 50e6);
	CHECK(val(m, M_APPDOMAIN_FREED, 2 * SEC, NULL) == 0);
	/* 100 MB allocated, then a GC leaves 70 MB: 80 MB freed. */
	for (int i = 0; i < 10; i++)
		tick(m, 3 * SEC + i * MS, EV_ALLOC_LARGE, 10000000);
	CHECK(val(m, M_APPDOMAIN_ALLOCATED, 4 * SEC, NULL) == 110e6);
	CHECK(val(m, M_APPDOMAIN_FREED, 4 * SEC, NULL) == 0); /* nothing collected yet */
	heap(m, 5 * SEC, 70000000, 0, 0);
	CHECK(val(m, M_APPDOMAIN_SURVIVED, 5 * SEC, NULL) == 70e6);
	CHECK(val(m, M_APPDOMAIN_FREED, 5 * SEC, NULL) == 80e6);
	/* A late tick stamped before the first GC is not "after" it. */
	tick(m, 1500 * MS, EV_ALLOC_SMALL, 5000000);
	CHECK(val(m, M_APPDOMAIN_FREED, 5 * SEC, NULL) == 80e6);
	/* With ticks, the ticks are the figure; the counter alone when there
	 * are none. */
	memset(&r, 0, sizeof(r));
	r.type = EV_COUNTER;
	strcpy(r.u.counter.provider, "System.Runtime");
	strcpy(r.u.counter.name, "alloc-rate");
	r.u.counter.is_increment = 1;
	r.u.counter.value = 120000000;
	metrics_on_event(m, &r, 6 * SEC);
	CHECK(val(m, M_APPDOMAIN_ALLOCATED, 6 * SEC, NULL) == 115e6);
	struct metrics *c = metrics_new();
	CHECK(isnan(val(c, M_APPDOMAIN_ALLOCATED, 6 * SEC, NULL)));
	metrics_on_event(c, &r, 6 * SEC);
	metrics_on_event(c, &r, 7 * SEC);
	CHECK(val(c, M_APPDOMAIN_ALLOCATED, 7 * SEC, NULL) == 240e6);
	metrics_free(c);
	/* The runtime's own AppDomain events, when fired, are the figures. */
	memset(&r, 0, sizeof(r));
	r.type = EV_APPDOMAIN_MEM_ALLOCATED;
	r.u.appdomain.bytes = 999;
	metrics_on_event(m, &r, 8 * SEC);
	r.type = EV_APPDOMAIN_MEM_SURVIVED;
	r.u.appdomain.bytes = 777;
	metrics_on_event(m, &r, 8 * SEC);
	CHECK(val(m, M_APPDOMAIN_ALLOCATED, 8 * SEC, NULL) == 999);
	CHECK(val(m, M_APPDOMAIN_SURVIVED, 8 * SEC, NULL) == 777);
	metrics_free(m);
}

static void test_counters(void)
{
	struct metrics *m = metrics_new();
	struct ev_record r;
	struct metric_ref ref = ref_of(M_COUNTER);
	double v;
	int64_t s;

	memset(&r, 0, sizeof(r));
	r.type = EV_COUNTER;
	strcpy(r.u.counter.provider, "System.Runtime");
	strcpy(r.u.counter.name, "working-set");
	r.u.counter.value = 42.5;
	metrics_on_event(m, &r, 5 * SEC);
	strcpy(ref.provider, "System.Runtime");
	strcpy(ref.counter, "working-set");
	ref.scale = 1e6;
	CHECK(metrics_read(m, &ref, 6 * SEC, &v, &s) == 1);
	CHECK(v == 42.5e6 && s == 5 * SEC);
	strcpy(ref.provider, "Other");
	CHECK(metrics_read(m, &ref, 6 * SEC, &v, &s) == 0);
	/* Bounded: a flood of distinct counters never grows the state. */
	for (int i = 0; i < 1000; i++) {
		snprintf(r.u.counter.name, sizeof(r.u.counter.name), "c%d", i);
		metrics_on_event(m, &r, 7 * SEC);
	}
	strcpy(ref.provider, "System.Runtime");
	strcpy(ref.counter, "c999");
	CHECK(metrics_read(m, &ref, 8 * SEC, &v, &s) == 0);
	strcpy(ref.counter, "c10");
	CHECK(metrics_read(m, &ref, 8 * SEC, &v, &s) == 1);
	metrics_free(m);
}

static void counter(struct metrics *m, int64_t t, const char *name, double value)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = EV_COUNTER;
	strcpy(r.u.counter.provider, "System.Runtime");
	snprintf(r.u.counter.name, sizeof(r.u.counter.name), "%s", name);
	r.u.counter.value = value;
	metrics_on_event(m, &r, t);
}

/* One System.Runtime sample as .NET 10 polls it (in its order): the heap in
 * use now in MB, fragmentation at the last GC in percent, then the sizes at
 * the last GC in bytes. */
static void sample(struct metrics *m, int64_t t, double heap_mb, double frag_pct, const double gens[5])
{
	static const char *const names[5] = {"gen-0-size", "gen-1-size", "gen-2-size", "loh-size", "poh-size"};
	counter(m, t, "gc-heap-size", heap_mb);
	counter(m, t + 1 * MS, "gc-fragmentation", frag_pct);
	for (int i = 0; i < 5; i++)
		counter(m, t + 2 * MS, names[i], gens[i]);
}

/* Nothing is known at the start: no size, no rate (a zero would fire a
 * "below" rule); rates become known a second after the start. */
static void test_unknown_at_start(void)
{
	struct metrics *m = metrics_new();
	struct metric_ref r = ref_of(M_LOH_SIZE);

	metrics_start(m, 10 * SEC);
	/* Ticks alone do not make a size: they say nothing of what came before. */
	tick(m, 10 * SEC + 100 * MS, EV_ALLOC_LARGE, 5000000);
	for (enum metric_id id = M_LOH_SIZE; id <= M_HEAP_SIZE; id++)
		CHECK_MSG(isnan(val(m, id, 10 * SEC + 500 * MS, NULL)), "metric %d known from ticks", (int)id);
	CHECK(isnan(val(m, M_APPDOMAIN_SURVIVED, 10 * SEC + 500 * MS, NULL)));
	CHECK(metrics_basis(m, &r, 10 * SEC + 500 * MS) == NULL);
	CHECK(isnan(val(m, M_ALLOC_RATE, 10 * SEC + 999 * MS, NULL)));
	CHECK(isnan(val(m, M_GC_RATE, 10 * SEC + 999 * MS, NULL)));
	CHECK(isnan(val(m, M_TIME_IN_GC, 10 * SEC + 999 * MS, NULL)));
	CHECK(val(m, M_ALLOC_RATE, 11 * SEC, NULL) >= 0);
	CHECK(val(m, M_GC_RATE, 11 * SEC, NULL) == 0);
	CHECK(val(m, M_TIME_IN_GC, 11 * SEC, NULL) == 0);
	r = ref_of(M_ALLOC_RATE);
	CHECK_STR(metrics_basis(m, &r, 11 * SEC), "events");
	/* Meanwhile the ticks since the start are a floor: loh, poh and heap. */
	double fl;
	int64_t fs;
	r = ref_of(M_LOH_SIZE);
	CHECK(metrics_read_floor(m, &r, &fl, &fs) == 1 && fl == 5000000 && fs == 10 * SEC + 100 * MS);
	tick(m, 10 * SEC + 200 * MS, EV_ALLOC_SMALL, 100000);
	r = ref_of(M_HEAP_SIZE);
	CHECK(metrics_read_floor(m, &r, &fl, &fs) == 1 && fl == 5100000);
	r = ref_of(M_GEN0_SIZE);
	CHECK(metrics_read_floor(m, &r, &fl, &fs) == 0);
	struct metrics_at at = {m, 11 * SEC};
	r = ref_of(M_LOH_SIZE);
	CHECK(metrics_read_eval(&at, &r, &fl, &fs) == 2 && fl == 5000000);
	/* A partial sample is not a seed. */
	counter(m, 11 * SEC, "gc-heap-size", 400);
	counter(m, 11 * SEC, "loh-size", 300e6);
	CHECK(isnan(val(m, M_LOH_SIZE, 11 * SEC, NULL)));
	metrics_free(m);
}

/* The first complete System.Runtime sample makes every size known before any
 * GC: 300 MB of LOH at the last GC and 400 MB in use now with 2 % of the
 * last GC's 330 MB free: 76.6 MB allocated since, counted in loh-size. */
static void test_seed_from_counters(void)
{
	struct metrics *m = metrics_new();
	struct metric_ref r = ref_of(M_LOH_SIZE);
	const double gens[5] = {10e6, 5e6, 14e6, 300e6, 1e6};
	int64_t s;

	metrics_start(m, 10 * SEC);
	tick(m, 10 * SEC + 500 * MS, EV_ALLOC_LARGE, 2000000); /* before the sample: in it */
	sample(m, 11 * SEC, 400.0, 2.0, gens);
	double since = 400e6 - 330e6 * 0.98;
	CHECK_MSG(fabs(val(m, M_LOH_SIZE, 11 * SEC, &s) - (300e6 + since)) < 1, "loh %.0f",
	          val(m, M_LOH_SIZE, 11 * SEC, NULL));
	CHECK(s == 11 * SEC + 2 * MS);
	CHECK(val(m, M_POH_SIZE, 11 * SEC, NULL) == 1e6);
	CHECK(val(m, M_GEN0_SIZE, 11 * SEC, NULL) == 10e6);
	CHECK(val(m, M_GEN1_SIZE, 11 * SEC, NULL) == 5e6);
	CHECK(val(m, M_GEN2_SIZE, 11 * SEC, NULL) == 14e6);
	CHECK(fabs(val(m, M_HEAP_SIZE, 11 * SEC, NULL) - (330e6 + since)) < 1);
	CHECK(val(m, M_APPDOMAIN_SURVIVED, 11 * SEC, NULL) == 330e6);
	CHECK_STR(metrics_basis(m, &r, 11 * SEC), "counters");
	double fl;
	int64_t fs;
	CHECK(metrics_read_floor(m, &r, &fl, &fs) == 0); /* known: no floor */
	/* Ticks after the sample raise it like ticks after a GC. */
	tick(m, 11 * SEC + 100 * MS, EV_ALLOC_LARGE, 50000000);
	CHECK(fabs(val(m, M_LOH_SIZE, 12 * SEC, NULL) - (350e6 + since)) < 1);
	/* A later sample replaces the seed: the bytes since the last GC now
	 * include those ticks, which are not counted twice. */
	sample(m, 12 * SEC, 450.0, 2.0, gens);
	CHECK(fabs(val(m, M_LOH_SIZE, 12 * SEC + 10 * MS, NULL) - (300e6 + 450e6 - 330e6 * 0.98)) < 1);
	/* A sample whose heap in use is below the last GC's (a GC between the
	 * polls) adds nothing. */
	sample(m, 13 * SEC, 100.0, 0, gens);
	CHECK(val(m, M_LOH_SIZE, 13 * SEC + 10 * MS, NULL) == 300e6);
	/* A GC, even one stamped before the seed, is exact and wins; the ticks
	 * after it are still known. */
	heap(m, 11 * SEC + 50 * MS, 0, 310000000, 0);
	CHECK(val(m, M_LOH_SIZE, 13 * SEC + 20 * MS, NULL) == 360e6);
	CHECK_STR(metrics_basis(m, &r, 13 * SEC + 20 * MS), "gc");
	/* Samples after a GC change nothing. */
	sample(m, 14 * SEC, 900.0, 0, gens);
	CHECK(val(m, M_LOH_SIZE, 14 * SEC + 10 * MS, NULL) == 360e6);
	metrics_free(m);
}

static void alloc_counter(struct metrics *m, int64_t t, double bytes)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = EV_COUNTER;
	strcpy(r.u.counter.provider, "System.Runtime");
	strcpy(r.u.counter.name, "alloc-rate");
	r.u.counter.is_increment = 1;
	r.u.counter.interval_sec = 1;
	r.u.counter.value = bytes;
	metrics_on_event(m, &r, t);
}

/* Ticks that come and go (a second session brings them near a threshold):
 * the counters bound the sizes and rates from above; sizes stay exact at
 * every GC; once the ticks start after a GC, the latest sample stands for
 * what no tick covers until the next GC; rates are unknown until the ticks
 * have come for a whole window. */
static void test_gated_ticks(void)
{
	struct metrics *m = metrics_new();
	const double gens[5] = {10e6, 0, 0, 100e6, 1e6};
	struct metric_ref loh = ref_of(M_LOH_SIZE), rate = ref_of(M_LOH_ALLOC_RATE), g0 = ref_of(M_GEN0_SIZE);
	double b;

	metrics_start(m, 10 * SEC);
	metrics_ticks_gated(m, 1);
	/* No sample: no bound; gen0-size never has one. */
	CHECK(metrics_bound(m, &loh, 10 * SEC, 5 * SEC, &b) == 0);
	heap(m, 10 * SEC + 500 * MS, 10e6, 100e6, 1e6);
	CHECK(val(m, M_LOH_SIZE, 11 * SEC, NULL) == 100e6);
	/* 111 MB at the last GC, 311 MB in use now: 200 MB since, of any kind. */
	sample(m, 12 * SEC, 311.0, 0, gens);
	/* The allocation counter's first sample bounds nothing: its increment
	 * runs from an earlier poll. */
	alloc_counter(m, 11 * SEC, 9e9);
	CHECK(metrics_bound(m, &rate, 11 * SEC + 10 * MS, 5 * SEC, &b) == 0);
	alloc_counter(m, 12 * SEC + 3 * MS, 200e6);
	CHECK(metrics_bound(m, &loh, 12 * SEC + 10 * MS, 5 * SEC, &b) == 1 && fabs(b - 300e6) < 1);
	CHECK(metrics_bound(m, &g0, 12 * SEC + 10 * MS, 5 * SEC, &b) == 0);
	struct metric_ref heapsz = ref_of(M_HEAP_SIZE), poh = ref_of(M_POH_SIZE);
	CHECK(metrics_bound(m, &heapsz, 12 * SEC + 10 * MS, 5 * SEC, &b) == 1 && fabs(b - 311e6) < 1);
	CHECK(metrics_bound(m, &poh, 12 * SEC + 10 * MS, 5 * SEC, &b) == 1 && fabs(b - 201e6) < 1);
	CHECK(metrics_bound(m, &rate, 12 * SEC + 10 * MS, 5 * SEC, &b) == 1 && b == 200e6);
	/* A stale sample bounds nothing. */
	CHECK(metrics_bound(m, &loh, 18 * SEC, 5 * SEC, &b) == 0);
	CHECK(metrics_bound(m, &rate, 18 * SEC, 5 * SEC, &b) == 0);
	/* Without ticks the size is the last GC's, the rates unknown. */
	CHECK(val(m, M_LOH_SIZE, 12 * SEC + 10 * MS, NULL) == 100e6);
	CHECK(isnan(val(m, M_LOH_ALLOC_RATE, 12 * SEC + 10 * MS, NULL)));
	/* Ticks start after that GC: the sample stands for the span before
	 * them, the ticks after it add to it. */
	metrics_ticks_on(m, 1, 12 * SEC + 50 * MS);
	tick(m, 12 * SEC + 100 * MS, EV_ALLOC_LARGE, 10000000);
	tick(m, 12 * SEC + 110 * MS, EV_ALLOC_SMALL, 100000);
	CHECK_MSG(fabs(val(m, M_LOH_SIZE, 12 * SEC + 200 * MS, NULL) - 310e6) < 1, "loh %.0f",
	          val(m, M_LOH_SIZE, 12 * SEC + 200 * MS, NULL));
	CHECK(fabs(val(m, M_HEAP_SIZE, 12 * SEC + 200 * MS, NULL) - 321.1e6) < 1);
	CHECK(isnan(val(m, M_LOH_ALLOC_RATE, 12 * SEC + 900 * MS, NULL)));
	CHECK(val(m, M_LOH_ALLOC_RATE, 13 * SEC + 60 * MS, NULL) > 0);
	/* A later sample counts those ticks in its figures, not twice. */
	sample(m, 13 * SEC, 321.1, 0, gens);
	CHECK(fabs(val(m, M_LOH_SIZE, 13 * SEC + 10 * MS, NULL) - 310.1e6) < 1);
	/* The next GC is exact again, and the ticks after it add to it. */
	heap(m, 13 * SEC + 100 * MS, 0, 290e6, 1e6);
	tick(m, 13 * SEC + 200 * MS, EV_ALLOC_LARGE, 5000000);
	CHECK(val(m, M_LOH_SIZE, 13 * SEC + 300 * MS, NULL) == 295e6);
	/* Off: the rates are unknown again; the size keeps the ticks that came. */
	metrics_ticks_on(m, 0, 13 * SEC + 400 * MS);
	CHECK(isnan(val(m, M_LOH_ALLOC_RATE, 13 * SEC + 500 * MS, NULL)));
	CHECK(val(m, M_LOH_SIZE, 13 * SEC + 500 * MS, NULL) == 295e6);
	metrics_free(m);

	/* Not gated: rates as before, whatever metrics_ticks_on says. */
	m = metrics_new();
	metrics_start(m, 10 * SEC);
	tick(m, 10 * SEC + 100 * MS, EV_ALLOC_LARGE, 5000000);
	CHECK(val(m, M_LOH_ALLOC_RATE, 11 * SEC, NULL) > 0);
	metrics_free(m);
}

/* The /proc metrics: unknown until a poll has their field, then the last
 * poll's values and time; private-memory counts swap; a poll without a field
 * makes that metric unknown again (a zombie's status has no Vm lines). */
static void test_proc(void)
{
	struct metrics *m = metrics_new();
	struct metric_ref r = ref_of(M_PRIVATE_MEMORY);
	struct proc_sample p = {.rss = 500 << 20,
	                        .anon = 300 << 20,
	                        .swap = 50 << 20,
	                        .threads = 12,
	                        .fds = 40,
	                        .have = PROC_HAVE_RSS | PROC_HAVE_ANON | PROC_HAVE_SWAP | PROC_HAVE_THREADS};
	int64_t t = 0;

	for (enum metric_id id = M_RSS; id <= M_FDS; id++)
		CHECK(isnan(val(m, id, SEC, NULL)));
	CHECK(metrics_basis(m, &r, SEC) == NULL);
	metrics_on_proc(m, &p, 2 * SEC);
	CHECK(val(m, M_RSS, 3 * SEC, &t) == (double)(500 << 20) && t == 2 * SEC);
	CHECK(val(m, M_PRIVATE_MEMORY, 3 * SEC, NULL) == (double)(350 << 20));
	CHECK(val(m, M_SWAP, 3 * SEC, NULL) == (double)(50 << 20));
	CHECK(val(m, M_THREADS, 3 * SEC, NULL) == 12);
	CHECK(isnan(val(m, M_FDS, 3 * SEC, NULL))); /* not asked for */
	CHECK_STR(metrics_basis(m, &r, 3 * SEC), "proc");
	/* The GC metrics do not come from /proc. */
	CHECK(isnan(val(m, M_LOH_SIZE, 3 * SEC, NULL)));
	p.have = PROC_HAVE_THREADS | PROC_HAVE_FDS;
	p.threads = 1;
	metrics_on_proc(m, &p, 4 * SEC);
	CHECK(isnan(val(m, M_RSS, 5 * SEC, NULL)) && isnan(val(m, M_PRIVATE_MEMORY, 5 * SEC, NULL)));
	CHECK(val(m, M_THREADS, 5 * SEC, &t) == 1 && t == 4 * SEC);
	CHECK(val(m, M_FDS, 5 * SEC, NULL) == 40);
	/* Without swap reported, private-memory is the anonymous memory. */
	p.have = PROC_HAVE_ANON;
	metrics_on_proc(m, &p, 6 * SEC);
	CHECK(val(m, M_PRIVATE_MEMORY, 6 * SEC, NULL) == (double)(300 << 20));
	metrics_free(m);
}

static void thrown(struct metrics *m, int64_t t, const char *type, const char *message)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = EV_EXCEPTION_THROWN;
	snprintf(r.u.exception.type, sizeof(r.u.exception.type), "%s", type);
	snprintf(r.u.exception.message, sizeof(r.u.exception.message), "%s", message);
	r.u.exception.hresult = 0x80131505u;
	metrics_on_event(m, &r, t);
}

/* Exception conditions count only what matches, within their window, up to
 * the cap; their sample is the last match; exception-rate counts them all. */
static void test_exceptions(void)
{
	struct metrics *m = metrics_new();
	struct metric_ref pool, any, other;
	struct metrics_exception x;
	char err[256];
	int64_t t = 0;

	CHECK(catalog_exception("Timeout*", "*pool*", 10 * SEC, &pool, err, sizeof(err)) == 0);
	CHECK(catalog_exception(NULL, NULL, 60 * SEC, &any, err, sizeof(err)) == 0);
	CHECK(catalog_exception("Other*", NULL, 60 * SEC, &other, err, sizeof(err)) == 0);
	metrics_start(m, 0);
	CHECK(isnan(val(m, M_EXCEPTION_RATE, 500 * MS, NULL)));    /* rates: a second after the start */
	CHECK(metrics_read(m, &pool, SEC, &(double){0}, &t) == 0); /* not watched: unknown */
	CHECK(metrics_watch_exceptions(m, &pool) == 0);
	CHECK(metrics_watch_exceptions(m, &pool) == 0); /* once */
	CHECK(metrics_watch_exceptions(m, &any) == 0);
	double v = -1;
	CHECK(metrics_read(m, &pool, SEC, &v, &t) == 1 && v == 0);
	CHECK(!metrics_exception_last(m, &pool, &x));

	thrown(m, 2 * SEC, "System.TimeoutException", "waiting for the pool");
	thrown(m, 3 * SEC, "System.InvalidOperationException", "the pool"); /* not this type */
	thrown(m, 4 * SEC, "System.TimeoutException", "the database");      /* not this message */
	thrown(m, 5 * SEC, "System.TimeoutException", "Pool drained");
	CHECK(metrics_read(m, &pool, 5 * SEC, &v, &t) == 1 && v == 2 && t == 5 * SEC);
	CHECK(metrics_read(m, &any, 5 * SEC, &v, &t) == 1 && v == 4);
	CHECK(metrics_exception_last(m, &pool, &x) && strcmp(x.message, "Pool drained") == 0 && x.t_ns == 5 * SEC &&
	      x.hresult == 0x80131505u);
	CHECK(fabs(val(m, M_EXCEPTION_RATE, 5 * SEC + 500 * MS, NULL) - 1.0) < 1e-9); /* the one at 5 s */
	/* The window: the one at 2 s leaves at 12 s, the one at 5 s at 15 s. */
	CHECK(metrics_read(m, &pool, 12 * SEC + 1, &v, &t) == 1 && v == 1);
	CHECK(metrics_read(m, &pool, 15 * SEC + 1, &v, &t) == 1 && v == 0 && t == 5 * SEC);

	/* A burst: 2000 in one second. The count stops at the cap; the rate
	 * counts them all. */
	for (int i = 0; i < 2000; i++)
		thrown(m, 20 * SEC + i * 500000LL, "System.TimeoutException", "pool");
	CHECK(metrics_read(m, &pool, 21 * SEC, &v, &t) == 1 && v == CATALOG_EXC_COUNT_MAX);
	CHECK(fabs(val(m, M_EXCEPTION_RATE, 21 * SEC, NULL) - 2000) < 1e-6);
	CHECK(metrics_read(m, &any, 21 * SEC, &v, &t) == 1 && v == CATALOG_EXC_COUNT_MAX);
	CHECK(metrics_read(m, &pool, 40 * SEC, &v, &t) == 1 && v == 0);

	/* At most METRICS_EXC_FILTERS_MAX conditions. */
	CHECK(metrics_watch_exceptions(m, &other) == 0);
	for (int i = 0; i < METRICS_EXC_FILTERS_MAX; i++) {
		struct metric_ref r;
		char g[16];
		snprintf(g, sizeof(g), "T%d", i);
		CHECK(catalog_exception(g, NULL, SEC, &r, err, sizeof(err)) == 0);
		int rc = metrics_watch_exceptions(m, &r);
		CHECK(rc == (i < METRICS_EXC_FILTERS_MAX - 3 ? 0 : -ENOSPC));
	}
	CHECK(metrics_watch_exceptions(m, &(struct metric_ref){.id = M_LOH_SIZE}) == -EINVAL);
	/* The rules changed: only pool stays, with its count; a slot is free. */
	const struct metric_ref *keep[] = {&pool};
	thrown(m, 50 * SEC, "System.TimeoutException", "pool");
	metrics_unwatch_exceptions(m, keep, 1);
	CHECK(metrics_read(m, &pool, 50 * SEC, &v, &t) == 1 && v == 1);
	CHECK(metrics_read(m, &any, 50 * SEC, &v, &t) == 0);
	CHECK(metrics_watch_exceptions(m, &any) == 0);
	CHECK(metrics_read(m, &any, 50 * SEC, &v, &t) == 1 && v == 0);
	metrics_unwatch_exceptions(m, NULL, 0);
	CHECK(metrics_read(m, &pool, 50 * SEC, &v, &t) == 0);
	metrics_free(m);
}

int main(void)
{
	test_exceptions();
	test_proc();
	test_unknown_at_start();
	test_seed_from_counters();
	test_gated_ticks();
	test_empty();
	test_loh_live_estimate();
	test_out_of_order_arrival();
	test_rates();
	test_pause_and_gc_rate();
	test_counters();
	test_time_in_gc();
	test_appdomain();
	return check_done();
}
