/* The history and GC records of one target, and its dumps' context files;
 * see ctxtrack.h. */
#include "dumpwatch/ctxtrack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/alloctypes.h"
#include "dumpwatch/catalog.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/gcrec.h"
#include "dumpwatch/jsonl.h"
#include "dumpwatch/plot.h"

/* The metrics every history holds, whatever the rules. */
static const enum metric_id base_metrics[] = {
    M_HEAP_SIZE,  M_GEN0_SIZE,      M_GEN1_SIZE,      M_GEN2_SIZE,      M_LOH_SIZE, M_POH_SIZE,
    M_ALLOC_RATE, M_SOH_ALLOC_RATE, M_LOH_ALLOC_RATE, M_POH_ALLOC_RATE, M_GC_PAUSE, M_TIME_IN_GC,
};

struct ctxtrack {
	struct history *h;
	struct metric_ref *ref; /* series i's metric */
	size_t n_ref, cap_ref;
	struct gcrec *gc;
	struct gc_record gcs[DUMPCTX_GCS]; /* ring, oldest at head */
	size_t gc_head, n_gcs;
	/* EventCounters come in a burst per interval (dozens of events):
	 * the history is sampled once for the burst, at the tick. */
	int64_t counters_ns; /* the burst's last event; 0: none pending */
	/* Allocation by type, made at the first allocation tick: a process
	 * whose rules do not subscribe to ticks holds none. */
	struct alloctypes *allocs;
};

static void on_gc(void *ctx, const struct gc_record *rec)
{
	struct ctxtrack *ct = ctx;

	if (ct->n_gcs < DUMPCTX_GCS) {
		ct->gcs[(ct->gc_head + ct->n_gcs++) % DUMPCTX_GCS] = *rec;
	} else {
		ct->gcs[ct->gc_head] = *rec;
		ct->gc_head = (ct->gc_head + 1) % DUMPCTX_GCS;
	}
}

static void add_ref(struct ctxtrack *ct, const struct metric_ref *ref)
{
	if (ct->n_ref == HISTORY_SERIES_MAX)
		return;
	if (ct->n_ref == ct->cap_ref) {
		size_t c = ct->cap_ref ? ct->cap_ref * 2 : 16;
		struct metric_ref *nr = realloc(ct->ref, c * sizeof(*nr));
		if (!nr)
			return;
		ct->ref = nr;
		ct->cap_ref = c;
	}
	int i = history_series(ct->h, ref->name, ref->unit);
	if (i < 0 || (size_t)i != ct->n_ref)
		return; /* known already (or refused) */
	ct->ref[ct->n_ref++] = *ref;
}

struct ctxtrack *ctxtrack_new(int64_t window_ns)
{
	struct ctxtrack *ct = calloc(1, sizeof(*ct));

	if (!ct)
		return NULL;
	if (window_ns <= 0)
		window_ns = DW_DEFAULT_HISTORY_NS;
	int64_t slot = window_ns / DW_HISTORY_POINTS;
	if (slot < DW_HISTORY_SLOT_MIN_NS)
		slot = DW_HISTORY_SLOT_MIN_NS;
	slot -= slot % 1000000; /* whole milliseconds */
	if (window_ns < slot)
		window_ns = slot;
	ct->h = history_new(window_ns, slot);
	ct->gc = gcrec_new(on_gc, ct);
	if (!ct->h || !ct->gc) {
		ctxtrack_free(ct);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(base_metrics) / sizeof(base_metrics[0]); i++) {
		struct metric_ref ref;
		char err[256];
		if (catalog_resolve(catalog_id_name(base_metrics[i]), &ref, err, sizeof(err)) == 0)
			add_ref(ct, &ref);
	}
	return ct;
}

void ctxtrack_free(struct ctxtrack *ct)
{
	if (!ct)
		return;
	history_free(ct->h);
	gcrec_free(ct->gc);
	alloctypes_free(ct->allocs);
	free(ct->ref);
	free(ct);
}

void ctxtrack_add_conditions(struct ctxtrack *ct, const struct rule *r)
{
	for (uint32_t i = 0; i < r->n_conds && i < RULE_MAX_CONDS; i++)
		add_ref(ct, &r->conds[i].metric);
}

/* Samples the series whose metric needs any of need; all with need 0.
 *
 * A value goes in at the time it was measured, not at t_ns: a size read at
 * a tick (or at the fire) is the one the last event processed left, and
 * events that happened before t_ns may still be on their way (the runtime
 * flushes its buffers every 100 ms). Written at t_ns, such a stale value
 * would be the latest of its slot and hide what those events show: the
 * demo's heap at 500 MB at the fire, while the events after it, processed
 * later with earlier times, had it at 600 MB. A value that is a function of
 * t_ns (rates, which say so; the exceptions counted over a window ending at
 * t_ns, which give their last exception's time) goes in at t_ns; one
 * measured before the window, at the window's start, where it held. */
