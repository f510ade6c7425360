/* Payload decoders (see events.h). Layouts follow dotnet/runtime
 * ClrEtwAll.man and PROTOCOL.md sections 4-5; every field is copied out with
 * memcpy because payloads are unaligned, and each event is checked against
 * the minimum size of its version before any field is read. */
#include "dumpwatch/events.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Most element visits one EventCounters payload may cost: an array of empty
 * objects consumes no bytes, so the payload length alone does not bound the
 * walk. */
#define EV_MAX_VISITS 65536
#define EV_MAX_DEPTH 32

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint64_t rdptr(const uint8_t *p, int pointer_size)
{
	return pointer_size == 4 ? rd32(p) : rd64(p);
}

static int too_short(const char *what, uint32_t version, uint32_t have, uint32_t need, char *err, size_t errlen)
{
	if (err)
		snprintf(err, errlen, "%s v%u payload is %u bytes, needs at least %u", what, version, have, need);
	return -EBADMSG;
}

/* Copies a NUL-terminated UTF-16LE string at p (at most avail bytes) into out
 * as UTF-8, truncating to outlen. Returns the bytes consumed including the
 * NUL, or 0 when no terminator lies within avail. */
static size_t utf16_to_utf8(const uint8_t *p, size_t avail, char *out, size_t outlen)
{
	size_t i = 0, o = 0;

	for (; i + 1 < avail; i += 2) {
		uint32_t cp = rd16(p + i);
		if (cp == 0) {
			if (outlen)
				out[o < outlen ? o : outlen - 1] = '\0';
			return i + 2;
		}
		if (cp >= 0xD800 && cp <= 0xDBFF && i + 3 < avail) {
			uint32_t lo = rd16(p + i + 2);
			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				i += 2;
			} else {
				cp = 0xFFFD;
			}
		} else if (cp >= 0xD800 && cp <= 0xDFFF) {
			cp = 0xFFFD;
		}
		char b[4];
		size_t n;
		if (cp < 0x80) {
			b[0] = (char)cp;
			n = 1;
		} else if (cp < 0x800) {
			b[0] = (char)(0xC0 | (cp >> 6));
			b[1] = (char)(0x80 | (cp & 0x3F));
			n = 2;
		} else if (cp < 0x10000) {
			b[0] = (char)(0xE0 | (cp >> 12));
			b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
			b[2] = (char)(0x80 | (cp & 0x3F));
			n = 3;
		} else {
			b[0] = (char)(0xF0 | (cp >> 18));
			b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
			b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
			b[3] = (char)(0x80 | (cp & 0x3F));
			n = 4;
		}
		/* Truncate on a character boundary. */
		if (outlen && o + n < outlen) {
			memcpy(out + o, b, n);
			o += n;
		} else if (outlen) {
			o = outlen; /* full: keep scanning for the terminator only */
		}
	}
	return 0;
}

/* --- EventCounters: a walk of the payload driven by the metadata --- */

struct walk {
	const uint8_t *p;
	size_t len, off;
	unsigned visits;
	struct ev_counter *out;
	int have_value;
	const char *fail; /* reason, when the walk failed */
};

static int fixed_size(uint32_t type)
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
		return -1;
	}
}

static double number_at(uint32_t type, const uint8_t *p)
{
	switch (type) {
	case NT_TC_SBYTE:
		return (double)(int8_t)p[0];
	case NT_TC_BYTE:
		return (double)p[0];
	case NT_TC_INT16:
		return (double)(int16_t)rd16(p);
	case NT_TC_UINT16:
		return (double)rd16(p);
	case NT_TC_INT32:
		return (double)(int32_t)rd32(p);
	case NT_TC_UINT32:
		return (double)rd32(p);
	case NT_TC_INT64:
		return (double)(int64_t)rd64(p);
	case NT_TC_UINT64:
		return (double)rd64(p);
	case NT_TC_SINGLE: {
		uint32_t u = rd32(p);
		float f;
		memcpy(&f, &u, 4);
		return (double)f;
	}
	case NT_TC_DOUBLE: {
		uint64_t u = rd64(p);
		double d;
		memcpy(&d, &u, 8);
		return d;
	}
	default:
		return 0;
	}
}

static int walk_value(struct walk *w, uint32_t type, const struct nettrace_field *f, int depth, const char *name);

static int walk_fields(struct walk *w, const struct nettrace_field *fields, uint32_t n, int depth)
{
	for (uint32_t i = 0; i < n; i++)
		if (walk_value(w, fields[i].type, &fields[i], depth, fields[i].name) < 0)
			return -1;
	return 0;
}

static void take_string(struct walk *w, const char *name, const uint8_t *p, size_t avail)
{
	if (strcmp(name, "Name") == 0)
		utf16_to_utf8(p, avail, w->out->name, sizeof(w->out->name));
	else if (strcmp(name, "DisplayUnits") == 0)
		utf16_to_utf8(p, avail, w->out->display_units, sizeof(w->out->display_units));
	else if (strcmp(name, "CounterType") == 0) {
		char t[16];
		utf16_to_utf8(p, avail, t, sizeof(t));
		w->out->is_increment = strcmp(t, "Sum") == 0;
	}
}

