/* Payload decoders: raw nettrace events in, typed ev_record out.
 *
 * Two kinds of events are decoded here (PROTOCOL.md sections 4 and 5):
 *  - the runtime's native GC and AppDomain events (provider
 *    Microsoft-Windows-DotNETRuntime). Their metadata is a stub (empty name,
 *    no fields), so the layout comes from the event id and version, as
 *    dotnet/runtime src/coreclr/vm/ClrEtwAll.man defines them;
 *  - EventCounters of any provider, which are self-describing: the payload is
 *    walked field by field as the event's metadata says, and the counter is
 *    picked out of it by field name.
 *
 * Everything here is pure and treats the payload as hostile: payloads are
 * unaligned (fields are copied out with memcpy), every read is checked
 * against the payload size, recursion and work are bounded. A payload longer
 * than the layout known here is fine (newer versions append fields); a
 * shorter one is -EBADMSG with a sentence naming the event. */
#include "dumpwatch/events.h"

#include "dumpwatch/le.h"
#include "dumpwatch/text.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walk limits for self-describing payloads. Real EventCounters payloads
 * nest 3 levels and visit 14 fields; these only stop hostile metadata. */
#define WALK_MAX_DEPTH 32
#define WALK_MAX_STEPS (1u << 20)

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/* ---- Runtime-native events (PROTOCOL.md section 5, ClrEtwAll.man) ---- */

enum {
	ID_GC_START = 1,
	ID_GC_END = 2,
	ID_GC_RESTART_EE_END = 3,
	ID_GC_HEAP_STATS = 4,
	ID_GC_RESTART_EE_BEGIN = 7,
	ID_GC_SUSPEND_EE_END = 8,
	ID_GC_SUSPEND_EE_BEGIN = 9,
	ID_GC_ALLOC_TICK = 10,
	ID_GC_TRIGGERED = 35,
	ID_APPDOMAIN_MEM_ALLOCATED = 83,
	ID_APPDOMAIN_MEM_SURVIVED = 84,
	ID_EXCEPTION_THROWN = 80,
};

/* Fixed-layout runtime events: the payload size each version needs. A
 * version newer than the table's last one is read with the last layout
 * (versions only append). min[v] for v = 0, 1, 2. */
struct rt_layout {
	uint32_t id;
	enum ev_type type;
	const char *name;
	uint32_t max_version;
	size_t min[3];
};

static const struct rt_layout rt_layouts[] = {
    /* v0 Count, Reason; v1 Count, Depth, Reason, Type, ClrInstanceID;
     * v2 + ClientSequenceNumber (u64). */
    {ID_GC_START, EV_GC_START, "GCStart", 2, {8, 18, 26}},
    /* v0 Count, Depth (u16); v1 Count, Depth (u32), ClrInstanceID. */
    {ID_GC_END, EV_GC_END, "GCEnd", 1, {6, 10, 0}},
    /* v0 empty; v1 ClrInstanceID. */
    {ID_GC_RESTART_EE_END, EV_GC_RESTART_EE_END, "GCRestartEEEnd", 1, {0, 2, 0}},
    /* v0 10 x u64 + 3 x u32; v1 + ClrInstanceID; v2 + GenerationSize4,
     * TotalPromotedSize4 (the pinned object heap, .NET 5+). */
    {ID_GC_HEAP_STATS, EV_GC_HEAP_STATS, "GCHeapStats", 2, {92, 94, 110}},
    {ID_GC_RESTART_EE_BEGIN, EV_GC_RESTART_EE_BEGIN, "GCRestartEEBegin", 1, {0, 2, 0}},
    {ID_GC_SUSPEND_EE_END, EV_GC_SUSPEND_EE_END, "GCSuspendEEEnd", 1, {0, 2, 0}},
    /* v0 Reason (u16); v1 Reason (u32), Count, ClrInstanceID. */
    {ID_GC_SUSPEND_EE_BEGIN, EV_GC_SUSPEND_EE_BEGIN, "GCSuspendEEBegin", 1, {2, 10, 0}},
    /* v0 Amount, Kind; v1 + ClrInstanceID. v2+ carry a type name: alloc_tick() checks those. */
    {ID_GC_ALLOC_TICK, EV_GC_ALLOC_TICK, "GCAllocationTick", 1, {8, 10, 0}},
    /* v0 Reason, ClrInstanceID. */
    {ID_GC_TRIGGERED, EV_GC_TRIGGERED, "GCTriggered", 0, {6, 0, 0}},
    /* v0 AppDomainID, Allocated, ClrInstanceID. */
    {ID_APPDOMAIN_MEM_ALLOCATED, EV_APPDOMAIN_MEM_ALLOCATED, "AppDomainMemAllocated", 0, {18, 0, 0}},
    /* v0 AppDomainID, Survived, ProcessSurvived, ClrInstanceID. */
    {ID_APPDOMAIN_MEM_SURVIVED, EV_APPDOMAIN_MEM_SURVIVED, "AppDomainMemSurvived", 0, {26, 0, 0}},
    /* v0 empty; v1 two strings first: exception_thrown() checks field by field. */
    {ID_EXCEPTION_THROWN, EV_EXCEPTION_THROWN, "ExceptionThrown", 1, {0, 0, 0}},
};

