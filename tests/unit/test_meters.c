/* Unit tests of the meters' time series (meters.c) and of the meter payloads
 * the decoder turns into them: the three recorded System.Diagnostics.Metrics
 * streams replayed through the decoder into a series table and compared with
 * the last value of each series read straight from the stream; then
 * hand-made series for what a recording does not show (aggregation across
 * tags, a collection in flight, series that go away, units, the bounds);
 * then hand-made payloads of runtimes the machine does not have (decimal
 * commas, the shared session's refusal). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/events.h"
#include "dumpwatch/meters.h"
#include "dumpwatch/metrics.h"
#include "dumpwatch/nettrace.h"
#include "dumpwatch/rules.h"

#define S 1000000000LL

static struct metric_ref cond(const char *text)
{
	struct rule_cond c;
	char err[256];
	memset(&c, 0, sizeof(c));
	int r = rule_cond_parse(text, &c, err, sizeof(err));
	CHECK_MSG(r == 0, "%s: %s", text, err);
	return c.metric;
}

static int read(const struct meters *m, const char *text, double *v)
{
	struct metric_ref ref = cond(text);
	int64_t t;
	return meters_read(m, &ref, v, &t);
}

/* ---- recorded streams ---- */

struct replay {
	int pointer_size;
	int64_t qpc_freq, qpc0;
	struct metrics *metrics;
	/* The oracle: the last value of each series, straight from the decoder. */
	struct ev_meter last[64];
	size_t n_last;
	unsigned values, errors;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	struct replay *rp = ctx;
	rp->pointer_size = info->pointer_size;
	rp->qpc_freq = info->qpc_freq;
	rp->qpc0 = info->sync_qpc;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct replay *rp = ctx;
	struct ev_record r;
	char err[256];
	int rc = events_decode(ev, rp->pointer_size, &r, err, sizeof(err));
	if (rc < 0)
		rp->errors++;
	if (rc != 1)
		return;
	int64_t t = (int64_t)((double)(ev->timestamp - rp->qpc0) * 1e9 / (double)rp->qpc_freq) + 100 * S;
	metrics_on_event(rp->metrics, &r, t);
	if (r.type != EV_METER_VALUE)
		return;
	rp->values++;
	size_t i;
	for (i = 0; i < rp->n_last; i++)
		if (strcmp(rp->last[i].instrument, r.u.meter.instrument) == 0 &&
		    strcmp(rp->last[i].tags, r.u.meter.tags) == 0)
			break;
	if (i < 64) {
		rp->last[i] = r.u.meter;
		if (i == rp->n_last)
			rp->n_last++;
	}
}

static const struct ev_meter *last_of(const struct replay *rp, const char *instrument, const char *tags)
{
	for (size_t i = 0; i < rp->n_last; i++)
		if (strcmp(rp->last[i].instrument, instrument) == 0 && strcmp(rp->last[i].tags, tags) == 0)
			return &rp->last[i];
	return NULL;
}

/* The recordings of test_events_trace.c (MemSpike's meter MemSpike.Orders:
 * orders on two routes, durations on two, a gauge, an up-down counter),
 * replayed: every read agrees with the stream's last collection. */
