/* Metric state of one process. See metrics.h.
 *
 * Design note: heap sizes are exact only at the end of a GC (GCHeapStats).
 * Between GCs the runtime reports allocations through GCAllocationTick events,
 * each carrying the bytes allocated since the previous tick of its kind, so
 * the live estimate of a generation is "its size at the last GC end plus the
 * ticks of its kind since then". LOH and POH grow only by allocation between
 * GCs, so their estimates are close; heap-size adds small-object ticks to the
 * gen0 figure, which is what GC.GetTotalMemory reports too.
 *
 * Events reach us in per-thread blocks, not in time order: a background GC's
 * GCHeapStats (written by the GC thread) can arrive after allocation ticks of
 * the application thread stamped later than it. So the estimate goes by
 * timestamps: the newest heap statistics by time, plus the ticks stamped after
 * them, whichever arrived first. Recent ticks are kept in a ring for that.
 *
 * Right after the attach no GC has been seen, and the runtime does not say
 * what its heap holds until the next one. The System.Runtime counters do, at
 * their first sample (one interval after the session starts): gen-0-size ..
 * poh-size are the sizes at the end of the last GC (GC.GetGenerationSize
 * reads the figures GCHeapStats carries), and gc-heap-size is the heap in use
 * now (GC.GetTotalMemory(false): segments as allocated now, less free space).
 * The difference between that and the heap in use at the last GC (its size
 * less gc-fragmentation) is what was allocated since the last GC, of every
 * kind. So from one complete sample:
 *   gen0/gen1/gen2-size  exact (the last GC's, as GCHeapStats would say);
 *   heap-size            exact: the last GC's sizes plus everything since;
 *   loh-size             the last GC's LOH plus everything allocated since:
 *                        high by the small and pinned bytes of that span;
 *   poh-size             the last GC's POH: low by the pinned bytes since.
 * Such a seed is replaced by every complete sample until a GC is seen; from
 * then on the GC's figures rule. Until either, the sizes are unknown.
 *
 * Rates and time-in-gc count from the session's start and are known once a
 * second has passed; gc-rate divides by the time since the start until its
 * window is full.
 *
 * AppDomain figures (a .NET Core process has one AppDomain; .NET 5+ never
 * fires the AppDomainMemAllocated/Survived events, which are used when a
 * runtime does): allocated is the sum of the allocation ticks (each carries
 * the bytes since the previous one, so the sum trails by less than one tick's
 * worth, ~100 KB, per kind and heap), or without ticks the System.Runtime
 * allocation counter's sum (once per interval); survived is the heap after the last GC;
 * freed is what was allocated after the first GC seen minus how much the heap
 * grew since then. */
#include "dumpwatch/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/units.h"

#define BUCKET_NS 10000000LL /* 10 ms buckets */
/* The runtime delivers events up to 100 ms after they happen (its streaming
 * thread flushes, then sleeps 100 ms): a rate read "now" would miss the last
 * tenth of its window. Rates end at the newest event seen, or RATE_LAG_NS
 * before now when the stream is quiet, so they still decay to zero. */
#define RATE_LAG_NS 200000000LL
#define N_BUCKETS ((int)(METRICS_RATE_WINDOW_NS / BUCKET_NS))
#define GC_RING 1024
#define MAX_COUNTERS 256
/* Ticks kept to re-add those newer than late-arriving heap statistics: at one
 * tick per ~100 KB of small objects (one per large object) this covers
 * ~400 MB of allocation between two GC ends. */
#define TICK_RING 4096
/* time-in-gc: suspensions of this window. */
#define GC_TIME_WINDOW_NS 10000000000LL
#define PAUSE_RING 1024
/* GCSuspendEEBegin reasons that are GC suspensions (for GC, GC prep). */
#define SUSPEND_FOR_GC 1
#define SUSPEND_FOR_GC_PREP 6
/* Rates, gc-rate and time-in-gc are known this long after the start. */
#define KNOWN_AFTER_NS 1000000000LL
/* The counters of one sample are polled within this span of each other. */
#define SAMPLE_SKEW_NS 500000000LL

/* The System.Runtime counters a seed is made of. */
enum { RC_HEAP, RC_GEN0, RC_GEN1, RC_GEN2, RC_LOH, RC_POH, RC_FRAG, RC_N };
static const char *const rc_names[RC_N] = {"gc-heap-size", "gen-0-size", "gen-1-size",      "gen-2-size",
                                           "loh-size",     "poh-size",   "gc-fragmentation"};

struct rate {
	int64_t bucket_id[N_BUCKETS]; /* which 10 ms slot each bucket holds */
	uint64_t bytes[N_BUCKETS];
	int64_t last_ns; /* time of the last sample, 0 when none */
};

struct counter_value {
	char provider[EV_NAME_MAX];
	char name[EV_NAME_MAX];
	char units[EV_UNITS_MAX];
	double value;
	int64_t t_ns;
};

/* The exceptions one exception condition counts: their times, oldest at
 * head (pruned as the window passes), and the last one's type and message. */
struct exc_filter {
	struct metric_ref ref;
	int64_t t_ns[CATALOG_EXC_COUNT_MAX];
	uint32_t head, n;
	int64_t last_ns;
	char last_type[EV_EXC_TYPE_MAX], last_message[EV_EXC_MESSAGE_MAX];
	uint32_t last_hresult;
	uint16_t last_flags;
};

/* A ring of recent items, oldest first, that grows by doubling up to a
 * maximum and then forgets its oldest: a session holds memory for what its
 * process sends, not for the most it could (a ring's whole maximum, zeroed,
 * for every session, was most of a guard's resident set). */
struct ring {
	unsigned char *p;
	uint32_t head, n, cap;
};

