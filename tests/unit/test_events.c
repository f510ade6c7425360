/* Unit tests of the payload decoders, on events recorded from the .NET 10
 * runtime (the traces under tests/data, read with the nettrace parser) and on
 * hand-made payloads and metadata: exact values, every truncation, appended
 * bytes, hostile EventCounters metadata, random mutations. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dumpwatch/events.h"

#define MAX_SAVED 16

struct saved {
	enum ev_type type;
	const struct nettrace_metadata *meta;
	uint8_t payload[512];
	uint32_t size;
};

struct stats {
	int pointer_size;
	unsigned count[EV_APPDOMAIN_MEM_SURVIVED + 1];
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

static uint8_t *load(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", DW_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

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

/* The least payload each recorded event version needs (ClrEtwAll.man). Tick
 * v4 and EventCounters need every byte the runtime sent: their last fields
 * are fixed-size and follow variable-length strings. */
static uint32_t min_size(const struct saved *s)
{
	switch (s->type) {
	case EV_GC_HEAP_STATS:
		return 110;
	case EV_GC_START:
		return 16;
	case EV_GC_END:
	case EV_GC_SUSPEND_EE_BEGIN:
		return 8;
	case EV_GC_TRIGGERED:
		return 4;
	default:
		return s->size;
	}
}

/* Every shorter payload of a recorded event is rejected or, for events with
 * optional trailing fields, decodes without reading past its end (ASan). A
 * longer one decodes to the same record. */
static void check_truncations(const struct saved *s, int ps)
{
	struct nettrace_event ev;
	struct ev_record full, r;
	char err[256];
	uint8_t buf[600];

	memset(&ev, 0, sizeof(ev));
	ev.meta = s->meta;
	ev.payload = s->payload;
	ev.payload_size = s->size;
	CHECK(events_decode(&ev, ps, &full, err, sizeof(err)) == 1);
	for (uint32_t n = 0; n < s->size; n++) {
		uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any over-read */
		memcpy(copy, s->payload, n);
		ev.payload = copy;
		ev.payload_size = n;
		int rc = events_decode(&ev, ps, &r, err, sizeof(err));
		if (s->type == EV_GC_RESTART_EE_END || s->type == EV_GC_RESTART_EE_BEGIN ||
		    s->type == EV_GC_SUSPEND_EE_END)
			CHECK(rc == 1); /* no fields read */
		else if (n < min_size(s))
			CHECK_MSG(rc == -EBADMSG, "%s truncated to %u gave %d", events_type_name(s->type), n, rc);
		else
			CHECK(rc == 1);
		if (rc == -EBADMSG)
			CHECK(err[0] != '\0');
		free(copy);
	}
	memcpy(buf, s->payload, s->size);
	memset(buf + s->size, 0xA5, 64);
	ev.payload = buf;
	ev.payload_size = s->size + 64;
	CHECK(events_decode(&ev, ps, &r, err, sizeof(err)) == 1);
	CHECK(r.type == full.type);
	CHECK(memcmp(&r.u, &full.u, sizeof(r.u)) == 0);
}

static void test_recorded(void)
{
	struct stats st;
	size_t len;
	uint8_t *data = load("gc-alloc-counters.nettrace", &len);
	struct nettrace_callbacks cb = {.ctx = &st, .on_info = on_info, .on_event = on_event};

	memset(&st, 0, sizeof(st));
	CHECK(data != NULL);
	if (!data)
		return;
	nettrace_parser *p = nettrace_new(&cb, NULL);
	CHECK(nettrace_feed(p, data, len) == 0);
	CHECK(nettrace_finish(p) == 0);
	CHECK(st.errors == 0);
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
	for (size_t i = 0; i < st.n_saved; i++)
		check_truncations(&st.saved[i], 8);

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
	free(data);
}

/* --- hand-made EventCounters metadata and payloads --- */

struct pb {
	uint8_t b[4096];
	uint32_t n;
};

static void put(struct pb *p, const void *v, size_t n)
{
	memcpy(p->b + p->n, v, n);
	p->n += (uint32_t)n;
}

