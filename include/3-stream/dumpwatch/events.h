/* Payload decoders: turn a raw nettrace event into the typed record dumpwatch
 * uses — EventCounters of any provider (driven by the event's metadata), the
 * runtime's GC events, allocation ticks and AppDomain memory events
 * (PROTOCOL.md sections 4 and 5). Pure: bytes in, struct out. Payloads are
 * unaligned and may be longer than the layout known here (newer versions
 * append fields); shorter than the known minimum is malformed. */
#ifndef DUMPWATCH_EVENTS_H
#define DUMPWATCH_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/nettrace.h"

#define EV_RUNTIME_PROVIDER "Microsoft-Windows-DotNETRuntime"
#define EV_METRICS_PROVIDER "System.Diagnostics.Metrics"

/* Runtime provider keywords and event ids used here. */
#define EV_KW_GC 0x1ULL
#define EV_KW_LOADER 0x8ULL
#define EV_KW_APPDOMAIN_RM 0x800ULL
#define EV_KW_EXCEPTION 0x8000ULL

enum ev_type {
	EV_NONE = 0, /* not an event dumpwatch decodes */
	EV_COUNTER,
	EV_GC_START,                /* id 1 */
	EV_GC_END,                  /* id 2 */
	EV_GC_RESTART_EE_END,       /* id 3 */
	EV_GC_HEAP_STATS,           /* id 4 */
	EV_GC_RESTART_EE_BEGIN,     /* id 7 */
	EV_GC_SUSPEND_EE_END,       /* id 8 */
	EV_GC_SUSPEND_EE_BEGIN,     /* id 9 */
	EV_GC_ALLOC_TICK,           /* id 10 */
	EV_GC_TRIGGERED,            /* id 35 */
	EV_APPDOMAIN_MEM_ALLOCATED, /* id 83 */
	EV_APPDOMAIN_MEM_SURVIVED,  /* id 84 */
	EV_EXCEPTION_THROWN,        /* id 80, ExceptionThrown_V1 */
	EV_METER_VALUE,             /* System.Diagnostics.Metrics: one time series at a collection */
	EV_METER_ERROR,             /* System.Diagnostics.Metrics: an error or a limit reached */
};

enum ev_gc_type { EV_GC_BLOCKING = 0, EV_GC_BACKGROUND = 1, EV_GC_FOREGROUND = 2 };
enum ev_alloc_kind { EV_ALLOC_SMALL = 0, EV_ALLOC_LARGE = 1, EV_ALLOC_PINNED = 2 };

#define EV_NAME_MAX 128
#define EV_UNITS_MAX 32

struct ev_counter {
	char provider[EV_NAME_MAX];
	char name[EV_NAME_MAX];
	char display_units[EV_UNITS_MAX];
	int is_increment;    /* CounterType "Sum": value is the increment over the interval */
	double value;        /* Mean for mean counters, Increment for sum counters */
	double interval_sec; /* 0 when absent */
};

struct ev_gc_start {
	uint32_t count, depth, reason, type; /* type: enum ev_gc_type */
};

struct ev_gc_end {
	uint32_t count, depth;
};

struct ev_gc_heap_stats {
	uint64_t size[5]; /* gen0, gen1, gen2, LOH (3), POH (4) after the GC */
	uint64_t promoted[5];
	uint64_t finalization_promoted_size, finalization_promoted_count;
	uint32_t pinned_objects, sink_blocks, gc_handles;
	int has_poh; /* version >= 2 payload carried gen4 */
};

struct ev_gc_suspend {
	uint32_t reason, count;
};

struct ev_alloc_tick {
	uint32_t kind;        /* enum ev_alloc_kind */
	uint64_t amount;      /* bytes allocated since the previous tick of this kind/heap */
	uint64_t object_size; /* size of the object that triggered the tick, 0 if absent */
	uint32_t heap_index;
	char type_name[EV_NAME_MAX]; /* UTF-8, truncated; "" if absent */
};

struct ev_appdomain_mem {
	uint64_t appdomain_id;
	uint64_t bytes;            /* allocated (83) or survived (84) */
	uint64_t process_survived; /* 84 only */
};

