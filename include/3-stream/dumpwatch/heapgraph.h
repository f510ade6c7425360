/* A heap snapshot: the objects, references, roots and types a runtime
 * reports in one heap walk (the GCBulk* events of the runtime provider,
 * asked for with HG_KEYWORDS), assembled into a graph.
 *
 * Events go in one at a time through hg_feed, in stream order, as the
 * nettrace parser delivers them; hg_finish then resolves references to node
 * indices and roots to nodes. Memory is bounded by struct hg_limits: past a
 * limit, what comes later is dropped and counted (hg_cut), never refused. Pure:
 * no I/O, no clocks, no globals. */
#ifndef DUMPWATCH_HEAPGRAPH_H
#define DUMPWATCH_HEAPGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/nettrace.h"

/* Runtime provider keywords of a heap snapshot: GC | Type | GCHeapDump |
 * GCHeapCollect | GCHeapAndTypeNames (what dotnet-gcdump asks for), at
 * level 5. Enabling GCHeapCollect makes the runtime induce a blocking gen2
 * GC and walk the heap during it. */
#define HG_KEYWORDS 0x1980001ULL
/* GCHeapSurvivalAndMovement: adds GCGenerationRange, which places each
 * object in its generation. */
#define HG_KEYWORD_GENERATIONS 0x400000ULL

/* Runtime provider event ids read here. */
#define HG_EV_BULK_TYPE 15
#define HG_EV_BULK_ROOT_EDGE 16
#define HG_EV_BULK_ROOT_CWT_EDGE 17
#define HG_EV_BULK_NODE 18
#define HG_EV_BULK_EDGE 19
#define HG_EV_GENERATION_RANGE 23
#define HG_EV_BULK_ROOT_CCW 36
#define HG_EV_BULK_RCW 37
#define HG_EV_BULK_ROOT_STATIC_VAR 38

#define HG_NONE UINT32_MAX

/* Where an object is: generations 0-2, the large and the pinned object
 * heaps, or unknown (no GCGenerationRange covered it). */
enum hg_gen { HG_GEN0 = 0, HG_GEN1, HG_GEN2, HG_LOH, HG_POH, HG_GEN_UNKNOWN, HG_N_GENS };

/* Root kinds: the GCRootKind of GCBulkRootEdge (0 stack, 1 finalizer
 * queue, 2 handle, 3 older generation, 4 sized ref, 5 overflow), and the
 * roots that come from other events. */
enum hg_root_kind {
	HG_ROOT_STACK = 0,
	HG_ROOT_FINALIZER = 1,
	HG_ROOT_HANDLE = 2,
	HG_ROOT_OLDER = 3,
	HG_ROOT_SIZEDREF = 4,
	HG_ROOT_OVERFLOW = 5,
	HG_ROOT_STATIC = 16, /* GCBulkRootStaticVar */
	HG_ROOT_CWT = 17,    /* a ConditionalWeakTable value (dependent handle) */
	HG_ROOT_COM = 18,    /* CCW / RCW */
	HG_ROOT_OTHER = 19,
};

struct hg_type {
	uint64_t id;     /* the runtime's TypeID (its MethodTable) */
	uint64_t module; /* ModuleID, 0 unknown */
	/* UTF-8, never NULL, as PerfView and dotnet-gcdump show it
	 * ("System.Collections.Generic.List<System.Byte[]>", from the runtime's
	 * "List`1[System.Byte[]]"); a made-up "Type 0x7f..." when no GCBulkType
	 * named it. */
	char *name;
};

struct hg_node {
	uint64_t addr;
	uint64_t size;       /* bytes, as the runtime reported */
	uint32_t type;       /* index into the types, HG_NONE when unknown */
	uint32_t first_edge; /* index into the edges */
	uint32_t n_edges;
	uint8_t gen; /* enum hg_gen, after hg_finish */
};

struct hg_root {
	uint32_t node;  /* index of the rooted node (after hg_finish), HG_NONE when not in the graph */
	uint8_t kind;   /* enum hg_root_kind */
	uint32_t flags; /* GCRootFlag: 1 pinning, 2 weak ref, 4 interior, 8 ref counted */
	uint64_t id;    /* GCRootID: a handle, a stack slot, a static's address */
	/* HG_ROOT_STATIC: the type index of the event's TypeID, else HG_NONE.
	 * The runtime sends the type of the field's value there, not the class
	 * that declares the field (eventtrace.cpp, BulkStaticsLogger::WriteEntry),
	 * although PerfView names the root "[static var TYPE.field]" with it. */
	uint32_t owner_type;
	char *name; /* HG_ROOT_STATIC: the field's name ("s_entries"), else NULL */
	/* HG_ROOT_STATIC: the class that declares the field ("Cache"), when
	 * hg_root_set_owner named it from the assemblies' metadata, else NULL. */
	char *owner;
};

struct hg_limits {
	uint64_t max_nodes;      /* default 20,000,000 */
	uint64_t max_edges;      /* default 80,000,000 */
	uint64_t max_types;      /* default 1,000,000 */
	uint64_t max_roots;      /* default 4,000,000 */
	uint64_t max_name_bytes; /* type names, all together; default 64 MiB */
};