/* GCAllocationTick (ClrEtwAll.man templates GCAllocationTick_V1..V4):
 *   v0: u32 AllocationAmount, u32 AllocationKind
 *   v1: + u16 ClrInstanceID
 *   v2: + u64 AllocationAmount64, ptr TypeID, UTF-16 TypeName, u32 HeapIndex
 *   v3: + ptr Address
 *   v4: + u64 ObjectSize
 * .NET 10 emits v4 (a 13-character type name makes a 74-byte payload). */
static int alloc_tick(const uint8_t *p, size_t len, uint32_t version, int pointer_size, struct ev_alloc_tick *a,
                      char *err, size_t errlen)
{
	size_t off, s, need;
	uint32_t v = version > 4 ? 4 : version;

	if (v < 2) { /* the caller checked the fixed size */
		a->amount = le32_at(p);
		a->kind = le32_at(p + 4);
		return 1;
	}
	if (pointer_size != 4 && pointer_size != 8)
		return bad(err, errlen,
		           "GCAllocationTick v%u cannot be read: the trace declares a pointer size of %d bytes "
		           "(only 4 and 8 exist)",
		           version, pointer_size);
	/* Up to and including the shortest type name (just its NUL) and HeapIndex. */
	need = 18 + (size_t)pointer_size + 2 + 4 + (v >= 3 ? (size_t)pointer_size : 0) + (v >= 4 ? 8 : 0);
	if (len < need)
		return bad(err, errlen, "GCAllocationTick v%u payload is %zu bytes, needs at least %zu", version, len,
		           need);
	a->kind = le32_at(p + 4);
	a->amount = le64_at(p + 10); /* AllocationAmount64; the u32 at 0 is the same, capped */
	off = 18 + (size_t)pointer_size;
	s = text_utf16_read(p + off, len - off, a->type_name, sizeof(a->type_name));
	if (s == 0)
		return bad(err, errlen,
		           "GCAllocationTick v%u payload is %zu bytes and its type name (at offset %zu) has no "
		           "terminating NUL",
		           version, len, off);
	off += s;
	need = off + 4 + (v >= 3 ? (size_t)pointer_size : 0) + (v >= 4 ? 8 : 0);
	if (len < need)
		return bad(err, errlen,
		           "GCAllocationTick v%u payload is %zu bytes, needs at least %zu with its %zu-byte type name",
		           version, len, need, s);
	a->heap_index = le32_at(p + off);
	off += 4;
	if (v >= 3)
		off += (size_t)pointer_size; /* Address: not used */
	if (v >= 4)
		a->object_size = le64_at(p + off);
	return 1;
}

/* ExceptionThrown_V1 (ClrEtwAll.man template Exception; the runtime fires it
 * at the first pass of every managed throw, before any handler runs):
 *   UTF-16 ExceptionType, UTF-16 ExceptionMessage, ptr ExceptionEIPCodeThrow,
 *   u32 ExceptionHRESULT, u16 ExceptionFlags, u16 ClrInstanceID.
 * v0 carries nothing. The strings are the program's own: any length, any
 * characters; they are cut here, and escaped wherever they are shown. */
