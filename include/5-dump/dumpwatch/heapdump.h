/* A heap snapshot of one process, as a dump: taken over the process's
 * diagnostics socket (heapsnap.h), summarised (heapsum.h) as JSON for the
 * dump's context and `dumpwatch heap --json`, and optionally written as a
 * .gcdump (gcdump.h). Blocking: the dump job runs it in a child of its own
 * (dump.c), so that the loop goes on. */
#ifndef DUMPWATCH_HEAPDUMP_H
#define DUMPWATCH_HEAPDUMP_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/heapsnap.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/ipc.h"

/* Types a summary lists (the rest are counted in "other"), and the types it
 * gives a retention path. */
#define HEAPDUMP_SUMMARY_TYPES 30
/* Retained sizes (heapdom.h) are computed for heaps of at most this many
 * objects: the dominator tree of 10 M objects takes seconds and some 270 MB
 * more; past it the summary says why they are missing. */
#define HEAPDUMP_RETAINED_MAX_OBJECTS 4000000
#define HEAPDUMP_SUMMARY_PATHS 10
/* Types a summary lists by retained bytes. */
#define HEAPDUMP_RETAINED_TYPES 30

/* The keys of the summary, named here once: heapdump_json writes them, and
 * `show` and `report` read them (the "heap" of a dump's context,
 * docs/context.md). HEAPDUMP_KEY_<OBJECT>_<KEY>: GEN an entry of
 * "generations" (keyed by HEAPDUMP_GEN_*), TYPE an entry of "types", OTHER
 * "other_types", PATH an entry of "paths", STEP an entry of its "steps", CUT
 * "cut". */
#define HEAPDUMP_KEY_PID "pid"
#define HEAPDUMP_KEY_BYTES "bytes"
#define HEAPDUMP_KEY_OBJECTS "objects"
#define HEAPDUMP_KEY_REFERENCES "references"
#define HEAPDUMP_KEY_ROOTS "roots"
#define HEAPDUMP_KEY_UNREACHABLE_BYTES "unreachable_bytes"
#define HEAPDUMP_KEY_UNREACHABLE_OBJECTS "unreachable_objects"
#define HEAPDUMP_KEY_GC "gc"                 /* the index of the GC the runtime walked the heap in */
#define HEAPDUMP_KEY_PAUSE_MS "pause_ms"     /* the target's pause for it; null when not seen */
#define HEAPDUMP_KEY_WALK_MS "walk_ms"       /* of which the walk */
#define HEAPDUMP_KEY_ELAPSED_MS "elapsed_ms" /* the whole snapshot, the session included */
#define HEAPDUMP_KEY_STREAM_BYTES "stream_bytes"
#define HEAPDUMP_KEY_RETAINED "retained" /* retained_json: computed or why not, the types that retain the most */
#define HEAPDUMP_KEY_RETAINED_COMPUTED "computed"
#define HEAPDUMP_KEY_RETAINED_WHY "why"
#define HEAPDUMP_KEY_RETAINED_PASSES "passes"
#define HEAPDUMP_KEY_RETAINED_UNREACHABLE_BYTES "unreachable_bytes"
#define HEAPDUMP_KEY_RETAINED_TYPES "types" /* type, retained_bytes, bytes, objects; most retained first */
#define HEAPDUMP_KEY_RUNTIME_HEAP_BYTES "runtime_heap_bytes" /* what GCHeapStats said the heap holds */
#define HEAPDUMP_KEY_COMPLETE "complete"                     /* false: the runtime dropped events of the walk */
#define HEAPDUMP_KEY_GENERATIONS "generations"
#define HEAPDUMP_KEY_TYPES "types" /* the largest, largest first */
#define HEAPDUMP_KEY_OTHER "other_types"
#define HEAPDUMP_KEY_PATHS "paths"
#define HEAPDUMP_KEY_CUT "cut"

