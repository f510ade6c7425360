/* Unit tests of the payload decoders. The events are built here by hand, not
 * by the nettrace parser: payloads recorded from the .NET 10 runtime
 * (tests/data/payloads, see its README for how they were extracted and the
 * index.txt / *.meta files that describe them) and hand-made payloads and
 * metadata trees. Covered: exact values of every recorded payload, every
 * truncation, appended bytes, older and newer event versions, EventCounters
 * metadata in other shapes and hostile ones, events that are not decoded,
 * and seeded random mutations (run this under ASan: every payload lives in a
 * buffer of exactly its size). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "dumpwatch/events.h"

#define RT EV_RUNTIME_PROVIDER

/* ---- recorded payloads: index.txt and *.meta ---- */

struct meta_file {
	char file[64];
	struct nettrace_metadata meta;
};

struct recorded {
	char file[64];
	uint8_t *payload; /* exactly size bytes */
	uint32_t size;
	struct nettrace_metadata *meta;
	uint64_t thread_id;
	int64_t timestamp;
};

static struct meta_file metas[8];
static size_t n_metas;
static struct recorded recs[32];
static size_t n_recs;
static struct nettrace_metadata runtime_metas[32]; /* one per recorded runtime event */

static uint8_t *load(const char *name, uint32_t *ret_len)
{
	char path[512];
	FILE *f;
	long n;
	uint8_t *b;

	snprintf(path, sizeof(path), "%s/payloads/%s", DW_TEST_DATA, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*ret_len = (uint32_t)n;
	return b;
}

struct mline {
	int depth;
	uint32_t type, elem;
	char name[64];
};

/* Builds the siblings at `depth` starting at lines[*i] (depth first order). */
static struct nettrace_field *build_fields(const struct mline *l, size_t n, size_t *i, int depth, uint32_t *ret_count)
{
	size_t j, k = 0, count = 0;
	struct nettrace_field *f;

	for (j = *i; j < n && l[j].depth >= depth; j++)
		count += l[j].depth == depth;
	*ret_count = (uint32_t)count;
	if (count == 0)
		return NULL;
	f = calloc(count, sizeof(*f));
	while (*i < n && l[*i].depth >= depth) {
		const struct mline *m = &l[(*i)++];
		f[k].type = m->type;
		f[k].elem_type = m->elem;
		f[k].name = strdup(strcmp(m->name, "-") == 0 ? "" : m->name);
		f[k].children = build_fields(l, n, i, depth + 1, &f[k].n_children);
		k++;
	}
	return f;
}

static void free_fields(struct nettrace_field *f, uint32_t n)
{
	for (uint32_t i = 0; f && i < n; i++) {
		free(f[i].name);
		free_fields(f[i].children, f[i].n_children);
	}
	free(f);
}

static struct nettrace_metadata *load_meta(const char *file)
{
	char path[512], line[256], provider[128], name[128];
	struct mline lines[64];
	size_t n = 0, i = 0;
	struct meta_file *mf;
	unsigned id, version;
	FILE *f;

	for (size_t j = 0; j < n_metas; j++)
		if (strcmp(metas[j].file, file) == 0)
			return &metas[j].meta;
	snprintf(path, sizeof(path), "%s/payloads/%s", DW_TEST_DATA, file);
	f = fopen(path, "r");
	if (!f || n_metas == sizeof(metas) / sizeof(metas[0])) {
		if (f)
			fclose(f);
		return NULL;
	}
	mf = &metas[n_metas++];
	snprintf(mf->file, sizeof(mf->file), "%s", file);
	while (fgets(line, sizeof(line), f)) {
		struct mline *m = &lines[n];
		if (sscanf(line, "event %127s %u %u %127s", provider, &id, &version, name) == 4) {
			mf->meta.provider = strdup(provider);
			mf->meta.event_id = id;
			mf->meta.version = version;
			mf->meta.event_name = strdup(name);
		} else if (n < 64 && sscanf(line, "field %d %u %u %63s", &m->depth, &m->type, &m->elem, m->name) == 4) {
			n++;
		}
	}
	fclose(f);
	mf->meta.fields = build_fields(lines, n, &i, 0, &mf->meta.n_fields);
	return &mf->meta;
}

static int load_index(void)
{
	char path[512], line[512], file[64], meta[64], provider[128];
	unsigned id, version;
	unsigned long long tid;
	long long ts;
	FILE *f;

	snprintf(path, sizeof(path), "%s/payloads/index.txt", DW_TEST_DATA);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n_recs < sizeof(recs) / sizeof(recs[0])) {
		struct recorded *r = &recs[n_recs];
		if (line[0] == '#' || sscanf(line, "%63s %63s %127s %u %u %llu %lld", file, meta, provider, &id,
		                             &version, &tid, &ts) != 7)
			continue;
		snprintf(r->file, sizeof(r->file), "%s", file);
		r->payload = load(file, &r->size);
		if (!r->payload) {
			fprintf(stderr, "cannot read payload %s\n", file);
			fclose(f);
			return -1;
		}
		if (strcmp(meta, "-") == 0) {
			struct nettrace_metadata *m = &runtime_metas[n_recs];
			m->provider = strdup(provider);
			m->event_name = strdup("");
			m->event_id = id;
			m->version = version;
			r->meta = m;
		} else {
			r->meta = load_meta(meta);
			if (!r->meta || strcmp(r->meta->provider, provider) != 0 || r->meta->event_id != id) {
				fprintf(stderr, "metadata %s does not match index line of %s\n", meta, file);
				fclose(f);
				return -1;
			}
		}
		r->thread_id = tid;
		r->timestamp = ts;
		n_recs++;
	}
	fclose(f);
	return 0;
}

static const struct recorded *rec(const char *file)
{
	for (size_t i = 0; i < n_recs; i++)
		if (strcmp(recs[i].file, file) == 0)
			return &recs[i];
	fprintf(stderr, "no recorded payload %s\n", file);
	return NULL;
}

static struct nettrace_event event_of(const struct nettrace_metadata *m, const uint8_t *p, uint32_t n)
{
	struct nettrace_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.meta = m;
	ev.payload = p;
	ev.payload_size = n;
	ev.thread_id = 4242;
	ev.timestamp = 123456789;
	return ev;
}

/* Decodes a copy of p[0..n) held in a buffer of exactly n bytes. */
static int decode_copy(const struct nettrace_metadata *m, const uint8_t *p, uint32_t n, int ps, struct ev_record *r,
                       char *err, size_t errlen)
{
	uint8_t *copy = malloc(n);
	struct nettrace_event ev;
	int rc;

	if (n)
		memcpy(copy, p, n);
	ev = event_of(m, copy, n);
	rc = events_decode(&ev, ps, r, err, errlen);
	free(copy);
	return rc;
}

static int decode_rec(const struct recorded *x, struct ev_record *r, char *err)
{
	struct nettrace_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.meta = x->meta;
	ev.payload = x->payload;
	ev.payload_size = x->size;
	ev.thread_id = x->thread_id;
	ev.timestamp = x->timestamp;
	return events_decode(&ev, 8, r, err, 256);
}

/* ---- exact values of the recorded payloads (read independently with a
 * Python walker of the trace, see tests/data/payloads/README.md) ---- */