static int exception_thrown(const uint8_t *p, size_t len, uint32_t version, int pointer_size, struct ev_exception *x,
                            char *err, size_t errlen)
{
	size_t off = 0, s, units, utf8;

	if (version == 0)
		return 1;
	if (pointer_size != 4 && pointer_size != 8)
		return bad(err, errlen,
		           "ExceptionThrown v%u cannot be read: the trace declares a pointer size of %d bytes "
		           "(only 4 and 8 exist)",
		           version, pointer_size);
	for (int i = 0; i < 2; i++) {
		char *out = i == 0 ? x->type : x->message;
		size_t outlen = i == 0 ? sizeof(x->type) : sizeof(x->message);
		s = text_utf16_read(p + off, len - off, out, outlen);
		if (s == 0)
			return bad(err, errlen,
			           "ExceptionThrown v%u payload is %zu bytes and its %s (at offset %zu) has no "
			           "terminating NUL",
			           version, len, i == 0 ? "type name" : "message", off);
		if (text_utf16_scan(p + off, s, s / 2, &units, &utf8) == 0 && utf8 >= outlen)
			*(i == 0 ? &x->type_truncated : &x->message_truncated) = 1;
		off += s;
	}
	if (len - off < (size_t)pointer_size + 8)
		return bad(err, errlen,
		           "ExceptionThrown v%u payload is %zu bytes, needs at least %zu after its strings", version,
		           len, off + (size_t)pointer_size + 8);
	off += (size_t)pointer_size; /* EIPCodeThrow: not used */
	x->hresult = le32_at(p + off);
	x->flags = le16_at(p + off + 4);
	return 1;
}

static int decode_runtime(const struct nettrace_event *ev, const uint8_t *p, size_t len, int pointer_size,
                          struct ev_record *out, char *err, size_t errlen)
{
	const struct rt_layout *l = NULL;
	uint32_t version = ev->meta->version;
	size_t i, need;

	for (i = 0; i < sizeof(rt_layouts) / sizeof(rt_layouts[0]); i++)
		if (rt_layouts[i].id == ev->meta->event_id) {
			l = &rt_layouts[i];
			break;
		}
	if (!l)
		return 0;
	need = l->min[version > l->max_version ? l->max_version : version];
	if ((l->id == ID_GC_ALLOC_TICK && version >= 2) || l->id == ID_EXCEPTION_THROWN)
		need = 0; /* variable size: checked field by field */
	if (len < need)
		return bad(err, errlen, "%s v%u payload is %zu bytes, needs at least %zu", l->name, version, len, need);

	switch (l->id) {
	case ID_GC_START:
		out->u.gc_start.count = le32_at(p);
		if (version == 0) {
			out->u.gc_start.reason = le32_at(p + 4);
		} else {
			out->u.gc_start.depth = le32_at(p + 4);
			out->u.gc_start.reason = le32_at(p + 8);
			out->u.gc_start.type = le32_at(p + 12);
		}
		break;
	case ID_GC_END:
		out->u.gc_end.count = le32_at(p);
		out->u.gc_end.depth = version == 0 ? le16_at(p + 4) : le32_at(p + 4);
		break;
	case ID_GC_HEAP_STATS: {
		struct ev_gc_heap_stats *h = &out->u.heap_stats;
		for (i = 0; i < 4; i++) {
			h->size[i] = le64_at(p + 16 * i);
			h->promoted[i] = le64_at(p + 16 * i + 8);
		}
		h->finalization_promoted_size = le64_at(p + 64);
		h->finalization_promoted_count = le64_at(p + 72);
		h->pinned_objects = le32_at(p + 80);
		h->sink_blocks = le32_at(p + 84);
		h->gc_handles = le32_at(p + 88);
		/* 92: u16 ClrInstanceID (v1+) */
		if (version >= 2) {
			h->size[4] = le64_at(p + 94);
			h->promoted[4] = le64_at(p + 102);
			h->has_poh = 1;
		}
		break;
	}
	case ID_GC_SUSPEND_EE_BEGIN:
		if (version == 0) {
			out->u.suspend.reason = le16_at(p);
		} else {
			out->u.suspend.reason = le32_at(p);
			out->u.suspend.count = le32_at(p + 4);
		}
		break;
	case ID_GC_ALLOC_TICK: {
		int r = alloc_tick(p, len, version, pointer_size, &out->u.alloc, err, errlen);
		if (r < 0)
			return r;
		break;
	}
	case ID_GC_TRIGGERED:
		out->u.triggered_reason = le32_at(p);
		break;
	case ID_EXCEPTION_THROWN: {
		memset(&out->u.exception, 0, sizeof(out->u.exception));
		int r = exception_thrown(p, len, version, pointer_size, &out->u.exception, err, errlen);
		if (r < 0)
			return r;
		break;
	}
	case ID_APPDOMAIN_MEM_ALLOCATED:
		out->u.appdomain.appdomain_id = le64_at(p);
		out->u.appdomain.bytes = le64_at(p + 8);
		break;
	case ID_APPDOMAIN_MEM_SURVIVED:
		out->u.appdomain.appdomain_id = le64_at(p);
		out->u.appdomain.bytes = le64_at(p + 8);
		out->u.appdomain.process_survived = le64_at(p + 16);
		break;
	default: /* GCRestartEEEnd, GCRestartEEBegin, GCSuspendEEEnd: no data we use */
		break;
	}
	out->type = l->type;
	return 1;
}