static void test_recorded(const char *name)
{
	char path[512];
	struct replay rp;
	struct nettrace_callbacks cb = {.ctx = &rp, .on_info = on_info, .on_event = on_event};
	double v;

	memset(&rp, 0, sizeof(rp));
	snprintf(path, sizeof(path), "%s/%s", DW_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	CHECK_MSG(f != NULL, "%s missing", path);
	if (!f)
		return;
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	rp.metrics = metrics_new();
	nettrace_parser *p = nettrace_new(&cb, NULL);
	CHECK(p && nettrace_feed(p, buf, len) == 0 && nettrace_finish(p) == 0);
	CHECK_MSG(rp.errors == 0 && rp.values >= 12, "%s: %u values, %u errors", name, rp.values, rp.errors);
	const struct meters *m = metrics_meters(rp.metrics);
	CHECK(m != NULL && meters_dropped(m) == 0);

	/* Each read as the stream's last collection says. */
	const struct ev_meter *o = last_of(&rp, "orders.placed", "route=/api/orders");
	const struct ev_meter *c = last_of(&rp, "orders.placed", "route=/api/cart");
	CHECK(o && c && o->has_value && c->has_value);
	if (o && c) {
		CHECK(read(m, "meter MemSpike.Orders/orders.placed[route=/api/orders] value >= 0", &v) == 1 &&
		      v == o->value);
		CHECK(read(m, "meter MemSpike.Orders/orders.placed value >= 0", &v) == 1 && v == o->value + c->value);
		CHECK_MSG(read(m, "meter MemSpike.Orders/orders.placed rate >= 0", &v) == 1 &&
		              fabs(v - ((o->has_rate ? o->rate : 0) + (c->has_rate ? c->rate : 0))) < 1e-9,
		          "%s: rate %g", name, v);
		/* 8 orders on /api/orders in all, 2 on /api/cart. */
		CHECK_MSG(o->value == 8 && c->value == 2, "%s: %g %g", name, o->value, c->value);
	}
	CHECK(read(m, "meter MemSpike.Orders/queue.depth > 0", &v) == 1 && v == 42);
	CHECK(read(m, "meter MemSpike.Orders/connections.active > 0", &v) == 1 && v == 5);
	/* The last collection of the histograms had no measurement: no
	 * percentile, a count of 0. */
	const struct ev_meter *h = last_of(&rp, "request.duration", "http.route=/api/orders");
	CHECK(h && h->has_count);
	if (h && h->n_quantiles == 0) {
		CHECK(read(m, "meter MemSpike.Orders/request.duration p99 > 1s", &v) == 0);
		CHECK(read(m, "meter MemSpike.Orders/request.duration count >= 0", &v) == 1 && v == 0);
	}
	struct metric_ref q = cond("meter MemSpike.Orders/queue.depth > 0");
	CHECK(metrics_basis(rp.metrics, &q, 200 * S) != NULL &&
	      strcmp(metrics_basis(rp.metrics, &q, 200 * S), "meter") == 0);
	struct ev_record er = {.type = EV_METER_VALUE};
	CHECK(metrics_event_matters(&er));
	/* Counters have no percentile, a histogram no value: never known. */
	CHECK(read(m, "meter MemSpike.Orders/orders.placed p99 > 1", &v) == 0);
	CHECK(read(m, "meter MemSpike.Orders/request.duration > 1s", &v) == 0);
	/* Another meter, another instrument, a tag value not seen. */
	CHECK(read(m, "meter MemSpike.Other/orders.placed > 1", &v) == 0);
	CHECK(read(m, "meter MemSpike.Orders/orders.lost > 1", &v) == 0);
	CHECK(read(m, "meter MemSpike.Orders/orders.placed[route=/nowhere] > 1", &v) == 0);
	nettrace_free(p);
	metrics_free(rp.metrics);
}

/* ---- hand-made series ---- */

static struct ev_meter mv(enum ev_meter_kind kind, const char *instrument, const char *unit, const char *tags)
{
	struct ev_meter x;
	memset(&x, 0, sizeof(x));
	x.kind = kind;
	snprintf(x.meter, sizeof(x.meter), "Shop");
	snprintf(x.instrument, sizeof(x.instrument), "%s", instrument);
	snprintf(x.unit, sizeof(x.unit), "%s", unit);
	snprintf(x.tags, sizeof(x.tags), "%s", tags);
	return x;
}

static void counter(struct meters *m, const char *tags, double rate, double total, int64_t t)
{
	struct ev_meter x = mv(EV_METER_COUNTER, "orders", "{order}", tags);
	x.has_rate = x.has_value = 1;
	x.rate = rate;
	x.value = total;
	meters_on_value(m, &x, t);
}

static void hist(struct meters *m, const char *unit, const char *tags, double p50, double p99, int64_t n, int64_t t)
{
	struct ev_meter x = mv(EV_METER_HISTOGRAM, "latency", unit, tags);
	x.has_count = 1;
	x.count = n;
	x.sum = p50 * (double)n;
	if (n) {
		x.n_quantiles = 3;
		x.quantile[0] = 0.5, x.qvalue[0] = p50;
		x.quantile[1] = 0.95, x.qvalue[1] = p99;
		x.quantile[2] = 0.99, x.qvalue[2] = p99;
	}
	meters_on_value(m, &x, t);
}

static void gauge(struct meters *m, const char *name, const char *unit, const char *tags, double v, int64_t t)
{
	struct ev_meter x = mv(EV_METER_GAUGE, name, unit, tags);
	x.has_value = 1;
	x.value = v;
	meters_on_value(m, &x, t);
}

static void test_aggregation(void)
{
	struct meters *m = meters_new();
	double v;

	/* Counters add up across series; the rate is per second. */
	counter(m, "route=/a,method=GET", 10, 100, 1 * S);
	counter(m, "route=/b,method=GET", 4, 40, 1 * S + 1000);
	counter(m, "route=/a,method=POST", 6, 60, 1 * S + 2000);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && v == 20);
	CHECK(read(m, "meter Shop/orders value > 0", &v) == 1 && v == 200);
	CHECK(read(m, "meter Shop/orders > 0", &v) == 1 && v == 200); /* value is the default */
	CHECK(read(m, "meter Shop/orders[route=/a] rate > 0", &v) == 1 && v == 16);
	CHECK(read(m, "meter Shop/orders[route=/a,method=POST] rate > 0", &v) == 1 && v == 6);
	CHECK(read(m, "meter Shop/orders[ method = G* ] rate > 0", &v) == 1 && v == 14);
	CHECK(read(m, "meter Shop/orders[route=/*] rate > 0", &v) == 1 && v == 20);
	CHECK(read(m, "meter Shop/orders[Route=/a] rate > 0", &v) == 0); /* keys match exactly */
	CHECK(read(m, "meter Shop/ORDERS rate > 0", &v) == 1);           /* instrument names do not */
	CHECK(read(m, "meter shop/orders rate > 0", &v) == 0);           /* meter names do */
	CHECK(read(m, "meter Shop/orders rate > 1/min", &v) == 1 && v == 20);

	/* A collection in flight: /a GET has its new value, the others still
	 * the previous one; all count. */
	counter(m, "route=/a,method=GET", 1, 101, 2 * S);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && v == 11);
	/* A series left out of two collections is gone. */
	counter(m, "route=/a,method=GET", 2, 103, 3 * S);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && v == 2);

	/* A slower interval: the change per interval is divided by it, and a
	 * series stays for longer (the three published at 1 to 3 s count). */
	meters_set_interval(m, 5 * S);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && fabs(v - (2 + 4 + 6) / 5.0) < 1e-12);
	meters_set_interval(m, 1 * S);

	/* Percentiles and gauges: the largest series, not a sum. */
	hist(m, "s", "route=/a", 0.1, 2.5, 10, 3 * S);
	hist(m, "s", "route=/b", 0.2, 0.5, 30, 3 * S);
	CHECK(read(m, "meter Shop/latency p99 > 2s", &v) == 1 && v == 2500);
	CHECK(read(m, "meter Shop/latency[route=/b] p99 > 2s", &v) == 1 && v == 500);
	CHECK(read(m, "meter Shop/latency p50 > 1ms", &v) == 1 && fabs(v - 200) < 1e-9);
	CHECK(read(m, "meter Shop/latency count > 1", &v) == 1 && v == 40);
	CHECK(read(m, "meter Shop/latency sum > 1s", &v) == 1 && fabs(v - 7000) < 1e-9);
	CHECK(read(m, "meter Shop/latency p99 > 2", &v) == 1 && v == 2.5); /* a plain number: seconds */
	/* An interval without measurements: no percentile, a count of 0. */
	hist(m, "s", "route=/a", 0, 0, 0, 4 * S);
	hist(m, "s", "route=/b", 0, 0, 0, 4 * S);
	CHECK(read(m, "meter Shop/latency p99 > 2s", &v) == 0);
	CHECK(read(m, "meter Shop/latency count > 1", &v) == 1 && v == 0);

	gauge(m, "queue", "{item}", "q=1", 7, 4 * S);
	gauge(m, "queue", "{item}", "q=2", 9, 4 * S);
	CHECK(read(m, "meter Shop/queue > 1", &v) == 1 && v == 9);
	CHECK(read(m, "meter Shop/queue rate > 1", &v) == 0); /* a gauge has no rate */

	/* NaN and infinities are not values. */
	struct ev_meter x = mv(EV_METER_GAUGE, "temp", "", "");
	x.has_value = 1;
	x.value = NAN;
	meters_on_value(m, &x, 4 * S);
	CHECK(read(m, "meter Shop/temp > 1", &v) == 0);
	meters_free(m);
}