static void test_recorded_gc(void)
{
	struct ev_record r;
	char err[256];
	const struct recorded *x;

	x = rec("gcstart-v2-background.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_START);
	CHECK(r.u.gc_start.count == 2 && r.u.gc_start.depth == 2 && r.u.gc_start.reason == 4);
	CHECK(r.u.gc_start.type == EV_GC_BACKGROUND);
	CHECK(r.thread_id == 2387 && r.timestamp == 490663409009LL);

	x = rec("gcstart-v2-blocking.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_START);
	CHECK(r.u.gc_start.count == 3 && r.u.gc_start.depth == 0 && r.u.gc_start.reason == 0);
	CHECK(r.u.gc_start.type == EV_GC_BLOCKING);

	x = rec("gcend-v1.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_END && r.u.gc_end.count == 3 && r.u.gc_end.depth == 0);
	CHECK(r.thread_id == 2387 && r.timestamp == 490686364461LL);

	/* The heap after "loh 60" and "poh 10": 60 MB of 1 MB arrays on the LOH,
	 * 10 MB pinned. Sent by the background GC thread. */
	x = rec("gcheapstats-v2.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_HEAP_STATS);
	CHECK(r.u.heap_stats.size[0] == 4144576);
	CHECK(r.u.heap_stats.size[1] == 12583328);
	CHECK(r.u.heap_stats.size[2] == 3788736);
	CHECK(r.u.heap_stats.size[3] == 60396688);
	CHECK(r.u.heap_stats.size[4] == 10008424);
	CHECK(r.u.heap_stats.promoted[0] == 6257000);
	CHECK(r.u.heap_stats.promoted[1] == 3411248);
	CHECK(r.u.heap_stats.promoted[2] == 3708600);
	CHECK(r.u.heap_stats.promoted[3] == 60263608);
	CHECK(r.u.heap_stats.promoted[4] == 0);
	CHECK(r.u.heap_stats.finalization_promoted_size == 0);
	CHECK(r.u.heap_stats.finalization_promoted_count == 1);
	CHECK(r.u.heap_stats.pinned_objects == 0 && r.u.heap_stats.sink_blocks == 0);
	CHECK(r.u.heap_stats.gc_handles == 66);
	CHECK(r.u.heap_stats.has_poh == 1);
	CHECK(r.thread_id == 2444 && r.timestamp == 490734749256LL);

	x = rec("gcsuspendeebegin-v1.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_SUSPEND_EE_BEGIN && r.u.suspend.reason == 1 && r.u.suspend.count == 6);
	CHECK(r.timestamp == 490732292516LL);

	x = rec("gcsuspendeeend-v1.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_SUSPEND_EE_END && r.timestamp == 490658615977LL);
	x = rec("gcrestarteebegin-v1.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_RESTART_EE_BEGIN && r.timestamp == 490661148340LL);
	x = rec("gcrestarteeend-v1.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_RESTART_EE_END && r.timestamp == 490661152498LL && r.thread_id == 2387);

	x = rec("gctriggered-v0.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_TRIGGERED && r.u.triggered_reason == 4); /* AllocLarge */
}

static void test_recorded_alloc_ticks(void)
{
	struct ev_record r;
	char err[256];
	const struct recorded *x;

	x = rec("alloctick-v4-small.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_ALLOC_TICK && r.u.alloc.kind == EV_ALLOC_SMALL);
	CHECK(r.u.alloc.amount == 106088 && r.u.alloc.object_size == 104 && r.u.alloc.heap_index == 0);
	CHECK_STR(r.u.alloc.type_name, "System.String");
	CHECK(r.thread_id == 2391 && r.timestamp == 490405299695LL);

	/* new byte[1_000_000] on the LOH: one tick per array. */
	x = rec("alloctick-v4-large.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_ALLOC_TICK && r.u.alloc.kind == EV_ALLOC_LARGE);
	CHECK(r.u.alloc.amount == 1000024 && r.u.alloc.object_size == 1000032);
	CHECK_STR(r.u.alloc.type_name, "System.Byte[]");

	x = rec("alloctick-v4-pinned.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_GC_ALLOC_TICK && r.u.alloc.kind == EV_ALLOC_PINNED);
	CHECK(r.u.alloc.amount == 1008208 && r.u.alloc.object_size == 1000000);
	CHECK_STR(r.u.alloc.type_name, "System.Byte[]");

	x = rec("alloctick-v4-longname.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.u.alloc.kind == EV_ALLOC_SMALL && r.u.alloc.amount == 103640 && r.u.alloc.object_size == 24);
	CHECK_STR(r.u.alloc.type_name, "System.Reflection.CerHashtable`2[System.Reflection.RuntimeMethodInfo,System."
	                               "Reflection.RuntimeMethodInfo]");
}

static void test_recorded_counters(void)
{
	struct ev_record r;
	char err[256];
	const struct recorded *x;

	x = rec("counter-mean-cpu-usage.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK(r.type == EV_COUNTER);
	CHECK_STR(r.u.counter.provider, "System.Runtime");
	CHECK_STR(r.u.counter.name, "cpu-usage");
	CHECK_STR(r.u.counter.display_units, "%");
	CHECK(!r.u.counter.is_increment);
	CHECK(r.u.counter.value == 10.201636807970388);
	CHECK(r.u.counter.interval_sec == 0.9986752867698669); /* a float on the wire */
	CHECK(r.thread_id == 2441 && r.timestamp == 492412517752LL);

	x = rec("counter-mean-loh-size.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "loh-size");
	CHECK_STR(r.u.counter.display_units, "B");
	CHECK(!r.u.counter.is_increment && r.u.counter.value == 60396688.0);
	CHECK(r.u.counter.interval_sec == 1.000704288482666);

	x = rec("counter-mean-gc-heap-size.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "gc-heap-size");
	CHECK_STR(r.u.counter.display_units, "MB");
	CHECK(!r.u.counter.is_increment && r.u.counter.value == 90.6274);

	x = rec("counter-sum-alloc-rate.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "alloc-rate");
	CHECK_STR(r.u.counter.display_units, "B");
	CHECK(r.u.counter.is_increment && r.u.counter.value == 90604000.0);
	CHECK(r.u.counter.interval_sec == 1.000704288482666);

	x = rec("counter-sum-total-pause-time-by-gc.bin");
	CHECK(x && decode_rec(x, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "total-pause-time-by-gc");
	CHECK_STR(r.u.counter.display_units, "ms");
	CHECK(r.u.counter.is_increment && r.u.counter.value == 15.612);
}

/* Every truncation of every recorded payload is rejected with a sentence
 * (each recorded payload is exactly its version's full layout, and for tick
 * v4 and EventCounters the last fields follow strings), and never read past
 * (ASan: each truncation is a buffer of exactly its size). Junk appended
 * changes nothing. */
static void test_truncations_and_appends(void)
{
	struct ev_record full, r;
	char err[256];
	unsigned bad = 0, tried = 0, silent = 0, type_set = 0;

	for (size_t i = 0; i < n_recs; i++) {
		const struct recorded *x = &recs[i];
		/* The decoder sets the record's header and the member of its
		 * type; the rest is left as it was, so both start cleared. */
		memset(&full, 0, sizeof(full));
		CHECK_MSG(decode_rec(x, &full, err) == 1, "%s: %s", x->file, err);
		for (uint32_t n = 0; n < x->size; n++) {
			int rc = decode_copy(x->meta, x->payload, n, 8, &r, err, sizeof(err));
			tried++;
			if (rc != -EBADMSG) {
				bad++;
				fprintf(stderr, "%s truncated to %u bytes gave %d\n", x->file, n, rc);
			}
			silent += err[0] == '\0';
			type_set += r.type != EV_NONE;
		}
		uint8_t *longer = malloc(x->size + 37);
		memcpy(longer, x->payload, x->size);
		for (uint32_t k = 0; k < 37; k++)
			longer[x->size + k] = (uint8_t)(0x5A ^ (k * 29));
		struct nettrace_event ev = event_of(x->meta, longer, x->size + 37);
		ev.thread_id = x->thread_id;
		ev.timestamp = x->timestamp;
		memset(&r, 0, sizeof(r));
		CHECK_MSG(events_decode(&ev, 8, &r, err, sizeof(err)) == 1, "%s with junk appended: %s", x->file, err);
		CHECK_MSG(memcmp(&r, &full, sizeof(r)) == 0, "%s with junk appended decodes differently", x->file);
		free(longer);
	}
	CHECK(n_recs == 18);
	CHECK(tried > 1000);
	CHECK_MSG(bad == 0, "%u truncations accepted", bad);
	CHECK_MSG(silent == 0, "%u rejections without a reason", silent);
	CHECK(type_set == 0);
}

static void test_error_sentences(void)
{
	struct ev_record r;
	char err[256];
	const struct recorded *x = rec("gcheapstats-v2.bin");
	const struct recorded *t = rec("alloctick-v4-large.bin");
	const struct recorded *c = rec("counter-mean-cpu-usage.bin");

	CHECK(x && decode_copy(x->meta, x->payload, 60, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "GCHeapStats v2 payload is 60 bytes, needs at least 110");
	CHECK(t && decode_copy(t->meta, t->payload, 70, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "GCAllocationTick v4 payload is 70 bytes, needs at least 74 with its 28-byte type name");
	CHECK(decode_copy(t->meta, t->payload, 40, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "GCAllocationTick v4 payload is 40 bytes, needs at least 48");
	CHECK(decode_copy(t->meta, t->payload, 50, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err,
	          "GCAllocationTick v4 payload is 50 bytes and its type name (at offset 26) has no terminating NUL");
	CHECK(c && decode_copy(c->meta, c->payload, 30, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "EventCounters payload of System.Runtime is 30 bytes and ends inside string field "
	               "'DisplayName' (offset 20)");
	/* A NULL or zero-sized error buffer is allowed. */
	CHECK(decode_copy(x->meta, x->payload, 60, 8, &r, NULL, 0) == -EBADMSG);
	err[0] = 'x';
	CHECK(decode_copy(x->meta, x->payload, 60, 8, &r, err, 0) == -EBADMSG && err[0] == 'x');
	/* A long sentence is cut to the buffer. */
	CHECK(decode_copy(x->meta, x->payload, 60, 8, &r, err, 12) == -EBADMSG && strlen(err) == 11);
}

/* ---- other versions of the runtime events ---- */

static struct nettrace_metadata rt_meta(uint32_t id, uint32_t version)
{
	struct nettrace_metadata m;

	memset(&m, 0, sizeof(m));
	m.provider = RT;
	m.event_name = "";
	m.event_id = id;
	m.version = version;
	return m;
}

struct pb {
	uint8_t b[8192];
	uint32_t n;
};

static void put(struct pb *p, const void *v, size_t n)
{
	if (p->n + n <= sizeof(p->b)) {
		memcpy(p->b + p->n, v, n);
		p->n += (uint32_t)n;
	}
}

static void put16(struct pb *p, uint16_t v)
{
	put(p, &v, 2);
}

static void put32(struct pb *p, uint32_t v)
{
	put(p, &v, 4);
}

static void put64(struct pb *p, uint64_t v)
{
	put(p, &v, 8);
}

static void put_f64(struct pb *p, double v)
{
	put(p, &v, 8);
}

static void put_f32(struct pb *p, float v)
{
	put(p, &v, 4);
}

/* ASCII to UTF-16LE with its NUL. */
static void put_str(struct pb *p, const char *s)
{
	for (; *s; s++)
		put16(p, (uint8_t)*s);
	put16(p, 0);
}

/* Rejects every truncation below need, accepts need itself. */
static int truncations_rejected_below(const struct nettrace_metadata *m, const struct pb *p, uint32_t need, int ps)
{
	struct ev_record r;
	char err[256];

	for (uint32_t n = 0; n < need; n++)
		if (decode_copy(m, p->b, n, ps, &r, err, sizeof(err)) != -EBADMSG)
			return 0;
	return decode_copy(m, p->b, need, ps, &r, err, sizeof(err)) == 1;
}

static void test_versions(void)
{
	struct ev_record r;
	char err[256];
	struct nettrace_metadata m;
	struct pb p;
	const struct recorded *hs = rec("gcheapstats-v2.bin");
	const struct recorded *tick = rec("alloctick-v4-large.bin");

	/* GCHeapStats v1 (no POH): the first 94 bytes of the v2 layout. */
	m = rt_meta(4, 1);
	CHECK(hs && decode_copy(&m, hs->payload, 94, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.type == EV_GC_HEAP_STATS && r.u.heap_stats.size[3] == 60396688);
	CHECK(!r.u.heap_stats.has_poh && r.u.heap_stats.size[4] == 0 && r.u.heap_stats.promoted[4] == 0);
	CHECK(r.u.heap_stats.gc_handles == 66);
	CHECK(decode_copy(&m, hs->payload, 93, 8, &r, err, sizeof(err)) == -EBADMSG);
	CHECK_STR(err, "GCHeapStats v1 payload is 93 bytes, needs at least 94");
	/* v0 (no ClrInstanceID) and a future v3 (read as v2). */
	m = rt_meta(4, 0);
	CHECK(decode_copy(&m, hs->payload, 92, 8, &r, err, sizeof(err)) == 1 && r.u.heap_stats.size[3] == 60396688);
	CHECK(decode_copy(&m, hs->payload, 91, 8, &r, err, sizeof(err)) == -EBADMSG);
	m = rt_meta(4, 3);
	CHECK(decode_copy(&m, hs->payload, 110, 8, &r, err, sizeof(err)) == 1 && r.u.heap_stats.has_poh);
	CHECK(r.u.heap_stats.size[4] == 10008424);
	CHECK(decode_copy(&m, hs->payload, 109, 8, &r, err, sizeof(err)) == -EBADMSG);

	/* GCAllocationTick v2 and v3 are v4 without the trailing fields (v3
	 * added Address, v4 ObjectSize). The recorded v4 payload: 18 fixed
	 * bytes, TypeID, "System.Byte[]" (28 bytes), HeapIndex, Address,
	 * ObjectSize = 74. */
	m = rt_meta(10, 2);
	CHECK(tick && decode_copy(&m, tick->payload, 74 - 16, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.u.alloc.amount == 1000024 && r.u.alloc.kind == EV_ALLOC_LARGE && r.u.alloc.object_size == 0);
	CHECK_STR(r.u.alloc.type_name, "System.Byte[]");
	CHECK(decode_copy(&m, tick->payload, 74 - 17, 8, &r, err, sizeof(err)) == -EBADMSG);
	m = rt_meta(10, 3);
	CHECK(decode_copy(&m, tick->payload, 74 - 8, 8, &r, err, sizeof(err)) == 1 && r.u.alloc.object_size == 0);
	CHECK(decode_copy(&m, tick->payload, 74 - 9, 8, &r, err, sizeof(err)) == -EBADMSG);
	m = rt_meta(10, 5); /* a newer version appends: read as v4 */
	CHECK(decode_copy(&m, tick->payload, 74, 8, &r, err, sizeof(err)) == 1 && r.u.alloc.object_size == 1000032);

	/* v1 and v0: 32-bit amount, no type. */
	memset(&p, 0, sizeof(p));
	put32(&p, 104000);
	put32(&p, EV_ALLOC_LARGE);
	put16(&p, 7);
	m = rt_meta(10, 1);
	CHECK(truncations_rejected_below(&m, &p, 10, 8));
	CHECK(decode_copy(&m, p.b, p.n, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.u.alloc.amount == 104000 && r.u.alloc.kind == EV_ALLOC_LARGE && r.u.alloc.type_name[0] == '\0');
	m = rt_meta(10, 0);
	CHECK(truncations_rejected_below(&m, &p, 8, 8));

	/* v4 with 4-byte pointers, a non-ASCII name and a surrogate pair. */
	memset(&p, 0, sizeof(p));
	put32(&p, 100);
	put32(&p, EV_ALLOC_PINNED);
	put16(&p, 0);
	put64(&p, 5000000000ULL);
	put32(&p, 0xDEADBEEF); /* TypeID */
	put16(&p, 'T');
	put16(&p, 0x00E9); /* é */
	put16(&p, 0xD83D); /* U+1F600 */
	put16(&p, 0xDE00);
	put16(&p, 0xDC00); /* a lone low surrogate */
	put16(&p, 0);
	put32(&p, 3);          /* HeapIndex */
	put32(&p, 0x1000);     /* Address */
	put64(&p, 4000000000); /* ObjectSize */
	m = rt_meta(10, 4);
	CHECK(p.n == 18 + 4 + 12 + 4 + 4 + 8);
	CHECK(truncations_rejected_below(&m, &p, p.n, 4));
	CHECK(decode_copy(&m, p.b, p.n, 4, &r, err, sizeof(err)) == 1);
	CHECK(r.u.alloc.amount == 5000000000ULL && r.u.alloc.kind == EV_ALLOC_PINNED);
	CHECK(r.u.alloc.heap_index == 3 && r.u.alloc.object_size == 4000000000ULL);
	CHECK_STR(r.u.alloc.type_name, "T\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBD");
	/* A pointer size the trace cannot have. */
	CHECK(decode_copy(&m, p.b, p.n, 6, &r, err, sizeof(err)) == -EBADMSG);
	CHECK(strstr(err, "pointer size of 6") != NULL);
	CHECK(decode_copy(&m, p.b, p.n, 0, &r, err, sizeof(err)) == -EBADMSG);

	/* A type name longer than the record keeps a prefix cut on a character
	 * boundary: 100 x U+00E9 is 200 UTF-8 bytes; 63 fit in 127. */
	memset(&p, 0, sizeof(p));
	put32(&p, 1);
	put32(&p, 0);
	put16(&p, 0);
	put64(&p, 1);
	put64(&p, 0);
	for (int i = 0; i < 100; i++)
		put16(&p, 0x00E9);
	put16(&p, 0);
	put32(&p, 0);
	put64(&p, 0);
	put64(&p, 24);
	CHECK(decode_copy(&m, p.b, p.n, 8, &r, err, sizeof(err)) == 1);
	CHECK(strlen(r.u.alloc.type_name) == 126 && r.u.alloc.object_size == 24);

	/* GCStart v1 (no ClientSequenceNumber) and v0 (Count, Reason). */
	memset(&p, 0, sizeof(p));
	put32(&p, 9);
	put32(&p, 1);
	put32(&p, 1); /* Induced */
	put32(&p, EV_GC_FOREGROUND);
	put16(&p, 0);
	m = rt_meta(1, 1);
	CHECK(truncations_rejected_below(&m, &p, 18, 8));
	CHECK(decode_copy(&m, p.b, 18, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.u.gc_start.count == 9 && r.u.gc_start.depth == 1 && r.u.gc_start.reason == 1);
	CHECK(r.u.gc_start.type == EV_GC_FOREGROUND);
	m = rt_meta(1, 0);
	CHECK(truncations_rejected_below(&m, &p, 8, 8));
	CHECK(decode_copy(&m, p.b, 8, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.u.gc_start.count == 9 && r.u.gc_start.reason == 1 && r.u.gc_start.depth == 0);

	/* GCEnd v0: u32 Count, u16 Depth. */
	memset(&p, 0, sizeof(p));
	put32(&p, 12);
	put16(&p, 2);
	m = rt_meta(2, 0);
	CHECK(truncations_rejected_below(&m, &p, 6, 8));
	CHECK(decode_copy(&m, p.b, 6, 8, &r, err, sizeof(err)) == 1 && r.u.gc_end.count == 12 && r.u.gc_end.depth == 2);

	/* GCSuspendEEBegin v0: u16 Reason. GCRestartEEEnd v0: empty. */
	memset(&p, 0, sizeof(p));
	put16(&p, 6);
	m = rt_meta(9, 0);
	CHECK(truncations_rejected_below(&m, &p, 2, 8));
	CHECK(decode_copy(&m, p.b, 2, 8, &r, err, sizeof(err)) == 1 && r.u.suspend.reason == 6);
	m = rt_meta(3, 0);
	CHECK(decode_copy(&m, p.b, 0, 8, &r, err, sizeof(err)) == 1 && r.type == EV_GC_RESTART_EE_END);

	/* AppDomainMemAllocated / AppDomainMemSurvived: never sent by .NET 5+
	 * on Linux, so hand-made from ClrEtwAll.man. */
	memset(&p, 0, sizeof(p));
	put64(&p, 1);
	put64(&p, 123456789);
	put16(&p, 0);
	m = rt_meta(83, 0);
	CHECK(truncations_rejected_below(&m, &p, 18, 8));
	CHECK(decode_copy(&m, p.b, 18, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.type == EV_APPDOMAIN_MEM_ALLOCATED && r.u.appdomain.appdomain_id == 1 &&
	      r.u.appdomain.bytes == 123456789 && r.u.appdomain.process_survived == 0);
	memset(&p, 0, sizeof(p));
	put64(&p, 1);
	put64(&p, 5000);
	put64(&p, 9000);
	put16(&p, 0);
	m = rt_meta(84, 0);
	CHECK(truncations_rejected_below(&m, &p, 26, 8));
	CHECK(decode_copy(&m, p.b, 26, 8, &r, err, sizeof(err)) == 1);
	CHECK(r.type == EV_APPDOMAIN_MEM_SURVIVED && r.u.appdomain.bytes == 5000 &&
	      r.u.appdomain.process_survived == 9000);
}

/* ---- events that are not decoded ---- */

static void test_not_decoded(void)
{
	struct ev_record r;
	char err[256];
	struct nettrace_metadata m;
	struct nettrace_event ev;
	const struct recorded *hs = rec("gcheapstats-v2.bin");
	const struct recorded *cpu = rec("counter-mean-cpu-usage.bin");
	static const uint32_t other_ids[] = {0, 5, 6, 11, 13, 14, 29, 33, 39, 85, 200, 202, 204, 205, 65535};

	/* Runtime events the recording has but dumpwatch does not use
	 * (GCCreateSegment, GCFinalizers*, GCHeapStats' neighbours ...). */
	for (size_t i = 0; i < sizeof(other_ids) / sizeof(other_ids[0]); i++) {
		m = rt_meta(other_ids[i], 1);
		err[0] = 'x';
		CHECK(hs && decode_copy(&m, hs->payload, hs->size, 8, &r, err, sizeof(err)) == 0);
		CHECK(r.type == EV_NONE && err[0] == '\0');
	}
	/* GC ids of another provider, or of a differently spelled one. */
	m = rt_meta(4, 2);
	m.provider = "Microsoft-Windows-DotNETRuntimeRundown";
	CHECK(decode_copy(&m, hs->payload, hs->size, 8, &r, err, sizeof(err)) == 0 && r.type == EV_NONE);
	m.provider = "Microsoft-DotNETCore-EventPipe";
	CHECK(decode_copy(&m, hs->payload, 3, 8, &r, err, sizeof(err)) == 0 && r.type == EV_NONE);
	m.provider = "";
	CHECK(decode_copy(&m, hs->payload, hs->size, 8, &r, err, sizeof(err)) == 0);
	m.provider = NULL;
	CHECK(decode_copy(&m, hs->payload, hs->size, 8, &r, err, sizeof(err)) == 0);

	/* A self-describing event of System.Runtime that is not EventCounters,
	 * and names that only look like it. */
	m = *cpu->meta;
	m.event_name = "ProcessInfo";
	CHECK(decode_copy(&m, cpu->payload, cpu->size, 8, &r, err, sizeof(err)) == 0);
	m.event_name = "EventCounters2";
	CHECK(decode_copy(&m, cpu->payload, cpu->size, 8, &r, err, sizeof(err)) == 0);
	m.event_name = "eventcounters";
	CHECK(decode_copy(&m, cpu->payload, cpu->size, 8, &r, err, sizeof(err)) == 0);
	m.event_name = NULL;
	CHECK(decode_copy(&m, cpu->payload, cpu->size, 8, &r, err, sizeof(err)) == 0);

	/* Even an event that is not decoded gets its time and thread. */
	m = rt_meta(85, 0);
	ev = event_of(&m, hs->payload, 30);
	ev.thread_id = 77;
	ev.timestamp = -5;
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == 0);
	CHECK(r.type == EV_NONE && r.thread_id == 77 && r.timestamp == -5);
	/* No metadata, no payload pointer. */
	ev.meta = NULL;
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == 0 && r.type == EV_NONE);
	m = rt_meta(3, 0);
	ev = event_of(&m, NULL, 0);
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == 1 && r.type == EV_GC_RESTART_EE_END);
	m = rt_meta(4, 2);
	ev = event_of(&m, NULL, 110);
	CHECK(events_decode(&ev, 8, &r, err, sizeof(err)) == -EBADMSG);
}

/* ---- EventCounters with hand-made metadata ---- */

static int decode_counter_fields(const char *provider, struct nettrace_field *fields, uint32_t n, const struct pb *p,
                                 struct ev_record *r, char *err)
{
	struct nettrace_metadata m;

	memset(&m, 0, sizeof(m));
	m.provider = (char *)provider;
	m.event_name = "EventCounters";
	m.event_id = 7;
	m.fields = fields;
	m.n_fields = n;
	return decode_copy(&m, p->b, p->n, 8, r, err, 256);
}

#define N(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

static void test_counter_shapes(void)
{
	struct ev_record r;
	char err[256];
	struct pb p;

	/* Another provider's incrementing counter, fields in another order,
	 * wrapped as the runtime does ({} -> Payload {}). */
	struct nettrace_field f1[] = {
	    {NT_TC_STRING, 0, "DisplayUnits", 0, NULL},         {NT_TC_STRING, 0, "CounterType", 0, NULL},
	    {NT_TC_SINGLE, 0, "IntervalSec", 0, NULL},          {NT_TC_DOUBLE, 0, "Increment", 0, NULL},
	    {NT_TC_STRING, 0, "DisplayName", 0, NULL},          {NT_TC_STRING, 0, "Name", 0, NULL},
	    {NT_TC_STRING, 0, "DisplayRateTimeScale", 0, NULL},
	};
	struct nettrace_field f1p[] = {{NT_TC_OBJECT, 0, "Payload", N(f1), f1}};
	struct nettrace_field f1o[] = {{NT_TC_OBJECT, 0, "", 1, f1p}};
	memset(&p, 0, sizeof(p));
	put_str(&p, "");
	put_str(&p, "Sum");
	put_f32(&p, 5.0f);
	put_f64(&p, 1234.5);
	put_str(&p, "Request Rate");
	put_str(&p, "requests-per-second");
	put_str(&p, "00:00:01");
	CHECK(decode_counter_fields("Microsoft.AspNetCore.Hosting", f1o, 1, &p, &r, err) == 1);
	CHECK(r.type == EV_COUNTER);
	CHECK_STR(r.u.counter.provider, "Microsoft.AspNetCore.Hosting");
	CHECK_STR(r.u.counter.name, "requests-per-second");
	CHECK_STR(r.u.counter.display_units, "");
	CHECK(r.u.counter.is_increment && r.u.counter.value == 1234.5 && r.u.counter.interval_sec == 5.0);
	/* The whole payload is walked: any truncation is rejected, even after
	 * the counter's own fields. */
	CHECK(truncations_rejected_below(
	    &(struct nettrace_metadata){.provider = "P", .event_name = "EventCounters", .fields = f1o, .n_fields = 1},
	    &p, p.n, 8));
	/* The outer object named "Payload" too (Payload wrapping Payload). */
	f1o[0].name = "Payload";
	CHECK(decode_counter_fields("P", f1o, 1, &p, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "requests-per-second");
	CHECK(r.u.counter.value == 1234.5);
	f1o[0].name = "";

	/* Fewer fields, as older runtimes send: no CounterType, no units, no
	 * interval. A Mean makes a mean counter ... */
	struct nettrace_field f2[] = {{NT_TC_STRING, 0, "Name", 0, NULL}, {NT_TC_DOUBLE, 0, "Mean", 0, NULL}};
	struct nettrace_field f2p[] = {{NT_TC_OBJECT, 0, "Payload", N(f2), f2}};
	memset(&p, 0, sizeof(p));
	put_str(&p, "working-set");
	put_f64(&p, 57.5);
	CHECK(decode_counter_fields("System.Runtime", f2p, 1, &p, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "working-set");
	CHECK(!r.u.counter.is_increment && r.u.counter.value == 57.5 && r.u.counter.interval_sec == 0);
	CHECK_STR(r.u.counter.display_units, "");
	/* ... an Increment an incrementing one. */
	f2[1].name = "Increment";
	CHECK(decode_counter_fields("System.Runtime", f2p, 1, &p, &r, err) == 1);
	CHECK(r.u.counter.is_increment && r.u.counter.value == 57.5);
	/* Numbers of other types are taken too (an I32 Mean). */
	struct nettrace_field f3[] = {{NT_TC_INT32, 0, "Mean", 0, NULL}, {NT_TC_STRING, 0, "Name", 0, NULL}};
	struct nettrace_field f3p[] = {{NT_TC_OBJECT, 0, "Payload", N(f3), f3}};
	memset(&p, 0, sizeof(p));
	put32(&p, (uint32_t)-3);
	put_str(&p, "x");
	CHECK(decode_counter_fields("P", f3p, 1, &p, &r, err) == 1 && r.u.counter.value == -3);
	/* CounterType Sum without an Increment falls back to the Mean. */
	struct nettrace_field f4[] = {{NT_TC_STRING, 0, "Name", 0, NULL},
	                              {NT_TC_DOUBLE, 0, "Mean", 0, NULL},
	                              {NT_TC_STRING, 0, "CounterType", 0, NULL}};
	struct nettrace_field f4p[] = {{NT_TC_OBJECT, 0, "Payload", N(f4), f4}};
	memset(&p, 0, sizeof(p));
	put_str(&p, "x");
	put_f64(&p, 2.5);
	put_str(&p, "Sum");
	CHECK(decode_counter_fields("P", f4p, 1, &p, &r, err) == 1 && !r.u.counter.is_increment &&
	      r.u.counter.value == 2.5);

	/* No Payload object at all: the top-level fields are the counter's. */
	memset(&p, 0, sizeof(p));
	put_str(&p, "flat");
	put_f64(&p, 8);
	f2[1].name = "Mean";
	CHECK(decode_counter_fields("P", f2, N(f2), &p, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "flat");
	CHECK(r.u.counter.value == 8);

	/* No Name, an empty Name, no value: rejected with a reason. */
	struct nettrace_field f5[] = {{NT_TC_DOUBLE, 0, "Mean", 0, NULL}};
	struct nettrace_field f5p[] = {{NT_TC_OBJECT, 0, "Payload", N(f5), f5}};
	memset(&p, 0, sizeof(p));
	put_f64(&p, 1);
	CHECK(decode_counter_fields("P", f5p, 1, &p, &r, err) == -EBADMSG);
	CHECK_STR(err, "EventCounters event of P has no counter Name");
	CHECK(r.type == EV_NONE);
	memset(&p, 0, sizeof(p));
	put_str(&p, "");
	put_f64(&p, 1);
	CHECK(decode_counter_fields("P", f2p, 1, &p, &r, err) == -EBADMSG);
	memset(&p, 0, sizeof(p));
	put_str(&p, "lonely");
	CHECK(decode_counter_fields("P", f2p + 0, 1, &p, &r, err) == -EBADMSG); /* Name present, Mean missing */
	struct nettrace_field f6[] = {{NT_TC_STRING, 0, "Name", 0, NULL}};
	struct nettrace_field f6p[] = {{NT_TC_OBJECT, 0, "Payload", N(f6), f6}};
	CHECK(decode_counter_fields("P", f6p, 1, &p, &r, err) == -EBADMSG);
	CHECK_STR(err, "EventCounters event of P for counter 'lonely' has neither Mean nor Increment");
	/* Metadata with no fields at all. */
	memset(&p, 0, sizeof(p));
	CHECK(decode_counter_fields("P", NULL, 0, &p, &r, err) == -EBADMSG);
}

/* Strings, arrays of every kind and decoy objects before the Payload: all
 * walked over, none taken as the counter's. */
static void test_counter_decoys(void)
{
	struct ev_record r;
	char err[256];
	struct pb p;

	struct nettrace_field decoy_item[] = {{NT_TC_STRING, 0, "Name", 0, NULL}, {NT_TC_DOUBLE, 0, "Mean", 0, NULL}};
	struct nettrace_field decoy_obj[] = {{NT_TC_STRING, 0, "Name", 0, NULL},
	                                     {NT_TC_DOUBLE, 0, "Mean", 0, NULL},
	                                     {NT_TC_ARRAY, NT_TC_UINT16, "Inner", 0, NULL}};
	struct nettrace_field counter[] = {
	    {NT_TC_STRING, 0, "Name", 0, NULL},
	    {NT_TC_ARRAY, NT_TC_OBJECT, "Payload", N(decoy_item), decoy_item}, /* an array named Payload */
	    {NT_TC_DOUBLE, 0, "Mean", 0, NULL},
	    {NT_TC_STRING, 0, "DisplayUnits", 0, NULL},
	};
	struct nettrace_field payload[] = {{NT_TC_OBJECT, 0, "Payload", N(counter), counter}};
	struct nettrace_field top[] = {
	    {NT_TC_STRING, 0, "Name", 0, NULL}, /* a top-level Name: ignored, a Payload exists */
	    {NT_TC_BOOL, 0, "b", 0, NULL},
	    {NT_TC_CHAR, 0, "c", 0, NULL},
	    {NT_TC_SBYTE, 0, "sb", 0, NULL},
	    {NT_TC_BYTE, 0, "by", 0, NULL},
	    {NT_TC_INT16, 0, "i16", 0, NULL},
	    {NT_TC_UINT16, 0, "u16", 0, NULL},
	    {NT_TC_UINT32, 0, "u32", 0, NULL},
	    {NT_TC_INT64, 0, "i64", 0, NULL},
	    {NT_TC_UINT64, 0, "u64", 0, NULL},
	    {NT_TC_DECIMAL, 0, "dec", 0, NULL},
	    {NT_TC_DATETIME, 0, "dt", 0, NULL},
	    {NT_TC_GUID, 0, "g", 0, NULL},
	    {NT_TC_ARRAY, NT_TC_STRING, "strs", 0, NULL},
	    {NT_TC_ARRAY, NT_TC_GUID, "guids", 0, NULL},
	    {NT_TC_ARRAY, NT_TC_OBJECT, "objs", N(decoy_obj), decoy_obj},
	    {NT_TC_OBJECT, 0, "Other", N(decoy_obj), decoy_obj},
	    {NT_TC_OBJECT, 0, "", N(payload), payload},
	    {NT_TC_DOUBLE, 0, "Mean", 0, NULL}, /* after the Payload: ignored too */
	};

	memset(&p, 0, sizeof(p));
	put_str(&p, "top-name");
	put32(&p, 1);
	put16(&p, 'c');
	put(&p, "\x01", 1);
	put(&p, "\x02", 1);
	put16(&p, 3);
	put16(&p, 4);
	put32(&p, 5);
	put64(&p, 6);
	put64(&p, 7);
	put(&p, "0123456789abcdef", 16);
	put64(&p, 8);
	put(&p, "fedcba9876543210", 16);
	put16(&p, 2); /* strs */
	put_str(&p, "one");
	put_str(&p, "two");
	put16(&p, 1); /* guids */
	put(&p, "GGGGGGGGGGGGGGGG", 16);
	put16(&p, 2); /* objs: {Name, Mean, Inner[]} x 2 */
	put_str(&p, "array-name");
	put_f64(&p, 111);
	put16(&p, 3);
	put16(&p, 1);
	put16(&p, 2);
	put16(&p, 3);
	put_str(&p, "array-name-2");
	put_f64(&p, 112);
	put16(&p, 0);
	put_str(&p, "other-name"); /* Other */
	put_f64(&p, 113);
	put16(&p, 0);
	put_str(&p, "the-counter"); /* Payload.Name */
	put16(&p, 1);               /* Payload.Payload[] */
	put_str(&p, "nested-name");
	put_f64(&p, 114);
	put_f64(&p, 42.25); /* Payload.Mean */
	put_str(&p, "widgets");
	put_f64(&p, 115); /* top-level Mean */
	CHECK(decode_counter_fields("Decoys", top, N(top), &p, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "the-counter");
	CHECK(r.u.counter.value == 42.25);
	CHECK_STR(r.u.counter.display_units, "widgets");
	CHECK(truncations_rejected_below(
	    &(struct nettrace_metadata){
	        .provider = "P", .event_name = "EventCounters", .fields = top, .n_fields = N(top)},
	    &p, p.n, 8));

	/* Two Payload objects: the first one's fields win. */
	struct nettrace_field second[] = {{NT_TC_OBJECT, 0, "", N(payload), payload},
	                                  {NT_TC_OBJECT, 0, "", N(payload), payload}};
	struct pb q;
	memset(&q, 0, sizeof(q));
	for (int i = 0; i < 2; i++) {
		put_str(&q, i ? "second" : "first");
		put16(&q, 0);
		put_f64(&q, i ? 2 : 1);
		put_str(&q, "u");
	}
	CHECK(decode_counter_fields("P", second, 2, &q, &r, err) == 1);
	CHECK_STR(r.u.counter.name, "first");
	CHECK(r.u.counter.value == 1);

	/* Long and non-ASCII strings are cut to the record on a character
	 * boundary; the walk goes on past them. */
	struct nettrace_field lf[] = {{NT_TC_STRING, 0, "Name", 0, NULL},
	                              {NT_TC_STRING, 0, "DisplayUnits", 0, NULL},
	                              {NT_TC_DOUBLE, 0, "Mean", 0, NULL}};
	struct nettrace_field lfp[] = {{NT_TC_OBJECT, 0, "Payload", N(lf), lf}};
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 300; i++)
		put16(&p, 'n');
	put16(&p, 0);
	for (int i = 0; i < 20; i++)
		put16(&p, 0x20AC); /* € : 3 UTF-8 bytes, 10 fit in 31 */
	put16(&p, 0);
	put_f64(&p, 3);
	CHECK(decode_counter_fields("P", lfp, 1, &p, &r, err) == 1);
	CHECK(strlen(r.u.counter.name) == EV_NAME_MAX - 1);
	CHECK(strlen(r.u.counter.display_units) == 30);
	CHECK(r.u.counter.value == 3);
	/* A provider name longer than the record is cut too. */
	char longprov[400];
	memset(longprov, 'p', sizeof(longprov) - 1);
	longprov[sizeof(longprov) - 1] = '\0';
	CHECK(decode_counter_fields(longprov, lfp, 1, &p, &r, err) == 1);
	CHECK(strlen(r.u.counter.provider) == EV_NAME_MAX - 1);
}

/* Metadata no counter has, made to cost time, stack or memory: bounded. */
static void test_counter_hostile(void)
{
	struct ev_record r;
	char err[256];
	struct pb p;
	clock_t t0 = clock();

	/* Unknown type codes, arrays of arrays, arrays of unknown items. */
	static const uint32_t bad_types[] = {0, 2, 20, 255, 0xFFFFFFFF};
	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		struct nettrace_field f[] = {{bad_types[i], 0, "x", 0, NULL}, {NT_TC_STRING, 0, "Name", 0, NULL}};
		memset(&p, 0, sizeof(p));
		put(&p, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
		CHECK(decode_counter_fields("P", f, 2, &p, &r, err) == -EBADMSG);
		CHECK(strstr(err, "unknown type code") != NULL);
		struct nettrace_field a[] = {{NT_TC_ARRAY, bad_types[i], "arr", 0, NULL}};
		CHECK(decode_counter_fields("P", a, 1, &p, &r, err) == -EBADMSG);
	}
	struct nettrace_field inner_arr[] = {{NT_TC_ARRAY, NT_TC_INT32, "in", 0, NULL}};
	struct nettrace_field aa[] = {{NT_TC_ARRAY, NT_TC_ARRAY, "outer", 1, inner_arr}};
	memset(&p, 0, sizeof(p));
	put16(&p, 1);
	put16(&p, 0);
	CHECK(decode_counter_fields("P", aa, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "item type 19") != NULL);

	/* An Object with a huge child count: a million empty objects cost a
	 * million visits, then the walk gives up. */
	uint32_t huge = 3000000;
	struct nettrace_field *kids = calloc(huge, sizeof(*kids));
	for (uint32_t i = 0; i < huge; i++) {
		kids[i].type = NT_TC_OBJECT;
		kids[i].name = "";
	}
	struct nettrace_field big[] = {{NT_TC_OBJECT, 0, "Payload", huge, kids}};
	memset(&p, 0, sizeof(p));
	CHECK(decode_counter_fields("P", big, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "field reads") != NULL);
	/* The same count of byte fields over a short payload: ends at once. */
	for (uint32_t i = 0; i < huge; i++)
		kids[i].type = NT_TC_BYTE;
	put(&p, "abc", 3);
	CHECK(decode_counter_fields("P", big, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "ends inside field") != NULL);
	free(kids);

	/* 4000 arrays of 65535 empty objects each (a billion visits if walked
	 * naively) in 8000 bytes of payload. */
	struct nettrace_field empty_items[1];
	struct nettrace_field *arrs = calloc(4000, sizeof(*arrs));
	for (int i = 0; i < 4000; i++) {
		arrs[i].type = NT_TC_ARRAY;
		arrs[i].elem_type = NT_TC_OBJECT;
		arrs[i].name = "a";
		arrs[i].n_children = 0;
		arrs[i].children = empty_items;
	}
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 4000; i++)
		put16(&p, 65535);
	CHECK(decode_counter_fields("P", arrs, 4000, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "field reads") != NULL);
	free(arrs);

	/* An array of 65535 Int64 items claims 512 KiB the payload does not
	 * have. */
	struct nettrace_field la[] = {{NT_TC_ARRAY, NT_TC_INT64, "big", 0, NULL}};
	memset(&p, 0, sizeof(p));
	put16(&p, 65535);
	put64(&p, 1);
	CHECK(decode_counter_fields("P", la, 1, &p, &r, err) == -EBADMSG);

	/* Objects nested 100000 deep (a chain): stops at the depth limit, no
	 * stack overflow. */
	uint32_t depth = 100000;
	struct nettrace_field *chain = calloc(depth, sizeof(*chain));
	for (uint32_t i = 0; i < depth; i++) {
		chain[i].type = NT_TC_OBJECT;
		chain[i].name = "Payload";
		chain[i].n_children = i + 1 < depth ? 1 : 0;
		chain[i].children = i + 1 < depth ? &chain[i + 1] : NULL;
	}
	memset(&p, 0, sizeof(p));
	CHECK(decode_counter_fields("P", chain, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "deeper than") != NULL);
	/* A cycle (a broken parser's tree) is caught the same way. */
	chain[1].children = &chain[0];
	CHECK(decode_counter_fields("P", chain, 1, &p, &r, err) == -EBADMSG);
	/* Arrays of objects nest too. */
	for (uint32_t i = 0; i < 1000; i++) {
		chain[i].type = NT_TC_ARRAY;
		chain[i].elem_type = NT_TC_OBJECT;
		chain[i].n_children = 1;
		chain[i].children = &chain[i + 1];
	}
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 1000; i++)
		put16(&p, 1);
	CHECK(decode_counter_fields("P", chain, 1, &p, &r, err) == -EBADMSG);
	CHECK(strstr(err, "deeper than") != NULL);
	free(chain);

	/* A NULL children pointer with a count is read as no children. */
	struct nettrace_field nc[] = {{NT_TC_OBJECT, 0, "Payload", 99, NULL}, {NT_TC_STRING, 0, NULL, 0, NULL}};
	memset(&p, 0, sizeof(p));
	put_str(&p, "x");
	CHECK(decode_counter_fields("P", nc, 2, &p, &r, err) == -EBADMSG); /* no Name anywhere */

	double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	CHECK_MSG(secs < 20, "hostile metadata took %.1f s", secs); /* generous: ASan, shared machines */
}

/* ---- seeded random mutations ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static int record_sane(const struct ev_record *r)
{
	if (r->type == EV_COUNTER)
		return memchr(r->u.counter.name, 0, sizeof(r->u.counter.name)) &&
		       memchr(r->u.counter.provider, 0, sizeof(r->u.counter.provider)) &&
		       memchr(r->u.counter.display_units, 0, sizeof(r->u.counter.display_units)) &&
		       r->u.counter.name[0] != '\0';
	if (r->type == EV_GC_ALLOC_TICK)
		return memchr(r->u.alloc.type_name, 0, sizeof(r->u.alloc.type_name)) != NULL;
	return 1;
}

static void mutate_fields(struct nettrace_field *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (rnd() % 8 == 0)
			f[i].type = rnd() % 4 ? 1 + rnd() % 19 : rnd();
		if (rnd() % 8 == 0)
			f[i].elem_type = rnd() % 4 ? 1 + rnd() % 19 : rnd();
		if (f[i].children)
			mutate_fields(f[i].children, f[i].n_children);
	}
}

static struct nettrace_field *copy_fields(const struct nettrace_field *f, uint32_t n)
{
	struct nettrace_field *c;

	if (!f || !n)
		return NULL;
	c = calloc(n, sizeof(*c));
	for (uint32_t i = 0; i < n; i++) {
		c[i] = f[i];
		c[i].name = strdup(f[i].name);
		c[i].children = copy_fields(f[i].children, f[i].n_children);
	}
	return c;
}

static void test_mutations(void)
{
	unsigned rounds = 20000, decoded = 0, rejected = 0, ignored = 0, odd = 0, insane = 0, silent = 0;

	for (unsigned round = 0; round < rounds; round++) {
		const struct recorded *x = &recs[rnd() % n_recs];
		uint32_t n = x->size + (rnd() % 4 == 0 ? rnd() % 64 : 0);
		uint8_t *b = malloc(n);
		struct nettrace_metadata m = *x->meta;
		struct ev_record r;
		char err[256];
		int rc, ps = rnd() % 16 ? 8 : 4;

		memcpy(b, x->payload, x->size);
		for (uint32_t i = x->size; i < n; i++)
			b[i] = (uint8_t)rnd();
		for (uint32_t k = 0, flips = 1 + rnd() % 6; k < flips && n; k++) {
			uint32_t at = rnd() % n;
			switch (rnd() % 4) {
			case 0:
				b[at] = (uint8_t)rnd();
				break;
			case 1:
				b[at] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 2:
				b[at] = 0;
				break;
			default:
				b[at] = 0xFF;
				break;
			}
		}
		if (rnd() % 3 == 0)
			n = rnd() % (n + 1); /* b stays n bytes long for ASan: re-copy */
		uint8_t *exact = malloc(n ? n : 1);
		memcpy(exact, b, n);
		free(b);
		if (rnd() % 5 == 0)
			m.version = rnd() % 7;
		if (m.n_fields && rnd() % 4 == 0) {
			m.fields = copy_fields(x->meta->fields, x->meta->n_fields);
			mutate_fields(m.fields, m.n_fields);
		}
		struct nettrace_event ev = event_of(&m, exact, n);
		rc = events_decode(&ev, ps, &r, err, sizeof(err));
		if (rc == 1) {
			decoded++;
			insane += !record_sane(&r);
		} else if (rc == -EBADMSG) {
			rejected++;
			silent += err[0] == '\0';
			insane += r.type != EV_NONE;
		} else if (rc == 0) {
			ignored++;
		} else {
			odd++;
		}
		if (m.fields != x->meta->fields)
			free_fields(m.fields, m.n_fields);
		free(exact);
	}
	printf("mutations: %u decoded, %u rejected, %u ignored\n", decoded, rejected, ignored);
	CHECK(odd == 0);
	CHECK(insane == 0);
	CHECK(silent == 0);
	CHECK(ignored == 0); /* every mutated event is still one we decode */
	CHECK(decoded > rounds / 10 && rejected > rounds / 10);
}

static void test_type_names(void)
{
	CHECK_STR(events_type_name(EV_NONE), "none");
	CHECK_STR(events_type_name(EV_COUNTER), "EventCounters");
	CHECK_STR(events_type_name(EV_GC_START), "GCStart");
	CHECK_STR(events_type_name(EV_GC_END), "GCEnd");
	CHECK_STR(events_type_name(EV_GC_RESTART_EE_END), "GCRestartEEEnd");
	CHECK_STR(events_type_name(EV_GC_HEAP_STATS), "GCHeapStats");
	CHECK_STR(events_type_name(EV_GC_RESTART_EE_BEGIN), "GCRestartEEBegin");
	CHECK_STR(events_type_name(EV_GC_SUSPEND_EE_END), "GCSuspendEEEnd");
	CHECK_STR(events_type_name(EV_GC_SUSPEND_EE_BEGIN), "GCSuspendEEBegin");
	CHECK_STR(events_type_name(EV_GC_ALLOC_TICK), "GCAllocationTick");
	CHECK_STR(events_type_name(EV_GC_TRIGGERED), "GCTriggered");
	CHECK_STR(events_type_name(EV_APPDOMAIN_MEM_ALLOCATED), "AppDomainMemAllocated");
	CHECK_STR(events_type_name(EV_APPDOMAIN_MEM_SURVIVED), "AppDomainMemSurvived");
	CHECK_STR(events_type_name((enum ev_type)999), "unknown");
}

int main(void)
{
	int loaded = load_index();

	CHECK_MSG(loaded == 0, "cannot load %s/payloads/index.txt", DW_TEST_DATA);
	if (loaded == 0) {
		test_recorded_gc();
		test_recorded_alloc_ticks();
		test_recorded_counters();
		test_truncations_and_appends();
		test_error_sentences();
		test_versions();
		test_not_decoded();
		test_mutations();
	}
	test_counter_shapes();
	test_counter_decoys();
	test_counter_hostile();
	test_type_names();

	for (size_t i = 0; i < n_recs; i++) {
		free(recs[i].payload);
		if (recs[i].meta == &runtime_metas[i]) {
			free(runtime_metas[i].provider);
			free(runtime_metas[i].event_name);
		}
	}
	for (size_t i = 0; i < n_metas; i++) {
		free(metas[i].meta.provider);
		free(metas[i].meta.event_name);
		free_fields(metas[i].meta.fields, metas[i].meta.n_fields);
	}
	return check_done();
}