/* The i-th oldest item (i < n). */
static void *ring_at(const struct ring *r, size_t size, uint32_t i)
{
	return r->p + (size_t)((r->head + i) % r->cap) * size;
}

/* A slot for a new newest item: the ring grows while under max items, then
 * the oldest is forgotten. NULL only when there is no slot and no memory. */
static void *ring_push(struct ring *r, size_t size, uint32_t max)
{
	if (r->n == r->cap && r->cap < max) {
		uint32_t cap = r->cap ? (r->cap * 2 < max ? r->cap * 2 : max) : (16 < max ? 16 : max);
		unsigned char *p = malloc((size_t)cap * size);
		if (p) {
			for (uint32_t i = 0; i < r->n; i++)
				memcpy(p + (size_t)i * size, ring_at(r, size, i), size);
			free(r->p);
			r->p = p;
			r->head = 0;
			r->cap = cap;
		}
	}
	if (r->cap == 0)
		return NULL;
	if (r->n == r->cap) {
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	return ring_at(r, size, r->n++);
}

struct tick {
	int64_t t_ns;
	uint64_t amount;
	uint32_t kind;
};

struct pause {
	int64_t begin_ns, end_ns;
};

struct metrics {
	/* Heap at the last GC end: from a GC seen (have_heap) or from the
	 * counters (have_seed, until a GC is seen); heap_ns is when the figures
	 * were taken, and ticks after it are added to them. */
	int have_heap, have_seed;
	uint64_t size[5], promoted[5];
	int64_t heap_ns;
	/* A seed's bytes allocated between the last GC and its sample, of every
	 * kind (counted in heap-size and, as an upper bound, in loh-size). */
	uint64_t seed_since;
	struct {
		double value;
		int64_t t_ns;
		int have;
	} rc[RC_N];
	/* When the session started (when not told, the first event). */
	int64_t start_ns;
	int have_start;
	/* Bytes allocated by kind after heap_ns (from ticks). */
	uint64_t since_gc[3];
	int64_t since_gc_ns;
	/* Recent ticks stamped after heap_ns, oldest first (struct tick). */
	struct ring ticks;
	/* Cumulative allocation since the session began. */
	uint64_t allocated_total;
	int have_alloc;
	int64_t alloc_ns;
	/* The allocation counter (System.Runtime alloc-rate increments) and the
	 * tick total when its last sample arrived. */
	double counter_alloc_total;
	int have_counter_alloc;
	int64_t counter_alloc_ns;
	double counter_alloc_rate; /* bytes a second over its last interval */
	uint32_t counter_alloc_samples; /* of this session: the first one's increment is not of one interval */
	/* Allocation ticks that come and go (metrics_ticks_gated): when the
	 * current span of them began, 0 while they do not come. */
	int ticks_gated;
	int64_t ticks_on_ns;
	/* Gated: the sizes as of the latest complete System.Runtime sample
	 * (upper bounds: loh, poh, heap) and the ticks stamped after it, by
	 * kind. They stand for the span from the last GC to the ticks' start,
	 * which no tick covers (see metrics_read). */
	int have_gs;
	unsigned gs_seen; /* the sample's counters arrived since the last one taken (bits RC_HEAP..RC_POH) */
	int64_t gs_ns;
	double gs_size[3];
	uint64_t gs_after[3];
	/* The heap and the allocation total as of the first GC seen. */
	uint64_t heap_at_first_gc, alloc_at_first_gc;
	int64_t first_heap_ns;
	int have_first_heap;
	/* AppDomainMemAllocated / AppDomainMemSurvived, when a runtime fires them. */
	uint64_t ad_allocated, ad_survived;
	int64_t ad_allocated_ns, ad_survived_ns;
	int have_ad_allocated, have_ad_survived;

	struct rate rates[3];

	/* GCs. */
	uint64_t gc_count;
	int64_t suspend_ns; /* 0 when no GC suspension is open */
	int have_pause;
	double pause_ms; /* the last suspension, suspend-begin to restart-end */
	int64_t pause_end_ns;
	struct ring gc_end[3]; /* the end times (int64_t) of recent GCs of each generation */
	/* Recent GC suspensions, for time-in-gc (struct pause). */
	struct ring pauses;
	int64_t first_ns; /* the first event's time: time-in-gc's window starts no earlier */
	int have_first;
	int64_t latest_ns; /* the newest event's time */

	struct counter_value *counters; /* grown as counters arrive, to MAX_COUNTERS */
	size_t n_counters, cap_counters;

	/* The last poll of /proc. */
	struct proc_sample proc;
	int64_t proc_ns;

	/* First-chance exceptions: all of them, and those of each condition. */
	struct rate exc_rate;
	uint64_t exc_total;
	struct exc_filter *exc[METRICS_EXC_FILTERS_MAX];
	size_t n_exc;

	/* System.Diagnostics.Metrics, from the first value published. */
	struct meters *meters;
	int64_t meter_interval_ns;
};

struct metrics *metrics_new(void)
{
	return calloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_exc; i++)
		free(m->exc[i]);
	meters_free(m->meters);
	free(m->ticks.p);
	for (int g = 0; g < 3; g++)
		free(m->gc_end[g].p);
	free(m->pauses.p);
	free(m->counters);
	free(m);
}

static void rate_add(struct rate *r, int64_t t_ns, uint64_t bytes)
{
	int64_t id = t_ns / BUCKET_NS;
	int i = (int)(id % N_BUCKETS);

	if (r->bucket_id[i] != id) {
		r->bucket_id[i] = id;
		r->bytes[i] = 0;
	}
	r->bytes[i] += bytes;
	if (t_ns > r->last_ns)
		r->last_ns = t_ns;
}