static void test_units(void)
{
	struct meters *m = meters_new();
	double v;
	const char *what;

	CHECK(meters_unit_factor("s", UNIT_MS, MS_P99) == 1000);
	CHECK(meters_unit_factor("ms", UNIT_MS, MS_P99) == 1);
	CHECK(meters_unit_factor("us", UNIT_MS, MS_P99) == 1e-3);
	CHECK(meters_unit_factor("\xc2\xb5s", UNIT_MS, MS_P99) == 1e-3);
	CHECK(meters_unit_factor("min", UNIT_MS, MS_VALUE) == 60000);
	CHECK(meters_unit_factor("By", UNIT_BYTES, MS_VALUE) == 1);
	CHECK(meters_unit_factor("MiBy", UNIT_BYTES, MS_VALUE) == 1048576);
	CHECK(meters_unit_factor("kBy", UNIT_BYTES, MS_VALUE) == 1000);
	CHECK(meters_unit_factor("By", UNIT_BYTES_PER_SEC, MS_RATE) == 1);
	CHECK(meters_unit_factor("By/s", UNIT_BYTES_PER_SEC, MS_VALUE) == 1);
	CHECK(meters_unit_factor("By", UNIT_BYTES_PER_SEC, MS_VALUE) == 0);
	CHECK(meters_unit_factor("%", UNIT_PERCENT, MS_VALUE) == 1);
	CHECK(meters_unit_factor("1", UNIT_PERCENT, MS_VALUE) == 100);
	CHECK(meters_unit_factor("{request}", UNIT_MS, MS_VALUE) == 0);
	CHECK(meters_unit_factor("s", UNIT_BYTES, MS_VALUE) == 0);
	CHECK(meters_unit_factor("", UNIT_MS, MS_VALUE) == 0);
	CHECK(meters_unit_factor("whatever", UNIT_NONE, MS_VALUE) == 1);
	CHECK(meters_unit_factor("By", UNIT_PER_SEC, MS_RATE) == 1);

	gauge(m, "heap", "MiBy", "", 3, 1 * S);
	gauge(m, "cpu", "1", "", 0.25, 1 * S);
	CHECK(read(m, "meter Shop/heap > 1MB", &v) == 1 && v == 3 * 1048576.0);
	CHECK(read(m, "meter Shop/cpu > 20%", &v) == 1 && v == 25);
	CHECK(read(m, "meter Shop/cpu > 0.2", &v) == 1 && v == 0.25);
	/* A duration against bytes: said, never read. */
	struct metric_ref ref = cond("meter Shop/heap > 2s");
	CHECK(read(m, "meter Shop/heap > 2s", &v) == 0);
	CHECK(meters_unit_mismatch(m, &ref, &what) == 1 && strcmp(what, "MiBy") == 0);
	ref = cond("meter Shop/heap > 2MB");
	CHECK(meters_unit_mismatch(m, &ref, &what) == 0);
	ref = cond("meter Shop/heap p99 > 2MB");
	CHECK(meters_stat_mismatch(m, &ref, &what) == 1 && strcmp(what, "gauge") == 0);
	ref = cond("meter Shop/unseen p99 > 2MB");
	CHECK(meters_stat_mismatch(m, &ref, &what) == 0 && meters_unit_mismatch(m, &ref, &what) == 0);
	meters_free(m);
}

