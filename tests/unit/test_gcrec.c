/* Per-GC records: on a trace recorded from the .NET 10 runtime while GcLab ran
 * blocking GCs of each generation, background GCs with a foreground GC during
 * one, and a 1.2 s GC pause; then hand-made sequences: a trace that begins
 * mid-GC, missing events, a gap in the indices, events of two threads out of
 * order, and the bound on what is held. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/gcrec.h"

#define MAX_RECS 256

struct got {
	struct gc_record r[MAX_RECS];
	size_t n;
};

static void on_rec(void *ctx, const struct gc_record *rec)
{
	struct got *g = ctx;
	if (g->n < MAX_RECS)
		g->r[g->n] = *rec;
	g->n++;
}

/* --- the recorded trace --- */

struct feed {
	struct nettrace_info info;
	struct gcrec *gc;
	unsigned skip; /* decoded GC events to drop at the start */
	unsigned seen;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	((struct feed *)ctx)->info = *info;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct feed *f = ctx;
	struct ev_record r;
	if (events_decode(ev, f->info.pointer_size, &r, NULL, 0) != 1)
		return;
	if (r.type != EV_GC_ALLOC_TICK && r.type != EV_COUNTER && f->seen++ < f->skip)
		return;
	gcrec_on_event(f->gc, &r, nettrace_qpc_to_ns(&f->info, ev->timestamp));
}

static int feed_trace(const char *name, struct gcrec *gc, unsigned skip)
{
	char path[512];
	uint8_t buf[65536];
	size_t n;
	struct feed f = {.gc = gc, .skip = skip};
	struct nettrace_callbacks cb = {.ctx = &f, .on_info = on_info, .on_event = on_event};
	snprintf(path, sizeof(path), "%s/%s", DW_TEST_DATA, name);
	FILE *file = fopen(path, "rb");
	if (!file)
		return -1;
	nettrace_parser *p = nettrace_new(&cb, NULL);
	while ((n = fread(buf, 1, sizeof(buf), file)) > 0)
		nettrace_feed(p, buf, n);
	int rc = nettrace_finish(p);
	nettrace_free(p);
	fclose(file);
	return rc;
}

static const struct gc_record *by_index(const struct got *g, uint32_t index)
{
	for (size_t i = 0; i < g->n && i < MAX_RECS; i++)
		if (g->r[i].index == index)
			return &g->r[i];
	return NULL;
}

static void test_recorded(void)
{
	struct got got = {0};
	struct gcrec *gc = gcrec_new(on_rec, &got);
	CHECK(feed_trace("gc-kinds.nettrace", gc, 0) == 0);
	gcrec_flush(gc);

	/* GcLab: gc 0 (#1), gc 2 (#2), bgc (#3..#43), stall 1200 (#44). */
	CHECK_MSG(got.n == 44, "%zu records", got.n);
	CHECK(gcrec_reported(gc) == 44);
	CHECK(gcrec_incomplete(gc) == 0);
	for (uint32_t i = 1; i <= 44; i++) {
		const struct gc_record *r = by_index(&got, i);
		CHECK_MSG(r != NULL, "GC %u missing", i);
		if (!r)
			continue;
		CHECK_MSG(r->complete, "GC %u incomplete", i);
		CHECK(r->start_ns > 0 && r->end_ns >= r->start_ns);
		CHECK(r->pause_ms > 0 && r->pauses >= 1);
		CHECK(r->suspend_ms >= 0 && r->suspend_ms <= r->pause_ms);
	}
	/* Blocking and foreground GCs in index order; each background GC after
	 * the GCs that ran during it, and never before its own start's index. */
	uint32_t last = 0;
	unsigned background = 0;
	for (size_t i = 0; i < got.n; i++) {
		const struct gc_record *r = &got.r[i];
		if (r->type == EV_GC_BACKGROUND) {
			background++;
			CHECK(r->generation == 2);
			CHECK_MSG(r->pauses == 2, "background GC %u: %u pauses", r->index, r->pauses);
			CHECK(last > r->index);
			continue;
		}
		CHECK_MSG(r->index > last, "GC %u after %u", r->index, last);
		last = r->index;
	}
	CHECK(background == 4);
	const struct gc_record *r = by_index(&got, 1);
	CHECK(r && r->generation == 0 && r->type == EV_GC_BLOCKING &&
	      strcmp(gcrec_reason_name(r->reason), "Induced") == 0);
	r = by_index(&got, 2);
	CHECK(r && r->generation == 2 && r->type == EV_GC_BLOCKING);
	r = by_index(&got, 42); /* an ephemeral GC during background GC 41 */
	CHECK(r && r->type == EV_GC_FOREGROUND && r->generation == 0);
	r = by_index(&got, 41);
	CHECK(r && r->type == EV_GC_BACKGROUND && r->start_ns < by_index(&got, 42)->start_ns &&
	      r->end_ns > by_index(&got, 42)->end_ns);
	/* The stall: a GC that waited 1.2 s for a thread in native code. */
	r = by_index(&got, 44);
	CHECK(r && r->pause_ms > 1100 && r->pause_ms < 1300 && r->suspend_ms > 1100);
	/* Sizes after the GC come from its own GCHeapStats. */
	r = by_index(&got, 4);
	CHECK(r && r->size[3] == 1600056 && r->promoted[2] == 294384);
	gcrec_free(gc);

	/* The same trace joined late: the first GC's start is lost. */
	memset(&got, 0, sizeof(got));
	gc = gcrec_new(on_rec, &got);
	CHECK(feed_trace("gc-kinds.nettrace", gc, 4) == 0); /* SuspendBegin, SuspendEnd, Triggered, GCStart */
	gcrec_flush(gc);
	CHECK(got.n == 44 && gcrec_incomplete(gc) == 1);
	r = by_index(&got, 1);
	CHECK(r && !r->complete && !(r->seen & GCREC_SEEN_START) && (r->seen & GCREC_SEEN_HEAP));
	char missing[64];
	if (r) {
		gcrec_missing(r, missing, sizeof(missing));
		CHECK_STR(missing, "start,pause");
	}
	CHECK(by_index(&got, 2) && by_index(&got, 2)->complete);
	gcrec_free(gc);
}