/* ---- EventCounters (PROTOCOL.md section 4) ----
 *
 * The metadata is a tree of fields; the payload holds their values in
 * order, unpadded: fixed-size primitives, NUL-terminated UTF-16 strings,
 * arrays as a u16 count followed by the items, objects as their fields in
 * turn. The counter's fields are matched by name, so their order and absent
 * fields do not matter. They are the direct children of an Object named
 * "Payload" (the runtime wraps that in one more unnamed Object); only when
 * the metadata has no such object are top-level fields taken instead.
 * Nothing inside an array is taken, and the first occurrence of a name
 * wins. The whole payload is walked, so one that ends before its metadata
 * says is malformed even when the counter's fields came first. */

enum capture_level { CAP_NONE, CAP_TOP, CAP_PAYLOAD };

struct capture {
	char name[EV_NAME_MAX];
	char units[EV_UNITS_MAX];
	char counter_type[16];
	double mean, inc, interval;
	int have_name, have_units, have_type, have_mean, have_inc, have_interval;
};

struct walk {
	const uint8_t *p;
	size_t len, off;
	uint32_t steps;
	int saw_payload;
	const char *provider;
	char *err;
	size_t errlen;
	struct capture cap[3]; /* indexed by enum capture_level; CAP_NONE unused */
};

static size_t fixed_size(uint32_t type)
{
	switch (type) {
	case NT_TC_SBYTE:
	case NT_TC_BYTE:
		return 1;
	case NT_TC_CHAR:
	case NT_TC_INT16:
	case NT_TC_UINT16:
		return 2;
	case NT_TC_BOOL:
	case NT_TC_INT32:
	case NT_TC_UINT32:
	case NT_TC_SINGLE:
		return 4;
	case NT_TC_INT64:
	case NT_TC_UINT64:
	case NT_TC_DOUBLE:
	case NT_TC_DATETIME:
		return 8;
	case NT_TC_DECIMAL:
	case NT_TC_GUID:
		return 16;
	default:
		return 0;
	}
}

/* The value of a numeric field as a double; returns 0 when the type is not
 * a number (Bool, Char, Decimal, DateTime and Guid are not taken). */
static int number_at(const uint8_t *p, uint32_t type, double *ret)
{
	switch (type) {
	case NT_TC_SBYTE:
		*ret = (double)(int8_t)p[0];
		return 1;
	case NT_TC_BYTE:
		*ret = (double)p[0];
		return 1;
	case NT_TC_INT16:
		*ret = (double)(int16_t)le16_at(p);
		return 1;
	case NT_TC_UINT16:
		*ret = (double)le16_at(p);
		return 1;
	case NT_TC_INT32:
		*ret = (double)(int32_t)le32_at(p);
		return 1;
	case NT_TC_UINT32:
		*ret = (double)le32_at(p);
		return 1;
	case NT_TC_INT64:
		*ret = (double)(int64_t)le64_at(p);
		return 1;
	case NT_TC_UINT64:
		*ret = (double)le64_at(p);
		return 1;
	case NT_TC_SINGLE: {
		uint32_t u = le32_at(p);
		float f;
		memcpy(&f, &u, sizeof(f));
		*ret = (double)f;
		return 1;
	}
	case NT_TC_DOUBLE: {
		uint64_t u = le64_at(p);
		memcpy(ret, &u, sizeof(*ret));
		return 1;
	}
	default:
		return 0;
	}
}

static const char *fname(const struct nettrace_field *f)
{
	return f->name ? f->name : "";
}

static int walk_short(struct walk *w, const struct nettrace_field *f, const char *what)
{
	return bad(w->err, w->errlen, "EventCounters payload of %s is %zu bytes and ends inside %s '%s' (offset %zu)",
	           w->provider, w->len, what, fname(f), w->off);
}

/* A string field: consumed, and kept when it is one the counter needs. */
static int walk_string(struct walk *w, const struct nettrace_field *f, enum capture_level level)
{
	struct capture *c = &w->cap[level];
	const char *n = fname(f);
	char *dst = NULL;
	size_t dstsz = 0, s;
	int *have = NULL;

	if (level != CAP_NONE) {
		if (strcmp(n, "Name") == 0 && !c->have_name) {
			dst = c->name, dstsz = sizeof(c->name), have = &c->have_name;
		} else if (strcmp(n, "DisplayUnits") == 0 && !c->have_units) {
			dst = c->units, dstsz = sizeof(c->units), have = &c->have_units;
		} else if (strcmp(n, "CounterType") == 0 && !c->have_type) {
			dst = c->counter_type, dstsz = sizeof(c->counter_type), have = &c->have_type;
		}
	}
	s = text_utf16_read(w->p + w->off, w->len - w->off, dst, dstsz);
	if (s == 0)
		return walk_short(w, f, "string field");
	w->off += s;
	if (have)
		*have = 1;
	return 0;
}

