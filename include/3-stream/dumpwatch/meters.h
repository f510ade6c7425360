/* The time series of System.Diagnostics.Metrics instruments as the runtime
 * publishes them, one per instrument and set of tags at each collection, and
 * the meter conditions read from them (rules.h). Bounded: at most
 * METERS_SERIES_MAX series and METERS_INSTRUMENTS_MAX instruments per
 * process; past that, a series that has not been published for a while gives
 * its place, else the new one is dropped and counted. Pure. */
#ifndef DUMPWATCH_METERS_H
#define DUMPWATCH_METERS_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/events.h"

/* The runtime's own default limit of a session (MaxTimeSeries). */
#define METERS_SERIES_MAX 1000
#define METERS_INSTRUMENTS_MAX 256

struct meters;

struct meters *meters_new(void);
void meters_free(struct meters *m);

/* The collection interval the session asked for (RefreshInterval): counter
 * changes are published per interval and read per second. Default 1 s. */
void meters_set_interval(struct meters *m, int64_t interval_ns);

/* Takes in one published value (an EV_METER_VALUE record) seen at t_ns. */
void meters_on_value(struct meters *m, const struct ev_meter *v, int64_t t_ns);

/* Reads a meter condition's metric (M_METER) from the series of its
 * instrument published in the last two collections whose tags pass its
 * filter, each at its newest value: the sum
 * over them of a counter's value and rate and a histogram's count and sum,
 * the largest of a gauge's value and of a histogram's percentile. The value
 * is in the ref's unit, converted from the instrument's. Returns 1 with the
 * value and the collection's time, 0 while no such series has the value
 * (none published yet, a statistic the instrument does not have, a unit that
 * does not convert). */
int meters_read(const struct meters *m, const struct metric_ref *ref, double *value, int64_t *sample_ns);

/* Whether ref's instrument has been seen with a unit that does not convert
 * to the unit its threshold was written in (a duration against "By"): 1 with
 * *unit set to the instrument's (valid until the next meters_on_value). */
int meters_unit_mismatch(const struct meters *m, const struct metric_ref *ref, const char **unit);

/* Whether ref's instrument has been seen and does not have ref's statistic
 * (a percentile of a counter): 1 with *kind set to its kind's name. */
int meters_stat_mismatch(const struct meters *m, const struct metric_ref *ref, const char **kind);

/* The factor from a value in the instrument's unit (UCUM as .NET writes it:
 * "s", "ms", "By", "KiBy", "{request}", "%", "1", ...) to the unit a
 * threshold was written in, for statistic stat; 0 when it does not convert.
 * A plain number, a count or a rate per second takes the value as it is. */
double meters_unit_factor(const char *unit, enum unit_kind to, enum meter_stat stat);

/* The series known, in order of first arrival, for views: 1 with the i-th
 * into out (pointers valid until the next meters_on_value), 0 past the last. */
struct meters_series {
	const char *meter, *instrument, *unit, *tags;
	enum ev_meter_kind kind;
	int has_value, has_rate, has_count;
	double value;
	double rate; /* per second */
	int has_p[3];
	double p[3]; /* p50, p95, p99 */
	int64_t count;
	double sum;
	int64_t t_ns;
};
int meters_series_at(const struct meters *m, size_t i, struct meters_series *out);

/* Series and instruments dropped for want of room since the start. */
uint64_t meters_dropped(const struct meters *m);

/* "counter", "up-down counter", "gauge", "histogram". */
const char *meters_kind_name(enum ev_meter_kind kind);

#endif