/* --- hand-made sequences --- */

#define MS 1000000LL

static void ev(struct gcrec *g, enum ev_type t, uint64_t tid, int64_t at_ms, uint32_t a, uint32_t b, uint32_t type)
{
	struct ev_record r;
	memset(&r, 0, sizeof(r));
	r.type = t;
	r.thread_id = tid;
	switch (t) {
	case EV_GC_START:
		r.u.gc_start.count = a;
		r.u.gc_start.depth = b;
		r.u.gc_start.type = type;
		break;
	case EV_GC_END:
		r.u.gc_end.count = a;
		r.u.gc_end.depth = b;
		break;
	case EV_GC_SUSPEND_EE_BEGIN:
		r.u.suspend.reason = a;
		break;
	case EV_GC_HEAP_STATS:
		r.u.heap_stats.size[3] = a;
		break;
	default:
		break;
	}
	gcrec_on_event(g, &r, at_ms * MS);
}

/* A whole blocking GC on thread tid from t ms: suspended 1 ms, GC 2 ms. */
static void blocking(struct gcrec *g, uint64_t tid, int64_t t, uint32_t index, uint32_t gen)
{
	ev(g, EV_GC_SUSPEND_EE_BEGIN, tid, t, 1, 0, 0);
	ev(g, EV_GC_SUSPEND_EE_END, tid, t + 1, 0, 0, 0);
	ev(g, EV_GC_START, tid, t + 1, index, gen, EV_GC_BLOCKING);
	ev(g, EV_GC_END, tid, t + 3, index, gen, 0);
	ev(g, EV_GC_HEAP_STATS, tid, t + 3, index * 100, 0, 0);
	ev(g, EV_GC_RESTART_EE_END, tid, t + 4, 0, 0, 0);
}

