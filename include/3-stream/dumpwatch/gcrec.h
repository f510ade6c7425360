/* Per-GC records built from the runtime's GC events: for each GC its index,
 * generation, reason, type, start and end, pause (suspension to restart),
 * heap by generation and promoted bytes after it, and whether its event
 * sequence was complete. Pure: events and their times go in, records come out
 * through a callback.
 *
 * The runtime writes events into per-thread buffers, so the stream is in
 * order per thread but not across threads: a background GC's events (its own
 * thread) can arrive after those of GCs that ran later. Records are therefore
 * assembled by GC index and timestamp, never by arrival order:
 * - GCStart and GCEnd carry the index; GCHeapStats follows the GCEnd of its GC
 *   on the same thread;
 * - a suspension is GCSuspendEEBegin .. GCRestartEEEnd of one thread. It is a
 *   pause of every GC whose GCStart lies inside it (a background GC and the
 *   ephemeral GC the runtime runs at its start share one), and the
 *   "GC prep" suspensions (reason 6) between a background GC's start and end
 *   are its later pauses;
 * - blocking and foreground GCs are reported in index order; a background GC
 *   is reported when it ends, after the GCs that ran during it.
 * A record is complete when its GCStart, GCEnd, GCHeapStats and the suspension
 * it started in were all seen. A GC whose events stay missing (the trace began
 * mid-GC, events were dropped) is reported incomplete after GCREC_WAIT_NS of
 * event time, or at gcrec_flush. */
#ifndef DUMPWATCH_GCREC_H
#define DUMPWATCH_GCREC_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/events.h"

/* How long (event time) a record waits for its missing events. */
#define GCREC_WAIT_NS 2000000000LL
/* Records and suspensions held at once; beyond, the oldest is reported. */
#define GCREC_OPEN_MAX 64
#define GCREC_SUSPENSIONS_MAX 64

/* What was seen of a GC (gc_record.seen). */
#define GCREC_SEEN_START 0x1u
#define GCREC_SEEN_END 0x2u
#define GCREC_SEEN_HEAP 0x4u
#define GCREC_SEEN_PAUSE 0x8u /* the suspension it started in, whole */

struct gc_record {
	uint32_t index;      /* the runtime's GC count */
	uint32_t generation; /* condemned generation (GCStart depth, else GCEnd depth) */
	uint32_t reason;     /* GCStart reason, see gcrec_reason_name */
	uint32_t type;       /* enum ev_gc_type */
	int64_t start_ns;    /* GCStart, 0 when not seen */
	int64_t end_ns;      /* GCEnd, 0 when not seen */
	double pause_ms;     /* sum of its suspensions, suspend begin to restart end; < 0 unknown */
	double suspend_ms;   /* of its first suspension: begin to EE suspended; < 0 unknown */
	uint32_t pauses;     /* suspensions counted in pause_ms */
	uint64_t size[5];    /* after the GC: gen0, gen1, gen2, LOH, POH */
	uint64_t promoted[5];
	unsigned seen; /* GCREC_SEEN_* */
	int complete;  /* all four seen */
};

typedef void (*gcrec_fn)(void *ctx, const struct gc_record *rec);

struct gcrec;

struct gcrec *gcrec_new(gcrec_fn fn, void *ctx);
/* Memory g holds (a fixed size: GCREC_OPEN_MAX records and suspensions). */
size_t gcrec_bytes(const struct gcrec *g);
void gcrec_free(struct gcrec *g);

/* Feeds one decoded event stamped t_ns (its own timestamp, not arrival).
 * Events other than GC start/end/heap stats/suspend/restart are ignored.
 * Records that became due are reported from inside this call. */
void gcrec_on_event(struct gcrec *g, const struct ev_record *r, int64_t t_ns);

/* Event time has reached now_ns without events (same clock as the events:
 * CLOCK_MONOTONIC on Linux): lets waiting records become due. */
void gcrec_advance(struct gcrec *g, int64_t now_ns);

/* Reports every record still held, complete or not (end of the stream). */
void gcrec_flush(struct gcrec *g);

/* Records reported so far, and how many of them were incomplete. */
uint64_t gcrec_reported(const struct gcrec *g);
uint64_t gcrec_incomplete(const struct gcrec *g);

/* "AllocSmall", "Induced", ... (ClrEtwAll.man GCReason); "unknown" beyond. */
const char *gcrec_reason_name(uint32_t reason);
/* "blocking", "background", "foreground"; "unknown" beyond. */
const char *gcrec_type_name(uint32_t type);
/* A comma-separated list of what is missing ("start,pause"), "" when complete. */
void gcrec_missing(const struct gc_record *rec, char *out, size_t outlen);

#endif