static void put_str(struct pb *p, const char *s)
{
	for (; *s; s++) {
		uint16_t c = (uint8_t)*s;
		put(p, &c, 2);
	}
	uint16_t z = 0;
	put(p, &z, 2);
}

static void put_f64(struct pb *p, double d)
{
	put(p, &d, 8);
}

static int decode_counter(struct nettrace_field *fields, uint32_t n, const struct pb *payload, struct ev_record *r,
                          char *err)
{
	struct nettrace_metadata m;
	struct nettrace_event ev;

	memset(&m, 0, sizeof(m));
	m.provider = "Microsoft.AspNetCore.Hosting";
	m.event_name = "EventCounters";
	m.fields = fields;
	m.n_fields = n;
	memset(&ev, 0, sizeof(ev));
	ev.meta = &m;
	ev.payload = payload->b;
	ev.payload_size = payload->n;
	return events_decode(&ev, 8, r, err, 256);
}

static void test_counter_shapes(void)
{
	struct ev_record r;
	char err[256];
	struct pb p;

	/* Different order, extra fields first (a string and an int array), no
	 * Payload wrapper, Increment form. */
	struct nettrace_field f1[] = {
	    {NT_TC_STRING, 0, "Tags", 0, NULL},      {NT_TC_ARRAY, NT_TC_INT32, "Series", 0, NULL},
	    {NT_TC_DOUBLE, 0, "Increment", 0, NULL}, {NT_TC_STRING, 0, "DisplayUnits", 0, NULL},
	    {NT_TC_STRING, 0, "Name", 0, NULL},      {NT_TC_STRING, 0, "CounterType", 0, NULL},
	};
	memset(&p, 0, sizeof(p));
	put_str(&p, "a=b");
	uint16_t cnt = 3;
	int32_t items[3] = {1, 2, 3};
	put(&p, &cnt, 2);
	put(&p, items, sizeof(items));
	put_f64(&p, 1234.5);
	put_str(&p, "");
	put_str(&p, "requests-per-second");
	put_str(&p, "Sum");
	CHECK(decode_counter(f1, 6, &p, &r, err) == 1);
	CHECK(r.type == EV_COUNTER);
	CHECK_STR(r.u.counter.provider, "Microsoft.AspNetCore.Hosting");
	CHECK_STR(r.u.counter.name, "requests-per-second");
	CHECK(r.u.counter.value == 1234.5);
	CHECK(r.u.counter.is_increment == 1);

	/* Nested as the runtime sends it: {} -> Payload {} -> fields, float interval. */
	struct nettrace_field inner[] = {
	    {NT_TC_STRING, 0, "Name", 0, NULL},
	    {NT_TC_DOUBLE, 0, "Mean", 0, NULL},
	    {NT_TC_SINGLE, 0, "IntervalSec", 0, NULL},
	    {NT_TC_STRING, 0, "DisplayUnits", 0, NULL},
	};
	struct nettrace_field payload_obj[] = {{NT_TC_OBJECT, 0, "Payload", 4, inner}};
	struct nettrace_field outer[] = {{NT_TC_OBJECT, 0, "", 1, payload_obj}};
	memset(&p, 0, sizeof(p));
	put_str(&p, "current-connections");
	put_f64(&p, 17);
	float iv = 5;
	put(&p, &iv, 4);
	put_str(&p, "conns");
	CHECK(decode_counter(outer, 1, &p, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "current-connections");
	CHECK(r.u.counter.value == 17 && r.u.counter.interval_sec == 5 && !r.u.counter.is_increment);
	CHECK_STR(r.u.counter.display_units, "conns");
	/* Every truncation is rejected. */
	for (uint32_t n = 0; n < p.n; n++) {
		struct pb q = p;
		q.n = n;
		CHECK(decode_counter(outer, 1, &q, &r, err) == -EBADMSG);
	}
	/* No value field at all: rejected with a reason. */
	memset(&p, 0, sizeof(p));
	put_str(&p, "x");
	CHECK(decode_counter(inner, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "no Mean or Increment") != NULL);

	/* Long names are truncated, not overflowed. */
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 300; i++) {
		uint16_t c = 'n';
		put(&p, &c, 2);
	}
	uint16_t z = 0;
	put(&p, &z, 2);
	put_f64(&p, 1);
	CHECK(decode_counter(inner, 2, &p, &r, err) == 1);
	CHECK(strlen(r.u.counter.name) == EV_NAME_MAX - 1);

	/* Hostile: an array of 65535 arrays of 65535 empty objects is bounded
	 * by the visit limit, not by time. */
	struct nettrace_field empty_obj = {NT_TC_OBJECT, 0, "", 0, NULL};
	struct nettrace_field inner_arr = {NT_TC_ARRAY, NT_TC_OBJECT, "", 0, NULL};
	struct nettrace_field outer_arr[] = {{NT_TC_ARRAY, NT_TC_ARRAY, "x", 1, &inner_arr}};
	(void)empty_obj;
	memset(&p, 0, sizeof(p));
	uint16_t big = 65535;
	for (int i = 0; i < 1000; i++)
		put(&p, &big, 2);
	CHECK(decode_counter(outer_arr, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "too large") != NULL);

	/* Deep nesting of objects is bounded. */
	static struct nettrace_field chain[64];
	for (int i = 0; i < 64; i++) {
		chain[i].type = NT_TC_OBJECT;
		chain[i].name = "o";
		chain[i].n_children = i < 63 ? 1 : 0;
		chain[i].children = i < 63 ? &chain[i + 1] : NULL;
	}
	memset(&p, 0, sizeof(p));
	CHECK(decode_counter(chain, 1, &p, &r, err) == -EBADMSG);
}

