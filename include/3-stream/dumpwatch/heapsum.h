/* What a heap snapshot says, in a page: the objects by type (count and
 * bytes, by generation, the large and pinned object heaps included), sorted
 * by bytes, and for the types that take the most, the retention path that
 * holds most of their bytes, from a root (root kind -> type -> ... -> the
 * type). Pure: a finished heapgraph in, a summary out.
 *
 * Paths: a breadth-first search from the roots (static fields first, then
 * handles, stacks, the finalizer queue, the rest) gives each reachable
 * object the path it was first reached by, interned as (the parent's path,
 * the type) in a bounded table; a run of objects of one type (a linked list,
 * a tree) is one step. For each top type the path that holds the most of its
 * bytes is kept. Retained sizes (heapdom.h) are added when asked, by
 * heapsum_retained. */
#ifndef DUMPWATCH_HEAPSUM_H
#define DUMPWATCH_HEAPSUM_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/heapdom.h"
#include "dumpwatch/heapgraph.h"

#define HS_MAX_STEPS 16

struct hs_row {
	uint32_t type; /* index into the graph's types */
	uint64_t count, bytes;
	uint64_t gen_count[HG_N_GENS], gen_bytes[HG_N_GENS];
	uint64_t retained; /* heapsum_retained: what its objects keep alive, nested ones once; else 0 */
};

/* A retention path: a root, then types. */
struct hs_path {
	uint32_t row;                 /* the hs_row it is for */
	char root[256];               /* "s_entries (static)", "[handle]", "[stack]", ... (UTF-8, from the target) */
	size_t n_steps;               /* types after the root; the last is the row's type */
	uint32_t steps[HS_MAX_STEPS]; /* type indices (HG_NONE: an object of no known type) */
	uint8_t nested[HS_MAX_STEPS]; /* this step is a run of objects of its type, one holding the next */
	int cut;                      /* steps were left out (deeper than HS_MAX_STEPS, or the path table full) */
	uint64_t bytes, count;        /* of the row's type held along this path */
};

struct heapsum {
	uint64_t total_count, total_bytes;
	uint64_t gen_count[HG_N_GENS], gen_bytes[HG_N_GENS];
	uint64_t unreachable_count, unreachable_bytes; /* reached from no root */
	size_t n_rows;
	struct hs_row *rows; /* every type with objects, most bytes first (then most objects) */
	size_t n_paths;
	struct hs_path *paths; /* one for each of the top rows that has a reachable object */
	/* heapsum_retained: whether the rows' retained sizes are there, and if
	 * not why (empty when it was not asked). */
	int retained_done;
	char retained_why[160];
	uint32_t retained_passes;
	uint64_t retained_unreachable_bytes; /* reached from no strong root (weak handles keep nothing) */
};

/* Summarises g (after hg_finish), with paths for the top_paths types of
 * most bytes; of a histogram (hg_new_histogram), the rows only. 0 or -ENOMEM. */
int heapsum_build(const struct heapgraph *g, size_t top_paths, struct heapsum **ret);
void heapsum_free(struct heapsum *s);

/* Adds to s (built from g) each row's retained bytes (heapdom.h, within lim,
 * NULL for its defaults). 0, also when the limits left them out; or -ENOMEM.
 * Unless 0, retained_why says why they are not there. */
int heapsum_retained(const struct heapgraph *g, struct heapsum *s, const struct hd_limits *lim);

/* The label of a root: "field (static)" for a static field (the runtime
 * does not say which class declares it), else the kind in brackets:
 * "[handle]", "[stack]", "[finalizer]". Writes into buf, returns buf. */
const char *heapsum_root_label(const struct hg_root *r, char *buf, size_t len);

#endif
