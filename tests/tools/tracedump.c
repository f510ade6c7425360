/* dw_tracedump [--gc] FILE: prints every event of a recorded nettrace file that the
 * decoders know, one line each (time from the first event, thread, event,
 * fields), for reading a runtime's event sequences and checking recordings.
 * A development tool, not installed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/events.h"
#include "dumpwatch/gcrec.h"
#include "dumpwatch/nettrace.h"
#include "dumpwatch/text.h"

struct dump {
	struct nettrace_info info;
	int64_t t0;
	int have_t0;
	struct gcrec *gc; /* --gc: GC records instead of events */
};

static void on_gc(void *ctx, const struct gc_record *g)
{
	struct dump *d = ctx;
	char missing[64];
	gcrec_missing(g, missing, sizeof(missing));
	printf("gc %u gen%u %-10s %-17s start %10.3f end %10.3f pause %8.3f ms (%u) suspend %.3f ms loh %" PRIu64
	       " promoted %" PRIu64 "%s%s\n",
	       g->index, g->generation, gcrec_type_name(g->type), gcrec_reason_name(g->reason),
	       g->start_ns ? (double)(g->start_ns - d->t0) / 1e6 : -1.0,
	       g->end_ns ? (double)(g->end_ns - d->t0) / 1e6 : -1.0, g->pause_ms, g->pauses, g->suspend_ms, g->size[3],
	       g->promoted[0] + g->promoted[1] + g->promoted[2] + g->promoted[3] + g->promoted[4],
	       g->complete ? "" : " INCOMPLETE missing ", missing);
}

static void on_info(void *ctx, const struct nettrace_info *info)
{
	((struct dump *)ctx)->info = *info;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct dump *d = ctx;
	struct ev_record r;
	char err[256];
	int64_t t = nettrace_qpc_to_ns(&d->info, ev->timestamp);

	if (!d->have_t0) {
		d->t0 = t;
		d->have_t0 = 1;
	}
	int rc = events_decode(ev, d->info.pointer_size ? d->info.pointer_size : 8, &r, err, sizeof(err));
	if (rc < 0) {
		printf("%12.3f ms  tid %-8" PRIu64 " MALFORMED %s\n", (double)(t - d->t0) / 1e6, ev->thread_id, err);
		return;
	}
	if (rc == 0)
		return;
	if (d->gc) {
		gcrec_on_event(d->gc, &r, t);
		return;
	}
	printf("%12.3f ms  tid %-8" PRIu64 " %-20s", (double)(t - d->t0) / 1e6, ev->thread_id,
	       events_type_name(r.type));
	switch (r.type) {
	case EV_GC_START:
		printf(" count=%u depth=%u reason=%u type=%u", r.u.gc_start.count, r.u.gc_start.depth,
		       r.u.gc_start.reason, r.u.gc_start.type);
		break;
	case EV_GC_END:
		printf(" count=%u depth=%u", r.u.gc_end.count, r.u.gc_end.depth);
		break;
	case EV_GC_HEAP_STATS:
		for (int i = 0; i < 5; i++)
			printf(" size%d=%" PRIu64 " prom%d=%" PRIu64, i, r.u.heap_stats.size[i], i,
			       r.u.heap_stats.promoted[i]);
		break;
	case EV_GC_SUSPEND_EE_BEGIN:
		printf(" reason=%u count=%u", r.u.suspend.reason, r.u.suspend.count);
		break;
	case EV_GC_ALLOC_TICK:
		printf(" kind=%u amount=%" PRIu64 " heap=%u type=%s", r.u.alloc.kind, r.u.alloc.amount,
		       r.u.alloc.heap_index, r.u.alloc.type_name);
		break;
	case EV_GC_TRIGGERED:
		printf(" reason=%u", r.u.triggered_reason);
		break;
	case EV_COUNTER:
		printf(" %s/%s=%g%s", r.u.counter.provider, r.u.counter.name, r.u.counter.value,
		       r.u.counter.is_increment ? " (increment)" : "");
		break;
	case EV_APPDOMAIN_MEM_ALLOCATED:
	case EV_APPDOMAIN_MEM_SURVIVED:
		printf(" appdomain=%" PRIu64 " bytes=%" PRIu64 " process_survived=%" PRIu64, r.u.appdomain.appdomain_id,
		       r.u.appdomain.bytes, r.u.appdomain.process_survived);
		break;
	case EV_EXCEPTION_THROWN: {
		char type[EV_EXC_TYPE_MAX * 4], msg[EV_EXC_MESSAGE_MAX * 4];
		printf(" type=%s%s hresult=0x%08x flags=0x%x message=\"%s\"%s",
		       text_escape_str(r.u.exception.type, type, sizeof(type)),
		       r.u.exception.type_truncated ? "..." : "", (unsigned)r.u.exception.hresult,
		       (unsigned)r.u.exception.flags, text_escape_str(r.u.exception.message, msg, sizeof(msg)),
		       r.u.exception.message_truncated ? "..." : "");
		break;
	}
	case EV_METER_VALUE: {
		const struct ev_meter *m = &r.u.meter;
		char a[4 * EV_NAME_MAX], b[4 * EV_NAME_MAX], c[4 * EV_METER_TAGS_MAX];
		printf(" kind=%d %s/%s [%s] unit=%s", (int)m->kind, text_escape_str(m->meter, a, sizeof(a)),
		       text_escape_str(m->instrument, b, sizeof(b)), text_escape_str(m->tags, c, sizeof(c)), m->unit);
		if (m->has_rate)
			printf(" rate=%g", m->rate);
		if (m->has_value)
			printf(" value=%g", m->value);
		for (size_t q = 0; q < m->n_quantiles; q++)
			printf(" p%g=%g", m->quantile[q] * 100, m->qvalue[q]);
		if (m->has_count)
			printf(" count=%" PRId64 " sum=%g", m->count, m->sum);
		break;
	}
	case EV_METER_ERROR: {
		char e[4 * 256];
		printf(" %s", text_escape_str(r.u.meter.error, e, sizeof(e)));
		break;
	}
	default:
		break;
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	struct dump d = {0};
	struct nettrace_callbacks cb = {.ctx = &d, .on_info = on_info, .on_event = on_event};
	uint8_t buf[65536];
	size_t n;

	if (argc == 3 && strcmp(argv[1], "--gc") == 0) {
		d.gc = gcrec_new(on_gc, &d);
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: dw_tracedump [--gc] FILE.nettrace\n");
		return 1;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	nettrace_parser *p = nettrace_new(&cb, NULL);
	if (!p)
		return 1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (nettrace_feed(p, buf, n) < 0)
			break;
	int rc = nettrace_finish(p);
	if (rc < 0)
		fprintf(stderr, "%s: %s\n", argv[1], nettrace_error(p));
	if (d.gc) {
		gcrec_flush(d.gc);
		printf("%" PRIu64 " GC records, %" PRIu64 " incomplete\n", gcrec_reported(d.gc),
		       gcrec_incomplete(d.gc));
		gcrec_free(d.gc);
	}
	nettrace_free(p);
	fclose(f);
	return rc < 0 && rc != -EPIPE ? 1 : 0;
}