static void test_sequences(void)
{
	struct got got = {0};
	struct gcrec *g = gcrec_new(on_rec, &got);

	/* In order: each reported at its restart. */
	blocking(g, 1, 10, 1, 0);
	CHECK(got.n == 1 && got.r[0].complete && got.r[0].pause_ms == 4.0 && got.r[0].suspend_ms == 1.0);
	CHECK(got.r[0].size[3] == 100);

	/* Two threads' buffers out of order: GC 3 (thread 2) arrives before GC 2
	 * (thread 1). GC 3 waits for 2, and both come out in order. */
	blocking(g, 2, 40, 3, 0);
	CHECK(got.n == 1);
	blocking(g, 1, 30, 2, 1);
	CHECK(got.n == 3 && got.r[1].index == 2 && got.r[2].index == 3);

	/* A gap: GC 4 never shows up. GC 5 waits, then goes out alone. */
	blocking(g, 1, 100, 5, 0);
	CHECK(got.n == 3);
	gcrec_advance(g, 100 * MS + 500 * MS);
	CHECK(got.n == 4 && got.r[3].index == 5 && got.r[3].complete);

	/* Missing GCHeapStats: reported incomplete after the wait. */
	ev(g, EV_GC_SUSPEND_EE_BEGIN, 1, 1000, 1, 0, 0);
	ev(g, EV_GC_START, 1, 1001, 6, 1, EV_GC_BLOCKING);
	ev(g, EV_GC_END, 1, 1002, 6, 1, 0);
	ev(g, EV_GC_RESTART_EE_END, 1, 1003, 0, 0, 0);
	CHECK(got.n == 4);
	gcrec_advance(g, 1003 * MS + GCREC_WAIT_NS);
	CHECK(got.n == 5 && !got.r[4].complete && got.r[4].index == 6);
	char missing[64];
	gcrec_missing(&got.r[4], missing, sizeof(missing));
	CHECK_STR(missing, "heap-stats");
	CHECK(gcrec_incomplete(g) == 1);

	/* A background GC on its own thread, with the ephemeral GC in its first
	 * suspension and a foreground GC and a final "GC prep" suspension
	 * during it; its thread's events arrive last. */
	ev(g, EV_GC_SUSPEND_EE_BEGIN, 1, 2000, 1, 0, 0);
	ev(g, EV_GC_START, 1, 2001, 7, 2, EV_GC_BACKGROUND);
	ev(g, EV_GC_START, 1, 2001, 8, 1, EV_GC_BLOCKING);
	ev(g, EV_GC_END, 1, 2002, 8, 1, 0);
	ev(g, EV_GC_HEAP_STATS, 1, 2002, 800, 0, 0);
	ev(g, EV_GC_RESTART_EE_END, 1, 2003, 0, 0, 0); /* pause 3 ms */
	CHECK(got.n == 6 && got.r[5].index == 8 && got.r[5].pause_ms == 3.0);
	blocking(g, 1, 2010, 9, 0); /* foreground in all but name */
	CHECK(got.n == 7 && got.r[6].index == 9);
	ev(g, EV_GC_SUSPEND_EE_BEGIN, 5, 2020, 6, 0, 0);
	ev(g, EV_GC_RESTART_EE_END, 5, 2022, 0, 0, 0); /* final pause 2 ms */
	CHECK(got.n == 7);
	ev(g, EV_GC_END, 5, 2030, 7, 2, 0);
	ev(g, EV_GC_HEAP_STATS, 5, 2030, 700, 0, 0);
	CHECK(got.n == 8 && got.r[7].index == 7 && got.r[7].type == EV_GC_BACKGROUND && got.r[7].complete);
	CHECK_MSG(got.r[7].pauses == 2 && got.r[7].pause_ms == 5.0, "%u pauses, %.3f ms", got.r[7].pauses,
	          got.r[7].pause_ms);
	CHECK(got.r[7].size[3] == 700);
	/* The blocking order goes on past the background GC's index. */
	blocking(g, 1, 2100, 10, 0);
	CHECK(got.n == 9 && got.r[8].index == 10);

	/* A GC start without an end, then later GCs: reported incomplete after the
	 * wait, the later ones in order (past the wait for it). */
	ev(g, EV_GC_SUSPEND_EE_BEGIN, 1, 3000, 1, 0, 0);
	ev(g, EV_GC_START, 1, 3001, 11, 0, EV_GC_BLOCKING);
	blocking(g, 2, 3100, 12, 0);
	gcrec_advance(g, 3001 * MS + GCREC_WAIT_NS);
	CHECK(got.n == 11);
	CHECK(got.r[9].index == 11 && !got.r[9].complete);
	CHECK(got.r[10].index == 12 && got.r[10].complete);

	/* A suspension without a GC (a debugger's) is no GC's pause. */
	ev(g, EV_GC_SUSPEND_EE_BEGIN, 1, 4000, 5, 0, 0);
	ev(g, EV_GC_RESTART_EE_END, 1, 4500, 0, 0, 0);
	blocking(g, 1, 4600, 13, 0);
	CHECK(got.n == 12 && got.r[11].pause_ms == 4.0);
	gcrec_free(g);

	/* Bounded: a thousand starts without ends never hold more than
	 * GCREC_OPEN_MAX records; every one is reported by the end. */
	memset(&got, 0, sizeof(got));
	g = gcrec_new(on_rec, &got);
	for (uint32_t i = 1; i <= 1000; i++)
		ev(g, EV_GC_START, 1, i, i, 0, EV_GC_BACKGROUND);
	CHECK(got.n == 1000 - GCREC_OPEN_MAX);
	gcrec_flush(g);
	CHECK(got.n == 1000 && gcrec_incomplete(g) == 1000);
	gcrec_free(g);

	/* Names. */
	CHECK_STR(gcrec_reason_name(0), "AllocSmall");
	CHECK_STR(gcrec_reason_name(1), "Induced");
	CHECK_STR(gcrec_reason_name(7), "InducedNotForced");
	CHECK_STR(gcrec_reason_name(99), "unknown");
	CHECK_STR(gcrec_type_name(EV_GC_FOREGROUND), "foreground");
	CHECK_STR(gcrec_type_name(7), "unknown");
}

int main(void)
{
	test_recorded();
	test_sequences();
	return check_done();
}