static void capture_number(struct capture *c, const struct nettrace_field *f, uint32_t type, const uint8_t *p)
{
	const char *n = fname(f);
	double v;

	if (!number_at(p, type, &v))
		return;
	if (strcmp(n, "Mean") == 0 && !c->have_mean) {
		c->mean = v;
		c->have_mean = 1;
	} else if (strcmp(n, "Increment") == 0 && !c->have_inc) {
		c->inc = v;
		c->have_inc = 1;
	} else if (strcmp(n, "IntervalSec") == 0 && !c->have_interval) {
		c->interval = v;
		c->have_interval = 1;
	}
}

static int walk_fields(struct walk *w, const struct nettrace_field *fields, uint32_t n, int depth,
                       enum capture_level level, int in_array);

/* Consumes one value of type `type` described by field f (for arrays the
 * item type is f->elem_type, and items that are objects use f->children). */
static int walk_value(struct walk *w, const struct nettrace_field *f, uint32_t type, int depth,
                      enum capture_level level, int in_array)
{
	size_t sz;

	if (++w->steps > WALK_MAX_STEPS)
		return bad(w->err, w->errlen,
		           "EventCounters event of %s needs more than %u field reads; its metadata is not a counter's",
		           w->provider, WALK_MAX_STEPS);
	switch (type) {
	case NT_TC_OBJECT: {
		enum capture_level sub = CAP_NONE;
		if (depth >= WALK_MAX_DEPTH)
			return bad(w->err, w->errlen,
			           "EventCounters metadata of %s nests objects deeper than %d levels (at field '%s')",
			           w->provider, WALK_MAX_DEPTH, fname(f));
		if (!in_array && strcmp(fname(f), "Payload") == 0) {
			sub = CAP_PAYLOAD;
			w->saw_payload = 1;
		}
		return walk_fields(w, f->children, f->children ? f->n_children : 0, depth + 1, sub, in_array);
	}
	case NT_TC_STRING:
		return walk_string(w, f, in_array ? CAP_NONE : level);
	case NT_TC_ARRAY: {
		uint32_t count, i;
		if (w->len - w->off < 2)
			return walk_short(w, f, "the item count of array field");
		count = le16_at(w->p + w->off);
		w->off += 2;
		sz = fixed_size(f->elem_type);
		if (sz) {
			/* Arrays of fixed-size items are skipped in one step. */
			if ((w->len - w->off) / sz < count)
				return walk_short(w, f, "array field");
			w->off += sz * count;
			return 0;
		}
		if (f->elem_type != NT_TC_STRING && f->elem_type != NT_TC_OBJECT)
			return bad(
			    w->err, w->errlen,
			    "EventCounters metadata of %s gives array field '%s' item type %u, which cannot be read",
			    w->provider, fname(f), f->elem_type);
		for (i = 0; i < count; i++) {
			int r = walk_value(w, f, f->elem_type, depth, CAP_NONE, 1);
			if (r < 0)
				return r;
		}
		return 0;
	}
	default:
		sz = fixed_size(type);
		if (!sz)
			return bad(w->err, w->errlen,
			           "EventCounters metadata of %s gives field '%s' unknown type code %u", w->provider,
			           fname(f), type);
		if (w->len - w->off < sz)
			return walk_short(w, f, "field");
		if (level != CAP_NONE && !in_array)
			capture_number(&w->cap[level], f, type, w->p + w->off);
		w->off += sz;
		return 0;
	}
}

static int walk_fields(struct walk *w, const struct nettrace_field *fields, uint32_t n, int depth,
                       enum capture_level level, int in_array)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int r = walk_value(w, &fields[i], fields[i].type, depth, level, in_array);
		if (r < 0)
			return r;
	}
	return 0;
}

