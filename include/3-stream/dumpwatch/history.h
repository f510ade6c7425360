/* The metric history of one process: for each series (a metric), its values
 * over the last window, at the resolution of one slot. Values that fall into
 * one slot are merged into its last (the one of the latest time, whatever
 * order they were written in), smallest and largest value, so a spike
 * shorter than a slot still shows at its top; everything older than the
 * window (behind the newest time recorded in any series) is dropped. A
 * point's value holds until the next point: a value equal to the one before
 * adds nothing, and the point before the window's start holds at its start.
 *
 * Bounded: a series holds at most window / slot + 1 points of 20 bytes
 * (HISTORY_POINT_BYTES: the slot, the time of its last value and three
 * floats; values are stored as floats, 24 bits of precision,
 * so a size of 350 MB is off by at most 32 bytes), allocated as they come;
 * there are at most HISTORY_SERIES_MAX series. The default 5 minutes at
 * 250 ms is 1201 points, 24 KB, per series that moves at every slot; a
 * metric that does not move costs one point.
 *
 * Times may arrive out of order (the runtime's per-thread buffers reach the
 * stream out of order across threads): a value is inserted into its place.
 * Pure: times are passed in (nanoseconds on one monotonic clock). */
#ifndef DUMPWATCH_HISTORY_H
#define DUMPWATCH_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/units.h"

#define HISTORY_SERIES_MAX 32
#define HISTORY_KEY_MAX 128
#define HISTORY_POINT_BYTES 20

struct history_point {
	int64_t t_ns; /* the start of its slot (of the window, for one that holds from before) */
	double last, min, max;
};

struct history;

/* A history of window_ns at slot_ns per point (slot_ns > 0, window_ns >=
 * slot_ns). NULL when out of memory or the arguments make no sense. */
struct history *history_new(int64_t window_ns, int64_t slot_ns);
void history_free(struct history *h);

int64_t history_window_ns(const struct history *h);
int64_t history_slot_ns(const struct history *h);

/* The index of the series named key (created empty when new, with unit).
 * -ENOSPC past HISTORY_SERIES_MAX, -EINVAL for an empty or too long key. */
int history_series(struct history *h, const char *key, enum unit_kind unit);
size_t history_n_series(const struct history *h);
/* The key and unit of series i (i < history_n_series). */
const char *history_series_key(const struct history *h, size_t i, enum unit_kind *ret_unit);

/* Records value v of series i at t_ns. Returns 1 when kept, 0 when dropped:
 * older than the window, not finite, or beyond what a float holds. */
int history_add(struct history *h, size_t i, int64_t t_ns, double v);

/* The points of series i within the window, oldest first: how many, and the
 * k-th. history_get returns 0, or -ERANGE past the last. */
size_t history_count(const struct history *h, size_t i);
int history_get(const struct history *h, size_t i, size_t k, struct history_point *out);

/* The newest time recorded (0 when none). */
int64_t history_newest_ns(const struct history *h);

/* Memory held (the history and its points' allocations). */
size_t history_bytes(const struct history *h);

#endif