/* Bytes per second over the window ending at now. */
static double rate_get(const struct rate *r, int64_t now_ns)
{
	int64_t now_id = now_ns / BUCKET_NS;
	uint64_t sum = 0;

	for (int i = 0; i < N_BUCKETS; i++)
		if (r->bucket_id[i] > now_id - N_BUCKETS && r->bucket_id[i] <= now_id)
			sum += r->bytes[i];
	return (double)sum * 1e9 / (double)METRICS_RATE_WINDOW_NS;
}

/* Recomputes the bytes allocated after heap_ns from the kept ticks. A GC's
 * figures (drop) make the ticks at or before them useless, so they go; a
 * seed's do not, as a GC older than the seed may still arrive. */
static void rebase_ticks(struct metrics *m, int drop)
{
	uint32_t kept = 0;

	memset(m->since_gc, 0, sizeof(m->since_gc));
	m->since_gc_ns = 0;
	for (uint32_t i = 0; i < m->ticks.n; i++) {
		const struct tick *from = ring_at(&m->ticks, sizeof(*from), i);
		if (from->t_ns <= m->heap_ns) {
			if (drop)
				continue;
		} else {
			m->since_gc[from->kind] += from->amount;
			if (from->t_ns > m->since_gc_ns)
				m->since_gc_ns = from->t_ns;
		}
		*(struct tick *)ring_at(&m->ticks, sizeof(struct tick), kept) = *from;
		kept++;
	}
	m->ticks.n = kept;
}

static int sample_heap(const struct metrics *m, int64_t *at, double *gross, double *since);

/* Takes the sizes from the latest System.Runtime sample when it is complete
 * (see the design note) and no GC has been seen. */
static void try_seed(struct metrics *m)
{
	int64_t at;
	double gross, since;

	if (m->have_heap || !sample_heap(m, &at, &gross, &since))
		return;
	for (int i = 0; i < 5; i++) {
		double v = m->rc[RC_GEN0 + i].value;
		m->size[i] = v > 0 && v < 1e19 ? (uint64_t)v : 0;
	}
	m->seed_since = since < 1e19 ? (uint64_t)since : 0;
	memset(m->promoted, 0, sizeof(m->promoted));
	m->heap_ns = at;
	m->have_seed = 1;
	rebase_ticks(m, 0);
}

static void gc_ring_push(struct metrics *m, uint32_t gen, int64_t t_ns)
{
	if (gen > 2)
		gen = 2;
	int64_t *slot = ring_push(&m->gc_end[gen], sizeof(*slot), GC_RING);
	if (slot)
		*slot = t_ns;
}

/* The session's start, or the first event when not told. */
static int started(const struct metrics *m, int64_t *start)
{
	if (m->have_start) {
		*start = m->start_ns;
		return 1;
	}
	*start = m->first_ns;
	return m->have_first;
}

static double gc_rate(const struct metrics *m, int gen, int64_t now_ns)
{
	uint32_t n = 0;

	for (int g = 0; g < 3; g++) {
		if (gen >= 0 && g != gen)
			continue;
		for (uint32_t i = 0; i < m->gc_end[g].n; i++) {
			int64_t t = *(const int64_t *)ring_at(&m->gc_end[g], sizeof(int64_t), i);
			if (t > now_ns - METRICS_GC_RATE_WINDOW_NS && t <= now_ns)
				n++;
		}
	}
	/* Until the window is full, over the time since the start. */
	int64_t start, span = METRICS_GC_RATE_WINDOW_NS;
	if (started(m, &start) && now_ns - start < span)
		span = now_ns - start;
	return span > 0 ? (double)n * 1e9 / (double)span : 0;
}

/* Percent of the window ending at now that GC suspensions took. */
static double time_in_gc(const struct metrics *m, int64_t now_ns)
{
	int64_t from = now_ns - GC_TIME_WINDOW_NS, sum = 0, start;

	if (started(m, &start) && from < start)
		from = start;
	if (now_ns <= from)
		return 0;
	for (uint32_t i = 0; i < m->pauses.n; i++) {
		const struct pause *p = ring_at(&m->pauses, sizeof(*p), m->pauses.n - 1 - i);
		int64_t b = p->begin_ns, e = p->end_ns;
		if (e <= from)
			continue;
		if (b < from)
			b = from;
		if (e > now_ns)
			e = now_ns;
		if (e > b)
			sum += e - b;
	}
	return 100.0 * (double)sum / (double)(now_ns - from);
}

static int64_t later(int64_t a, int64_t b);

/* The latest System.Runtime sample when it is complete (its heap and
 * generation sizes within SAMPLE_SKEW_NS of each other): *at when it was
 * taken, *gross the generations' sizes at the last GC, *since what was
 * allocated after it (the heap's size now less the part of those sizes not
 * fragmented; 0 when less). 1, or 0 without one. */
static int sample_heap(const struct metrics *m, int64_t *at, double *gross, double *since)
{
	int64_t newest = 0, oldest = INT64_MAX;
	for (int i = RC_HEAP; i <= RC_POH; i++) {
		if (!m->rc[i].have)
			return 0;
		newest = later(newest, m->rc[i].t_ns);
		if (m->rc[i].t_ns < oldest)
			oldest = m->rc[i].t_ns;
	}
	if (newest - oldest > SAMPLE_SKEW_NS)
		return 0;
	double frag_pct = 0;
	*gross = 0;
	for (int i = RC_GEN0; i <= RC_POH; i++)
		*gross += m->rc[i].value > 0 ? m->rc[i].value : 0;
	if (m->rc[RC_FRAG].have && newest - m->rc[RC_FRAG].t_ns <= SAMPLE_SKEW_NS && m->rc[RC_FRAG].value > 0 &&
	    m->rc[RC_FRAG].value < 100)
		frag_pct = m->rc[RC_FRAG].value;
	*since = m->rc[RC_HEAP].value * 1e6 - *gross * (1.0 - frag_pct / 100.0); /* reported in MB */
	if (!(*since > 0))
		*since = 0;
	*at = newest;
	return 1;
}

