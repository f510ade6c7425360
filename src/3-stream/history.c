/* The metric history of one process; see history.h.
 *
 * Each series is a ring of points in slot order. A point stores its slot as
 * an offset from the history's base slot (fixed at the first value, with
 * room on both sides), the time of its last value within the slot, and its
 * values as floats: 20 bytes. The ring grows by
 * doubling up to the window's slots plus one, so an idle series with a few
 * points holds a few points. A point's value holds until the next point:
 * a value that does not change adds none, so a metric that does not move
 * costs one point. Eviction is by slot: a series is trimmed when
 * it is written; readers skip what the newest time of any series has pushed out of the window. */
#include "dumpwatch/history.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_RING_MIN 4

struct hpoint {
	int32_t slot;    /* minus the base slot */
	uint32_t last_t; /* the last value's time: its offset into the slot, >> t_shift */
	float last, min, max;
};

struct hseries {
	char key[HISTORY_KEY_MAX];
	enum unit_kind unit;
	struct hpoint *p;
	size_t cap, head, n; /* ring: p[(head + k) % cap], k < n, oldest first */
};

struct history {
	int64_t window_ns, slot_ns;
	int64_t n_slots; /* slots a point stays: window / slot */
	int t_shift;     /* an offset into a slot, shifted right by this, fits 32 bits */
	int have_base;
	int64_t base_slot;
	int64_t newest_slot; /* absolute; valid when have_base */
	size_t n;
	struct hseries s[HISTORY_SERIES_MAX];
};

_Static_assert(sizeof(struct hpoint) == HISTORY_POINT_BYTES, "a point is 20 bytes");

struct history *history_new(int64_t window_ns, int64_t slot_ns)
{
	if (slot_ns <= 0 || window_ns < slot_ns || window_ns / slot_ns > (int64_t)1 << 24)
		return NULL;
	struct history *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->window_ns = window_ns;
	h->slot_ns = slot_ns;
	h->n_slots = window_ns / slot_ns;
	while ((slot_ns - 1) >> h->t_shift > (int64_t)UINT32_MAX)
		h->t_shift++;
	return h;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		free(h->s[i].p);
	free(h);
}

int64_t history_window_ns(const struct history *h)
{
	return h->window_ns;
}

int64_t history_slot_ns(const struct history *h)
{
	return h->slot_ns;
}

int history_series(struct history *h, const char *key, enum unit_kind unit)
{
	size_t len = key ? strlen(key) : 0;

	if (len == 0 || len >= HISTORY_KEY_MAX)
		return -EINVAL;
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->s[i].key, key) == 0)
			return (int)i;
	if (h->n == HISTORY_SERIES_MAX)
		return -ENOSPC;
	struct hseries *s = &h->s[h->n];
	memset(s, 0, sizeof(*s));
	memcpy(s->key, key, len + 1);
	s->unit = unit;
	return (int)h->n++;
}

size_t history_n_series(const struct history *h)
{
	return h->n;
}

const char *history_series_key(const struct history *h, size_t i, enum unit_kind *ret_unit)
{
	if (i >= h->n)
		return NULL;
	if (ret_unit)
		*ret_unit = h->s[i].unit;
	return h->s[i].key;
}

static struct hpoint *at(const struct hseries *s, size_t k)
{
	return &s->p[(s->head + k) % s->cap];
}

/* floor(t / slot), also for negative t. */
static int64_t slot_of(const struct history *h, int64_t t_ns)
{
	int64_t q = t_ns / h->slot_ns;
	if (t_ns % h->slot_ns != 0 && t_ns < 0)
		q--;
	return q;
}

/* The oldest absolute slot inside the window. */
static int64_t first_slot(const struct history *h)
{
	return h->newest_slot - h->n_slots;
}

