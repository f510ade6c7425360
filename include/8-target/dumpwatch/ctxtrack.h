/* What a target keeps so that every dump can explain itself: the metric
 * history of the process (history.h) and its last GC records, fed from the
 * same events and ticks as the rules; and the publishing of a dump's context
 * files (NAME.json, NAME.svg) beside it (dumpctx.h, plot.h, store.h).
 *
 * The history holds every metric of the process's rules, plus the heap by
 * generation, LOH, POH, the allocation rates by kind, the GC pause and
 * time-in-gc. It is sampled after every GC or allocation event and at every
 * tick, with the values the rules read (a floor counts, as it does for
 * them), each at the time it was measured (the event's own time for sizes,
 * the counters burst's for EventCounters, the tick's for rates); a metric
 * not known yet has no point. */
#ifndef DUMPWATCH_CTXTRACK_H
#define DUMPWATCH_CTXTRACK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/dumpctx.h"
#include "dumpwatch/metrics.h"
#include "dumpwatch/store.h"

struct ctxtrack;

/* A history of window_ns (0: DW_DEFAULT_HISTORY_NS). NULL when out of memory. */
struct ctxtrack *ctxtrack_new(int64_t window_ns);
void ctxtrack_free(struct ctxtrack *ct);

/* The metrics of these conditions join the history (series are never
 * removed; past HISTORY_SERIES_MAX, no more are added). */
void ctxtrack_add_conditions(struct ctxtrack *ct, const struct rule *r);

/* An event of the stream at t_ns: GC records, and a sample when it can move
 * a metric. m is the session's metrics after the event. */
void ctxtrack_on_event(struct ctxtrack *ct, const struct metrics *m, const struct ev_record *r, int64_t t_ns);

/* A poll of /proc at t_ns: a sample of the metrics polled from there. */
void ctxtrack_on_proc(struct ctxtrack *ct, const struct metrics *m, int64_t t_ns);

/* A tick at now_ns: a sample of every metric. */
void ctxtrack_tick(struct ctxtrack *ct, const struct metrics *m, int64_t now_ns);

/* The session was replaced or ended: GC records in progress are reported as
 * they are, and the next session's GCs start afresh. */
void ctxtrack_session_end(struct ctxtrack *ct);

/* Writes the context of one fire beside its dump: in describes the fire,
 * the dump and the process (its history and gcs are filled in here); the
 * files go into the store dirfd, which the fire opened for its dump
 * (dump_open_store of in->dump_dir). On success json_path and svg_path
 * (PATH_MAX each) name the files written. 0, or -errno with a sentence in
 * err (the disk guards refuse, a write failed); nothing is left
 * half-written. */
int ctxtrack_publish(struct ctxtrack *ct, struct dumpctx_input *in, int dirfd, const struct store_limits *limits,
                     char *json_path, char *svg_path, char *err, size_t errlen);

/* The history (for tests and the context). */
const struct history *ctxtrack_history(const struct ctxtrack *ct);

/* Memory held by the history, the GC records kept and those being assembled. */
size_t ctxtrack_bytes(const struct ctxtrack *ct);

#endif
