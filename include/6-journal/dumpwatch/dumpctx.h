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

#include "dumpwatch/events.h"
#include "dumpwatch/gcrec.h"
#include "dumpwatch/history.h"
#include "dumpwatch/rulefile.h"

#define DUMPCTX_VERSION 1
/* GC records a context carries (the newest). */
#define DUMPCTX_GCS 50

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

	const struct history *history; /* may be NULL */
	const struct gc_record *gcs;   /* oldest first */
	size_t n_gcs;
};

/* The context as JSON (the caller puts it), or NULL when out of memory. */
struct json_object *dumpctx_build(const struct dumpctx_input *in);

/* "dump", "skipped", "failed". */
const char *dumpctx_outcome_name(enum dumpctx_outcome o);

#endif
