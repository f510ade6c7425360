/* One attached process: an EventPipe session over its diagnostics socket,
 * the nettrace parser and decoders fed from the stream, and the process's
 * metric state. The session reads without blocking; the owner polls
 * session_fd() and calls session_read() when it is readable. */
#ifndef DUMPWATCH_SESSION_H
#define DUMPWATCH_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/events.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/metrics.h"

#define SESSION_MAX_COUNTER_PROVIDERS 16
#define SESSION_MAX_METERS 16
/* Room for the providers' arguments session_providers writes. */
#define SESSION_ARGS_MAX 3072

/* What to subscribe to. */
struct session_subscription {
	unsigned needs;               /* NEED_* of catalog.h */
	uint32_t counter_interval_ms; /* EventCounterIntervalSec in ms; 0: 1000 */
	uint32_t runtime_interval_ms; /* System.Runtime's, when shorter (0: the same) */
	int all_events;               /* no filter by event id: every event of the keywords and level */
	size_t n_counter_providers;
	char counter_providers[SESSION_MAX_COUNTER_PROVIDERS][CATALOG_NAME_MAX];
	/* System.Diagnostics.Metrics: the meters whose instruments are
	 * published (NEED_METERS), every collection interval. */
	size_t n_meters;
	char meters[SESSION_MAX_METERS][CATALOG_NAME_MAX];
	/* The runtime matches "Meter\\instrument" case-sensitively before
	 * .NET 9, where rules match instruments in any case: then each meter
	 * is subscribed whole (session_subscription_set_runtime). */
	int whole_meters;
	/* The allocation ticks alone (needs is NEED_ALLOC_TICKS, nothing else):
	 * the session that brings them beside another while a rule is near
	 * its threshold (target.h). */
	int ticks_only;
};

/* Tells sub which runtime it is for ("8.0.31"; "" unknown, taken as
 * old). */
void session_subscription_set_runtime(struct session_subscription *sub, const char *runtime_version);

/* Adds what reading metric m needs to sub: its NEED_*, the EventCounters
 * provider of a counter, the meter of a meter (each once; beyond
 * SESSION_MAX_COUNTER_PROVIDERS or SESSION_MAX_METERS they are dropped). A
 * rule's subscription is that of each of its conditions' metrics. sub
 * starts zeroed, with counter_interval_ms set. */
void session_subscription_add_metric(struct session_subscription *sub, const struct metric_ref *m);

/* Adds System.Runtime's EventCounters to sub (once), whether a rule reads
 * them or not: the guard's metrics exposition shows them for every process. */
void session_subscription_add_runtime_counters(struct session_subscription *sub);

/* Adds one meter to sub (once), with NEED_METERS. -ENOSPC past
 * SESSION_MAX_METERS, -EINVAL for a name that is not [A-Za-z0-9._-]+ (or
 * Meter\instrument) under CATALOG_NAME_MAX. */
int session_subscription_add_meter(struct session_subscription *sub, const char *meter);

/* Adds each meter of a ','- or ';'-separated list, as a --meters option
 * gives it (empty items skipped); with instruments set, an item may also be
 * Meter\instrument. 0, or -EINVAL / -ENOSPC with a sentence in err. */
int session_subscription_add_meters(struct session_subscription *sub, const char *list, int instruments, char *err,
                                    size_t errlen);

/* The collection interval asked of System.Diagnostics.Metrics for sub: the
 * counters' interval, at least the runtime's floor of 100 ms. */
int64_t session_meter_interval_ns(const struct session_subscription *sub);

/* Whether two subscriptions ask for the same thing (providers in any order). */
int session_subscription_equal(const struct session_subscription *a, const struct session_subscription *b);

struct session;

#define SESSION_MAX_PROVIDERS (SESSION_MAX_COUNTER_PROVIDERS + 2)

/* Builds the EventPipe provider list for sub into out (room for
 * SESSION_MAX_PROVIDERS): the runtime provider with the GC keyword at level 4,
 * or 5 when allocation ticks are needed, and the Exception keyword when
 * exceptions are (at level 2 when the GC is not needed); each EventCounters
 * provider with "EventCounterIntervalSec=N"; and System.Diagnostics.Metrics
 * for the meters, in the runtime's shared session (SessionId=SHARED, a
 * ClientId of this call's own, also given as .NET 8's SharedIdentifier) with the interval and the limits
 * other tools use by default (MaxTimeSeries=1000, MaxHistograms=10), so that
 * dumpwatch and, say, dotnet-counters can both watch one process. The
 * arguments are written into args (SESSION_ARGS_MAX), which out refers to.
 * Returns the number of providers; nothing is subscribed that sub does not ask for. */
size_t session_providers(const struct session_subscription *sub, struct ipc_provider *out, char *args, size_t argslen);

/* Called for every decoded event, after the metrics have taken it in. t_ns is
 * the event's time on CLOCK_MONOTONIC. */
typedef void (*session_event_fn)(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns);

/* Creates a session for target (not yet connected). NULL on out of memory. */
struct session *session_new(const struct dn_target *target, session_event_fn fn, void *ctx);
/* Stops tracing if started (bounded wait) and frees. NULL is a no-op. */
void session_free(struct session *s);

/* s's event times are taken on from's clock (its offset, session.c's clock
 * note), not on one of its own: a second session of the same process whose
 * times must compare with from's even where the runtime's clock is not ours.
 * from must outlive s. */
void session_share_clock(struct session *s, const struct session *from);

/* Asks the runtime for its process info and starts tracing. Returns 0, or
 * -errno with a sentence in err. */
int session_start(struct session *s, const struct session_subscription *sub, char *err, size_t errlen);

/* Hands s a trace stream whose handshake was done elsewhere (target.c, on
 * the loop): the connection that follows CollectTracing's reply (made
 * non-blocking here), its session id, and the runtime's process info. */
void session_set_stream(struct session *s, int fd, uint64_t session_id, const struct ipc_process_info *info);

/* Takes the stream out of s (for stopping it elsewhere): its descriptor, -1
 * when none; s no longer stops or closes it. */
int session_take_stream(struct session *s, uint64_t *ret_session_id);

/* The stream descriptor (nonblocking), -1 before start. */
int session_fd(const struct session *s);

/* Reads what is available and feeds it through parser, decoders and metrics.
 * Returns 0 (more to come), 1 when the stream ended cleanly (the runtime closed
 * it: the process exited or the session was stopped), or -errno with a
 * sentence in err (malformed stream, connection lost). */
int session_read(struct session *s, char *err, size_t errlen);

/* Sends StopTracing and drains the stream for at most timeout_ms. */
void session_stop(struct session *s, int timeout_ms);

const struct dn_target *session_target(const struct session *s);
const struct ipc_process_info *session_info(const struct session *s);
/* The name users know the process by (entry assembly, else executable). */
const char *session_name(const struct session *s);
struct metrics *session_metrics(struct session *s);
uint64_t session_bytes(const struct session *s);
uint64_t session_events(const struct session *s);
/* CLOCK_MONOTONIC time of the read whose bytes are being parsed. */
int64_t session_read_ns(const struct session *s);

/* Whether the stream has been stuck inside a block (nettrace_mid_object) for
 * limit_ns or more: 1 with a sentence in err, else 0. The caller does not ask
 * while the process is frozen on purpose (a dump in progress). */
int session_stalled(const struct session *s, int64_t now_ns, int64_t limit_ns, char *err, size_t errlen);

/* How long a stream may stay stuck inside a block. */
#define SESSION_STALL_NS (10LL * 1000000000)

#endif