/* From the latest complete System.Runtime sample (sample_heap): the last
 * GC's LOH, POH and whole heap, each plus everything allocated since, of
 * every kind; *at when it was taken. 1, or 0 without one. */
static int sample_sizes(const struct metrics *m, double sizes[3], int64_t *at)
{
	double gross, since;
	if (!sample_heap(m, at, &gross, &since))
		return 0;
	sizes[0] = (m->rc[RC_LOH].value > 0 ? m->rc[RC_LOH].value : 0) + since;
	sizes[1] = (m->rc[RC_POH].value > 0 ? m->rc[RC_POH].value : 0) + since;
	sizes[2] = gross + since;
	return 1;
}

/* Gated: a new complete sample replaces the one the sizes fall back on once
 * each of its counters has arrived again (by arrival, not by time: a runtime
 * whose clock repeats itself still replaces it). */
static void take_gated_sample(struct metrics *m, int rc)
{
	double sizes[3];
	int64_t at;
	const unsigned all = (1u << (RC_POH + 1)) - 1;
	if (!m->ticks_gated || rc > RC_POH)
		return;
	m->gs_seen |= 1u << rc;
	if (m->gs_seen != all || !sample_sizes(m, sizes, &at))
		return;
	m->gs_seen = 0;
	m->have_gs = 1;
	m->gs_ns = at;
	memcpy(m->gs_size, sizes, sizeof(sizes));
	memset(m->gs_after, 0, sizeof(m->gs_after));
	for (uint32_t i = 0; i < m->ticks.n; i++) {
		const struct tick *k = ring_at(&m->ticks, sizeof(*k), i);
		if (k->t_ns > at)
			m->gs_after[k->kind] += k->amount;
	}
}

static void on_counter(struct metrics *m, const struct ev_counter *c, int64_t t_ns)
{
	struct counter_value *cv = NULL;

	if (c->is_increment && strcmp(c->provider, "System.Runtime") == 0 && strcmp(c->name, "alloc-rate") == 0) {
		m->counter_alloc_total += c->value;
		m->have_counter_alloc = 1;
		m->counter_alloc_ns = t_ns;
		m->counter_alloc_rate = c->interval_sec > 0 ? c->value / c->interval_sec : c->value;
		m->counter_alloc_samples++;
	}

	for (size_t i = 0; i < m->n_counters; i++)
		if (strcmp(m->counters[i].name, c->name) == 0 && strcmp(m->counters[i].provider, c->provider) == 0) {
			cv = &m->counters[i];
			break;
		}
	if (!cv) {
		if (m->n_counters == MAX_COUNTERS)
			return; /* bounded: a provider publishing thousands of counters */
		if (m->n_counters == m->cap_counters) {
			size_t cap = m->cap_counters ? m->cap_counters * 2 : 32;
			struct counter_value *p = realloc(m->counters, cap * sizeof(*p));
			if (!p)
				return;
			m->counters = p;
			m->cap_counters = cap;
		}
		cv = &m->counters[m->n_counters++];
		snprintf(cv->provider, sizeof(cv->provider), "%s", c->provider);
		snprintf(cv->name, sizeof(cv->name), "%s", c->name);
	}
	cv->value = c->value;
	cv->t_ns = t_ns;
	snprintf(cv->units, sizeof(cv->units), "%s", c->display_units);

	if (strcmp(c->provider, "System.Runtime") != 0 || c->is_increment)
		return;
	for (int i = 0; i < RC_N; i++)
		if (strcmp(c->name, rc_names[i]) == 0) {
			m->rc[i].value = c->value;
			m->rc[i].t_ns = t_ns;
			m->rc[i].have = 1;
			try_seed(m);
			take_gated_sample(m, i);
			break;
		}
}

static int have_sizes(const struct metrics *m);

int metrics_read_at(void *ctx, const struct metric_ref *ref, double *value, int64_t *sample_ns)
{
	const struct metrics_at *at = ctx;
	return metrics_read(at->m, ref, at->now_ns, value, sample_ns);
}

int metrics_read_floor(const struct metrics *m, const struct metric_ref *ref, double *value, int64_t *sample_ns)
{
	/* Before any GC or sample, since_gc holds every tick since the start:
	 * no GC has freed them, so the heap holds at least that much. */
	if (have_sizes(m) || !m->have_alloc)
		return 0;
	switch (ref->id) {
	case M_LOH_SIZE:
		*value = (double)m->since_gc[EV_ALLOC_LARGE];
		break;
	case M_POH_SIZE:
		*value = (double)m->since_gc[EV_ALLOC_PINNED];
		break;
	case M_HEAP_SIZE:
		*value = (double)(m->since_gc[0] + m->since_gc[1] + m->since_gc[2]);
		break;
	default:
		return 0;
	}
	*sample_ns = m->since_gc_ns;
	return 1;
}

int metrics_read_eval(void *ctx, const struct metric_ref *ref, double *value, int64_t *sample_ns)
{
	const struct metrics_at *at = ctx;
	if (metrics_read(at->m, ref, at->now_ns, value, sample_ns))
		return 1;
	return metrics_read_floor(at->m, ref, value, sample_ns) ? 2 : 0;
}