static void sample_some(struct ctxtrack *ct, const struct metrics *m, int64_t t_ns, unsigned need)
{
	struct metrics_at at = {.m = m, .now_ns = t_ns};
	int64_t oldest = t_ns - history_window_ns(ct->h) + history_slot_ns(ct->h);

	for (size_t i = 0; i < ct->n_ref; i++) {
		double v;
		int64_t when = 0;
		if ((need && !(ct->ref[i].needs & need)) || metrics_read_eval(&at, &ct->ref[i], &v, &when) <= 0)
			continue;
		if (ct->ref[i].id == M_EXCEPTIONS || when <= 0 || when > t_ns)
			when = t_ns;
		else if (when < oldest)
			when = oldest;
		history_add(ct->h, i, when, v);
	}
}

static void sample(struct ctxtrack *ct, const struct metrics *m, int64_t t_ns)
{
	sample_some(ct, m, t_ns, 0);
}

void ctxtrack_on_proc(struct ctxtrack *ct, const struct metrics *m, int64_t t_ns)
{
	sample_some(ct, m, t_ns, NEED_PROC);
}

void ctxtrack_on_event(struct ctxtrack *ct, const struct metrics *m, const struct ev_record *r, int64_t t_ns)
{
	gcrec_on_event(ct->gc, r, t_ns);
	if (r->type == EV_GC_ALLOC_TICK) {
		if (!ct->allocs)
			ct->allocs = alloctypes_new(history_window_ns(ct->h), 0);
		if (ct->allocs)
			alloctypes_on_event(ct->allocs, r, t_ns);
	}
	if (r->type == EV_COUNTER || r->type == EV_EXCEPTION_THROWN) {
		/* Counters come in bursts, exceptions can come by the thousand:
		 * sampled once, at the next tick. */
		ct->counters_ns = t_ns;
	} else if (metrics_event_matters(r)) {
		sample(ct, m, t_ns);
		ct->counters_ns = 0;
	}
}

void ctxtrack_tick(struct ctxtrack *ct, const struct metrics *m, int64_t now_ns)
{
	gcrec_advance(ct->gc, now_ns);
	if (!m)
		return;
	if (ct->counters_ns)
		sample(ct, m, ct->counters_ns);
	ct->counters_ns = 0;
	sample(ct, m, now_ns);
}

void ctxtrack_session_end(struct ctxtrack *ct)
{
	struct gcrec *fresh = gcrec_new(on_gc, ct);

	gcrec_flush(ct->gc);
	if (fresh) {
		gcrec_free(ct->gc);
		ct->gc = fresh;
	}
}

/* The plot of ctx as a malloc'd string. 0 or -errno. */
static int render_svg(struct json_object *ctx, char **ret, size_t *ret_len, char *err, size_t errlen)
{
	FILE *f = open_memstream(ret, ret_len);
	if (!f) {
		snprintf(err, errlen, "cannot draw the plot: %s", strerror(errno));
		return -ENOMEM;
	}
	int r = plot_svg(f, ctx, err, errlen);
	if (fclose(f) != 0 && r == 0) {
		snprintf(err, errlen, "cannot draw the plot: out of memory");
		r = -ENOMEM;
	}
	if (r < 0) {
		free(*ret);
		*ret = NULL;
	}
	return r;
}

int ctxtrack_publish(struct ctxtrack *ct, struct dumpctx_input *in, int dirfd, const struct store_limits *limits,
                     char *json_path, char *svg_path, char *err, size_t errlen)
{
	struct gc_record gcs[DUMPCTX_GCS];
	char *json = NULL, *svg = NULL;
	size_t jlen = 0, slen = 0;
	int r;

	for (size_t k = 0; k < ct->n_gcs; k++)
		gcs[k] = ct->gcs[(ct->gc_head + k) % DUMPCTX_GCS];
	in->history = ct->h;
	in->gcs = gcs;
	in->n_gcs = ct->n_gcs;
	in->allocs = ct->allocs;
	struct json_object *ctx = dumpctx_build(in);
	if (!ctx) {
		snprintf(err, errlen, "cannot build the dump's context: out of memory");
		return -ENOMEM;
	}
	r = jsonl_format(ctx, &json, &jlen);
	if (r < 0)
		snprintf(err, errlen, "cannot write the dump's context: %s", strerror(-r));
	else
		r = render_svg(ctx, &svg, &slen, err, errlen);
	json_object_put(ctx);
	if (r == 0)
		r = store_put_context(dirfd, in->dump_name, limits, json, jlen, svg, slen, err, errlen);
	if (r == 0) {
		char jn[NAME_MAX + 8], sn[NAME_MAX + 8];
		store_context_names(in->dump_name, jn, sizeof(jn), sn, sizeof(sn));
		snprintf(json_path, PATH_MAX, "%s/%s", in->dump_dir, jn);
		snprintf(svg_path, PATH_MAX, "%s/%s", in->dump_dir, sn);
	}
	free(json);
	free(svg);
	return r;
}

const struct history *ctxtrack_history(const struct ctxtrack *ct)
{
	return ct->h;
}

size_t ctxtrack_bytes(const struct ctxtrack *ct)
{
	return sizeof(*ct) + ct->cap_ref * sizeof(*ct->ref) + history_bytes(ct->h) + gcrec_bytes(ct->gc) +
	       (ct->allocs ? alloctypes_bytes(ct->allocs) : 0);
}