/* A value holding ',' (the runtime does not escape it) still reads. */
static void test_tag_values(void)
{
	CHECK(catalog_meter_tags_match("a=1", "a=1"));
	CHECK(catalog_meter_tags_match("a=1", "b=2,a=1"));
	CHECK(!catalog_meter_tags_match("a=1", "aa=1"));
	CHECK(!catalog_meter_tags_match("a=1", "a=12"));
	CHECK(catalog_meter_tags_match("a=1*", "a=12"));
	CHECK(catalog_meter_tags_match("q=x,y", "q=x,y") == 0); /* a filter value has no ',' */
	CHECK(catalog_meter_tags_match("q=x?y", "q=x,y,r=2"));
	CHECK(catalog_meter_tags_match("r=2", "q=x,y,r=2"));
	CHECK(catalog_meter_tags_match("q=x,r=2", "q=x,r=2"));
	CHECK(catalog_meter_tags_match("q=", "q="));
	CHECK(!catalog_meter_tags_match("q=", "r="));
	CHECK(catalog_meter_tags_match("", "anything=1"));
	CHECK(!catalog_meter_tags_match("a=1", ""));
}

/* At most METERS_SERIES_MAX series: past it a series silent for a minute
 * gives its place, else the new one is dropped and counted. */
static void test_bounds(void)
{
	struct meters *m = meters_new();
	struct meters_series s;
	char tags[32];
	double v;

	for (int i = 0; i < METERS_SERIES_MAX; i++) {
		snprintf(tags, sizeof(tags), "id=%d", i);
		counter(m, tags, 1, 1, 1 * S);
	}
	CHECK(meters_dropped(m) == 0);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && v == METERS_SERIES_MAX);
	counter(m, "id=new", 1, 1, 2 * S);
	CHECK(meters_dropped(m) == 1);
	CHECK(read(m, "meter Shop/orders[id=new] rate > 0", &v) == 0);
	/* A minute on, id=5 published again, the rest silent: the new series
	 * takes a silent one's place. */
	counter(m, "id=5", 3, 4, 61 * S);
	counter(m, "id=new", 7, 7, 61 * S + 1);
	CHECK(meters_dropped(m) == 1);
	CHECK(read(m, "meter Shop/orders[id=new] rate > 0", &v) == 1 && v == 7);
	CHECK(read(m, "meter Shop/orders rate > 0", &v) == 1 && v == 10);
	size_t n = 0;
	for (size_t i = 0; meters_series_at(m, i, &s); i++)
		n++;
	CHECK(n == METERS_SERIES_MAX);

	/* At most METERS_INSTRUMENTS_MAX instruments. */
	struct meters *m2 = meters_new();
	for (int i = 0; i < METERS_INSTRUMENTS_MAX + 3; i++) {
		struct ev_meter x = mv(EV_METER_GAUGE, "g", "", "");
		snprintf(x.instrument, sizeof(x.instrument), "g%d", i);
		x.has_value = 1;
		meters_on_value(m2, &x, S);
	}
	CHECK(meters_dropped(m2) == 3);
	meters_free(m2);
	meters_free(m);
}