int metrics_event_matters(const struct ev_record *r)
{
	switch (r->type) {
	case EV_COUNTER:
	case EV_GC_ALLOC_TICK:
	case EV_GC_HEAP_STATS:
	case EV_GC_RESTART_EE_END:
	case EV_GC_END:
	case EV_EXCEPTION_THROWN:
	case EV_METER_VALUE:
		return 1;
	default:
		return 0;
	}
}

static int same_filter(const struct metric_ref *a, const struct metric_ref *b)
{
	return a->window_ns == b->window_ns && strcmp(a->exc_type, b->exc_type) == 0 &&
	       strcmp(a->exc_message, b->exc_message) == 0;
}

static struct exc_filter *find_filter(const struct metrics *m, const struct metric_ref *ref)
{
	for (size_t i = 0; i < m->n_exc; i++)
		if (same_filter(&m->exc[i]->ref, ref))
			return m->exc[i];
	return NULL;
}

int metrics_watch_exceptions(struct metrics *m, const struct metric_ref *ref)
{
	if (ref->id != M_EXCEPTIONS)
		return -EINVAL;
	if (find_filter(m, ref))
		return 0;
	if (m->n_exc == METRICS_EXC_FILTERS_MAX)
		return -ENOSPC;
	struct exc_filter *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->ref = *ref;
	m->exc[m->n_exc++] = f;
	return 0;
}

void metrics_unwatch_exceptions(struct metrics *m, const struct metric_ref *const *keep, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n_exc; i++) {
		int kept = 0;
		for (size_t j = 0; j < n && !kept; j++)
			kept = same_filter(&m->exc[i]->ref, keep[j]);
		if (kept)
			m->exc[k++] = m->exc[i];
		else
			free(m->exc[i]);
	}
	m->n_exc = k;
}

/* Drops the times that have left the window ending at now_ns. */
static void filter_prune(struct exc_filter *f, int64_t now_ns)
{
	while (f->n > 0 && f->t_ns[f->head] < now_ns - f->ref.window_ns) {
		f->head = (f->head + 1) % CATALOG_EXC_COUNT_MAX;
		f->n--;
	}
}

static void on_exception(struct metrics *m, const struct ev_exception *x, int64_t t_ns)
{
	m->exc_total++;
	rate_add(&m->exc_rate, t_ns, 1);
	for (size_t i = 0; i < m->n_exc; i++) {
		struct exc_filter *f = m->exc[i];
		if (!catalog_exception_matches(&f->ref, x->type, x->message))
			continue;
		filter_prune(f, t_ns);
		if (f->n == CATALOG_EXC_COUNT_MAX) { /* the oldest goes: the count is capped */
			f->head = (f->head + 1) % CATALOG_EXC_COUNT_MAX;
			f->n--;
		}
		f->t_ns[(f->head + f->n) % CATALOG_EXC_COUNT_MAX] = t_ns;
		f->n++;
		if (t_ns >= f->last_ns) {
			f->last_ns = t_ns;
			memcpy(f->last_type, x->type, sizeof(f->last_type));
			memcpy(f->last_message, x->message, sizeof(f->last_message));
			f->last_hresult = x->hresult;
			f->last_flags = x->flags;
		}
	}
}

/* The exceptions of f thrown within the window ending at now_ns. */
static uint32_t filter_count(const struct exc_filter *f, int64_t now_ns)
{
	uint32_t k = 0;

	while (k < f->n && f->t_ns[(f->head + k) % CATALOG_EXC_COUNT_MAX] < now_ns - f->ref.window_ns)
		k++;
	return f->n - k;
}

int metrics_exception_last(const struct metrics *m, const struct metric_ref *ref, struct metrics_exception *out)
{
	const struct exc_filter *f = find_filter(m, ref);

	if (!f || f->last_ns == 0)
		return 0;
	out->type = f->last_type;
	out->message = f->last_message;
	out->hresult = f->last_hresult;
	out->flags = f->last_flags;
	out->t_ns = f->last_ns;
	return 1;
}

