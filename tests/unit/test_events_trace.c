/* The decoders on whole recorded traces: every event of a .NET 10, 9 or 8 recording,
 * read with the nettrace parser, decodes without error, and the totals match
 * what the recorded program did. (test_events.c covers single payloads,
 * truncations and hostile metadata.) */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/events.h"
#include "testdata.h"

#define MAX_SAVED 16

struct saved {
	enum ev_type type;
	const struct nettrace_metadata *meta;
	uint8_t payload[2048];
	uint32_t size;
};

struct stats {
	int pointer_size;
	unsigned count[EV_METER_ERROR + 1];
	struct ev_meter meters[64];
	size_t n_meters;
	struct ev_exception exc[16];
	struct saved exc_payload[16];
	size_t n_exc;
	unsigned errors;
	unsigned loh_ticks;
	uint64_t loh_bytes, soh_bytes, poh_bytes;
	struct ev_gc_heap_stats first_heap;
	int have_heap;
	char counters[64][EV_NAME_MAX];
	size_t n_counters;
	int gc_heap_size_in_mb, alloc_rate_is_sum, cpu_usage_is_mean;
	struct saved saved[MAX_SAVED];
	size_t n_saved;
};

/* Where test_meters keeps the meter values' payloads (parse_trace clears st). */
static struct saved *meter_payload;

static void on_info(void *ctx, const struct nettrace_info *info)
{
	((struct stats *)ctx)->pointer_size = info->pointer_size;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct stats *st = ctx;
	struct ev_record r;
	char err[256];
	int rc = events_decode(ev, st->pointer_size, &r, err, sizeof(err));

	if (rc < 0) {
		st->errors++;
		fprintf(stderr, "decode error: %s\n", err);
		return;
	}
	if (rc == 0) {
		CHECK(r.type == EV_NONE);
		return;
	}
	CHECK(r.timestamp == ev->timestamp);
	st->count[r.type]++;
	int seen = 0;
	for (size_t i = 0; i < st->n_saved; i++)
		seen |= st->saved[i].type == r.type;
	if (!seen && st->n_saved < MAX_SAVED && ev->payload_size <= sizeof(st->saved[0].payload)) {
		struct saved *s = &st->saved[st->n_saved++];
		s->type = r.type;
		s->meta = ev->meta;
		memcpy(s->payload, ev->payload, ev->payload_size);
		s->size = ev->payload_size;
	}
	switch (r.type) {
	case EV_GC_ALLOC_TICK:
		if (r.u.alloc.kind == EV_ALLOC_LARGE) {
			st->loh_ticks++;
			st->loh_bytes += r.u.alloc.amount;
		} else if (r.u.alloc.kind == EV_ALLOC_PINNED) {
			st->poh_bytes += r.u.alloc.amount;
		} else {
			st->soh_bytes += r.u.alloc.amount;
		}
		break;
	case EV_GC_HEAP_STATS:
		if (!st->have_heap) {
			st->first_heap = r.u.heap_stats;
			st->have_heap = 1;
		}
		break;
	case EV_COUNTER: {
		const struct ev_counter *c = &r.u.counter;
		CHECK_STR(c->provider, "System.Runtime");
		if (strcmp(c->name, "gc-heap-size") == 0)
			st->gc_heap_size_in_mb = strcmp(c->display_units, "MB") == 0 && !c->is_increment;
		if (strcmp(c->name, "alloc-rate") == 0)
			st->alloc_rate_is_sum = c->is_increment && strcmp(c->display_units, "B") == 0;
		if (strcmp(c->name, "cpu-usage") == 0)
			st->cpu_usage_is_mean =
			    !c->is_increment && c->value >= 0 && c->value <= 100 && fabs(c->interval_sec - 1.0) < 0.1;
		for (size_t i = 0; i < st->n_counters; i++)
			if (strcmp(st->counters[i], c->name) == 0)
				return;
		if (st->n_counters < 64)
			snprintf(st->counters[st->n_counters++], EV_NAME_MAX, "%s", c->name);
		break;
	}
	case EV_METER_VALUE:
		if (st->n_meters < 64) {
			st->meters[st->n_meters] = r.u.meter;
			if (meter_payload && ev->payload_size <= sizeof(meter_payload[0].payload)) {
				meter_payload[st->n_meters].meta = ev->meta;
				memcpy(meter_payload[st->n_meters].payload, ev->payload, ev->payload_size);
				meter_payload[st->n_meters].size = ev->payload_size;
			}
			st->n_meters++;
		}
		break;
	case EV_EXCEPTION_THROWN:
		if (st->n_exc < 16 && ev->payload_size <= sizeof(st->exc_payload[0].payload)) {
			st->exc[st->n_exc] = r.u.exception;
			st->exc_payload[st->n_exc].meta = ev->meta;
			memcpy(st->exc_payload[st->n_exc].payload, ev->payload, ev->payload_size);
			st->exc_payload[st->n_exc].size = ev->payload_size;
			st->n_exc++;
		}
		break;
	default:
		break;
	}
}