/* Index of the first point of s whose slot is >= rel (n when none). */
static size_t lower_bound(const struct hseries *s, int64_t rel)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (at(s, mid)->slot < rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t cap_max(const struct history *h)
{
	return (size_t)h->n_slots + 1;
}

/* Room for one more point: grows the ring (unrolling it) up to the cap.
 * 0, or -ENOSPC at the cap, -ENOMEM. */
static int grow(const struct history *h, struct hseries *s)
{
	if (s->n < s->cap)
		return 0;
	if (s->cap >= cap_max(h))
		return -ENOSPC;
	size_t c = s->cap ? s->cap * 2 : HISTORY_RING_MIN;
	if (c > cap_max(h))
		c = cap_max(h);
	struct hpoint *np = malloc(c * sizeof(*np));
	if (!np)
		return -ENOMEM;
	for (size_t k = 0; k < s->n; k++)
		np[k] = *at(s, k);
	free(s->p);
	s->p = np;
	s->cap = c;
	s->head = 0;
	return 0;
}

static void drop_oldest(struct hseries *s)
{
	s->head = (s->head + 1) % s->cap;
	s->n--;
}

int history_add(struct history *h, size_t i, int64_t t_ns, double v)
{
	if (i >= h->n || !isfinite(v) || fabs(v) > FLT_MAX)
		return 0;
	struct hseries *s = &h->s[i];
	int64_t slot = slot_of(h, t_ns);

	if (!h->have_base) {
		h->have_base = 1;
		h->base_slot = slot;
		h->newest_slot = slot;
	}
	int64_t rel = slot - h->base_slot;
	if (rel < INT32_MIN + 1 || rel > INT32_MAX - 1)
		return 0;
	if (slot > h->newest_slot)
		h->newest_slot = slot;
	if (slot < first_slot(h))
		return 0;
	/* Trim what the window has left behind. A point's value holds until
	 * the next point: the last one before the window's start holds at
	 * its start, and moves there. */
	int64_t first_rel = first_slot(h) - h->base_slot;
	while (s->n > 1 && at(s, 1)->slot <= first_rel)
		drop_oldest(s);
	if (s->n > 0 && at(s, 0)->slot < first_rel) {
		at(s, 0)->slot = (int32_t)first_rel;
		at(s, 0)->last_t = 0;
	}

	float f = (float)v;
	uint32_t off = (uint32_t)((t_ns - slot * h->slot_ns) >> h->t_shift);
	size_t pos = s->n > 0 && at(s, s->n - 1)->slot <= rel ? (at(s, s->n - 1)->slot == rel ? s->n - 1 : s->n)
	                                                      : lower_bound(s, rel);
	if (pos < s->n && at(s, pos)->slot == rel) {
		struct hpoint *p = at(s, pos);
		/* A slot's last value is the one of its latest time, whatever
		 * the order they arrive in (a tie: the one written later). */
		if (off >= p->last_t) {
			p->last = f;
			p->last_t = off;
		}
		if (f < p->min)
			p->min = f;
		if (f > p->max)
			p->max = f;
		return 1;
	}
	/* A value that does not change adds nothing: the point before holds. */
	if (pos == s->n && s->n > 0) {
		const struct hpoint *b = at(s, s->n - 1);
		if (b->last == f && b->min == f && b->max == f)
			return 1;
	}
	int r = grow(h, s);
	if (r == -ENOMEM)
		return 0;
	if (r == -ENOSPC) {
		/* Full (cannot happen within the window's slots, kept for
		 * safety): the oldest point makes room, unless it is this. */
		if (pos == 0)
			return 0;
		drop_oldest(s);
		pos--;
	}
	/* Shift the points after pos one place towards the end. */
	s->n++;
	for (size_t k = s->n - 1; k > pos; k--)
		*at(s, k) = *at(s, k - 1);
	*at(s, pos) = (struct hpoint){.slot = (int32_t)rel, .last_t = off, .last = f, .min = f, .max = f};
	return 1;
}

/* The first point of s inside the window: the last one at or before its
 * start (its value holds there), else the first after it. */
static size_t first_in_window(const struct history *h, const struct hseries *s)
{
	if (!h->have_base)
		return 0;
	int64_t first_rel = first_slot(h) - h->base_slot;
	size_t k = lower_bound(s, first_rel);
	if (k > 0 && (k == s->n || at(s, k)->slot > first_rel))
		k--;
	return k;
}

size_t history_count(const struct history *h, size_t i)
{
	if (i >= h->n)
		return 0;
	return h->s[i].n - first_in_window(h, &h->s[i]);
}

int history_get(const struct history *h, size_t i, size_t k, struct history_point *out)
{
	if (i >= h->n)
		return -ERANGE;
	const struct hseries *s = &h->s[i];
	size_t first = first_in_window(h, s);
	if (k >= s->n - first)
		return -ERANGE;
	const struct hpoint *p = at(s, first + k);
	int64_t slot = h->base_slot + p->slot;
	if (slot < first_slot(h))
		slot = first_slot(h); /* held from before the window */
	out->t_ns = slot * h->slot_ns;
	out->last = p->last;
	out->min = p->min;
	out->max = p->max;
	return 0;
}

int64_t history_newest_ns(const struct history *h)
{
	return h->have_base ? h->newest_slot * h->slot_ns : 0;
}

size_t history_bytes(const struct history *h)
{
	size_t b = sizeof(*h);
	for (size_t i = 0; i < h->n; i++)
		b += h->s[i].cap * sizeof(struct hpoint);
	return b;
}