void metrics_on_event(struct metrics *m, const struct ev_record *r, int64_t t_ns)
{
	if (!m->have_first || t_ns < m->first_ns) {
		m->first_ns = t_ns;
		m->have_first = 1;
	}
	if (t_ns > m->latest_ns)
		m->latest_ns = t_ns;
	switch (r->type) {
	case EV_COUNTER:
		on_counter(m, &r->u.counter, t_ns);
		break;
	case EV_METER_VALUE:
		if (!m->meters && (m->meters = meters_new()) != NULL)
			meters_set_interval(m->meters, m->meter_interval_ns);
		if (m->meters)
			meters_on_value(m->meters, &r->u.meter, t_ns);
		break;
	case EV_GC_ALLOC_TICK: {
		uint32_t k = r->u.alloc.kind <= EV_ALLOC_PINNED ? r->u.alloc.kind : EV_ALLOC_SMALL;
		/* A tick stamped before the newest heap statistics is already in
		 * them; one before a seed is in its figures, but kept for a GC
		 * older than the seed that may still arrive. */
		if (!m->have_heap || t_ns > m->heap_ns) {
			if (!m->have_seed || t_ns > m->heap_ns) {
				m->since_gc[k] += r->u.alloc.amount;
				if (t_ns > m->since_gc_ns)
					m->since_gc_ns = t_ns;
			}
			/* Full: the oldest is forgotten. */
			struct tick *slot = ring_push(&m->ticks, sizeof(*slot), TICK_RING);
			if (slot)
				*slot = (struct tick){t_ns, r->u.alloc.amount, k};
		}
		rate_add(&m->rates[k], t_ns, r->u.alloc.amount);
		/* Only ticks of the span the ticks cover: a runtime's clock that
		 * goes back (a replay) adds nothing. */
		if (m->have_gs && t_ns > m->gs_ns && t_ns >= m->ticks_on_ns)
			m->gs_after[k] += r->u.alloc.amount;
		m->allocated_total += r->u.alloc.amount;
		/* Arrived late but allocated before the first GC seen. */
		if (m->have_first_heap && t_ns <= m->first_heap_ns)
			m->alloc_at_first_gc += r->u.alloc.amount;
		m->have_alloc = 1;
		m->alloc_ns = t_ns;
		break;
	}
	case EV_GC_SUSPEND_EE_BEGIN:
		/* Suspensions for other reasons (a debugger) are not GC pauses. */
		m->suspend_ns =
		    r->u.suspend.reason == SUSPEND_FOR_GC || r->u.suspend.reason == SUSPEND_FOR_GC_PREP ? t_ns : 0;
		break;
	case EV_GC_RESTART_EE_END:
		/* Suspensions do not overlap: this restart ends the open suspension,
		 * whichever GC (foreground or background phase) it served. Each
		 * suspension is a pause (gcrec.h attributes them to GCs). */
		if (m->suspend_ns && t_ns >= m->suspend_ns) {
			m->have_pause = 1;
			m->pause_ms = (double)(t_ns - m->suspend_ns) / 1e6;
			m->pause_end_ns = t_ns;
			struct pause *p = ring_push(&m->pauses, sizeof(*p), PAUSE_RING);
			if (p)
				*p = (struct pause){m->suspend_ns, t_ns};
		}
		m->suspend_ns = 0;
		break;
	case EV_APPDOMAIN_MEM_ALLOCATED:
		m->ad_allocated = r->u.appdomain.bytes;
		m->ad_allocated_ns = t_ns;
		m->have_ad_allocated = 1;
		break;
	case EV_EXCEPTION_THROWN:
		on_exception(m, &r->u.exception, t_ns);
		break;
	case EV_APPDOMAIN_MEM_SURVIVED:
		m->ad_survived = r->u.appdomain.bytes;
		m->ad_survived_ns = t_ns;
		m->have_ad_survived = 1;
		break;
	case EV_GC_END:
		gc_ring_push(m, r->u.gc_end.depth, t_ns);
		m->gc_count++;
		break;
	case EV_GC_HEAP_STATS:
		/* Statistics older than the newest we hold describe the past. */
		if (m->have_heap && t_ns < m->heap_ns)
			break;
		memcpy(m->size, r->u.heap_stats.size, sizeof(m->size));
		memcpy(m->promoted, r->u.heap_stats.promoted, sizeof(m->promoted));
		m->have_heap = 1;
		m->have_seed = 0;
		m->seed_since = 0;
		m->heap_ns = t_ns;
		rebase_ticks(m, 1);
		if (!m->have_first_heap) {
			m->have_first_heap = 1;
			m->first_heap_ns = t_ns;
			for (int i = 0; i < 5; i++)
				m->heap_at_first_gc += m->size[i];
			/* What is allocated from here on, as of this GC. */
			m->alloc_at_first_gc = m->allocated_total - (m->since_gc[0] + m->since_gc[1] + m->since_gc[2]);
		}
		break;
	default:
		break;
	}
}

static uint64_t heap_total(const struct metrics *m)
{
	uint64_t s = 0;

	for (int i = 0; i < 5; i++)
		s += m->size[i];
	return s + m->seed_since + m->since_gc[0] + m->since_gc[1] + m->since_gc[2];
}

static int have_sizes(const struct metrics *m)
{
	return m->have_heap || m->have_seed;
}

/* Whether a second has passed since the start, for rates. */
static int rates_known(const struct metrics *m, int64_t now_ns)
{
	int64_t start;
	return started(m, &start) && now_ns - start >= KNOWN_AFTER_NS;
}

/* The allocation rates when ticks come and go: known once they have come
 * for a whole window. */
static int alloc_rates_known(const struct metrics *m, int64_t now_ns)
{
	if (!rates_known(m, now_ns))
		return 0;
	return !m->ticks_gated || (m->ticks_on_ns && now_ns - m->ticks_on_ns >= METRICS_RATE_WINDOW_NS);
}

void metrics_ticks_gated(struct metrics *m, int gated)
{
	m->ticks_gated = gated;
}

void metrics_ticks_on(struct metrics *m, int on, int64_t t_ns)
{
	m->ticks_on_ns = on ? (t_ns > 0 ? t_ns : 1) : 0;
}

int metrics_bound(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns, int64_t max_age_ns,
                  double *value)
{
	switch (ref->id) {
	case M_ALLOC_RATE:
	case M_SOH_ALLOC_RATE:
	case M_LOH_ALLOC_RATE:
	case M_POH_ALLOC_RATE:
		/* The first sample's increment runs from the counter's last poll,
		 * for an earlier session perhaps, not over one interval: on
		 * ShopApi it read as several GB a second. From the second on. */
		if (m->counter_alloc_samples < 2 || now_ns - m->counter_alloc_ns > max_age_ns)
			return 0;
		*value = m->counter_alloc_rate > 0 ? m->counter_alloc_rate : 0;
		return 1;
	case M_LOH_SIZE:
	case M_POH_SIZE:
	case M_HEAP_SIZE:
		break;
	default:
		return 0;
	}
	{
		double sizes[3];
		int64_t at;
		/* The last complete sample (take_gated_sample): while one
		 * arrives, its first counters sit beside the last one's, an
		 * interval apart. */
		if (m->have_gs) {
			memcpy(sizes, m->gs_size, sizeof(sizes));
			at = m->gs_ns;
		} else if (!sample_sizes(m, sizes, &at)) {
			return 0;
		}
		if (now_ns - at > max_age_ns)
			return 0;
		*value = sizes[ref->id == M_LOH_SIZE ? 0 : ref->id == M_POH_SIZE ? 1 : 2];
		return 1;
	}
}