static void test_not_ours(void)
{
	struct nettrace_metadata m;
	struct nettrace_event ev;
	struct ev_record r;
	uint8_t payload[200] = {0};

	memset(&m, 0, sizeof(m));
	memset(&ev, 0, sizeof(ev));
	ev.meta = &m;
	ev.payload = payload;
	ev.payload_size = sizeof(payload);
	m.provider = "Microsoft-DotNETCore-EventPipe";
	m.event_name = "ProcessInfo";
	m.event_id = 1;
	CHECK(events_decode(&ev, 8, &r, NULL, 0) == 0 && r.type == EV_NONE);
	m.provider = EV_RUNTIME_PROVIDER;
	m.event_name = "";
	m.event_id = 80; /* ExceptionThrown: not decoded here */
	CHECK(events_decode(&ev, 8, &r, NULL, 0) == 0 && r.type == EV_NONE);
	/* GCHeapStats v1 (no POH) decodes without gen4. */
	m.event_id = 4;
	m.version = 1;
	ev.payload_size = 94;
	payload[48] = 0x10; /* LOH size low byte */
	CHECK(events_decode(&ev, 8, &r, NULL, 0) == 1);
	CHECK(r.type == EV_GC_HEAP_STATS && r.u.heap_stats.size[3] == 0x10 && !r.u.heap_stats.has_poh);
	/* 32-bit pointers shift the allocation tick's type name. */
	char err[256];
	uint8_t tick[64] = {0};
	m.event_id = 10;
	m.version = 4;
	tick[4] = 1;     /* large */
	tick[10] = 0x40; /* Amount64 = 0x40 */
	tick[22] = 'A';  /* type name at 18 + 4 */
	ev.payload = tick;
	ev.payload_size = 22 + 4 + 4 + 4 + 8;
	CHECK(events_decode(&ev, 4, &r, err, sizeof(err)) == 1);
	CHECK(r.u.alloc.kind == EV_ALLOC_LARGE && r.u.alloc.amount == 0x40);
	CHECK_STR(r.u.alloc.type_name, "A");
	tick[4] = 9; /* unknown kind */
	CHECK(events_decode(&ev, 4, &r, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "unknown allocation kind 9") != NULL);
	CHECK_STR(events_type_name(EV_GC_HEAP_STATS), "GCHeapStats");
}

int main(void)
{
	test_recorded();
	test_counter_shapes();
	test_not_ours();
	return check_done();
}
