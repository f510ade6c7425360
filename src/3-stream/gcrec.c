/* Per-GC records. See gcrec.h for the event model. */
#include "dumpwatch/gcrec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A ready blocking GC waits this long (event time) for a lower index whose
 * events come from another thread's buffer (the runtime flushes every 100 ms). */
#define ORDER_WAIT_NS 250000000LL
#define SERIALS_MAX 8
#define SUSPEND_FOR_GC_PREP 6

struct susp {
	uint64_t serial; /* 0: free slot */
	uint64_t tid;
	uint32_t reason;
	int64_t begin_ns, suspended_ns, end_ns; /* end_ns 0 while open */
	int open;
};

struct rec {
	int used;
	struct gc_record r;
	uint64_t end_tid; /* thread of its GCEnd: its GCHeapStats follows there */
	int want_heap;    /* GCEnd seen, GCHeapStats not yet */
	int64_t last_ns;  /* newest event time that touched it */
	int64_t ready_ns; /* when it became complete, 0 before */
	int64_t pause_ns; /* sum of attached suspensions */
	int64_t first_begin_ns;
	uint64_t serials[SERIALS_MAX]; /* suspensions attached */
	unsigned n_serials;
};

struct gcrec {
	gcrec_fn fn;
	void *ctx;
	struct rec recs[GCREC_OPEN_MAX];
	struct susp susps[GCREC_SUSPENSIONS_MAX];
	uint64_t next_serial;
	int64_t latest_ns;
	uint32_t next_index; /* the next blocking GC expected, when have_next */
	int have_next;
	uint64_t reported, incomplete;
};

size_t gcrec_bytes(const struct gcrec *g)
{
	return g ? sizeof(*g) : 0;
}

struct gcrec *gcrec_new(gcrec_fn fn, void *ctx)
{
	struct gcrec *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->fn = fn;
	g->ctx = ctx;
	g->next_serial = 1;
	return g;
}

void gcrec_free(struct gcrec *g)
{
	free(g);
}

uint64_t gcrec_reported(const struct gcrec *g)
{
	return g->reported;
}

uint64_t gcrec_incomplete(const struct gcrec *g)
{
	return g->incomplete;
}

static int is_background(const struct rec *x)
{
	return (x->r.seen & GCREC_SEEN_START) && x->r.type == EV_GC_BACKGROUND;
}

static int attached(const struct rec *x, uint64_t serial)
{
	for (unsigned i = 0; i < x->n_serials; i++)
		if (x->serials[i] == serial)
			return 1;
	return 0;
}

/* Adds suspension s to x's pauses when it is one of them. */
static void try_attach(struct rec *x, const struct susp *s)
{
	const struct gc_record *r = &x->r;
	int containing = 0, later = 0;

	if (!s->serial || s->open || attached(x, s->serial))
		return;
	if (r->seen & GCREC_SEEN_START)
		containing = s->begin_ns <= r->start_ns && r->start_ns <= s->end_ns;
	else if (r->seen & GCREC_SEEN_END)
		containing = s->begin_ns <= r->end_ns && r->end_ns <= s->end_ns;
	if (!containing && is_background(x) && s->reason == SUSPEND_FOR_GC_PREP && s->begin_ns > r->start_ns &&
	    (!(r->seen & GCREC_SEEN_END) || s->end_ns <= r->end_ns))
		later = 1;
	if (!containing && !later)
		return;
	if (x->n_serials == SERIALS_MAX)
		return;
	x->serials[x->n_serials++] = s->serial;
	x->pause_ns += s->end_ns - s->begin_ns;
	x->r.pauses++;
	if (!x->first_begin_ns || s->begin_ns < x->first_begin_ns) {
		x->first_begin_ns = s->begin_ns;
		x->r.suspend_ms = s->suspended_ns ? (double)(s->suspended_ns - s->begin_ns) / 1e6 : -1;
	}
	x->r.pause_ms = (double)x->pause_ns / 1e6;
	if (containing)
		x->r.seen |= GCREC_SEEN_PAUSE;
}

static void attach_all_susps(struct gcrec *g, struct rec *x)
{
	for (size_t i = 0; i < GCREC_SUSPENSIONS_MAX; i++)
		try_attach(x, &g->susps[i]);
}

static int rec_complete(const struct rec *x)
{
	const unsigned all = GCREC_SEEN_START | GCREC_SEEN_END | GCREC_SEEN_HEAP | GCREC_SEEN_PAUSE;
	return (x->r.seen & all) == all;
}

