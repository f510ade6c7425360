/* Per-process metric state built from decoded events: the heap by generation
 * at every GC end (raised live between GCs by allocation ticks), GC pauses and
 * rates, allocation rates by kind, and the latest value of every EventCounter.
 * Pure: events and times go in, values come out; the caller owns the clock.
 * All times are nanoseconds on one monotonic clock chosen by the caller. */
#ifndef DUMPWATCH_METRICS_H
#define DUMPWATCH_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/events.h"
#include "dumpwatch/meters.h"
#include "dumpwatch/procstat.h"

/* Allocation rates are averaged over this window. */
#define METRICS_RATE_WINDOW_NS 1000000000LL
/* GC rates (gc-rate, genN-gc-rate) count the GCs of this window. */
#define METRICS_GC_RATE_WINDOW_NS 60000000000LL

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* The session started at t_ns: rates count from then. Without it, from the
 * first event. */
void metrics_start(struct metrics *m, int64_t t_ns);

/* Feeds one decoded event that happened at t_ns. */
void metrics_on_event(struct metrics *m, const struct ev_record *r, int64_t t_ns);

/* Takes in a poll of /proc made at t_ns (rss, private-memory, swap,
 * threads, fds): each is known from the first poll that had its field. */
void metrics_on_proc(struct metrics *m, const struct proc_sample *p, int64_t t_ns);

/* Exception conditions (M_EXCEPTIONS) count only once watched: each distinct
 * one (type, message, window) is registered here, at most this many. */
#define METRICS_EXC_FILTERS_MAX 16
/* Starts counting the exceptions of ref. 0 (also when counted already),
 * -ENOSPC past METRICS_EXC_FILTERS_MAX, -ENOMEM, -EINVAL when ref is not
 * an exception condition. Its value is known from then: 0 until one comes. */
int metrics_watch_exceptions(struct metrics *m, const struct metric_ref *ref);

/* Stops counting for every exception condition not among keep[0..n-1]
 * (the rules changed): their slots are free again. */
void metrics_unwatch_exceptions(struct metrics *m, const struct metric_ref *const *keep, size_t n);

/* The last exception that counted for ref: 1 with out filled (its strings
 * valid until the next metrics_on_event), 0 when none did. */
struct metrics_exception {
	const char *type, *message;
	uint32_t hresult;
	uint16_t flags;
	int64_t t_ns;
};
int metrics_exception_last(const struct metrics *m, const struct metric_ref *ref, struct metrics_exception *out);

/* Reads a metric as of now_ns. Returns 1 with the value in the metric's base
 * unit and the time it was measured, or 0 while it is not known: sizes until
 * a GC or a complete System.Runtime sample (metrics.c's design note says how
 * exact each is then), rates and time-in-gc for a second after the start, an
 * EventCounter until its first sample. */
int metrics_read(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns, double *value,
                 int64_t *sample_ns);

/* metrics_read in the shape of eval.h's eval_read_fn: ctx is a struct
 * metrics_at, the metrics and the time to read them at. */
struct metrics_at {
	const struct metrics *m;
	int64_t now_ns;
};
int metrics_read_at(void *ctx, const struct metric_ref *ref, double *value, int64_t *sample_ns);

/* While loh-size, poh-size or heap-size is not known and no GC has been seen
 * since the start, the allocation ticks since then are a floor: nothing has
 * freed them. Returns 1 with that floor (high by at most the part of the
 * first tick of each kind and heap allocated before a GC that preceded the
 * start, under 100 KB), else 0. */
int metrics_read_floor(const struct metrics *m, const struct metric_ref *ref, double *value, int64_t *sample_ns);

/* eval.h's reader: 1 with the value when known, 2 with a floor (above), 0. */
int metrics_read_eval(void *ctx, const struct metric_ref *ref, double *value, int64_t *sample_ns);

/* How a metric's value is known now, or NULL while it is not: "gc" (sizes
 * from a GC seen), "counters" (sizes from System.Runtime's sample before any
 * GC: loh-size an upper bound, poh-size a lower one), "events" (counted from
 * the stream), "counter" (an EventCounter's sample), "proc" (polled from
 * /proc), "meter" (an instrument's series, meters.h). */
const char *metrics_basis(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns);

/* Whether an event can move a metric's value, so rules are worth evaluating
 * after it (counters, GC ends and heap stats, restarts, allocation ticks). */
int metrics_event_matters(const struct ev_record *r);

/* The EventCounters seen, in order of first arrival: the i-th into out
 * (pointers valid until the next metrics_on_event). 0 past the last. */
struct metrics_counter {
	const char *provider, *name, *units; /* units: the counter's DisplayUnits, may be "" */
	double value;                        /* as reported: mean, or increment over the interval */
	int64_t t_ns;
};
int metrics_counter_at(const struct metrics *m, size_t i, struct metrics_counter *out);

/* The collection interval of the session's System.Diagnostics.Metrics
 * (meters.h); 1 s when not told. */
void metrics_set_meter_interval(struct metrics *m, int64_t interval_ns);

/* The instruments' time series, NULL until a value was published. */
const struct meters *metrics_meters(const struct metrics *m);

/* Allocation ticks that come and go: a second session brings them while a
 * rule on a size or an allocation rate is near its threshold (target.h).
 * Gated, the allocation rates are known only once ticks have come for a whole
 * rate window; sizes between GCs add the ticks that came (the last GC's
 * figure alone while none come). metrics_ticks_on says when they start
 * (on) and stop (off). */
void metrics_ticks_gated(struct metrics *m, int gated);
void metrics_ticks_on(struct metrics *m, int on, int64_t t_ns);

/* An upper bound of ref's value now, from the latest System.Runtime sample
 * when it is no older than max_age_ns: loh-size, poh-size and heap-size as
 * the last GC's size plus everything allocated since, of every kind; the
 * allocation rates (alloc-rate, soh-, loh-, poh-alloc-rate) as the
 * allocation counter's rate, of every kind, from its second sample on (the
 * first one's increment does not cover one interval). 1 with the bound, 0
 * when there is none (another metric, or no fresh sample). */
int metrics_bound(const struct metrics *m, const struct metric_ref *ref, int64_t now_ns, int64_t max_age_ns,
                  double *value);

/* Writes the current built-in metrics as one human line ("heap-size=... loh-size=..."). */
void metrics_describe(const struct metrics *m, int64_t now_ns, char *buf, size_t len);

#endif