static void take_number(struct walk *w, const char *name, double v)
{
	if (strcmp(name, "Mean") == 0 || strcmp(name, "Increment") == 0) {
		w->out->value = v;
		w->have_value = 1;
		if (name[0] == 'I')
			w->out->is_increment = 1;
	} else if (strcmp(name, "IntervalSec") == 0) {
		w->out->interval_sec = v;
	}
}

static int walk_value(struct walk *w, uint32_t type, const struct nettrace_field *f, int depth, const char *name)
{
	if (++w->visits > EV_MAX_VISITS || depth > EV_MAX_DEPTH) {
		w->fail = "payload description too large or too deeply nested";
		return -1;
	}
	if (type == NT_TC_OBJECT)
		return walk_fields(w, f ? f->children : NULL, f ? f->n_children : 0, depth + 1);
	if (type == NT_TC_STRING) {
		size_t used = utf16_to_utf8(w->p + w->off, w->len - w->off, NULL, 0);
		if (used == 0) {
			w->fail = "string field runs past the end of the payload";
			return -1;
		}
		if (name)
			take_string(w, name, w->p + w->off, w->len - w->off);
		w->off += used;
		return 0;
	}
	if (type == NT_TC_ARRAY) {
		if (w->len - w->off < 2) {
			w->fail = "array count runs past the end of the payload";
			return -1;
		}
		uint16_t count = rd16(w->p + w->off);
		w->off += 2;
		uint32_t et = f ? f->elem_type : 0;
		/* Array of objects: children describe one element; array of
		 * arrays: the single child describes the inner array. */
		const struct nettrace_field *ef = (et == NT_TC_ARRAY && f && f->n_children == 1) ? f->children : f;
		for (uint32_t i = 0; i < count; i++)
			if (walk_value(w, et, ef, depth + 1, NULL) < 0)
				return -1;
		return 0;
	}
	int size = fixed_size(type);
	if (size < 0) {
		w->fail = "unknown field type";
		return -1;
	}
	if (w->len - w->off < (size_t)size) {
		w->fail = "field runs past the end of the payload";
		return -1;
	}
	if (name)
		take_number(w, name, number_at(type, w->p + w->off));
	w->off += (size_t)size;
	return 0;
}

static int decode_counter(const struct nettrace_event *ev, struct ev_record *out, char *err, size_t errlen)
{
	const struct nettrace_metadata *m = ev->meta;
	struct walk w = {.p = ev->payload, .len = ev->payload_size, .out = &out->u.counter};

	memset(&out->u.counter, 0, sizeof(out->u.counter));
	snprintf(out->u.counter.provider, sizeof(out->u.counter.provider), "%s", m->provider);
	if (walk_fields(&w, m->fields, m->n_fields, 0) < 0) {
		if (err)
			snprintf(err, errlen, "EventCounters event of %s at payload offset %zu: %s", m->provider, w.off,
			         w.fail);
		return -EBADMSG;
	}
	if (!out->u.counter.name[0] || !w.have_value) {
		if (err)
			snprintf(err, errlen, "EventCounters event of %s has no %s", m->provider,
			         out->u.counter.name[0] ? "Mean or Increment" : "Name");
		return -EBADMSG;
	}
	out->type = EV_COUNTER;
	return 1;
}

/* --- runtime events --- */