static void report(struct gcrec *g, struct rec *x)
{
	x->r.complete = rec_complete(x);
	if (!x->r.complete)
		g->incomplete++;
	g->reported++;
	if (!is_background(x)) {
		if (!g->have_next || x->r.index >= g->next_index) {
			g->next_index = x->r.index + 1;
			g->have_next = 1;
		}
	}
	struct gc_record out = x->r;
	memset(x, 0, sizeof(*x));
	if (g->fn)
		g->fn(g->ctx, &out);
}

/* Skips over indices that belong to background GCs (reported on their own). */
static void skip_background(struct gcrec *g)
{
	int moved = 1;
	while (g->have_next && moved) {
		moved = 0;
		for (size_t i = 0; i < GCREC_OPEN_MAX; i++)
			if (g->recs[i].used && is_background(&g->recs[i]) && g->recs[i].r.index == g->next_index) {
				g->next_index++;
				moved = 1;
			}
	}
}

/* Reports whatever is due: complete background GCs; blocking GCs in index
 * order; anything that waited GCREC_WAIT_NS for missing events. */
static void settle(struct gcrec *g)
{
	for (;;) {
		struct rec *lowest = NULL, *due = NULL;
		skip_background(g);
		for (size_t i = 0; i < GCREC_OPEN_MAX; i++) {
			struct rec *x = &g->recs[i];
			if (!x->used)
				continue;
			if (rec_complete(x) && !x->ready_ns)
				x->ready_ns = g->latest_ns;
			int stale = g->latest_ns - x->last_ns >= GCREC_WAIT_NS;
			if (is_background(x)) {
				/* A background GC runs as long as it runs: without its
				 * GCEnd it is only reported at flush. */
				if (rec_complete(x) || (stale && (x->r.seen & GCREC_SEEN_END))) {
					due = x;
					break;
				}
				continue;
			}
			if (stale) {
				due = x;
				break;
			}
			if (!lowest || x->r.index < lowest->r.index)
				lowest = x;
		}
		if (!due && lowest && rec_complete(lowest) &&
		    (!g->have_next || lowest->r.index <= g->next_index ||
		     g->latest_ns - lowest->ready_ns >= ORDER_WAIT_NS))
			due = lowest;
		if (!due)
			return;
		report(g, due);
	}
}

static struct rec *find_rec(struct gcrec *g, uint32_t index, int create, int64_t t_ns)
{
	struct rec *free_slot = NULL, *oldest = NULL;

	for (size_t i = 0; i < GCREC_OPEN_MAX; i++) {
		struct rec *x = &g->recs[i];
		if (!x->used) {
			if (!free_slot)
				free_slot = x;
			continue;
		}
		if (x->r.index == index)
			return x;
		if (!oldest || x->last_ns < oldest->last_ns)
			oldest = x;
	}
	if (!create)
		return NULL;
	if (!free_slot) {
		/* Bounded: the record waiting longest goes out as it is. */
		report(g, oldest);
		free_slot = oldest;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = 1;
	free_slot->r.index = index;
	free_slot->r.pause_ms = -1;
	free_slot->r.suspend_ms = -1;
	free_slot->r.type = EV_GC_BLOCKING;
	free_slot->last_ns = t_ns;
	return free_slot;
}

static struct susp *open_susp(struct gcrec *g, uint64_t tid)
{
	for (size_t i = 0; i < GCREC_SUSPENSIONS_MAX; i++)
		if (g->susps[i].serial && g->susps[i].open && g->susps[i].tid == tid)
			return &g->susps[i];
	return NULL;
}

static void on_suspend_begin(struct gcrec *g, const struct ev_record *r, int64_t t_ns)
{
	struct susp *s = open_susp(g, r->thread_id), *slot = NULL;

	if (s) /* its restart never came: unusable */
		memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < GCREC_SUSPENSIONS_MAX; i++) {
		struct susp *x = &g->susps[i];
		if (!x->serial) {
			slot = x;
			break;
		}
		if (!slot || x->begin_ns < slot->begin_ns)
			slot = x; /* full: the oldest is forgotten */
	}
	memset(slot, 0, sizeof(*slot));
	slot->serial = g->next_serial++;
	slot->tid = r->thread_id;
	slot->reason = r->u.suspend.reason;
	slot->begin_ns = t_ns;
	slot->open = 1;
}

static void on_restart_end(struct gcrec *g, const struct ev_record *r, int64_t t_ns)
{
	struct susp *s = open_susp(g, r->thread_id);

	if (!s || t_ns < s->begin_ns)
		return;
	s->end_ns = t_ns;
	s->open = 0;
	for (size_t i = 0; i < GCREC_OPEN_MAX; i++)
		if (g->recs[i].used) {
			unsigned before = g->recs[i].n_serials;
			try_attach(&g->recs[i], s);
			if (g->recs[i].n_serials != before)
				g->recs[i].last_ns = t_ns > g->recs[i].last_ns ? t_ns : g->recs[i].last_ns;
		}
}