/* What the limits cut, and what could not be placed. */
struct hg_cut {
	uint64_t nodes, edges, types, roots; /* dropped past a limit */
	uint64_t unresolved_edges;           /* to an address no node has (kept as HG_NONE) */
	uint64_t unresolved_roots;
	uint64_t names;        /* types left unnamed past max_name_bytes */
	uint64_t lost_batches; /* GCBulkNode/GCBulkEdge batches the runtime dropped (a gap in their Index):
	                        * the edges after one are misattributed */
	uint64_t extra_edges;  /* edges beyond what the nodes declared */
	uint64_t lost_events;  /* events the runtime dropped (gaps in a thread's sequence numbers): its
	                        * session buffer filled faster than it was read; the graph lacks them */
	uint64_t unplaced;     /* histogram: objects whose generation it could not tell (counted as unknown) */
};

/* A histogram's row: the objects of one type, by generation (enum hg_gen). */
struct hg_tally {
	uint64_t count, bytes;
	uint64_t gen_count[HG_N_GENS], gen_bytes[HG_N_GENS];
};

struct heapgraph;

/* A new, empty graph; lim may be NULL (defaults; a 0 field takes its default). NULL when out of memory. */
struct heapgraph *hg_new(const struct hg_limits *lim);
void hg_free(struct heapgraph *g);

/* A histogram only: the same events, decoded the same way, but each object
 * is only counted, by type and by the MiB of the heap it lies in, and no
 * node, edge or root is kept, so memory grows with the types and the heap's
 * size in MiB, not with the objects. The generations come at hg_finish from
 * the ranges the runtime reports (some only after the walk): the objects of
 * one type in one MiB get the generation of the range they lie in, or,
 * when a range boundary falls between them (segments, not regions), an
 * unknown one (hg_cut()->unplaced). hg_n_nodes and hg_n_roots are 0,
 * hg_n_edges counts the references that came; hg_tally gives the rows.
 * max_nodes and max_edges do not apply. NULL when out of memory. */
struct heapgraph *hg_new_histogram(const struct hg_limits *lim);
int hg_is_histogram(const struct heapgraph *g);
/* After hg_finish of a histogram: the objects of type t (t < hg_n_types),
 * or, for t == hg_n_types, those of no known type. NULL otherwise. */
const struct hg_tally *hg_tally(const struct heapgraph *g, size_t t);

/* Takes one event. Returns 1 when it was a heap-walk event and was taken, 0
 * when it is not one (any other provider or id), -EBADMSG when its payload is
 * malformed (err holds a sentence naming the event and the fault; the graph
 * keeps what it had), -ENOMEM. pointer_size is the trace's. */
int hg_feed(struct heapgraph *g, const struct nettrace_event *ev, int pointer_size, char *err, size_t errlen);

/* Whether the runtime has begun and ended the walk: the induced gen2 GCStart
 * (GC keyword) seen, and the GCEnd of the same count after it (or, when that
 * was dropped, the GCRestartEEEnd that ends the pause). A snapshot session
 * stops when this is true. */
int hg_walk_done(const struct heapgraph *g);

/* Sorts, resolves edge targets and roots to node indices, places objects in
 * generations. Once, after the last hg_feed. 0 or -ENOMEM. */
int hg_finish(struct heapgraph *g);

size_t hg_n_nodes(const struct heapgraph *g);
size_t hg_n_types(const struct heapgraph *g);
size_t hg_n_roots(const struct heapgraph *g);
size_t hg_n_edges(const struct heapgraph *g);
const struct hg_node *hg_node(const struct heapgraph *g, size_t i);
const struct hg_type *hg_type(const struct heapgraph *g, size_t i);
const struct hg_root *hg_root(const struct heapgraph *g, size_t i);
/* Names the class that declares static root i (a copy of owner is kept).
 * 0, -ENOMEM, -EINVAL when i is not a static root. */
int hg_root_set_owner(struct heapgraph *g, size_t i, const char *owner);
/* Edge targets of node i (node indices, HG_NONE for unresolved); *n set. */
const uint32_t *hg_edges(const struct heapgraph *g, size_t i, size_t *n);
/* The node at addr, HG_NONE when none (after hg_finish). */
uint32_t hg_find(const struct heapgraph *g, uint64_t addr);
const struct hg_cut *hg_cut(const struct heapgraph *g);
/* The induced GC's number, 0 when not seen. */
uint32_t hg_gc_count(const struct heapgraph *g);
/* The target's pause for the walk, as event timestamps (QPC ticks): the
 * last GCSuspendEEBegin before the induced GCStart, the first
 * GCRestartEEEnd after its GCEnd. 0, or -ENODATA when either is missing. */
int hg_pause(const struct heapgraph *g, int64_t *ret_begin, int64_t *ret_end);
/* The bytes the runtime counts in its heap after the walk's GC (the sum of
 * the generation sizes of its GCHeapStats), 0 when not seen. A walk whose
 * objects add up to much less lost events on the way (measured: the walk's
 * objects make 99.7 % to 100.1 % of it when nothing was lost). */
uint64_t hg_reported_bytes(const struct heapgraph *g);
/* The objects' sizes added up (those kept, in a graph; all, in a histogram). */
uint64_t hg_walk_bytes(const struct heapgraph *g);
/* The induced GC's GCStart and GCEnd timestamps; 0 or -ENODATA. */
int hg_walk_span(const struct heapgraph *g, int64_t *ret_begin, int64_t *ret_end);

#endif
