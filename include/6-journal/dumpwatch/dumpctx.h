/* The context of a dump: why it was taken and what the process did before,
 * as the JSON written beside the dump (NAME.json, docs/context.md, schema in
 * examples/dump-context.schema.json). Built from what the target holds at
 * the end of the dump (or when it was skipped or failed): the rule, the
 * values that made it fire, the process, the metric history and the last
 * GC records. Pure: everything comes in through the input. */
#ifndef DUMPWATCH_DUMPCTX_H
#define DUMPWATCH_DUMPCTX_H

#include <json-c/json.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/alloctypes.h"
#include "dumpwatch/events.h"
#include "dumpwatch/gcrec.h"
#include "dumpwatch/history.h"
#include "dumpwatch/rulefile.h"

#define DUMPCTX_VERSION 1
/* GC records a context carries (the newest). */
#define DUMPCTX_GCS 50
/* The allocating types a context lists (the largest). */
#define DUMPCTX_ALLOC_TYPES 20

/* The keys of NAME.json, named here once: dumpctx_build writes them, and the
 * plot (plot.c), `show` and `report` (context.c and the files beside it)
 * read them by these names. Each is named by the object that holds it,
 * DUMPCTX_KEY_<OBJECT>_<KEY>, the top level's without an object: RULE is
 * "rule", COND an entry of its "conditions", EXC a condition's "exception",
 * DUMP "dump", PROC "process", HIST "history", SERIES an entry of its
 * "series" (points [t_ms, last, min, max]), GC an entry of "gcs" and SIZE
 * its "sizes", ALLOCS "allocations" and ATYPE an entry of its "types".
 * docs/context.md says what each holds. */
#define DUMPCTX_KEY_CONTEXT "dumpwatch_context" /* DUMPCTX_VERSION */
#define DUMPCTX_KEY_VERSION "dumpwatch_version" /* dumpwatch's own */
#define DUMPCTX_KEY_OUTCOME "outcome"           /* dumpctx_outcome_name */
#define DUMPCTX_KEY_ERROR "error"
#define DUMPCTX_KEY_FIRED_UNIX_MS "fired_unix_ms"
#define DUMPCTX_KEY_RULE "rule"
#define DUMPCTX_KEY_DUMP "dump"
#define DUMPCTX_KEY_PROCESS "process"
#define DUMPCTX_KEY_HISTORY "history"
#define DUMPCTX_KEY_GCS "gcs"
#define DUMPCTX_KEY_ALLOCS "allocations" /* null: no allocation ticks subscribed or seen */
#define DUMPCTX_KEY_HEAP "heap"             /* the heap summary (heapdump_json), when taken */
#define DUMPCTX_KEY_HEAP_ERROR "heap_error" /* why the heap summary asked for is missing */

#define DUMPCTX_KEY_RULE_NAME "name"
#define DUMPCTX_KEY_RULE_DESCRIPTION "description"
#define DUMPCTX_KEY_RULE_FILE "file"
#define DUMPCTX_KEY_RULE_LINE "line"
#define DUMPCTX_KEY_RULE_DUMP_TYPE "dump_type"
#define DUMPCTX_KEY_RULE_CONDITIONS "conditions"

#define DUMPCTX_KEY_COND_TEXT "text"
#define DUMPCTX_KEY_COND_METRIC "metric"
#define DUMPCTX_KEY_COND_OP "op"
#define DUMPCTX_KEY_COND_THRESHOLD "threshold"
#define DUMPCTX_KEY_COND_UNIT "unit"
#define DUMPCTX_KEY_COND_FOR_MS "for_ms"
#define DUMPCTX_KEY_COND_VALUE "value"
#define DUMPCTX_KEY_COND_AT_LEAST "at_least"
#define DUMPCTX_KEY_COND_EXCEPTION "exception"

#define DUMPCTX_KEY_EXC_TYPE "type"
#define DUMPCTX_KEY_EXC_MESSAGE "message"
#define DUMPCTX_KEY_EXC_HRESULT "hresult"
#define DUMPCTX_KEY_EXC_T_MS "t_ms"

#define DUMPCTX_KEY_DUMP_FILE "file"
#define DUMPCTX_KEY_DUMP_PATH "path"
#define DUMPCTX_KEY_DUMP_BYTES "bytes"
#define DUMPCTX_KEY_DUMP_STARTED_UNIX_MS "started_unix_ms"
#define DUMPCTX_KEY_DUMP_ENDED_UNIX_MS "ended_unix_ms"
#define DUMPCTX_KEY_DUMP_DURATION_MS "duration_ms"
#define DUMPCTX_KEY_DUMP_VIA "via"

#define DUMPCTX_KEY_PROC_PID "pid"
#define DUMPCTX_KEY_PROC_NAME "name"
#define DUMPCTX_KEY_PROC_CMDLINE "cmdline"
#define DUMPCTX_KEY_PROC_UID "uid"
#define DUMPCTX_KEY_PROC_USER "user"
#define DUMPCTX_KEY_PROC_RUNTIME_VERSION "runtime_version"

#define DUMPCTX_KEY_HIST_WINDOW_MS "window_ms"
#define DUMPCTX_KEY_HIST_SLOT_MS "slot_ms"
#define DUMPCTX_KEY_HIST_SERIES "series"