void metrics_start(struct metrics *m, int64_t t_ns)
{
	m->start_ns = t_ns;
	m->have_start = 1;
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Bytes allocated since the session began: the sum of the allocation ticks
 * when they are subscribed (live, and within one tick's worth per kind and
 * heap); else the allocation counter's sum plus nothing (it is sampled once per
 * interval, from GC.GetTotalAllocatedBytes without precision). */
static double allocated(const struct metrics *m)
{
	if (m->have_alloc)
		return (double)m->allocated_total;
	return m->counter_alloc_total;
}

/* Gated, the ticks began after the last GC: what was allocated between the
 * two is in no tick, and the latest sample after that GC stands for it, as
 * an upper bound (every kind counts). From the next GC the figures are
 * exact again. */
static int gap_open(const struct metrics *m)
{
	return m->ticks_gated && m->ticks_on_ns && m->ticks_on_ns > m->heap_ns && m->have_gs && m->gs_ns > m->heap_ns;
}

int metrics_read(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns, double *value,
                 int64_t *sample_ns)
{
	int64_t heap_t = later(m->heap_ns, m->since_gc_ns);
	int64_t rate_end = later(m->latest_ns, now_ns - RATE_LAG_NS);
	if (rate_end > now_ns)
		rate_end = now_ns;

	switch (ref->id) {
	case M_LOH_SIZE:
	case M_POH_SIZE: {
		int gen = ref->id == M_LOH_SIZE ? 3 : 4;
		int kind = ref->id == M_LOH_SIZE ? EV_ALLOC_LARGE : EV_ALLOC_PINNED;
		if (!have_sizes(m))
			return 0;
		*value = (double)(m->size[gen] + m->since_gc[kind] + (gen == 3 ? m->seed_since : 0));
		*sample_ns = heap_t;
		if (gap_open(m)) {
			double v = m->gs_size[gen - 3] + (double)m->gs_after[kind];
			if (v > *value) {
				*value = v;
				*sample_ns = later(m->gs_ns, m->since_gc_ns);
			}
		}
		return 1;
	}
	case M_GEN0_SIZE:
	case M_GEN1_SIZE:
	case M_GEN2_SIZE:
		if (!have_sizes(m))
			return 0;
		*value = (double)m->size[ref->id - M_GEN0_SIZE];
		*sample_ns = m->heap_ns;
		return 1;
	case M_HEAP_SIZE:
		if (!have_sizes(m))
			return 0;
		*value = (double)heap_total(m);
		*sample_ns = heap_t;
		if (gap_open(m)) {
			double v = m->gs_size[2] + (double)(m->gs_after[0] + m->gs_after[1] + m->gs_after[2]);
			if (v > *value) {
				*value = v;
				*sample_ns = later(m->gs_ns, m->since_gc_ns);
			}
		}
		return 1;
	case M_GC_PAUSE:
		if (!m->have_pause)
			return 0;
		*value = m->pause_ms;
		*sample_ns = m->pause_end_ns;
		return 1;
	case M_GC_COUNT:
		*value = (double)m->gc_count;
		*sample_ns = now_ns;
		return 1;
	case M_GC_RATE:
	case M_GEN0_GC_RATE:
	case M_GEN1_GC_RATE:
	case M_GEN2_GC_RATE:
		if (!rates_known(m, now_ns))
			return 0;
		*value = gc_rate(m, ref->id == M_GC_RATE ? -1 : (int)(ref->id - M_GEN0_GC_RATE), now_ns);
		*sample_ns = now_ns;
		return 1;
	case M_ALLOC_RATE:
		if (!alloc_rates_known(m, now_ns))
			return 0;
		*value = rate_get(&m->rates[0], rate_end) + rate_get(&m->rates[1], rate_end) +
		         rate_get(&m->rates[2], rate_end);
		*sample_ns = now_ns;
		return 1;
	case M_SOH_ALLOC_RATE:
	case M_LOH_ALLOC_RATE:
	case M_POH_ALLOC_RATE:
		if (!alloc_rates_known(m, now_ns))
			return 0;
		*value = rate_get(&m->rates[ref->id - M_SOH_ALLOC_RATE], rate_end);
		*sample_ns = now_ns;
		return 1;
	case M_APPDOMAIN_ALLOCATED:
		if (m->have_ad_allocated) {
			*value = (double)m->ad_allocated;
			*sample_ns = m->ad_allocated_ns;
			return 1;
		}
		if (!m->have_alloc && !m->have_counter_alloc)
			return 0;
		*value = allocated(m);
		*sample_ns = later(m->alloc_ns, m->counter_alloc_ns);
		return 1;
	case M_APPDOMAIN_SURVIVED:
		if (m->have_ad_survived) {
			*value = (double)m->ad_survived;
			*sample_ns = m->ad_survived_ns;
			return 1;
		}
		if (!have_sizes(m))
			return 0;
		*value = (double)(m->size[0] + m->size[1] + m->size[2] + m->size[3] + m->size[4]);
		*sample_ns = m->heap_ns;
		return 1;
	case M_APPDOMAIN_FREED: {
		if (!m->have_heap)
			return 0;
		/* Both from the first GC on: the bytes allocated since, less what
		 * of them the heap kept. Only GCs free, so it moves at GC ends. */
		double since = (double)(m->allocated_total - m->alloc_at_first_gc) -
		               (double)(m->since_gc[0] + m->since_gc[1] + m->since_gc[2]);
		double growth = (double)(m->size[0] + m->size[1] + m->size[2] + m->size[3] + m->size[4]) -
		                (double)m->heap_at_first_gc;
		double freed = since - growth;
		*value = freed > 0 ? freed : 0;
		*sample_ns = m->heap_ns;
		return 1;
	}
	case M_TIME_IN_GC:
		if (!rates_known(m, now_ns))
			return 0;
		*value = time_in_gc(m, now_ns);
		*sample_ns = now_ns;
		return 1;
	case M_RSS:
	case M_PRIVATE_MEMORY:
	case M_SWAP:
	case M_THREADS:
	case M_FDS: {
		static const unsigned need[] = {PROC_HAVE_RSS, PROC_HAVE_ANON, PROC_HAVE_SWAP, PROC_HAVE_THREADS,
		                                PROC_HAVE_FDS};
		const struct proc_sample *p = &m->proc;
		if ((p->have & need[ref->id - M_RSS]) == 0)
			return 0;
		switch (ref->id) {
		case M_RSS:
			*value = (double)p->rss;
			break;
		case M_PRIVATE_MEMORY:
			/* Anonymous pages resident or swapped out: what the
			 * process itself allocated, managed or native. */
			*value = (double)p->anon + ((p->have & PROC_HAVE_SWAP) ? (double)p->swap : 0);
			break;
		case M_SWAP:
			*value = (double)p->swap;
			break;
		case M_THREADS:
			*value = (double)p->threads;
			break;
		default:
			*value = (double)p->fds;
			break;
		}
		*sample_ns = m->proc_ns;
		return 1;
	}
	case M_EXCEPTION_RATE:
		if (!rates_known(m, now_ns))
			return 0;
		*value = rate_get(&m->exc_rate, rate_end);
		*sample_ns = now_ns;
		return 1;
	case M_EXCEPTIONS: {
		const struct exc_filter *f = find_filter(m, ref);
		if (!f)
			return 0;
		*value = filter_count(f, now_ns);
		/* An event metric: the sample is the last matching exception. */
		*sample_ns = f->last_ns;
		return 1;
	}
	case M_METER:
		return meters_read(m->meters, ref, value, sample_ns);
	case M_COUNTER:
		for (size_t i = 0; i < m->n_counters; i++)
			if (strcmp(m->counters[i].name, ref->counter) == 0 &&
			    strcmp(m->counters[i].provider, ref->provider) == 0) {
				*value = m->counters[i].value * (ref->scale > 0 ? ref->scale : 1.0);
				*sample_ns = m->counters[i].t_ns;
				return 1;
			}
		return 0;
	default:
		return 0;
	}
}

