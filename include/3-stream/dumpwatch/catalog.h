/* The metric names rules refer to (DESIGN.md "Metric names"): what each one
 * means, its unit, and what a session must subscribe to for it. Pure. */
#ifndef DUMPWATCH_CATALOG_H
#define DUMPWATCH_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/units.h"

enum metric_id {
	M_LOH_SIZE = 0,
	M_POH_SIZE,
	M_GEN0_SIZE,
	M_GEN1_SIZE,
	M_GEN2_SIZE,
	M_HEAP_SIZE,
	M_GC_PAUSE, /* ms, pause of the last completed GC */
	M_GC_COUNT, /* GCs since the session started */
	M_GC_RATE,  /* GCs per second (any generation) */
	M_GEN0_GC_RATE,
	M_GEN1_GC_RATE,
	M_GEN2_GC_RATE,
	M_ALLOC_RATE, /* bytes/s, all kinds, from allocation ticks */
	M_SOH_ALLOC_RATE,
	M_LOH_ALLOC_RATE,
	M_POH_ALLOC_RATE,
	M_APPDOMAIN_ALLOCATED, /* bytes allocated since attach (allocation counter + ticks) */
	M_APPDOMAIN_SURVIVED,  /* bytes on the heap after the last GC: what survived it */
	M_APPDOMAIN_FREED,     /* since the first GC seen: allocated - heap growth */
	M_TIME_IN_GC,          /* percent of the last 10 s the runtime was suspended for GC */
	M_RSS,                 /* resident memory (VmRSS), polled from /proc */
	M_PRIVATE_MEMORY,      /* anonymous resident memory + swap (RssAnon + VmSwap) */
	M_SWAP,                /* swapped out (VmSwap) */
	M_THREADS,             /* threads of the process */
	M_FDS,                 /* open descriptors */
	M_EXCEPTION_RATE,      /* first-chance exceptions per second, any type */
	M_EXCEPTIONS,          /* matching first-chance exceptions in a window: "exception GLOB ..." */
	M_COUNTER,             /* an EventCounter: provider + counter name */
	M_METER,               /* a System.Diagnostics.Metrics instrument: "meter M/I[tags] STAT" */
	M__COUNT
};

/* What a metric needs from the session. */
#define NEED_GC 0x1u               /* runtime provider, GC keyword, level 4 */
#define NEED_ALLOC_TICKS 0x2u      /* runtime provider, GC keyword, level 5 */
#define NEED_COUNTERS 0x4u         /* the EventCounters provider named in the ref */
#define NEED_RUNTIME_COUNTERS 0x8u /* System.Runtime's counters: sizes before the first GC */
#define NEED_PROC 0x10u            /* polled from /proc/PID/status, not the stream */
#define NEED_PROC_FDS 0x20u        /* polled from /proc/PID/fd */
#define NEED_EXCEPTIONS 0x40u      /* runtime provider, Exception keyword (ExceptionThrown_V1) */
#define NEED_METERS 0x80u          /* System.Diagnostics.Metrics, the meter named in the ref */

/* What a meter condition reads of its instrument's time series. */
enum meter_stat {
	MS_VALUE = 0, /* counter, up-down counter: the total; gauge: the last value */
	MS_RATE,      /* counter, up-down counter: the change per second */
	MS_P50,       /* histogram: the median of the interval */
	MS_P95,
	MS_P99,
	MS_COUNT, /* histogram: measurements in the interval */
	MS_SUM,   /* histogram: their sum */
	MS__COUNT
};

/* An exception condition counts at most this many exceptions in its window. */
#define CATALOG_EXC_COUNT_MAX 1024

#define CATALOG_NAME_MAX 128

