/* Time series of System.Diagnostics.Metrics instruments. At each collection
 * the runtime publishes every series of every instrument it reports (a
 * counter's series with a rate of 0 when nothing changed), one event after
 * another within a few milliseconds. A condition reads each series of its
 * instrument at its newest value, as long as it was published in the last
 * collection or the one before (while a collection's events arrive, some
 * series already have the new value and some still the previous one); a
 * series older than that (tags no longer seen) is left out.
 *
 * Series are found by a hash of instrument and tags, and chained per
 * instrument so that a condition reads only its instrument's. */
#include "dumpwatch/meters.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HASH_BUCKETS 2048
/* A series not published for this long may give its place to a new one. */
#define STALE_NS (60 * 1000000000LL)

struct instrument {
	char meter[EV_NAME_MAX], name[EV_NAME_MAX], unit[EV_UNITS_MAX];
	enum ev_meter_kind kind;
	int64_t t_ns;  /* the newest publication of any of its series */
	int32_t first; /* its first series, -1 when none */
};

struct series {
	uint32_t inst;
	int32_t next_in_inst, next_in_bucket;
	uint32_t hash;
	char tags[EV_METER_TAGS_MAX];
	int64_t t_ns;
	int has_value, has_rate, has_count;
	double value, rate; /* rate: the change over the interval, as published */
	int has_p[3];
	double p[3];
	int64_t count;
	double sum;
};

struct meters {
	int64_t interval_ns;
	struct instrument *inst;
	size_t n_inst, cap_inst;
	struct series *ser;
	size_t n_ser, cap_ser;
	int32_t bucket[HASH_BUCKETS];
	uint64_t dropped;
};

struct meters *meters_new(void)
{
	struct meters *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->interval_ns = 1000000000LL;
	for (size_t i = 0; i < HASH_BUCKETS; i++)
		m->bucket[i] = -1;
	return m;
}

void meters_free(struct meters *m)
{
	if (!m)
		return;
	free(m->inst);
	free(m->ser);
	free(m);
}

void meters_set_interval(struct meters *m, int64_t interval_ns)
{
	if (interval_ns > 0)
		m->interval_ns = interval_ns;
}