const char *metrics_basis(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns)
{
	double v;
	int64_t t;

	if (!metrics_read(m, ref, now_ns, &v, &t))
		return NULL;
	switch (ref->id) {
	case M_LOH_SIZE:
	case M_POH_SIZE:
	case M_GEN0_SIZE:
	case M_GEN1_SIZE:
	case M_GEN2_SIZE:
	case M_HEAP_SIZE:
	case M_APPDOMAIN_SURVIVED:
		if (ref->id == M_APPDOMAIN_SURVIVED && m->have_ad_survived)
			return "events";
		return m->have_heap ? "gc" : "counters";
	case M_COUNTER:
		return "counter";
	case M_METER:
		return "meter";
	case M_RSS:
	case M_PRIVATE_MEMORY:
	case M_SWAP:
	case M_THREADS:
	case M_FDS:
		return "proc";
	default:
		return "events";
	}
}

void metrics_describe(const struct metrics *m, int64_t now_ns, char *buf, size_t len)
{
	static const enum metric_id ids[] = {M_HEAP_SIZE,  M_GEN0_SIZE,      M_GEN1_SIZE,      M_GEN2_SIZE,
	                                     M_LOH_SIZE,   M_POH_SIZE,       M_GC_PAUSE,       M_GC_COUNT,
	                                     M_ALLOC_RATE, M_LOH_ALLOC_RATE, M_SOH_ALLOC_RATE, M_POH_ALLOC_RATE};
	static const enum unit_kind units[] = {
	    UNIT_BYTES, UNIT_BYTES, UNIT_BYTES,         UNIT_BYTES,         UNIT_BYTES,         UNIT_BYTES,
	    UNIT_MS,    UNIT_COUNT, UNIT_BYTES_PER_SEC, UNIT_BYTES_PER_SEC, UNIT_BYTES_PER_SEC, UNIT_BYTES_PER_SEC};
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && off < len; i++) {
		struct metric_ref ref = {.id = ids[i], .scale = 1};
		double v;
		int64_t t;
		char vb[32];
		int known = metrics_read(m, &ref, now_ns, &v, &t);
		int n = snprintf(buf + off, len - off, "%s%s=%s", off ? " " : "", catalog_id_name(ids[i]),
		                 known ? units_format(v, units[i], vb, sizeof(vb)) : "unknown");
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

void metrics_on_proc(struct metrics *m, const struct proc_sample *p, int64_t t_ns)
{
	m->proc = *p;
	m->proc_ns = t_ns;
}

int metrics_counter_at(const struct metrics *m, size_t i, struct metrics_counter *out)
{
	if (i >= m->n_counters)
		return 0;
	out->provider = m->counters[i].provider;
	out->name = m->counters[i].name;
	out->units = m->counters[i].units;
	out->value = m->counters[i].value;
	out->t_ns = m->counters[i].t_ns;
	return 1;
}

void metrics_set_meter_interval(struct metrics *m, int64_t interval_ns)
{
	m->meter_interval_ns = interval_ns;
	if (m->meters)
		meters_set_interval(m->meters, interval_ns);
}

const struct meters *metrics_meters(const struct metrics *m)
{
	return m->meters;
}