static int decode_counter(const struct nettrace_event *ev, const uint8_t *p, size_t len, struct ev_record *out,
                          char *err, size_t errlen)
{
	const struct nettrace_metadata *m = ev->meta;
	struct ev_counter *c = &out->u.counter;
	const struct capture *k;
	struct walk w;
	int r;

	memset(c, 0, sizeof(*c));
	memset(&w, 0, sizeof(w));
	w.p = p;
	w.len = len;
	w.provider = m->provider ? m->provider : "";
	w.err = err;
	w.errlen = errlen;
	r = walk_fields(&w, m->fields, m->fields ? m->n_fields : 0, 0, CAP_TOP, 0);
	if (r < 0)
		return r;
	k = &w.cap[w.saw_payload ? CAP_PAYLOAD : CAP_TOP];
	if (!k->have_name || k->name[0] == '\0')
		return bad(err, errlen, "EventCounters event of %s has no counter Name", w.provider);
	if (!k->have_mean && !k->have_inc)
		return bad(err, errlen, "EventCounters event of %s for counter '%s' has neither Mean nor Increment",
		           w.provider, k->name);
	snprintf(c->provider, sizeof(c->provider), "%s", w.provider);
	memcpy(c->name, k->name, sizeof(c->name));
	memcpy(c->display_units, k->units, sizeof(c->display_units));
	/* CounterType "Sum" means the Increment, anything else (or none, as on
	 * older runtimes) the Mean; when the field it names is absent, the
	 * other one is used. */
	if (k->have_type && strcmp(k->counter_type, "Sum") == 0)
		c->is_increment = k->have_inc;
	else
		c->is_increment = !k->have_mean;
	c->value = c->is_increment ? k->inc : k->mean;
	c->interval_sec = k->interval;
	out->type = EV_COUNTER;
	return 1;
}

/* ---- System.Diagnostics.Metrics (MetricsEventSource) ----
 *
 * Self-describing EventSource events whose fields are all top-level: UTF-16
 * strings, and for histograms an Int32 count and a Double sum. Fields are
 * taken by name, so their order does not matter; numbers written as text
 * are read as the invariant culture writes them. */

static const struct {
	const char *name;
	uint32_t id;
	enum ev_type type;
	enum ev_meter_kind kind;
} meter_events[] = {
    {"CounterRateValuePublished", 4, EV_METER_VALUE, EV_METER_COUNTER},
    {"GaugeValuePublished", 5, EV_METER_VALUE, EV_METER_GAUGE},
    {"HistogramValuePublished", 6, EV_METER_VALUE, EV_METER_HISTOGRAM},
    {"UpDownCounterRateValuePublished", 16, EV_METER_VALUE, EV_METER_UPDOWN},
    {"Error", 9, EV_METER_ERROR, 0},
    {"TimeSeriesLimitReached", 12, EV_METER_ERROR, 0},
    {"HistogramLimitReached", 13, EV_METER_ERROR, 0},
    {"ObservableInstrumentCallbackError", 14, EV_METER_ERROR, 0},
    {"MultipleSessionsNotSupportedError", 15, EV_METER_ERROR, 0},
    {"MultipleSessionsConfiguredIncorrectlyError", 17, EV_METER_ERROR, 0},
};

/* A number as .NET's invariant culture writes one ("12", "-0.5", "1E-05",
 * "NaN", "Infinity"): 1 with *out, 0 for anything else (an empty rate: no
 * previous value). Independent of the C locale. */
static int invariant_number(const char *s, double *out)
{
	char buf[64], *end;
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(buf))
		return 0;
	if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0 ||
	    strcmp(s, "\xe2\x88\x9e") == 0 || strcmp(s, "-\xe2\x88\x9e") == 0) {
		*out = s[0] == 'N' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789.eE+-", s[i]))
			return 0;
	memcpy(buf, s, n + 1);
	/* strtod follows LC_NUMERIC; the text has no other separator than '.'. */
	char *dot = strchr(buf, '.');
	struct lconv *lc = localeconv();
	if (dot && lc && lc->decimal_point && lc->decimal_point[0] && lc->decimal_point[0] != '.' &&
	    !lc->decimal_point[1])
		*dot = lc->decimal_point[0];
	errno = 0;
	*out = strtod(buf, &end);
	return end == buf + n && errno != ERANGE;
}

/* "0.5=1.2;0.95=3;0.99=4" (or with decimal commas) into the quantile
 * arrays; pairs that do not read are skipped. */