void gcrec_on_event(struct gcrec *g, const struct ev_record *r, int64_t t_ns)
{
	struct rec *x;

	switch (r->type) {
	case EV_GC_SUSPEND_EE_BEGIN:
		on_suspend_begin(g, r, t_ns);
		break;
	case EV_GC_SUSPEND_EE_END: {
		struct susp *s = open_susp(g, r->thread_id);
		if (s && !s->suspended_ns)
			s->suspended_ns = t_ns;
		break;
	}
	case EV_GC_RESTART_EE_END:
		on_restart_end(g, r, t_ns);
		break;
	case EV_GC_START:
		x = find_rec(g, r->u.gc_start.count, 1, t_ns);
		x->r.seen |= GCREC_SEEN_START;
		x->r.generation = r->u.gc_start.depth;
		x->r.reason = r->u.gc_start.reason;
		x->r.type = r->u.gc_start.type;
		x->r.start_ns = t_ns;
		x->last_ns = t_ns;
		attach_all_susps(g, x);
		break;
	case EV_GC_END:
		x = find_rec(g, r->u.gc_end.count, 1, t_ns);
		x->r.seen |= GCREC_SEEN_END;
		if (!(x->r.seen & GCREC_SEEN_START))
			x->r.generation = r->u.gc_end.depth;
		x->r.end_ns = t_ns;
		x->end_tid = r->thread_id;
		x->want_heap = 1;
		if (t_ns > x->last_ns)
			x->last_ns = t_ns;
		attach_all_susps(g, x);
		break;
	case EV_GC_HEAP_STATS:
		for (size_t i = 0; i < GCREC_OPEN_MAX; i++) {
			x = &g->recs[i];
			if (!x->used || !x->want_heap || x->end_tid != r->thread_id || t_ns < x->r.end_ns)
				continue;
			memcpy(x->r.size, r->u.heap_stats.size, sizeof(x->r.size));
			memcpy(x->r.promoted, r->u.heap_stats.promoted, sizeof(x->r.promoted));
			x->r.seen |= GCREC_SEEN_HEAP;
			x->want_heap = 0;
			if (t_ns > x->last_ns)
				x->last_ns = t_ns;
			break;
		}
		break;
	default:
		return;
	}
	if (t_ns > g->latest_ns)
		g->latest_ns = t_ns;
	settle(g);
}

void gcrec_advance(struct gcrec *g, int64_t now_ns)
{
	if (now_ns > g->latest_ns)
		g->latest_ns = now_ns;
	settle(g);
}

void gcrec_flush(struct gcrec *g)
{
	for (;;) {
		struct rec *lowest = NULL;
		for (size_t i = 0; i < GCREC_OPEN_MAX; i++)
			if (g->recs[i].used && (!lowest || g->recs[i].r.index < lowest->r.index))
				lowest = &g->recs[i];
		if (!lowest)
			return;
		report(g, lowest);
	}
}

const char *gcrec_reason_name(uint32_t reason)
{
	static const char *const names[] = {
	    "AllocSmall",        "Induced",
	    "LowMemory",         "Empty",
	    "AllocLarge",        "OutOfSpaceSOH",
	    "OutOfSpaceLOH",     "InducedNotForced",
	    "Internal",          "InducedLowMemory",
	    "InducedCompacting", "LowMemoryHost",
	    "PMFullGC",          "LowMemoryHostBlocking",
	};
	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "unknown";
}

const char *gcrec_type_name(uint32_t type)
{
	switch (type) {
	case EV_GC_BLOCKING:
		return "blocking";
	case EV_GC_BACKGROUND:
		return "background";
	case EV_GC_FOREGROUND:
		return "foreground";
	default:
		return "unknown";
	}
}

void gcrec_missing(const struct gc_record *rec, char *out, size_t outlen)
{
	static const struct {
		unsigned bit;
		const char *name;
	} parts[] = {{GCREC_SEEN_START, "start"},
	             {GCREC_SEEN_END, "end"},
	             {GCREC_SEEN_HEAP, "heap-stats"},
	             {GCREC_SEEN_PAUSE, "pause"}};
	size_t off = 0;

	if (outlen)
		out[0] = '\0';
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (rec->seen & parts[i].bit)
			continue;
		int n = snprintf(out + off, outlen > off ? outlen - off : 0, "%s%s", off ? "," : "", parts[i].name);
		if (n < 0 || (size_t)n >= outlen - off)
			return;
		off += (size_t)n;
	}
}