/* ---- hand-made payloads ---- */

static size_t put_utf16(uint8_t *p, const char *s)
{
	size_t n = 0;
	for (; *s; s++) {
		p[n++] = (uint8_t)*s;
		p[n++] = 0;
	}
	p[n++] = 0;
	p[n++] = 0;
	return n;
}

static struct nettrace_field str_field(const char *name)
{
	struct nettrace_field f = {.type = NT_TC_STRING, .name = (char *)name};
	return f;
}

/* HistogramValuePublished as a runtime that formatted its quantiles with the
 * process's culture wrote it: decimal commas. */
static void test_decimal_commas(void)
{
	static const char *const names[] = {"sessionId", "meterName", "meterVersion", "instrumentName",
	                                    "unit",      "tags",      "quantiles"};
	static const char *const values[] = {
	    "SHARED", "Shop", "1.0", "latency", "s", "route=/a", "0,5=1,25;0,95=2;0,99=3,5"};
	struct nettrace_field fields[9];
	uint8_t payload[512];
	size_t off = 0;

	for (int i = 0; i < 7; i++) {
		fields[i] = str_field(names[i]);
		off += put_utf16(payload + off, values[i]);
	}
	fields[7] = (struct nettrace_field){.type = NT_TC_INT32, .name = "count"};
	fields[8] = (struct nettrace_field){.type = NT_TC_DOUBLE, .name = "sum"};
	int32_t count = 4;
	double sum = 6.5;
	memcpy(payload + off, &count, 4);
	off += 4;
	memcpy(payload + off, &sum, 8);
	off += 8;
	struct nettrace_metadata meta = {.provider = "System.Diagnostics.Metrics",
	                                 .event_id = 6,
	                                 .event_name = "HistogramValuePublished",
	                                 .n_fields = 9,
	                                 .fields = fields};
	struct nettrace_event ev = {.meta = &meta, .payload = payload, .payload_size = (uint32_t)off};
	struct ev_record r;
	char err[256];
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == 1 && r.type == EV_METER_VALUE);
	CHECK(r.u.meter.n_quantiles == 3 && r.u.meter.quantile[0] == 0.5 && r.u.meter.qvalue[0] == 1.25 &&
	      r.u.meter.quantile[2] == 0.99 && r.u.meter.qvalue[2] == 3.5);
	CHECK(r.u.meter.count == 4 && r.u.meter.sum == 6.5);
}

