/* What a target keeps for its dumps' context: the history's samples taken at
 * ticks and at the fire go in at the time their values were measured, so
 * events processed after them with earlier times are not hidden behind a
 * stale value. */
#include <string.h>

#include "check.h"
#include "dumpwatch/ctxtrack.h"

#define MS 1000000LL
#define SEC 1000000000LL

static void heap_stats(struct ev_record *r, uint64_t loh)
{
	memset(r, 0, sizeof(*r));
	r->type = EV_GC_HEAP_STATS;
	r->u.heap_stats.size[0] = 500000;
	r->u.heap_stats.size[3] = loh;
	r->u.heap_stats.has_poh = 1;
}

static void loh_tick(struct ev_record *r, uint64_t amount)
{
	memset(r, 0, sizeof(*r));
	r->type = EV_GC_ALLOC_TICK;
	r->u.alloc.kind = EV_ALLOC_LARGE;
	r->u.alloc.amount = amount;
	snprintf(r->u.alloc.type_name, sizeof(r->u.alloc.type_name), "System.Byte[]");
}

static int series_of(const struct history *h, const char *key)
{
	for (size_t i = 0; i < history_n_series(h); i++)
		if (strcmp(history_series_key(h, i, NULL), key) == 0)
			return (int)i;
	return -1;
}

/* The demo (issue 29): MemSpike's LOH goes from 1 MB to 600 MB in 1 MB
 * allocations, one tick each, 0.1 ms apart. The rule "heap-size > 500MB"
 * fires at the tick that passes 500 MB, 60 ms after it happened (the
 * stream's delay), and the fire samples the history then; the ticks that
 * follow, already on their way, are processed after it. The slot they share
 * ends at 600 MB, and the fire's sample does not hold 500 MB after them. */
static void test_fire_sample_is_not_last(void)
{
	struct ctxtrack *ct = ctxtrack_new(60 * SEC);
	struct metrics *m = metrics_new();
	struct ev_record ev;
	int64_t t0 = 1000 * SEC;

	CHECK(ct && m);
	metrics_start(m, t0);
	heap_stats(&ev, 1000000);
	metrics_on_event(m, &ev, t0);
	ctxtrack_on_event(ct, m, &ev, t0);
	ctxtrack_tick(ct, m, t0 + 250 * MS);
	int64_t burst = t0 + 1010 * MS, fire = 0;
	for (int i = 0; i < 600; i++) {
		int64_t t = burst + i * 100000;
		loh_tick(&ev, 1000000);
		metrics_on_event(m, &ev, t);
		ctxtrack_on_event(ct, m, &ev, t);
		struct metric_ref ref = {.id = M_HEAP_SIZE, .scale = 1};
		double v;
		int64_t when;
		if (!fire && metrics_read(m, &ref, t, &v, &when) && v > 500e6) {
			fire = t + 60 * MS;
			ctxtrack_tick(ct, m, fire);
		}
	}
	CHECK(fire != 0);

	const struct history *h = ctxtrack_history(ct);
	int s = series_of(h, "heap-size");
	CHECK(s >= 0);
	size_t n = history_count(h, (size_t)s);
	struct history_point p = {0}, at_fire = {0};
	int found = 0;
	for (size_t k = 0; k < n && history_get(h, (size_t)s, k, &p) == 0; k++)
		if (p.t_ns <= fire) {
			at_fire = p; /* the point that holds at the fire */
			found = 1;
		}
	CHECK(found);
	CHECK_MSG(at_fire.last > 600e6 && at_fire.max > 600e6, "at the fire: last %.1f MB, max %.1f MB",
	          at_fire.last / 1e6, at_fire.max / 1e6);
	ctxtrack_free(ct);
	metrics_free(m);
}

int main(void)
{
	test_fire_sample_is_not_last();
	return check_done();
}