struct metric_ref {
	enum metric_id id;
	char name[CATALOG_NAME_MAX];     /* canonical: "loh-size", "System.Runtime/cpu-usage" */
	char provider[CATALOG_NAME_MAX]; /* M_COUNTER only */
	char counter[CATALOG_NAME_MAX];  /* M_COUNTER only */
	enum unit_kind unit;
	/* M_COUNTER: factor from the counter's reported value to the base unit
	 * (gc-heap-size is reported in MB: 1e6), 1 otherwise. */
	double scale;
	unsigned needs; /* NEED_* */
	/* An event metric's value belongs to one moment (gc-pause: one GC); a rule
	 * on it fires once per sample, not again while the value stays. */
	int is_event;
	/* M_EXCEPTIONS: which exceptions count (globs, matched without regard
	 * to case; the type's against its full name and its name without the
	 * namespace; "" = any message) and the window they are counted in. */
	char exc_type[CATALOG_NAME_MAX];
	char exc_message[CATALOG_NAME_MAX];
	int64_t window_ns;
	/* M_METER: provider holds the meter's name, counter the instrument's;
	 * tags the filter as written ("k=v,k2=GLOB", "" for any series), and
	 * what is read. The threshold's unit (unit) was taken from how it was
	 * written: the instrument's own unit is converted to it. */
	char tags[CATALOG_NAME_MAX];
	enum meter_stat stat;
};

/* Resolves a metric name as written in a rule: a GC-derived name, an
 * EventCounter as "provider/name", or a bare System.Runtime counter name.
 * GC-derived names win over the System.Runtime counters of the same name
 * ("loh-size" is the GC-event metric, "System.Runtime/loh-size" the counter).
 * The last '/' splits provider from counter; names are [A-Za-z0-9._-].
 *
 * A bare name must be a known one. A counter of another provider, or a
 * System.Runtime counter not in catalog_runtime_counters (a newer runtime's),
 * resolves with unit UNIT_NONE and scale 1: its threshold is a plain number in
 * the counter's own display units. A System.Runtime counter name within a
 * typo's distance of a known one is refused as a typo ("did you mean").
 *
 * Returns 0; -ENOENT with err saying so and suggesting the nearest known name;
 * or -EINVAL for a malformed name (bad characters, too long, empty part). */
int catalog_resolve(const char *name, struct metric_ref *out, char *err, size_t errlen);

/* Fills out for an exception condition: exceptions whose type matches
 * type_glob ("" or NULL: any) and message matches message_glob ("" or NULL:
 * any), counted over window_ns. Its name reads "exception TYPE [message
 * 'GLOB'] in WINDOW" (cut to CATALOG_NAME_MAX). Returns 0, or -EINVAL with
 * err when a glob is too long or holds a control character. */
int catalog_exception(const char *type_glob, const char *message_glob, int64_t window_ns, struct metric_ref *out,
                      char *err, size_t errlen);

/* Whether an exception of this type and message counts for ref (M_EXCEPTIONS). */
int catalog_exception_matches(const struct metric_ref *ref, const char *type, const char *message);

/* Fills out for a meter condition from "METER/INSTRUMENT[TAGS]" and a stat
 * (rules.h): the meter's name up to the first '/', the instrument's name
 * after it (letters, digits and ._-/ ), then optional tag filters in
 * brackets, "key=value" pairs separated by ',' whose value is a glob (no
 * ',' or ']' in it). unit is what the threshold was written in. Its name
 * reads "meter SPEC STAT" (cut to CATALOG_NAME_MAX). Returns 0, or -EINVAL
 * with err. */
int catalog_meter(const char *spec, enum meter_stat stat, enum unit_kind unit, struct metric_ref *out, char *err,
                  size_t errlen);

/* Whether a series' tags as the runtime wrote them ("k=v,k2=v2") pass a
 * meter condition's filter: every key of the filter is present with a value
 * its glob matches. */
int catalog_meter_tags_match(const char *filter, const char *tags);

/* "value", "rate", "p50", ... and back: -1 for an unknown word. */
const char *catalog_meter_stat_name(enum meter_stat s);
int catalog_meter_stat_parse(const char *word, size_t len);

/* Canonical name of a built-in metric id ("loh-size"); "counter" for
 * M_COUNTER, "meter" for M_METER. */
const char *catalog_id_name(enum metric_id id);

/* Known System.Runtime counter names, NULL-terminated, for help and suggestions. */
extern const char *const catalog_runtime_counters[];

#endif