#define DUMPCTX_KEY_SERIES_METRIC "metric"
#define DUMPCTX_KEY_SERIES_UNIT DUMPCTX_KEY_COND_UNIT /* one key: a reader takes either unit alike */
#define DUMPCTX_KEY_SERIES_POINTS "points"

#define DUMPCTX_KEY_GC_INDEX "index"
#define DUMPCTX_KEY_GC_GENERATION "generation"
#define DUMPCTX_KEY_GC_REASON "reason"
#define DUMPCTX_KEY_GC_TYPE "type"
#define DUMPCTX_KEY_GC_START_MS "start_ms"
#define DUMPCTX_KEY_GC_END_MS "end_ms"
#define DUMPCTX_KEY_GC_PAUSE_MS "pause_ms"
#define DUMPCTX_KEY_GC_SIZES "sizes"
#define DUMPCTX_KEY_GC_COMPLETE "complete"

#define DUMPCTX_KEY_SIZE_GEN0 "gen0"
#define DUMPCTX_KEY_SIZE_GEN1 "gen1"
#define DUMPCTX_KEY_SIZE_GEN2 "gen2"
#define DUMPCTX_KEY_SIZE_LOH "loh"
#define DUMPCTX_KEY_SIZE_POH "poh"

#define DUMPCTX_KEY_ALLOCS_WINDOW_MS "window_ms"
#define DUMPCTX_KEY_ALLOCS_SINCE_MS "since_ms" /* the window's start, relative to the fire */
#define DUMPCTX_KEY_ALLOCS_UNTIL_MS "until_ms" /* the newest tick */
#define DUMPCTX_KEY_ALLOCS_BYTES "bytes"       /* all the ticks' bytes in the window */
#define DUMPCTX_KEY_ALLOCS_TICKS "ticks"
#define DUMPCTX_KEY_ALLOCS_TYPE_COUNT "type_count"           /* types (and kinds) kept that allocated */
#define DUMPCTX_KEY_ALLOCS_TYPES_MAX "types_max"             /* the most kept: ALLOCTYPES_MAX */
#define DUMPCTX_KEY_ALLOCS_OTHER_BYTES "other_bytes"         /* not in types: the rest */
#define DUMPCTX_KEY_ALLOCS_UNTRACKED_BYTES "untracked_bytes" /* of which beyond types_max */
#define DUMPCTX_KEY_ALLOCS_TYPES "types"                     /* the largest, largest first */

#define DUMPCTX_KEY_ATYPE_TYPE "type"
#define DUMPCTX_KEY_ATYPE_KIND "kind" /* "soh", "loh", "poh" */
#define DUMPCTX_KEY_ATYPE_BYTES "bytes"
#define DUMPCTX_KEY_ATYPE_SHARE "share" /* of the window's bytes, 0 to 1 */
#define DUMPCTX_KEY_ATYPE_TICKS "ticks"

enum dumpctx_outcome { DUMPCTX_DUMP, DUMPCTX_SKIPPED, DUMPCTX_FAILED };

struct dumpctx_input {
	enum dumpctx_outcome outcome;
	const char *error; /* skipped, failed: why */

	const struct file_rule *rule;
	const char *rule_file; /* NULL: given on the command line */
	/* The value each condition read at the fire: read[i] 0 unknown, 1
	 * known, 2 a floor (metrics_read_eval). */
	double value[RULE_MAX_CONDS];
	int read[RULE_MAX_CONDS];

	/* With exc_set, the exception that fired condition exc_cond, copied:
	 * it is written out after the dump. */
	int exc_set;
	uint32_t exc_cond;
	char exc_type[EV_EXC_TYPE_MAX];
	char exc_message[EV_EXC_MESSAGE_MAX];
	uint32_t exc_hresult;
	int64_t exc_ns;

	int64_t fire_ns;      /* monotonic, the clock of the history and GCs */
	int64_t fire_unix_ns; /* wall clock */

	const char *dump_dir;
	const char *dump_name;      /* file name in dump_dir */
	int64_t dump_bytes;         /* < 0: none */
	int64_t dump_start_unix_ns; /* 0: never started */
	int64_t dump_end_unix_ns;   /* 0: not ended */
	double dump_duration_ms;    /* < 0: unknown */
	const char *via;            /* NULL: unknown */

	pid_t pid;
	const char *process_name;
	const char *cmdline;
	uid_t uid;
	const char *user; /* NULL: no name for uid */
	const char *runtime_version;

	/* The heap summary (heapdump_json) of a gcdump or a rule with
	 * heap-summary, NULL when none; heap_error: why one asked for is missing. */
	struct json_object *heap;
	const char *heap_error;

	const struct history *history; /* may be NULL */
	const struct gc_record *gcs;   /* oldest first */
	size_t n_gcs;
	const struct alloctypes *allocs; /* NULL: no allocation ticks */
};

/* The context as JSON (the caller puts it), or NULL when out of memory. */
struct json_object *dumpctx_build(const struct dumpctx_input *in);

/* "dump", "skipped", "failed". */
const char *dumpctx_outcome_name(enum dumpctx_outcome o);

#endif