static void parse_quantiles(const char *s, struct ev_meter *m)
{
	char pair[128];

	while (*s && m->n_quantiles < EV_METER_QUANTILES) {
		size_t n = strcspn(s, ";");
		if (n < sizeof(pair)) {
			memcpy(pair, s, n);
			pair[n] = '\0';
			char *eq = strchr(pair, '=');
			double q, v;
			if (eq) {
				*eq = '\0';
				/* Runtimes before the invariant culture was asked for
				 * wrote these with the process's: "0,5=1,25". Nothing
				 * else in a pair is a comma. */
				for (char *c = pair; *c; c++)
					if (*c == ',')
						*c = '.';
				for (char *c = eq + 1; *c; c++)
					if (*c == ',')
						*c = '.';
				if (invariant_number(pair, &q) && invariant_number(eq + 1, &v)) {
					m->quantile[m->n_quantiles] = q;
					m->qvalue[m->n_quantiles++] = v;
				}
			}
		}
		s += n;
		if (*s == ';')
			s++;
	}
}

/* Copies src into dst, cut at a character's boundary to fit. */
static void copy_cut(char *dst, size_t dstlen, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstlen)
		n = text_utf8_trim(src, dstlen - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* MultipleSessionsConfiguredIncorrectlyError's settings, as "the shared
 * session runs with MaxHistograms=10 (asked: 20), ...": each expected value is the
 * running session's, each actual one what the refused client asked for. */
static void settings_add(char *msg, size_t len, const char *name, const char *value)
{
	size_t off = strlen(msg);
	int expected = strncmp(name, "expected", 8) == 0;
	const char *what = name + (expected ? 8 : 6);

	if (off + 1 >= len)
		return;
	if (expected)
		snprintf(msg + off, len - off, "%s%.20s=%.20s", off ? ", " : "the shared session runs with ", what,
		         value);
	else
		snprintf(msg + off, len - off, " (asked: %.20s)", value);
}

static int decode_meter(const struct nettrace_event *ev, const uint8_t *p, size_t len, struct ev_record *out, char *err,
                        size_t errlen)
{
	const struct nettrace_metadata *meta = ev->meta;
	struct ev_meter *m = &out->u.meter;
	size_t k, off = 0;
	char text[512], msg[256] = "";
	int found = -1;

	for (k = 0; k < sizeof(meter_events) / sizeof(meter_events[0]) && found < 0; k++)
		if ((meta->event_name && meta->event_name[0]) ? strcmp(meta->event_name, meter_events[k].name) == 0
		                                              : meta->event_id == meter_events[k].id)
			found = (int)k;
	if (found < 0)
		return 0; /* CollectionStart, BeginInstrumentReporting, ...: not used */
	memset(m, 0, sizeof(*m));
	m->kind = meter_events[found].kind;
	for (uint32_t i = 0; i < meta->n_fields; i++) {
		const struct nettrace_field *f = &meta->fields[i];
		const char *name = fname(f);
		if (f->type == NT_TC_STRING) {
			size_t s = text_utf16_read(p + off, len - off, text, sizeof(text));
			if (s == 0)
				return bad(err, errlen,
				           "%s: field \"%s\" (at offset %zu of %zu) has no terminating NUL",
				           meter_events[found].name, name, off, len);
			off += s;
			if (strcmp(name, "sessionId") == 0 || strcmp(name, "runningSessionId") == 0 ||
			    strcmp(name, "sharedIdentifier") == 0 || strcmp(name, "clientId") == 0)
				copy_cut(m->session, sizeof(m->session), text);
			else if (strncmp(name, "expected", 8) == 0 || strncmp(name, "actual", 6) == 0)
				settings_add(msg, sizeof(msg), name, text);
			else if (strcmp(name, "meterName") == 0)
				copy_cut(m->meter, sizeof(m->meter), text);
			else if (strcmp(name, "instrumentName") == 0)
				copy_cut(m->instrument, sizeof(m->instrument), text);
			else if (strcmp(name, "unit") == 0)
				copy_cut(m->unit, sizeof(m->unit), text);
			else if (strcmp(name, "tags") == 0)
				copy_cut(m->tags, sizeof(m->tags), text);
			else if (strcmp(name, "rate") == 0)
				m->has_rate = invariant_number(text, &m->rate);
			else if (strcmp(name, "value") == 0 || strcmp(name, "lastValue") == 0)
				m->has_value = invariant_number(text, &m->value);
			else if (strcmp(name, "quantiles") == 0)
				parse_quantiles(text, m);
			else if (strcmp(name, "errorMessage") == 0)
				copy_cut(msg, sizeof(msg), text);
			continue;
		}
		size_t fs = fixed_size(f->type);
		if (fs == 0)
			return bad(err, errlen, "%s: field \"%s\" has type %u, which this event never carries",
			           meter_events[found].name, name, f->type);
		if (len - off < fs)
			return bad(err, errlen, "%s: payload is %zu bytes, ends inside field \"%s\"",
			           meter_events[found].name, len, name);
		double v;
		if (strcmp(name, "count") == 0 && number_at(p + off, f->type, &v)) {
			m->count = (int64_t)v;
			m->has_count = 1;
		} else if (strcmp(name, "sum") == 0 && number_at(p + off, f->type, &v)) {
			m->sum = v;
		}
		off += fs;
	}
	if (meter_events[found].type == EV_METER_ERROR)
		snprintf(m->error, sizeof(m->error), "%s%s%.200s", meter_events[found].name, msg[0] ? ": " : "", msg);
	out->type = meter_events[found].type;
	return 1;
}

#define MAX2(a, b) ((a) > (b) ? (a) : (b))
/* The largest of the members a runtime event other than ExceptionThrown fills. */
#define SMALL_MEMBERS                                                                                                  \
	MAX2(MAX2(MAX2(sizeof(struct ev_gc_start), sizeof(struct ev_gc_end)),                                          \
	          MAX2(sizeof(struct ev_gc_heap_stats), sizeof(struct ev_gc_suspend))),                                \
	     MAX2(MAX2(sizeof(struct ev_alloc_tick), sizeof(struct ev_appdomain_mem)), sizeof(uint32_t)))

const uint32_t *events_runtime_ids(size_t *n)
{
	static uint32_t ids[sizeof(rt_layouts) / sizeof(rt_layouts[0])];
	size_t k = 0;

	/* GCTriggered and GCRestartEEBegin are decoded (a recording shows
	 * them) but nothing a watch keeps reads them: two events of every GC's
	 * eight not asked for (measured on ShopApi, 5,000 events a second at
	 * level 4). */
	for (size_t i = 0; i < sizeof(rt_layouts) / sizeof(rt_layouts[0]); i++)
		if (rt_layouts[i].id != ID_GC_TRIGGERED && rt_layouts[i].id != ID_GC_RESTART_EE_BEGIN)
			ids[k++] = rt_layouts[i].id;
	*n = k;
	return ids;
}

int events_decode(const struct nettrace_event *ev, int pointer_size, struct ev_record *out, char *err, size_t errlen)
{
	const struct nettrace_metadata *m = ev->meta;
	const uint8_t *p = ev->payload;
	size_t len = p ? ev->payload_size : 0;
	static const uint8_t empty[1];

	/* Only the header and the small members of the GC events are cleared
	 * here (most events are GC events, and a record is over a kilobyte);
	 * the counter, exception and meter decoders clear their own. */
	memset(&out->u, 0, SMALL_MEMBERS);
	if (err && errlen > 0)
		err[0] = '\0';
	out->type = EV_NONE;
	out->timestamp = ev->timestamp;
	out->thread_id = ev->thread_id;
	if (!p)
		p = empty;
	if (!m)
		return 0;
	if (m->event_name && strcmp(m->event_name, "EventCounters") == 0)
		return decode_counter(ev, p, len, out, err, errlen);
	if (m->provider && strcmp(m->provider, EV_RUNTIME_PROVIDER) == 0)
		return decode_runtime(ev, p, len, pointer_size, out, err, errlen);
	if (m->provider && strcmp(m->provider, EV_METRICS_PROVIDER) == 0)
		return decode_meter(ev, p, len, out, err, errlen);
	return 0;
}

const char *events_type_name(enum ev_type type)
{
	switch (type) {
	case EV_NONE:
		return "none";
	case EV_COUNTER:
		return "EventCounters";
	case EV_GC_START:
		return "GCStart";
	case EV_GC_END:
		return "GCEnd";
	case EV_GC_RESTART_EE_END:
		return "GCRestartEEEnd";
	case EV_GC_HEAP_STATS:
		return "GCHeapStats";
	case EV_GC_RESTART_EE_BEGIN:
		return "GCRestartEEBegin";
	case EV_GC_SUSPEND_EE_END:
		return "GCSuspendEEEnd";
	case EV_GC_SUSPEND_EE_BEGIN:
		return "GCSuspendEEBegin";
	case EV_GC_ALLOC_TICK:
		return "GCAllocationTick";
	case EV_GC_TRIGGERED:
		return "GCTriggered";
	case EV_APPDOMAIN_MEM_ALLOCATED:
		return "AppDomainMemAllocated";
	case EV_APPDOMAIN_MEM_SURVIVED:
		return "AppDomainMemSurvived";
	case EV_EXCEPTION_THROWN:
		return "ExceptionThrown";
	case EV_METER_VALUE:
		return "MeterValue";
	case EV_METER_ERROR:
		return "MeterError";
	}
	return "unknown";
}