/* Lengths kept of an exception's type name and message (UTF-8, cut at a
 * character's boundary); longer ones are marked truncated. */
#define EV_EXC_TYPE_MAX 256
#define EV_EXC_MESSAGE_MAX 512

struct ev_exception {
	char type[EV_EXC_TYPE_MAX];       /* "System.TimeoutException" */
	char message[EV_EXC_MESSAGE_MAX]; /* as the program wrote it: any text */
	int type_truncated, message_truncated;
	uint32_t hresult;
	uint16_t flags; /* 0x1 has an inner exception, 0x2 nested, 0x4 rethrown, 0x8 corrupted state, 0x10 CLS */
};

/* System.Diagnostics.Metrics (MetricsEventSource): an instrument's time
 * series (one set of tags) as aggregated over one collection interval. The
 * values travel as text (formatted with the invariant culture). */
enum ev_meter_kind {
	EV_METER_COUNTER = 1, /* CounterRateValuePublished: rate = increase over the interval, value = total */
	EV_METER_UPDOWN,      /* UpDownCounterRateValuePublished: likewise, may fall */
	EV_METER_GAUGE,       /* GaugeValuePublished: value = the last value */
	EV_METER_HISTOGRAM,   /* HistogramValuePublished: quantiles, count, sum of the interval */
};
#define EV_METER_TAGS_MAX 256
#define EV_METER_QUANTILES 8

struct ev_meter {
	enum ev_meter_kind kind;
	char session[64];
	char meter[EV_NAME_MAX];
	char instrument[EV_NAME_MAX];
	char unit[EV_UNITS_MAX];
	char tags[EV_METER_TAGS_MAX]; /* "k=v,k2=v2" as the runtime wrote them, "" for none */
	int has_rate, has_value, has_count;
	double rate, value;
	size_t n_quantiles;
	double quantile[EV_METER_QUANTILES], qvalue[EV_METER_QUANTILES]; /* 0.5 -> ..., 0.95, 0.99 */
	int64_t count;
	double sum;
	char error[256]; /* EV_METER_ERROR: the event's name and message */
};

struct ev_record {
	enum ev_type type;
	int64_t timestamp; /* QPC ticks of the event */
	uint64_t thread_id;
	union {
		struct ev_counter counter;
		struct ev_gc_start gc_start;
		struct ev_gc_end gc_end;
		struct ev_gc_heap_stats heap_stats;
		struct ev_gc_suspend suspend;
		struct ev_alloc_tick alloc;
		uint32_t triggered_reason;
		struct ev_appdomain_mem appdomain;
		struct ev_exception exception;
		struct ev_meter meter;
	} u;
};

/* Decodes ev into out: its header (type, timestamp, thread) and the union
 * member of its type, every field of which is set (zero when the payload
 * lacks it); the rest of the union is left as it was (a record is over a
 * kilobyte, most events fill a few bytes of it). pointer_size is the
 * trace's (4 or 8). Returns 1 when
 * decoded, 0 when the event is not one dumpwatch decodes (out->type = EV_NONE),
 * -EBADMSG when a known event's payload is malformed; then err (if not NULL)
 * holds a sentence naming the event and what was wrong. */
int events_decode(const struct nettrace_event *ev, int pointer_size, struct ev_record *out, char *err, size_t errlen);

/* GCJoin_V2: not decoded, but the GC raises its verbose events (allocation
 * ticks) only while this one is enabled. */
#define EV_ID_GC_JOIN_V2 203
/* GCAllocationTick (all versions). */
#define EV_ID_GC_ALLOC_TICK 10

/* The ids of the runtime provider's events that a watch reads, of those
 * events_decode decodes (GC, allocation tick, AppDomain, ExceptionThrown;
 * not GCTriggered nor GCRestartEEBegin): what a session asks for when the
 * runtime can filter by event id. *n is set to their number. */
const uint32_t *events_runtime_ids(size_t *n);

/* The runtime's event names, for logs: "GCStart", "GCHeapStats", "EventCounters",
 * "none" for EV_NONE, "unknown" for a value outside the enum. */
const char *events_type_name(enum ev_type type);

#endif
