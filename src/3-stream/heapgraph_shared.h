/* Private to heapgraph.c (the decoders) and heapgraph_assemble.c (sorting,
 * resolving, placing, and the accessors): the graph as the walk fills it. */
#ifndef DUMPWATCH_HEAPGRAPH_SHARED_H
#define DUMPWATCH_HEAPGRAPH_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/heapgraph.h"

struct range {
	uint64_t start, end;
	uint8_t gen;
	uint8_t in_walk;
};

/* Threads whose event sequence is followed, to see events the runtime
 * dropped (its session buffer full): a gap in a thread's sequence numbers. */
#define SEQ_THREADS 256

struct seq {
	uint64_t thread;
	uint64_t last;
};

/* A histogram's counter: the objects of one type in one MiB of the heap,
 * and the lowest and highest address among them. count 0: a free slot. */
struct cell {
	uint64_t mib; /* address >> 20 */
	uint32_t type;
	uint64_t count, bytes, lo, hi;
};

/* The MiB of the objects counted once the cell table is full. */
#define CELL_NO_MIB UINT64_MAX

struct heapgraph {
	struct hg_limits lim;
	int histogram;
	struct cell *cells; /* open addressing on (type, mib) */
	size_t n_cells, cap_cells;
	struct hg_tally *tallies; /* after hg_finish: n_types + 1 */
	uint64_t walk_bytes;
	struct seq seqs[SEQ_THREADS];
	size_t n_seqs;
	struct hg_cut cut;

	struct hg_node *nodes;
	size_t n_nodes, cap_nodes;
	uint64_t declared_edges; /* sum of the EdgeCounts of the nodes kept */

	/* Before hg_finish: target addresses (u64); after: node indices (u32)
	 * in the same buffer. */
	void *edges;
	size_t n_edges, cap_edges;

	struct hg_type *types;
	size_t n_types, cap_types;
	uint32_t *type_hash; /* open addressing: type index + 1, 0 empty */
	size_t hash_cap;
	uint64_t name_bytes;

	struct hg_root *roots;
	uint64_t *root_addr;
	size_t n_roots, cap_roots;

	struct range *ranges;
	size_t n_ranges, cap_ranges;

	uint32_t next_node_index, next_edge_index;
	uint32_t gc_count;
	int gc_started, gc_ended, finished;
	int64_t suspend_ts, pause_begin, pause_end, walk_begin, walk_end;
	uint64_t reported_bytes; /* GCHeapStats after the walk's GC, 0 when not seen */
};

#endif
