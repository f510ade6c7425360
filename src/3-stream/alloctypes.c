/* Allocation by type; see alloctypes.h.
 *
 * Design note. Time is cut into buckets of window / ALLOCTYPES_BUCKETS; an
 * entry keeps its bytes and ticks for the last ALLOCTYPES_BUCKETS buckets up
 * to the newest it was charged in, as a ring indexed by the bucket's number,
 * and clears the buckets it skips when charged later. A sum reads the
 * buckets that are both in the entry's ring and in the window asked for, so
 * an entry that nothing charges any more fades out of the sums by itself,
 * and one whose ring lies wholly behind the window is free for a new type.
 * Entries are found by a hash of name and kind, compared before the name;
 * the array grows by doubling up to its cap, so a process that allocates
 * few types holds few entries. */
#include "dumpwatch/alloctypes.h"

#include <stdlib.h>
#include <string.h>

#define B ALLOCTYPES_BUCKETS

struct aentry {
	uint32_t hash, kind;
	int64_t last_g; /* the newest bucket charged */
	uint64_t bytes[B];
	uint32_t ticks[B];
	char type[EV_NAME_MAX];
};

struct alloctypes {
	int64_t window_ns, bucket_ns;
	size_t max, n, cap;
	int have;
	int64_t newest_g, newest_t;
	int64_t first_t; /* the oldest tick taken: the ticks may have started inside the window */
	size_t hint;     /* the entry charged last: ticks of one type come in runs */
	struct aentry other;
	struct aentry *e;
};

struct alloctypes *alloctypes_new(int64_t window_ns, size_t max_types)
{
	if (window_ns < B || max_types > ALLOCTYPES_MAX)
		return NULL;
	struct alloctypes *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->window_ns = window_ns;
	a->bucket_ns = window_ns / B;
	a->max = max_types ? max_types : ALLOCTYPES_MAX;
	return a;
}

void alloctypes_free(struct alloctypes *a)
{
	if (!a)
		return;
	free(a->e);
	free(a);
}

int64_t alloctypes_window_ns(const struct alloctypes *a)
{
	return a->window_ns;
}

const char *alloctypes_kind_name(uint32_t kind)
{
	switch (kind) {
	case EV_ALLOC_SMALL:
		return "soh";
	case EV_ALLOC_LARGE:
		return "loh";
	case EV_ALLOC_PINNED:
		return "poh";
	}
	return "?";
}

/* floor(t / bucket), also for negative t. */
static int64_t bucket_of(const struct alloctypes *a, int64_t t_ns)
{
	int64_t q = t_ns / a->bucket_ns;
	if (t_ns % a->bucket_ns != 0 && t_ns < 0)
		q--;
	return q;
}

static size_t ring(int64_t g)
{
	return (size_t)(((g % B) + B) % B);
}

/* FNV-1a of the name, then the kind. */
static uint32_t hash_of(const char *type, uint32_t kind)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)type; *p; p++)
		h = (h ^ *p) * 16777619u;
	return (h ^ kind) * 16777619u;
}

static void reset(struct aentry *e, uint32_t hash, const char *type, uint32_t kind, int64_t g)
{
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->kind = kind;
	e->last_g = g;
	size_t len = strnlen(type, EV_NAME_MAX - 1);
	memcpy(e->type, type, len);
	e->type[len] = '\0';
}

static void charge(struct aentry *e, int64_t g, uint64_t bytes)
{
	if (g > e->last_g) {
		int64_t from = e->last_g + 1 > g - B + 1 ? e->last_g + 1 : g - B + 1;
		for (int64_t x = from; x <= g; x++) {
			e->bytes[ring(x)] = 0;
			e->ticks[ring(x)] = 0;
		}
		e->last_g = g;
	} else if (g <= e->last_g - B) {
		return; /* behind this entry's ring: behind the window too */
	}
	size_t r = ring(g);
	e->bytes[r] = e->bytes[r] > UINT64_MAX - bytes ? UINT64_MAX : e->bytes[r] + bytes;
	if (e->ticks[r] < UINT32_MAX)
		e->ticks[r]++;
}

/* The bytes and ticks of e in the window's buckets (now_g - B, now_g]. */
static void sum_of(const struct aentry *e, int64_t now_g, uint64_t *ret_bytes, uint64_t *ret_ticks)
{
	int64_t lo = (now_g > e->last_g ? now_g : e->last_g) - B + 1;
	int64_t hi = now_g < e->last_g ? now_g : e->last_g;
	uint64_t b = 0, t = 0;

	for (int64_t x = lo; x <= hi; x++) {
		b = b > UINT64_MAX - e->bytes[ring(x)] ? UINT64_MAX : b + e->bytes[ring(x)];
		t += e->ticks[ring(x)];
	}
	*ret_bytes = b;
	*ret_ticks = t;
}