static int decode_runtime(const struct nettrace_event *ev, int ps, struct ev_record *out, char *err, size_t errlen)
{
	const uint8_t *p = ev->payload;
	uint32_t n = ev->payload_size, v = ev->meta->version;

	switch (ev->meta->event_id) {
	case 1: { /* GCStart: v0 Count, Reason; v1+ Count, Depth, Reason, Type, ... */
		uint32_t need = v == 0 ? 8 : 16;
		if (n < need)
			return too_short("GCStart", v, n, need, err, errlen);
		out->type = EV_GC_START;
		out->u.gc_start.count = rd32(p);
		if (v == 0) {
			out->u.gc_start.reason = rd32(p + 4);
		} else {
			out->u.gc_start.depth = rd32(p + 4);
			out->u.gc_start.reason = rd32(p + 8);
			out->u.gc_start.type = rd32(p + 12);
		}
		return 1;
	}
	case 2: /* GCEnd: Count, Depth */
		if (n < 8)
			return too_short("GCEnd", v, n, 8, err, errlen);
		out->type = EV_GC_END;
		out->u.gc_end.count = rd32(p);
		out->u.gc_end.depth = rd32(p + 4);
		return 1;
	case 3:
		out->type = EV_GC_RESTART_EE_END;
		return 1;
	case 7:
		out->type = EV_GC_RESTART_EE_BEGIN;
		return 1;
	case 8:
		out->type = EV_GC_SUSPEND_EE_END;
		return 1;
	case 4: { /* GCHeapStats: 10 x u64, 3 x u32 [, u16 ClrInstanceID [, 2 x u64 (v2)]] */
		uint32_t need = v >= 2 ? 110 : 92;
		if (n < need)
			return too_short("GCHeapStats", v, n, need, err, errlen);
		struct ev_gc_heap_stats *h = &out->u.heap_stats;
		memset(h, 0, sizeof(*h));
		for (int g = 0; g < 4; g++) {
			h->size[g] = rd64(p + 16 * g);
			h->promoted[g] = rd64(p + 16 * g + 8);
		}
		h->finalization_promoted_size = rd64(p + 64);
		h->finalization_promoted_count = rd64(p + 72);
		h->pinned_objects = rd32(p + 80);
		h->sink_blocks = rd32(p + 84);
		h->gc_handles = rd32(p + 88);
		if (v >= 2) {
			h->size[4] = rd64(p + 94);
			h->promoted[4] = rd64(p + 102);
			h->has_poh = 1;
		}
		out->type = EV_GC_HEAP_STATS;
		return 1;
	}
	case 9: { /* GCSuspendEEBegin: v0 u16 Reason; v1+ u32 Reason, u32 Count */
		uint32_t need = v == 0 ? 2 : 8;
		if (n < need)
			return too_short("GCSuspendEEBegin", v, n, need, err, errlen);
		out->type = EV_GC_SUSPEND_EE_BEGIN;
		out->u.suspend.reason = v == 0 ? rd16(p) : rd32(p);
		out->u.suspend.count = v == 0 ? 0 : rd32(p + 4);
		return 1;
	}
	case 10: { /* GCAllocationTick */
		struct ev_alloc_tick *a = &out->u.alloc;
		uint32_t need = v >= 2 ? 18u + (uint32_t)ps + 2u + 4u : 8u;
		if (n < need)
			return too_short("GCAllocationTick", v, n, need, err, errlen);
		memset(a, 0, sizeof(*a));
		a->amount = rd32(p);
		a->kind = rd32(p + 4);
		if (v >= 2) {
			uint32_t off = 18 + (uint32_t)ps;
			size_t used;
			a->amount = rd64(p + 10);
			(void)rdptr(p + 18, ps); /* TypeID: not used */
			used = utf16_to_utf8(p + off, n - off, a->type_name, sizeof(a->type_name));
			if (used == 0) {
				if (err)
					snprintf(err, errlen,
					         "GCAllocationTick v%u type name runs past the end of the "
					         "%u-byte payload",
					         v, n);
				return -EBADMSG;
			}
			off += (uint32_t)used;
			if (n - off < 4)
				return too_short("GCAllocationTick", v, n, off + 4, err, errlen);
			a->heap_index = rd32(p + off);
			off += 4;
			if (v >= 4) {
				/* v3 added Address (pointer), v4 ObjectSize (u64). */
				if (n - off < (uint32_t)ps + 8)
					return too_short("GCAllocationTick", v, n, off + (uint32_t)ps + 8, err, errlen);
				a->object_size = rd64(p + off + (uint32_t)ps);
			}
		}
		if (a->kind > EV_ALLOC_PINNED) {
			if (err)
				snprintf(err, errlen, "GCAllocationTick v%u has unknown allocation kind %u", v,
				         a->kind);
			return -EBADMSG;
		}
		out->type = EV_GC_ALLOC_TICK;
		return 1;
	}
	case 35:
		if (n < 4)
			return too_short("GCTriggered", v, n, 4, err, errlen);
		out->type = EV_GC_TRIGGERED;
		out->u.triggered_reason = rd32(p);
		return 1;
	case 83:
		if (n < 16)
			return too_short("AppDomainMemAllocated", v, n, 16, err, errlen);
		out->type = EV_APPDOMAIN_MEM_ALLOCATED;
		out->u.appdomain.appdomain_id = rd64(p);
		out->u.appdomain.bytes = rd64(p + 8);
		out->u.appdomain.process_survived = 0;
		return 1;
	case 84:
		if (n < 24)
			return too_short("AppDomainMemSurvived", v, n, 24, err, errlen);
		out->type = EV_APPDOMAIN_MEM_SURVIVED;
		out->u.appdomain.appdomain_id = rd64(p);
		out->u.appdomain.bytes = rd64(p + 8);
		out->u.appdomain.process_survived = rd64(p + 16);
		return 1;
	default:
		return 0;
	}
}

int events_decode(const struct nettrace_event *ev, int pointer_size, struct ev_record *out, char *err, size_t errlen)
{
	int r;

	memset(out, 0, sizeof(*out));
	out->type = EV_NONE;
	out->timestamp = ev->timestamp;
	out->thread_id = ev->thread_id;
	if (!ev->meta)
		return 0;
	if (pointer_size != 4)
		pointer_size = 8;
	if (strcmp(ev->meta->provider, EV_RUNTIME_PROVIDER) == 0)
		r = decode_runtime(ev, pointer_size, out, err, errlen);
	else if (strcmp(ev->meta->event_name, "EventCounters") == 0)
		r = decode_counter(ev, out, err, errlen);
	else
		r = 0;
	if (r <= 0)
		out->type = EV_NONE;
	return r;
}

const char *events_type_name(enum ev_type type)
{
	switch (type) {
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
	default:
		return "none";
	}
}
