/* Allocation by type: the bytes each type allocated over the last window,
 * by kind (small, large, pinned object heap), from the runtime's allocation
 * ticks (GCAllocationTick: about one per 100 KB allocated of a kind, naming
 * the type of the object that crossed the mark and the bytes allocated since
 * the tick before). A tick's bytes are charged to its type, so the figures
 * are a sample: exact for large objects (each is a tick of its own or most
 * of one), an estimate for small ones that is good where a type allocates
 * many hundreds of KB.
 *
 * Bounded: at most ALLOCTYPES_MAX entries (a type and a kind) per process,
 * each of fixed size (the type's name is cut at EV_NAME_MAX bytes, as the
 * decoder cut it); an entry whose bytes have all left the window makes room
 * for a new type; while every entry holds bytes in the window, a new type's
 * bytes are counted as "other". The window is kept in ALLOCTYPES_BUCKETS
 * buckets: a sum covers the last window to within one bucket (window / 20).
 * A type name is the target's text: it is stored as it came (valid UTF-8 cut
 * at a character, from the decoder) and escaped by whoever prints it.
 *
 * Pure: times are passed in (nanoseconds on one monotonic clock). */
#ifndef DUMPWATCH_ALLOCTYPES_H
#define DUMPWATCH_ALLOCTYPES_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/events.h"

#define ALLOCTYPES_MAX 256
#define ALLOCTYPES_BUCKETS 20

struct alloctypes;

/* Types over window_ns (> 0), at most max_types entries (0:
 * ALLOCTYPES_MAX; at most ALLOCTYPES_MAX). NULL when out of memory or the
 * window makes no sense. Nothing per type is allocated before its first
 * tick. */
struct alloctypes *alloctypes_new(int64_t window_ns, size_t max_types);
void alloctypes_free(struct alloctypes *a);

int64_t alloctypes_window_ns(const struct alloctypes *a);

/* Charges bytes to type (NUL-terminated, "" when the tick named none) and
 * kind (enum ev_alloc_kind) at t_ns. Returns 1 when counted to the type, 0
 * when counted as other (the table is full of types that allocated within
 * the window, or the kind is not one of the three), -1 when dropped (older
 * than the window, or out of memory). */
int alloctypes_add(struct alloctypes *a, int64_t t_ns, const char *type, uint32_t kind, uint64_t bytes);

/* Feeds an allocation tick event; other events are ignored. */
void alloctypes_on_event(struct alloctypes *a, const struct ev_record *r, int64_t t_ns);

struct alloctypes_entry {
	char type[EV_NAME_MAX];
	uint32_t kind; /* enum ev_alloc_kind */
	uint64_t bytes, ticks;
};

struct alloctypes_summary {
	uint64_t bytes, ticks;             /* all the ticks in the window */
	uint64_t other_bytes, other_ticks; /* of which counted as other */
	size_t types;                      /* entries with bytes in the window */
	int64_t since_ns;                  /* the window's oldest bucket's start, or the oldest tick's time if later */
	int64_t until_ns;                  /* the newest tick's time (0: none yet) */
};

/* The n entries that allocated most within the window ending at now_ns (0:
 * at the newest tick), largest first (ties by name and kind), into out;
 * returns how many. sum (may be NULL) gets the window's totals. */
size_t alloctypes_top(const struct alloctypes *a, int64_t now_ns, struct alloctypes_entry *out, size_t n,
                      struct alloctypes_summary *sum);

/* "soh", "loh", "poh"; "?" for another value. */
const char *alloctypes_kind_name(uint32_t kind);

/* Memory held. */
size_t alloctypes_bytes(const struct alloctypes *a);

#endif