/* A new entry for type: appended while below the cap, else one whose ring
 * is wholly behind the window. NULL when none. */
static struct aentry *room(struct alloctypes *a)
{
	if (a->n < a->max) {
		if (a->n == a->cap) {
			size_t c = a->cap ? a->cap * 2 : 8;
			if (c > a->max)
				c = a->max;
			struct aentry *ne = realloc(a->e, c * sizeof(*ne));
			if (!ne)
				return NULL;
			a->e = ne;
			a->cap = c;
		}
		return &a->e[a->n++];
	}
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].last_g <= a->newest_g - B)
			return &a->e[i];
	return NULL;
}

int alloctypes_add(struct alloctypes *a, int64_t t_ns, const char *type, uint32_t kind, uint64_t bytes)
{
	int64_t g = bucket_of(a, t_ns);

	if (!type)
		type = "";
	if (!a->have) {
		a->have = 1;
		a->newest_g = g;
		a->newest_t = t_ns;
		a->first_t = t_ns;
	}
	if (g > a->newest_g)
		a->newest_g = g;
	if (g <= a->newest_g - B)
		return -1;
	if (t_ns > a->newest_t)
		a->newest_t = t_ns;
	if (t_ns < a->first_t)
		a->first_t = t_ns;
	if (kind > EV_ALLOC_PINNED) {
		charge(&a->other, g, bytes);
		return 0;
	}
	uint32_t h = hash_of(type, kind);
	struct aentry *e = NULL;
	if (a->hint < a->n && a->e[a->hint].hash == h && a->e[a->hint].kind == kind &&
	    strncmp(a->e[a->hint].type, type, EV_NAME_MAX - 1) == 0)
		e = &a->e[a->hint];
	for (size_t i = 0; !e && i < a->n; i++)
		if (a->e[i].hash == h && a->e[i].kind == kind && strncmp(a->e[i].type, type, EV_NAME_MAX - 1) == 0)
			e = &a->e[i];
	if (!e) {
		e = room(a);
		if (!e) {
			if (a->n < a->max)
				return -1; /* out of memory */
			charge(&a->other, g, bytes);
			return 0;
		}
		reset(e, h, type, kind, g);
	}
	a->hint = (size_t)(e - a->e);
	charge(e, g, bytes);
	return 1;
}

void alloctypes_on_event(struct alloctypes *a, const struct ev_record *r, int64_t t_ns)
{
	if (r->type == EV_GC_ALLOC_TICK)
		alloctypes_add(a, t_ns, r->u.alloc.type_name, r->u.alloc.kind, r->u.alloc.amount);
}

/* Whether x ranks before y: more bytes, then by name, then by kind. */
static int before(const struct alloctypes_entry *x, const struct alloctypes_entry *y)
{
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes;
	int c = strcmp(x->type, y->type);
	return c != 0 ? c < 0 : x->kind < y->kind;
}

size_t alloctypes_top(const struct alloctypes *a, int64_t now_ns, struct alloctypes_entry *out, size_t n,
                      struct alloctypes_summary *sum)
{
	struct alloctypes_summary s = {0};
	size_t k = 0;

	if (a->have) {
		int64_t now_g = now_ns ? bucket_of(a, now_ns) : a->newest_g;
		s.since_ns = (now_g - B + 1) * a->bucket_ns;
		if (a->first_t > s.since_ns)
			s.since_ns = a->first_t;
		s.until_ns = now_ns && now_ns < a->newest_t ? now_ns : a->newest_t;
		sum_of(&a->other, now_g, &s.other_bytes, &s.other_ticks);
		s.bytes = s.other_bytes;
		s.ticks = s.other_ticks;
		for (size_t i = 0; i < a->n; i++) {
			struct alloctypes_entry x;
			sum_of(&a->e[i], now_g, &x.bytes, &x.ticks);
			if (!x.ticks)
				continue;
			s.types++;
			s.bytes = s.bytes > UINT64_MAX - x.bytes ? UINT64_MAX : s.bytes + x.bytes;
			s.ticks += x.ticks;
			memcpy(x.type, a->e[i].type, sizeof(x.type));
			x.kind = a->e[i].kind;
			/* Insertion into the n kept, largest first. */
			size_t at = k;
			while (at > 0 && before(&x, &out[at - 1]))
				at--;
			if (at >= n)
				continue;
			size_t last = k < n ? k : n - 1;
			memmove(&out[at + 1], &out[at], (last - at) * sizeof(*out));
			out[at] = x;
			if (k < n)
				k++;
		}
	}
	if (sum)
		*sum = s;
	return k;
}

size_t alloctypes_bytes(const struct alloctypes *a)
{
	return sizeof(*a) + a->cap * sizeof(struct aentry);
}