#define HEAPDUMP_KEY_GEN_BYTES "bytes"
#define HEAPDUMP_KEY_GEN_OBJECTS "objects"

#define HEAPDUMP_KEY_TYPE_TYPE "type"
#define HEAPDUMP_KEY_TYPE_BYTES "bytes"
#define HEAPDUMP_KEY_TYPE_OBJECTS "objects"
#define HEAPDUMP_KEY_TYPE_RETAINED_BYTES "retained_bytes"         /* when the retained sizes were computed */
#define HEAPDUMP_KEY_TYPE_GENERATIONS "generations"               /* HEAPDUMP_GEN_* -> bytes, the nonzero ones */
#define HEAPDUMP_KEY_TYPE_GENERATION_OBJECTS "generation_objects" /* HEAPDUMP_GEN_* -> objects, the same ones */

#define HEAPDUMP_KEY_OTHER_TYPES "types" /* how many */
#define HEAPDUMP_KEY_OTHER_BYTES "bytes"
#define HEAPDUMP_KEY_OTHER_OBJECTS "objects"

#define HEAPDUMP_KEY_PATH_TYPE "type" /* the type it is for: a "type" of "types" */
#define HEAPDUMP_KEY_PATH_ROOT "root" /* "s_entries (static)", "[handle]", ... */
#define HEAPDUMP_KEY_PATH_STEPS "steps"
#define HEAPDUMP_KEY_PATH_CUT "cut" /* steps were left out before the last */
#define HEAPDUMP_KEY_PATH_BYTES "bytes"
#define HEAPDUMP_KEY_PATH_OBJECTS "objects"

#define HEAPDUMP_KEY_STEP_TYPE "type"
#define HEAPDUMP_KEY_STEP_NESTED "nested" /* true: a run of objects of the type, one holding the next */

#define HEAPDUMP_KEY_CUT_OBJECTS "objects"
#define HEAPDUMP_KEY_CUT_REFERENCES "references"
#define HEAPDUMP_KEY_CUT_TYPES "types"
#define HEAPDUMP_KEY_CUT_ROOTS "roots"
#define HEAPDUMP_KEY_CUT_NAMES "names"
#define HEAPDUMP_KEY_CUT_LOST_BATCHES "lost_batches"
#define HEAPDUMP_KEY_CUT_UNRESOLVED_REFERENCES "unresolved_references"
#define HEAPDUMP_KEY_CUT_UNRESOLVED_ROOTS "unresolved_roots"
#define HEAPDUMP_KEY_CUT_UNPLACED "unplaced" /* a histogram's objects of no told generation (heap --types) */

/* The generations, in heapgraph's order (HG_GEN_*); "unknown" only when an
 * object was in none. */
#define HEAPDUMP_GEN_NAMES                                                                                             \
	{                                                                                                              \
		"gen0", "gen1", "gen2", "loh", "poh", "unknown"                                                        \
	}

/* The summary as JSON: totals, generations, the top max_types types (and
 * "other_types" for the rest), the retention paths, what was cut, the
 * target's pause; when heapsum_retained was run, each type's
 * "retained_bytes" and "retained": the HEAPDUMP_RETAINED_TYPES types that
 * retain the most, or why that was not computed. Names from the target are JSON strings (json-c escapes
 * them); readers escape them again where they print. NULL when out of
 * memory. */
struct json_object *heapdump_json(pid_t pid, const struct heapsnap *snap, const struct heapsum *s, size_t max_types);

struct heapdump_request {
	struct ipc_endpoint ep; /* the target's socket, checked to be served by it */
	const char *process_name;
	int64_t timeout_ns; /* the snapshot's; 0: heapsnap's default */
	int gcdump_fd;      /* >= 0: the .gcdump is written there */
	int summary_fd;     /* >= 0: the summary's JSON is written there */
};

/* Takes the snapshot and writes what req asks for. 0, or -errno with a
 * sentence in err. */
int heapdump_run(const struct heapdump_request *req, char *err, size_t errlen);

#endif
