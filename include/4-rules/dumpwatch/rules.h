/* Rules: conditions on metrics with sustain durations, plus what to do when
 * they all hold (dump, within limits). This header holds the rule model and
 * the one-line condition grammar shared by --when and rule files:
 *
 *     METRIC OP VALUE [for DURATION]      OP: > >= < <=   (also "above"/"below")
 *
 * e.g. "loh-size > 200MB", "loh-alloc-rate > 50MB/s for 2s",
 * "System.Runtime/cpu-usage > 90% for 10s". Spaces around the operator are
 * optional and a space may separate a number from its unit ("loh-size>200 MB");
 * the words for/above/below are matched without regard to case. VALUE follows
 * units.h for the metric's unit; a counter with no known unit takes a plain
 * number in its own display units.
 *
 * First-chance exceptions have a condition of their own:
 *
 *     exception [TYPE] [message 'PATTERN'] [> | >= N] [in DURATION]
 *
 * e.g. "exception TimeoutException* message '*pool*' >= 3 in 1m": at least N
 * (default 1) exceptions whose type matches TYPE (a glob, default any, tried
 * against the full name and the name without its namespace) and whose message
 * matches PATTERN (a glob, quoted, default any), both without regard to case,
 * thrown within the last DURATION (default 1m, from 1s to 24h). It holds at
 * each such exception (an event metric), so it fires once per exception past
 * the count, within the rule's limits. Pure. */
#ifndef DUMPWATCH_RULES_H
#define DUMPWATCH_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/wire.h" /* enum dump_type */

#define RULE_MAX_CONDS 8
#define RULE_NAME_MAX 64
#define RULE_TEXT_MAX 256
#define RULE_EXC_WINDOW_NS (60 * 1000000000LL)
#define RULE_EXC_WINDOW_MIN_NS 1000000000LL
#define RULE_EXC_WINDOW_MAX_NS (24 * 3600 * 1000000000LL)

enum cond_op { COND_GT = 0, COND_GE, COND_LT, COND_LE };

struct rule_cond {
	struct metric_ref metric;
	enum cond_op op;
	double threshold;         /* in the metric's base unit */
	int64_t for_ns;           /* sustain; 0 = at once */
	char text[RULE_TEXT_MAX]; /* the condition as written, trimmed */
};

struct rule_limits {
	uint32_t max_dumps;  /* per process, within window; 0 = unlimited */
	int64_t window_ns;   /* 0 = the lifetime of the watch */
	int64_t cooldown_ns; /* minimum time between two dumps of one process */
};

struct rule {
	char name[RULE_NAME_MAX]; /* safe for file names: [A-Za-z0-9._-] */
	uint32_t n_conds;
	struct rule_cond conds[RULE_MAX_CONDS];
	struct rule_limits limits;
	enum dump_type dump_type;
	/* After the dump, a heap snapshot for its context: the heap by type
	 * and what holds it (a gcdump dump has it always). It induces a full
	 * blocking GC in the target, so a rule asks for it. */
	int heap_summary;
};

/* Parses one condition. Returns 0, or -EINVAL / -ENOENT with a sentence in err
 * that names the problem and, for an unknown metric, the nearest known name.
 * Units are required where the metric has one ("loh-size > 200" is an error). */
int rule_cond_parse(const char *text, struct rule_cond *out, char *err, size_t errlen);

/* True when value satisfies the condition's comparison (not its duration). */
int rule_cond_test(const struct rule_cond *c, double value);

/* --dump-type and dump.type by default: the GC heap is what a memory
 * incident is about (the object graph dotnet-dump and PerfView read); normal
 * and triage lack it, and full adds every mapped image for a file several
 * times larger. */
#define RULE_DEFAULT_DUMP_TYPE DUMP_WITHHEAP

/* Parses "normal|withheap|triage|full|gcdump". Returns 0 or -EINVAL. */
int rule_dump_type_parse(const char *text, enum dump_type *out);
const char *rule_dump_type_name(enum dump_type t);

/* A value that fits a unit, for examples in messages ("200MB", "90%"). */
const char *rule_unit_example(enum unit_kind u);

/* Builds a file-name-safe rule name from condition text: "loh-size>200MB" ->
 * "loh-size-gt-200MB". Writes at most RULE_NAME_MAX bytes including NUL. */
void rule_name_from_text(const char *text, char *out, size_t outlen);

/* The union of NEED_* of all conditions. */
unsigned rule_needs(const struct rule *r);

#endif