static int has_counter(const struct stats *st, const char *name)
{
	for (size_t i = 0; i < st->n_counters; i++)
		if (strcmp(st->counters[i], name) == 0)
			return 1;
	return 0;
}

/* Parses a whole recorded trace, decoding every event into st. Returns 0
 * when it was read and ended cleanly. The parser stays alive in *ret_p so that
 * saved metadata pointers remain valid; free it with nettrace_free. */
static int parse_trace(const char *name, struct stats *st, nettrace_parser **ret_p)
{
	size_t len;
	uint8_t *data = testdata_load(name, &len);
	struct nettrace_callbacks cb = {.ctx = st, .on_info = on_info, .on_event = on_event};
	int r = -1;

	memset(st, 0, sizeof(*st));
	*ret_p = nettrace_new(&cb, NULL);
	CHECK_MSG(data != NULL, "%s missing", name);
	if (data && *ret_p && nettrace_feed(*ret_p, data, len) == 0 && nettrace_finish(*ret_p) == 0)
		r = 0;
	free(data);
	CHECK_MSG(r == 0, "%s did not parse cleanly", name);
	CHECK_MSG(st->errors == 0, "%s: %u malformed events", name, st->errors);
	return r;
}

static void test_recorded(void)
{
	struct stats st;
	nettrace_parser *p;

	if (parse_trace("gc-alloc-counters.nettrace", &st, &p) < 0) {
		nettrace_free(p);
		return;
	}
	CHECK(st.pointer_size == 8);

	/* The program allocated 60 + 120 MB as 1 MB arrays (loh 60, spike 120),
	 * 20 MB of 1000-byte arrays and 10 MB pinned: one LOH tick per array. */
	CHECK_MSG(st.loh_ticks >= 180 && st.loh_ticks <= 184, "LOH ticks %u", st.loh_ticks);
	CHECK_MSG(st.loh_bytes >= 180000000 && st.loh_bytes < 184500000, "LOH bytes %llu",
	          (unsigned long long)st.loh_bytes);
	CHECK_MSG(st.soh_bytes >= 20000000 && st.soh_bytes < 24000000, "SOH bytes %llu",
	          (unsigned long long)st.soh_bytes);
	CHECK_MSG(st.poh_bytes >= 9000000 && st.poh_bytes <= 10100000, "POH bytes %llu",
	          (unsigned long long)st.poh_bytes);
	CHECK(st.count[EV_GC_ALLOC_TICK] == 390);
	CHECK(st.count[EV_GC_HEAP_STATS] == 13);
	CHECK(st.count[EV_GC_START] == st.count[EV_GC_END]);
	CHECK(st.count[EV_GC_SUSPEND_EE_BEGIN] == st.count[EV_GC_RESTART_EE_END]);
	CHECK(st.count[EV_COUNTER] == 81);
	/* AppDomain resource monitoring is compiled out of .NET 5+ on Linux. */
	CHECK(st.count[EV_APPDOMAIN_MEM_ALLOCATED] == 0);

	/* The first GC's heap statistics, as the runtime sent them (v2, 110 bytes). */
	CHECK(st.first_heap.size[0] == 560);
	CHECK(st.first_heap.size[1] == 331512);
	CHECK(st.first_heap.size[2] == 0);
	CHECK(st.first_heap.size[3] == 4000224);
	CHECK(st.first_heap.size[4] == 8184);
	CHECK(st.first_heap.promoted[0] == 327704);
	CHECK(st.first_heap.has_poh == 1);

	static const char *const names[] = {
	    "cpu-usage", "working-set", "gc-heap-size", "gen-0-gc-count", "gen-2-gc-count",         "loh-size",
	    "poh-size",  "alloc-rate",  "time-in-gc",   "gc-committed",   "total-pause-time-by-gc", "time-in-jit"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK_MSG(has_counter(&st, names[i]), "counter %s missing", names[i]);
	CHECK(st.n_counters == 27);
	CHECK(st.gc_heap_size_in_mb);
	CHECK(st.alloc_rate_is_sum);
	CHECK(st.cpu_usage_is_mean);

	CHECK(st.n_saved >= 10);

	/* Random mutations of recorded payloads: decoded or rejected, never a
	 * crash or an over-read. */
	srand(7);
	for (int round = 0; round < 20000; round++) {
		const struct saved *s = &st.saved[(size_t)rand() % st.n_saved];
		uint8_t *copy = malloc(s->size);
		struct nettrace_event ev;
		struct ev_record r;
		memcpy(copy, s->payload, s->size);
		for (int k = 0; k < 1 + rand() % 4; k++)
			copy[(size_t)rand() % s->size] = (uint8_t)rand();
		memset(&ev, 0, sizeof(ev));
		ev.meta = s->meta;
		ev.payload = copy;
		ev.payload_size = s->size - (uint32_t)(rand() % 3 == 0 ? (uint32_t)rand() % s->size : 0);
		int rc = events_decode(&ev, 8, &r, NULL, 0);
		CHECK(rc == 1 || rc == -EBADMSG);
		free(copy);
	}
	nettrace_free(p);
}

/* The other recordings: every event decodes or is not ours, none is malformed. */
static void test_all_clean(const char *name)
{
	struct stats st;
	nettrace_parser *p;

	if (parse_trace(name, &st, &p) == 0)
		CHECK(st.count[EV_GC_HEAP_STATS] > 0 && st.count[EV_GC_ALLOC_TICK] > 0);
	nettrace_free(p);
}

/* Recorded with `dumpwatch record` while MemSpike ran: loh 40, soh 10,
 * poh 5, release, spike 50 200, gc 0. The session was stopped by dumpwatch,
 * so the stream ends at its closing tag. */
static void test_record_cli(void)
{
	struct stats st;
	nettrace_parser *p;

	if (parse_trace("record-loh-spike.nettrace", &st, &p) < 0) {
		nettrace_free(p);
		return;
	}
	CHECK_MSG(st.loh_ticks >= 90 && st.loh_ticks <= 94, "LOH ticks %u", st.loh_ticks);
	CHECK_MSG(st.loh_bytes >= 90000000 && st.loh_bytes < 94100000, "LOH bytes %llu",
	          (unsigned long long)st.loh_bytes);
	CHECK_MSG(st.poh_bytes >= 4000000 && st.poh_bytes <= 5100000, "POH bytes %llu",
	          (unsigned long long)st.poh_bytes);
	CHECK(st.count[EV_GC_HEAP_STATS] == 11);
	CHECK(st.count[EV_COUNTER] == 108);
	CHECK(has_counter(&st, "gc-heap-size"));
	nettrace_free(p);
}

/* The same commands recorded the same way from the .NET 8.0.31 and 9.0.20
 * runtimes (self-contained MemSpike builds): the exact totals each trace
 * decodes to. The event versions and payload layouts are those of .NET 10
 * (GCAllocationTick v4, GCHeapStats v2 of 110 bytes, the same 27
 * System.Runtime counters). LOH: one tick per 1 MB array (90: loh 40, spike
 * 50), of 1000024 bytes or, on these runtimes more often than on 10, 1000000,
 * plus the held list's 131096-byte Object[]; POH: five arrays, the first tick
 * also carrying what the runtime had pinned before. */
struct runtime_trace {
	const char *file;
	unsigned alloc_ticks, loh_ticks, loh_1000000;
	uint64_t loh_bytes, soh_bytes, poh_bytes;
	unsigned gcs, suspensions, counters;
	uint64_t first_size[5], first_promoted0;
};

static void test_record_runtime(const struct runtime_trace *want)
{
	struct stats st;
	nettrace_parser *p;

	if (parse_trace(want->file, &st, &p) < 0) {
		nettrace_free(p);
		return;
	}
	CHECK(st.pointer_size == 8);
	CHECK_MSG(st.count[EV_GC_ALLOC_TICK] == want->alloc_ticks, "%s: %u ticks", want->file,
	          st.count[EV_GC_ALLOC_TICK]);
	CHECK_MSG(st.loh_ticks == want->loh_ticks, "%s: LOH ticks %u", want->file, st.loh_ticks);
	CHECK(want->loh_bytes ==
	      (uint64_t)(90 - want->loh_1000000) * 1000024 + (uint64_t)want->loh_1000000 * 1000000 + 131096);
	CHECK_MSG(st.loh_bytes == want->loh_bytes, "%s: LOH bytes %llu", want->file, (unsigned long long)st.loh_bytes);
	CHECK_MSG(st.soh_bytes == want->soh_bytes, "%s: SOH bytes %llu", want->file, (unsigned long long)st.soh_bytes);
	CHECK_MSG(st.poh_bytes == want->poh_bytes, "%s: POH bytes %llu", want->file, (unsigned long long)st.poh_bytes);
	CHECK(st.count[EV_GC_START] == want->gcs && st.count[EV_GC_END] == want->gcs);
	CHECK(st.count[EV_GC_HEAP_STATS] == want->gcs);
	CHECK(st.count[EV_GC_SUSPEND_EE_BEGIN] == want->suspensions &&
	      st.count[EV_GC_RESTART_EE_END] == want->suspensions);
	CHECK_MSG(st.count[EV_COUNTER] == want->counters, "%s: %u counters", want->file, st.count[EV_COUNTER]);
	CHECK(st.count[EV_APPDOMAIN_MEM_ALLOCATED] == 0);
	for (int i = 0; i < 5; i++)
		CHECK_MSG(st.first_heap.size[i] == want->first_size[i], "%s: first GC size[%d] %llu", want->file, i,
		          (unsigned long long)st.first_heap.size[i]);
	CHECK(st.first_heap.promoted[0] == want->first_promoted0);
	CHECK(st.first_heap.has_poh == 1);
	CHECK(st.n_counters == 27);
	CHECK(has_counter(&st, "gc-heap-size") && has_counter(&st, "alloc-rate") && has_counter(&st, "cpu-usage"));
	CHECK(st.gc_heap_size_in_mb);
	CHECK(st.alloc_rate_is_sum);
	CHECK(st.cpu_usage_is_mean);
	nettrace_free(p);
}

static const struct runtime_trace net8 = {
    .file = "record-loh-spike-net8.nettrace",
    .alloc_ticks = 200,
    .loh_ticks = 91,
    .loh_1000000 = 11,
    .loh_bytes = 90132992,
    .soh_bytes = 11110024,
    .poh_bytes = 5016464,
    .gcs = 8,
    .suspensions = 11,
    .counters = 135,
    .first_size = {584, 326816, 0, 4000224, 16368},
    .first_promoted0 = 322984,
};

static const struct runtime_trace net9 = {
    .file = "record-loh-spike-net9.nettrace",
    .alloc_ticks = 200,
    .loh_ticks = 91,
    .loh_1000000 = 5,
    .loh_bytes = 90133136,
    .soh_bytes = 11065216,
    .poh_bytes = 5008280,
    .gcs = 8,
    .suspensions = 11,
    .counters = 135,
    .first_size = {560, 323936, 0, 4000224, 8184},
    .first_promoted0 = 320224,
};

/* ExceptionThrown_V1 as .NET 10, 9 and 8 sent it while MemSpike ran
 * "throw 3 timeout waiting for the pool", "throw 2 pool connection pool
 * exhausted", "throw 1 invalid" with a 606-character message, "throw 1
 * argument" with a non-ASCII message (tests/data/README.md). Every truncation
 * of each payload is refused, never read past. */
static void test_exceptions(const char *name)
{
	static struct stats st;
	nettrace_parser *p = NULL;
	char err[256];

	memset(&st, 0, sizeof(st));
	CHECK_MSG(parse_trace(name, &st, &p) == 0, "%s", name);
	CHECK_MSG(st.errors == 0, "%s: %u decode errors", name, st.errors);
	CHECK_MSG(st.count[EV_EXCEPTION_THROWN] == 7, "%s: %u exceptions", name, st.count[EV_EXCEPTION_THROWN]);
	if (st.n_exc != 7) {
		nettrace_free(p);
		return;
	}
	for (int i = 0; i < 3; i++) {
		CHECK_STR(st.exc[i].type, "System.TimeoutException");
		CHECK_STR(st.exc[i].message, "waiting for the pool");
		CHECK(st.exc[i].hresult == 0x80131505u && !(st.exc[i].flags & 0x1));
	}
	for (int i = 3; i < 5; i++) {
		CHECK_STR(st.exc[i].type, "PoolExhaustedException");
		CHECK_STR(st.exc[i].message, "connection pool exhausted");
		CHECK(st.exc[i].flags & 0x1); /* has an inner exception */
	}
	CHECK_STR(st.exc[5].type, "System.InvalidOperationException");
	CHECK(st.exc[5].message_truncated && !st.exc[5].type_truncated);
	CHECK(strlen(st.exc[5].message) == EV_EXC_MESSAGE_MAX - 1);
	CHECK(strncmp(st.exc[5].message, "xxxxxxxxxx", 10) == 0);
	CHECK_STR(st.exc[6].type, "System.ArgumentException");
	CHECK_STR(st.exc[6].message, "\xc3\xbc"
	                             "n"
	                             "\xc3\xaf"
	                             "c"
	                             "\xc3\xb8"
	                             "d"
	                             "\xc3\xa9"
	                             " \xe2\x9c\x93 message");
	CHECK(!st.exc[6].message_truncated);
	for (size_t k = 0; k < st.n_exc; k++) {
		const struct saved *sv = &st.exc_payload[k];
		struct nettrace_event ev = {.meta = sv->meta, .payload = sv->payload};
		struct ev_record r;
		/* The full payload once more, then every shorter one. */
		ev.payload_size = sv->size;
		CHECK(events_decode(&ev, st.pointer_size, &r, err, sizeof(err)) == 1);
		for (uint32_t len = 0; len < sv->size; len++) {
			ev.payload_size = len;
			int rc = events_decode(&ev, st.pointer_size, &r, err, sizeof(err));
			CHECK_MSG(rc == -EBADMSG && strstr(err, "ExceptionThrown"), "%s: exception %zu cut to %u: %d",
			          name, k, len, rc);
		}
	}
	nettrace_free(p);
}

/* The i-th value of one time series (instrument and tags), or NULL. */
static const struct ev_meter *series(const struct stats *st, const char *instrument, const char *tags, int nth)
{
	for (size_t i = 0; i < st->n_meters; i++)
		if (strcmp(st->meters[i].instrument, instrument) == 0 && strcmp(st->meters[i].tags, tags) == 0 &&
		    nth-- == 0)
			return &st->meters[i];
	return NULL;
}

/* System.Diagnostics.Metrics as .NET 10, 9 and 8 sent it (`dumpwatch record
 * --meters MemSpike.Orders`, values every 1 s) while MemSpike ran "order 5
 * /api/orders", "order 2 /api/cart", "request 100 2000 /api/orders"
 * (0.02 s .. 2 s evenly), "request 10 50 /health", "conn 7", "conn -2",
 * "queue 42", then a second later "order 3 /api/orders". Every truncation of
 * every value event is refused. */
static void test_meters(const char *name)
{
	static struct stats st;
	nettrace_parser *p = NULL;
	const struct ev_meter *m;
	char err[256];

	memset(&st, 0, sizeof(st));
	meter_payload = calloc(64, sizeof(*meter_payload));
	CHECK_MSG(parse_trace(name, &st, &p) == 0, "%s", name);
	CHECK_MSG(st.errors == 0 && st.count[EV_METER_ERROR] == 0, "%s: %u errors", name, st.errors);
	CHECK_MSG(st.n_meters >= 12, "%s: %zu meter values", name, st.n_meters);
	/* The counter: the increase in each interval and the total. */
	m = series(&st, "orders.placed", "route=/api/orders", 0);
	CHECK_MSG(m && m->kind == EV_METER_COUNTER && m->has_rate && m->rate == 5 && m->has_value && m->value == 5 &&
	              strcmp(m->meter, "MemSpike.Orders") == 0 && strcmp(m->unit, "{order}") == 0,
	          "%s: first orders.placed", name);
	int saw3 = 0;
	for (int i = 1; (m = series(&st, "orders.placed", "route=/api/orders", i)) != NULL; i++)
		saw3 |= m->rate == 3 && m->value == 8;
	CHECK_MSG(saw3, "%s: no interval with 3 more orders, 8 in all", name);
	m = series(&st, "orders.placed", "route=/api/cart", 0);
	CHECK(m && m->rate == 2 && m->value == 2);
	m = series(&st, "connections.active", "", 0);
	CHECK(m && m->kind == EV_METER_UPDOWN && m->value == 5);
	m = series(&st, "queue.depth", "", 0);
	CHECK(m && m->kind == EV_METER_GAUGE && m->has_value && m->value == 42 && !m->has_rate);
	/* The histogram: quantiles of 100 durations from 0.02 to 2 s. */
	m = series(&st, "request.duration", "http.route=/api/orders", 0);
	CHECK(m && m->kind == EV_METER_HISTOGRAM && strcmp(m->unit, "s") == 0 && m->has_count && m->count == 100 &&
	      fabs(m->sum - 101.0) < 1e-9 && m->n_quantiles == 3);
	if (m && m->n_quantiles == 3) {
		CHECK(m->quantile[0] == 0.5 && m->quantile[1] == 0.95 && m->quantile[2] == 0.99);
		CHECK_MSG(fabs(m->qvalue[0] - 1.0) < 0.05 && fabs(m->qvalue[1] - 1.9) < 0.05 &&
		              fabs(m->qvalue[2] - 1.98) < 0.05,
		          "%s: p50 %g p95 %g p99 %g", name, m->qvalue[0], m->qvalue[1], m->qvalue[2]);
	}
	m = series(&st, "request.duration", "http.route=/health", 0);
	CHECK(m && m->count == 10 && fabs(m->sum - 0.275) < 1e-9);
	/* An interval without measurements: count 0 and no quantiles. */
	m = series(&st, "request.duration", "http.route=/health", 1);
	CHECK(m && m->count == 0 && m->n_quantiles == 0);
	for (size_t k = 0; k < st.n_meters && k < 64; k++) {
		const struct saved *sv = &meter_payload[k];
		struct nettrace_event ev = {.meta = sv->meta, .payload = sv->payload};
		struct ev_record r;
		if (!sv->meta)
			continue;
		ev.payload_size = sv->size;
		CHECK(events_decode(&ev, st.pointer_size, &r, err, sizeof(err)) == 1);
		for (uint32_t len = 0; len < sv->size; len++) {
			ev.payload_size = len;
			int rc = events_decode(&ev, st.pointer_size, &r, err, sizeof(err));
			CHECK_MSG(rc == -EBADMSG, "%s: meter value %zu cut to %u: %d", name, k, len, rc);
		}
	}
	free(meter_payload);
	meter_payload = NULL;
	nettrace_free(p);
}

int main(void)
{
	test_meters("meters-net10.nettrace");
	test_meters("meters-net9.nettrace");
	test_meters("meters-net8.nettrace");
	test_exceptions("exceptions-net10.nettrace");
	test_exceptions("exceptions-net9.nettrace");
	test_exceptions("exceptions-net8.nettrace");
	test_record_cli();
	test_record_runtime(&net8);
	test_record_runtime(&net9);
	test_recorded();
	test_all_clean("gc-stopped.nettrace");
	test_all_clean("gc-stacks.nettrace");
	return check_done();
}