static uint32_t fnv(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Instrument names are matched without regard to case (OpenTelemetry's
 * rule), meter names exactly as the runtime does. */
static int find_instrument(const struct meters *m, const char *meter, const char *name)
{
	for (size_t i = 0; i < m->n_inst; i++)
		if (strcmp(m->inst[i].meter, meter) == 0 && strcasecmp(m->inst[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int add_instrument(struct meters *m, const struct ev_meter *v)
{
	if (m->n_inst == METERS_INSTRUMENTS_MAX)
		return -1;
	if (m->n_inst == m->cap_inst) {
		size_t c = m->cap_inst ? m->cap_inst * 2 : 8;
		struct instrument *n = realloc(m->inst, c * sizeof(*n));
		if (!n)
			return -1;
		m->inst = n;
		m->cap_inst = c;
	}
	struct instrument *in = &m->inst[m->n_inst];
	memset(in, 0, sizeof(*in));
	snprintf(in->meter, sizeof(in->meter), "%s", v->meter);
	snprintf(in->name, sizeof(in->name), "%s", v->instrument);
	in->first = -1;
	return (int)m->n_inst++;
}

static void unlink_series(struct meters *m, int32_t idx)
{
	struct series *s = &m->ser[idx];
	int32_t *p = &m->bucket[s->hash % HASH_BUCKETS];

	while (*p >= 0 && *p != idx)
		p = &m->ser[*p].next_in_bucket;
	if (*p == idx)
		*p = s->next_in_bucket;
	p = &m->inst[s->inst].first;
	while (*p >= 0 && *p != idx)
		p = &m->ser[*p].next_in_inst;
	if (*p == idx)
		*p = s->next_in_inst;
}

/* A slot for a new series: a new one while there is room, else the place of
 * one not published for STALE_NS. -1 when neither. */
static int32_t new_series(struct meters *m, int64_t t_ns)
{
	if (m->n_ser < METERS_SERIES_MAX) {
		if (m->n_ser == m->cap_ser) {
			size_t c = m->cap_ser ? m->cap_ser * 2 : 16;
			if (c > METERS_SERIES_MAX)
				c = METERS_SERIES_MAX;
			struct series *n = realloc(m->ser, c * sizeof(*n));
			if (!n)
				return -1;
			m->ser = n;
			m->cap_ser = c;
		}
		return (int32_t)m->n_ser++;
	}
	for (size_t i = 0; i < m->n_ser; i++)
		if (t_ns - m->ser[i].t_ns >= STALE_NS) {
			unlink_series(m, (int32_t)i);
			return (int32_t)i;
		}
	return -1;
}

static int quantile_slot(double q)
{
	static const double qs[3] = {0.5, 0.95, 0.99};
	for (int i = 0; i < 3; i++)
		if (fabs(q - qs[i]) < 1e-9)
			return i;
	return -1;
}

void meters_on_value(struct meters *m, const struct ev_meter *v, int64_t t_ns)
{
	int ii = find_instrument(m, v->meter, v->instrument);
	if (ii < 0 && (ii = add_instrument(m, v)) < 0) {
		m->dropped++;
		return;
	}
	struct instrument *in = &m->inst[ii];
	/* The kind and unit as of the newest publication. */
	in->kind = v->kind;
	snprintf(in->unit, sizeof(in->unit), "%s", v->unit);
	if (t_ns > in->t_ns)
		in->t_ns = t_ns;

	uint32_t h = fnv(fnv(2166136261u ^ (uint32_t)ii, "\x1f"), v->tags);
	int32_t idx = m->bucket[h % HASH_BUCKETS];
	while (idx >= 0 &&
	       !(m->ser[idx].inst == (uint32_t)ii && m->ser[idx].hash == h && strcmp(m->ser[idx].tags, v->tags) == 0))
		idx = m->ser[idx].next_in_bucket;
	if (idx < 0) {
		idx = new_series(m, t_ns);
		if (idx < 0) {
			m->dropped++;
			return;
		}
		struct series *s = &m->ser[idx];
		memset(s, 0, sizeof(*s));
		s->inst = (uint32_t)ii;
		s->hash = h;
		snprintf(s->tags, sizeof(s->tags), "%s", v->tags);
		s->next_in_bucket = m->bucket[h % HASH_BUCKETS];
		m->bucket[h % HASH_BUCKETS] = idx;
		s->next_in_inst = in->first;
		in->first = idx;
	}
	struct series *s = &m->ser[idx];
	s->t_ns = t_ns;
	s->has_value = v->has_value && isfinite(v->value);
	s->value = v->value;
	s->has_rate = v->has_rate && isfinite(v->rate);
	s->rate = v->rate;
	s->has_count = v->kind == EV_METER_HISTOGRAM && v->has_count;
	s->count = v->count;
	s->sum = v->sum;
	memset(s->has_p, 0, sizeof(s->has_p));
	for (size_t q = 0; q < v->n_quantiles && q < EV_METER_QUANTILES; q++) {
		int k = quantile_slot(v->quantile[q]);
		if (k >= 0 && isfinite(v->qvalue[q])) {
			s->has_p[k] = 1;
			s->p[k] = v->qvalue[q];
		}
	}
}

static double time_factor(const char *u)
{
	static const struct {
		const char *unit;
		double ms;
	} t[] = {{"s", 1e3},   {"sec", 1e3},        {"seconds", 1e3},       {"ms", 1},    {"milliseconds", 1},
	         {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"microseconds", 1e-3}, {"ns", 1e-6}, {"nanoseconds", 1e-6},
	         {"min", 6e4}, {"h", 3.6e6},        {"d", 8.64e7}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(u, t[i].unit) == 0)
			return t[i].ms;
	return 0;
}

static double byte_factor(const char *u)
{
	static const struct {
		const char *unit;
		double bytes;
	} t[] = {{"By", 1},
	         {"B", 1},
	         {"byte", 1},
	         {"bytes", 1},
	         {"{byte}", 1},
	         {"{bytes}", 1},
	         {"kBy", 1e3},
	         {"KBy", 1e3},
	         {"kB", 1e3},
	         {"KB", 1e3},
	         {"MBy", 1e6},
	         {"MB", 1e6},
	         {"GBy", 1e9},
	         {"GB", 1e9},
	         {"TBy", 1e12},
	         {"KiBy", 1024.0},
	         {"KiB", 1024.0},
	         {"MiBy", 1048576.0},
	         {"MiB", 1048576.0},
	         {"GiBy", 1073741824.0},
	         {"GiB", 1073741824.0},
	         {"TiBy", 1099511627776.0}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(u, t[i].unit) == 0)
			return t[i].bytes;
	return 0;
}

double meters_unit_factor(const char *unit, enum unit_kind to, enum meter_stat stat)
{
	char base[EV_UNITS_MAX];
	size_t n;

	switch (to) {
	case UNIT_MS:
		return time_factor(unit);
	case UNIT_BYTES:
		return byte_factor(unit);
	case UNIT_BYTES_PER_SEC:
		if (stat == MS_RATE)
			return byte_factor(unit);
		/* A gauge of bytes per second: "By/s". */
		n = strlen(unit);
		if (n < 3 || n >= sizeof(base) || strcmp(unit + n - 2, "/s") != 0)
			return 0;
		memcpy(base, unit, n - 2);
		base[n - 2] = '\0';
		return byte_factor(base);
	case UNIT_PERCENT:
		if (strcmp(unit, "%") == 0)
			return 1;
		/* A ratio (UCUM's "1"), as in process.cpu.utilization. */
		return strcmp(unit, "1") == 0 ? 100 : 0;
	default:
		return 1;
	}
}

static int has_stat(enum ev_meter_kind kind, enum meter_stat stat)
{
	switch (stat) {
	case MS_VALUE:
		return kind != EV_METER_HISTOGRAM;
	case MS_RATE:
		return kind == EV_METER_COUNTER || kind == EV_METER_UPDOWN;
	default:
		return kind == EV_METER_HISTOGRAM;
	}
}

int meters_read(const struct meters *m, const struct metric_ref *ref, double *value, int64_t *sample_ns)
{
	int ii;
	const struct instrument *in;
	double factor, acc = 0;
	int any = 0;

	if (!m || ref->id != M_METER || (ii = find_instrument(m, ref->provider, ref->counter)) < 0)
		return 0;
	in = &m->inst[ii];
	if (!has_stat(in->kind, ref->stat) || (factor = meters_unit_factor(in->unit, ref->unit, ref->stat)) == 0)
		return 0;
	/* Summed, or the largest: a gauge's last value and a percentile do
	 * not add up across series. */
	int largest = ref->stat == MS_P50 || ref->stat == MS_P95 || ref->stat == MS_P99 ||
	              (ref->stat == MS_VALUE && in->kind == EV_METER_GAUGE);
	for (int32_t i = in->first; i >= 0; i = m->ser[i].next_in_inst) {
		const struct series *s = &m->ser[i];
		double v;
		if (s->t_ns < in->t_ns - m->interval_ns * 3 / 2)
			continue; /* in neither of the last two collections: gone */
		switch (ref->stat) {
		case MS_VALUE:
			if (!s->has_value)
				continue;
			v = s->value;
			break;
		case MS_RATE:
			if (!s->has_rate)
				continue;
			v = s->rate * 1e9 / (double)m->interval_ns;
			break;
		case MS_COUNT:
			if (!s->has_count)
				continue;
			v = (double)s->count;
			break;
		case MS_SUM:
			if (!s->has_count)
				continue;
			v = s->sum;
			break;
		default:
			if (!s->has_p[ref->stat - MS_P50])
				continue;
			v = s->p[ref->stat - MS_P50];
			break;
		}
		if (ref->tags[0] && !catalog_meter_tags_match(ref->tags, s->tags))
			continue;
		acc = !any ? v : largest ? (v > acc ? v : acc) : acc + v;
		any = 1;
	}
	if (!any)
		return 0;
	*value = ref->stat == MS_COUNT ? acc : acc * factor;
	*sample_ns = in->t_ns;
	return 1;
}

int meters_unit_mismatch(const struct meters *m, const struct metric_ref *ref, const char **unit)
{
	int ii;

	if (!m || ref->id != M_METER || ref->stat == MS_COUNT ||
	    (ii = find_instrument(m, ref->provider, ref->counter)) < 0)
		return 0;
	if (meters_unit_factor(m->inst[ii].unit, ref->unit, ref->stat) != 0)
		return 0;
	*unit = m->inst[ii].unit;
	return 1;
}

int meters_stat_mismatch(const struct meters *m, const struct metric_ref *ref, const char **kind)
{
	int ii;

	if (!m || ref->id != M_METER || (ii = find_instrument(m, ref->provider, ref->counter)) < 0)
		return 0;
	if (has_stat(m->inst[ii].kind, ref->stat))
		return 0;
	*kind = meters_kind_name(m->inst[ii].kind);
	return 1;
}

int meters_series_at(const struct meters *m, size_t i, struct meters_series *out)
{
	if (!m || i >= m->n_ser)
		return 0;
	const struct series *s = &m->ser[i];
	const struct instrument *in = &m->inst[s->inst];
	out->meter = in->meter;
	out->instrument = in->name;
	out->unit = in->unit;
	out->tags = s->tags;
	out->kind = in->kind;
	out->has_value = s->has_value;
	out->value = s->value;
	out->has_rate = s->has_rate;
	out->rate = s->rate * 1e9 / (double)m->interval_ns;
	out->has_count = s->has_count;
	out->count = s->count;
	out->sum = s->sum;
	memcpy(out->has_p, s->has_p, sizeof(out->has_p));
	memcpy(out->p, s->p, sizeof(out->p));
	out->t_ns = s->t_ns;
	return 1;
}

uint64_t meters_dropped(const struct meters *m)
{
	return m ? m->dropped : 0;
}

const char *meters_kind_name(enum ev_meter_kind kind)
{
	switch (kind) {
	case EV_METER_COUNTER:
		return "counter";
	case EV_METER_UPDOWN:
		return "up-down counter";
	case EV_METER_GAUGE:
		return "gauge";
	case EV_METER_HISTOGRAM:
		return "histogram";
	}
	return "instrument";
}