/* The shared session refuses a client whose settings differ, naming them. */
static void test_configured_incorrectly(void)
{
	static const char *const names[] = {"clientId",
	                                    "expectedMaxHistograms",
	                                    "actualMaxHistograms",
	                                    "expectedMaxTimeSeries",
	                                    "actualMaxTimeSeries",
	                                    "expectedRefreshInterval",
	                                    "actualRefreshInterval"};
	static const char *const values[] = {"dumpwatch-7-1", "10", "10", "1000", "1000", "5", "1"};
	struct nettrace_field fields[7];
	uint8_t payload[512];
	size_t off = 0;

	for (int i = 0; i < 7; i++) {
		fields[i] = str_field(names[i]);
		off += put_utf16(payload + off, values[i]);
	}
	struct nettrace_metadata meta = {.provider = "System.Diagnostics.Metrics",
	                                 .event_id = 17,
	                                 .event_name = "MultipleSessionsConfiguredIncorrectlyError",
	                                 .n_fields = 7,
	                                 .fields = fields};
	struct nettrace_event ev = {.meta = &meta, .payload = payload, .payload_size = (uint32_t)off};
	struct ev_record r;
	char err[256];
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == 1 && r.type == EV_METER_ERROR);
	CHECK_STR(r.u.meter.session, "dumpwatch-7-1");
	CHECK_STR(r.u.meter.error, "MultipleSessionsConfiguredIncorrectlyError: the shared session runs with "
	                           "MaxHistograms=10 (asked: 10), MaxTimeSeries=1000 (asked: 1000), RefreshInterval=5 "
	                           "(asked: 1)");
	for (uint32_t len = 0; len < off; len++) {
		ev.payload_size = len;
		CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == -EBADMSG);
	}
}

int main(void)
{
	test_recorded("meters-net10.nettrace");
	test_recorded("meters-net9.nettrace");
	test_recorded("meters-net8.nettrace");
	test_aggregation();
	test_units();
	test_tag_values();
	test_bounds();
	test_decimal_commas();
	test_configured_incorrectly();
	return check_done();
}
