/* Retained sizes of a heap snapshot: the dominator tree of a finished
 * heapgraph and what each object, and each type, keeps alive.
 *
 * An object x dominates y when every path from the roots to y passes through
 * x; x's retained size is its own size plus the sizes of all it dominates,
 * which is what the GC would free if x went away. The tree hangs from a
 * virtual root whose children are the objects the roots name (weak roots,
 * GCRootFlag 2, keep nothing alive and are left out). A type's retained
 * bytes are the sum of the retained sizes of its objects that no other
 * object of the same type dominates, so that nested instances (a linked
 * list, a tree of nodes) are counted once. Objects reached from no strong
 * root retain only themselves and are counted apart.
 *
 * Bounded: past max_nodes or max_edges nothing is computed and the status
 * says so; the work (passes of the iteration, and steps: references looked
 * at plus steps up the tree) is capped, and the status says when a cap was
 * hit. Pure: a graph in, arrays out; no I/O, no clocks, no globals. */
#ifndef DUMPWATCH_HEAPDOM_H
#define DUMPWATCH_HEAPDOM_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/heapgraph.h"

/* idom of an object dominated by no other object: only the virtual root
 * (several roots, or several objects of different roots, lead to it). */
#define HD_ROOT (UINT32_MAX - 1)

struct hd_limits {
	uint64_t max_nodes;  /* default 16,000,000 */
	uint64_t max_edges;  /* references plus roots; default 80,000,000 */
	uint32_t max_passes; /* over all objects; default 64 (a heap settles in 2 to 4) */
	uint64_t max_steps;  /* default 64 x (objects + references) + 2^20 */
};

enum hd_status {
	HD_DONE = 0,
	HD_TOO_MANY_NODES,
	HD_TOO_MANY_EDGES,
	HD_PASS_CAP, /* not settled after max_passes */
	HD_STEP_CAP, /* max_steps spent */
};

struct heapdom {
	enum hd_status status;
	struct hd_limits lim;    /* the limits used, defaults filled in */
	size_t n_nodes, n_types; /* the graph's */
	uint32_t passes;         /* that were run, the last one finding no change */
	uint64_t steps;
	/* The rest is set only when status is HD_DONE (else NULL and 0). */
	uint32_t *idom;          /* per node: its immediate dominator, HD_ROOT, or HG_NONE when unreachable */
	uint64_t *retained;      /* per node: its size and what it dominates; its own size when unreachable */
	uint64_t *type_retained; /* per type, n_types + 1 ([n_types]: objects of no known type), unreachable
	                          * objects included (each retains itself) */
	uint64_t reachable_count, reachable_bytes;
	uint64_t unreachable_count, unreachable_bytes;
};

/* The dominator tree and the retained sizes of g (after hg_finish). lim may
 * be NULL (defaults; a 0 field takes its default). 0 with *ret set (see its
 * status), or -ENOMEM. Work: one depth-first search, then passes of
 * Cooper, Harvey and Kennedy's iteration ("A Simple, Fast Dominance
 * Algorithm", 2001) over reverse postorder, each linear in the references
 * for a tree-like heap. Memory, the graph apart: 28 bytes an object at
 * the peak (12 of them kept in the result), or 12 an object and 4 a
 * reference while the passes run, whichever is more. Measured by
 * tests/bench/bench_heapdom.c on 10 M objects and 13.8 M references: 267 MiB
 * at the peak, 6.6 to 8.4 s (4 passes), most of it waiting on memory. */
int heapdom_build(const struct heapgraph *g, const struct hd_limits *lim, struct heapdom **ret);
void heapdom_free(struct heapdom *d);

/* Why the sizes were not computed, a phrase ("the heap has more than
 * 16000000 objects"); "" for HD_DONE. Writes into buf, returns buf. */
const char *heapdom_why(const struct heapdom *d, char *buf, size_t len);

#endif
