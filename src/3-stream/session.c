/* One attached process; see session.h.
 *
 * Clock note: on Linux the runtime's QPC is CLOCK_MONOTONIC in nanoseconds
 * (the Trace object of .NET 10.0.12 says frequency 1000000000 and its sync
 * QPC matches our CLOCK_MONOTONIC), so event times are compared with our own
 * clock directly. When the trace's clock does not look like ours (another time
 * namespace, another frequency) an offset is taken when the Trace object
 * arrives, which errs by the delay of that first read. */
#include "dumpwatch/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/nettrace.h"

#define SESSION_READ_CHUNK 16384 /* read at a time: 16 KiB a session, idle or not */
#define SESSION_BUFFER_MB 16
#define SESSION_IPC_TIMEOUT_MS 3000

struct session {
	struct dn_target target;
	struct ipc_process_info info;
	char name[256];
	session_event_fn fn;
	void *ctx;
	int fd;
	uint64_t session_id;
	int started;
	nettrace_parser *parser;
	struct nettrace_info trace;
	int have_trace;
	int64_t clock_offset_ns;
	const struct session *clock_from; /* whose offset to use (session_share_clock) */
	struct metrics *metrics;
	uint64_t bytes;
	int64_t read_ns; /* when the bytes being parsed were read */
	uint64_t events;
	uint64_t bad_events;
	uint8_t buf[SESSION_READ_CHUNK];
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	struct session *s = ctx;
	int64_t sync_ns = nettrace_qpc_to_ns(info, info->sync_qpc);
	int64_t now = loop_now();

	s->trace = *info;
	s->have_trace = 1;
	/* Same clock when the sync point is within a minute of our "now". */
	if (info->qpc_freq == 1000000000LL && sync_ns <= now && now - sync_ns < 60000000000LL)
		s->clock_offset_ns = 0;
	else
		s->clock_offset_ns = now - sync_ns;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct session *s = ctx;
	struct ev_record rec;
	char err[256];
	int r;

	s->events++;
	r = events_decode(ev, s->have_trace ? s->trace.pointer_size : 8, &rec, err, sizeof(err));
	if (r < 0) {
		/* One malformed payload is not worth ending the session for; the
		 * parser already checked the framing. Say so once in a while. */
		if (s->bad_events++ % 1000 == 0)
			log_warn("pid=%d: skipping malformed event: %s", (int)s->target.pid, err);
		return;
	}
	if (r == 0)
		return;
	int64_t offset =
	    s->clock_from && s->clock_from->have_trace ? s->clock_from->clock_offset_ns : s->clock_offset_ns;
	int64_t t = (s->have_trace ? nettrace_qpc_to_ns(&s->trace, ev->timestamp) : loop_now()) + offset;
	metrics_on_event(s->metrics, &rec, t);
	if (s->fn)
		s->fn(s->ctx, s, &rec, t);
}

struct session *session_new(const struct dn_target *target, session_event_fn fn, void *ctx)
{
	struct session *s = calloc(1, sizeof(*s));
	struct nettrace_callbacks cb = {.ctx = NULL, .on_info = on_info, .on_event = on_event};

	if (!s)
		return NULL;
	s->target = *target;
	s->fn = fn;
	s->ctx = ctx;
	s->fd = -1;
	cb.ctx = s;
	s->parser = nettrace_new(&cb, NULL);
	s->metrics = metrics_new();
	if (!s->parser || !s->metrics) {
		session_free(s);
		return NULL;
	}
	discovery_process_name(&s->target, "", s->name, sizeof(s->name));
	return s;
}

void session_share_clock(struct session *s, const struct session *from)
{
	s->clock_from = from;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->started)
		session_stop(s, 1000);
	if (s->fd >= 0)
		close(s->fd);
	nettrace_free(s->parser);
	metrics_free(s->metrics);
	free(s);
}

static void subscription_add_provider(struct session_subscription *sub, const char *provider)
{
	for (size_t k = 0; k < sub->n_counter_providers; k++)
		if (strcmp(sub->counter_providers[k], provider) == 0)
			return;
	if (sub->n_counter_providers < SESSION_MAX_COUNTER_PROVIDERS)
		snprintf(sub->counter_providers[sub->n_counter_providers++], CATALOG_NAME_MAX, "%s", provider);
}

void session_subscription_add_runtime_counters(struct session_subscription *sub)
{
	subscription_add_provider(sub, "System.Runtime");
	sub->needs |= NEED_COUNTERS;
}

int session_subscription_add_meter(struct session_subscription *sub, const char *meter)
{
	size_t n = strlen(meter);

	if (n == 0 || n >= CATALOG_NAME_MAX ||
	    strspn(meter, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-\\") != n)
		return -EINVAL;
	sub->needs |= NEED_METERS;
	for (size_t k = 0; k < sub->n_meters; k++)
		if (strcmp(sub->meters[k], meter) == 0)
			return 0;
	if (sub->n_meters == SESSION_MAX_METERS)
		return -ENOSPC;
	memcpy(sub->meters[sub->n_meters++], meter, n + 1);
	return 0;
}

int session_subscription_add_meters(struct session_subscription *sub, const char *list, int instruments, char *err,
                                    size_t errlen)
{
	for (const char *m = list; *m;) {
		char one[CATALOG_NAME_MAX];
		size_t len = strcspn(m, ",;");
		int r = 0;
		if (len >= sizeof(one) || (!instruments && memchr(m, '\\', len))) {
			r = -EINVAL;
		} else if (len > 0) {
			memcpy(one, m, len);
			one[len] = '\0';
			r = session_subscription_add_meter(sub, one);
		}
		if (r == -ENOSPC) {
			snprintf(err, errlen, "--meters: at most %d meters", SESSION_MAX_METERS);
			return r;
		}
		if (r < 0) {
			snprintf(err, errlen,
			         "--meters: write %s, ','-separated, with names of letters, digits and ._- under %d "
			         "characters",
			         instruments ? "Meter or Meter\\instrument" : "meter names", CATALOG_NAME_MAX);
			return r;
		}
		m += len + (m[len] != '\0');
	}
	return 0;
}

void session_subscription_set_runtime(struct session_subscription *sub, const char *runtime_version)
{
	sub->whole_meters = atoi(runtime_version) < 9;
}

int64_t session_meter_interval_ns(const struct session_subscription *sub)
{
	int64_t ms = sub->counter_interval_ms ? sub->counter_interval_ms : 1000;
	return (ms < 100 ? 100 : ms) * 1000000LL;
}

void session_subscription_add_metric(struct session_subscription *sub, const struct metric_ref *m)
{
	sub->needs |= m->needs;
	if (m->id == M_COUNTER)
		subscription_add_provider(sub, m->provider);
	if (m->id == M_METER) {
		/* Only the instrument the rule reads ("Meter\\instrument"): the
		 * process then aggregates that one and not every instrument of
		 * its meter on every measurement. The whole meter when the
		 * pair does not fit. */
		char spec[CATALOG_NAME_MAX];
		int w = snprintf(spec, sizeof(spec), "%s\\%s", m->provider, m->counter);
		if (!m->counter[0] || w <= 0 || (size_t)w >= sizeof(spec) ||
		    session_subscription_add_meter(sub, spec) < 0)
			session_subscription_add_meter(sub, m->provider);
	}
	if (m->needs & NEED_RUNTIME_COUNTERS)
		subscription_add_provider(sub, "System.Runtime");
	if (sub->n_counter_providers > 0)
		sub->needs |= NEED_COUNTERS;
}

int session_subscription_equal(const struct session_subscription *a, const struct session_subscription *b)
{
	if (a->needs != b->needs || a->ticks_only != b->ticks_only ||
	    a->counter_interval_ms != b->counter_interval_ms || a->runtime_interval_ms != b->runtime_interval_ms ||
	    a->all_events != b->all_events || a->n_counter_providers != b->n_counter_providers ||
	    a->n_meters != b->n_meters)
		return 0;
	for (size_t i = 0; i < a->n_meters; i++) {
		int found = 0;
		for (size_t k = 0; k < b->n_meters; k++)
			found |= strcmp(a->meters[i], b->meters[k]) == 0;
		if (!found)
			return 0;
	}
	for (size_t i = 0; i < a->n_counter_providers; i++) {
		int found = 0;
		for (size_t k = 0; k < b->n_counter_providers; k++)
			found |= strcmp(a->counter_providers[i], b->counter_providers[k]) == 0;
		if (!found)
			return 0;
	}
	return 1;
}

size_t session_providers(const struct session_subscription *sub, struct ipc_provider *out, char *args, size_t argslen)
{
	size_t n = 0;

	if (sub->ticks_only) {
		/* The ticks, and GCJoin_V2 that keeps the GC raising them (see
		 * below); the GC's other events come to the main session. A
		 * runtime that cannot filter sends this session all of them:
		 * the caller takes the ticks only. */
		static const uint32_t ids[] = {EV_ID_GC_ALLOC_TICK, EV_ID_GC_JOIN_V2};
		out[0].keywords = EV_KW_GC;
		out[0].level = 5;
		out[0].name = EV_RUNTIME_PROVIDER;
		out[0].args = NULL;
		out[0].event_ids = sub->all_events ? NULL : ids;
		out[0].n_event_ids = sub->all_events ? 0 : 2;
		if (argslen)
			args[0] = '\0';
		return 1;
	}
	if (sub->needs & (NEED_GC | NEED_ALLOC_TICKS | NEED_EXCEPTIONS)) {
		/* AppDomainResourceManagement too: .NET 5+ never fires its
		 * events, but a runtime that does is decoded. ExceptionThrown_V1
		 * is at level 2 (Error): alone, the Exception keyword is taken at
		 * that level, which leaves out the catch and finally events (level
		 * 4) of the same keyword; beside the GC's level 4 they come too,
		 * and are not decoded. */
		out[n].keywords = 0;
		out[n].level = 2;
		if (sub->needs & (NEED_GC | NEED_ALLOC_TICKS)) {
			out[n].keywords |= EV_KW_GC | EV_KW_APPDOMAIN_RM;
			out[n].level = (sub->needs & NEED_ALLOC_TICKS) ? 5 : 4;
		}
		if (sub->needs & NEED_EXCEPTIONS)
			out[n].keywords |= EV_KW_EXCEPTION;
		out[n].name = EV_RUNTIME_PROVIDER;
		out[n].args = NULL;
		/* .NET 10 (CollectTracing5): of those keywords and that level,
		 * only the events decoded; the others (the GC's mark and history
		 * events, the catch and finally of exceptions, ...) are then not
		 * written. The GC decides its own event level from whether
		 * GCJoin_V2 is enabled (verbose) and GCStart (informational)
		 * (gcenv.ee.cpp, UpdateGCEventStatus): without GCJoin_V2 it
		 * would stop raising allocation ticks, so it stays in. */
		size_t n_ids = 0;
		if (!sub->all_events) {
			static uint32_t ids[IPC_MAX_EVENT_IDS + 1];
			const uint32_t *decoded = events_runtime_ids(&n_ids);
			if (n_ids > IPC_MAX_EVENT_IDS - 1)
				n_ids = IPC_MAX_EVENT_IDS - 1;
			memcpy(ids, decoded, n_ids * sizeof(*ids));
			if (sub->needs & NEED_ALLOC_TICKS)
				ids[n_ids++] = EV_ID_GC_JOIN_V2;
			out[n].event_ids = ids;
		} else {
			out[n].event_ids = NULL;
		}
		out[n].n_event_ids = (uint32_t)n_ids;
		n++;
	}
	size_t used = 0;
	if (sub->n_counter_providers > 0) {
		/* Whole seconds as they are; a fraction as milliseconds with an
		 * exponent ("50E-3"): the runtime parses the value with the
		 * process's culture, where "0.05" may read as 5 (a comma
		 * culture's group separator), but an exponent has no separator. */
		uint32_t ms = sub->counter_interval_ms ? sub->counter_interval_ms : 1000;
		uint32_t rms =
		    sub->runtime_interval_ms && sub->runtime_interval_ms < ms ? sub->runtime_interval_ms : ms;
		const char *own = args, *runtime = args;
		for (int k = 0; k < (rms != ms ? 2 : 1) && used < argslen; k++) {
			uint32_t v = k ? rms : ms;
			int w = v % 1000 == 0
			            ? snprintf(args + used, argslen - used, "EventCounterIntervalSec=%u", v / 1000)
			            : snprintf(args + used, argslen - used, "EventCounterIntervalSec=%uE-3", v);
			if (k)
				runtime = args + used;
			used += w > 0 && (size_t)w < argslen - used ? (size_t)w + 1 : argslen - used;
		}
		for (size_t i = 0; i < sub->n_counter_providers && n < SESSION_MAX_COUNTER_PROVIDERS + 1; i++) {
			out[n].event_ids = NULL;
			out[n].n_event_ids = 0;
			out[n].keywords = 0;
			out[n].level = 4;
			out[n].name = sub->counter_providers[i];
			out[n].args = strcmp(sub->counter_providers[i], "System.Runtime") == 0 ? runtime : own;
			n++;
		}
	}
	if (sub->n_meters > 0 && used < argslen) {
		/* TimeSeriesValues (0x2): the values, the instruments' begin and
		 * end, and the errors. The identifier tells this session from
		 * others in the shared one: each call's is new, so that a session
		 * that replaces another (the rules changed) is not taken for it. */
		static unsigned serial;
		char *a = args + used, list[SESSION_MAX_METERS * CATALOG_NAME_MAX], iv[24];
		size_t off = 0;
		int64_t ms = session_meter_interval_ns(sub) / 1000000;
		for (size_t i = 0; i < sub->n_meters; i++) {
			size_t len = sub->whole_meters ? strcspn(sub->meters[i], "\\") : strlen(sub->meters[i]);
			int dup = 0;
			for (size_t k = 0; k < i && sub->whole_meters; k++)
				dup |= strncmp(sub->meters[k], sub->meters[i], len) == 0 &&
				       (sub->meters[k][len] == '\0' || sub->meters[k][len] == '\\');
			if (!dup)
				off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%.*s", off ? "," : "",
				                        (int)len, sub->meters[i]);
		}
		if (ms % 1000 == 0)
			snprintf(iv, sizeof(iv), "%lld", (long long)(ms / 1000));
		else
			snprintf(iv, sizeof(iv), "%lldE-3", (long long)ms);
		int w =
		    snprintf(a, argslen - used,
		             "SessionId=SHARED;ClientId=dumpwatch-%d-%u;SharedIdentifier=dumpwatch-%d-%u;Metrics=%s;"
		             "RefreshInterval=%s;MaxTimeSeries=1000;MaxHistograms=10",
		             (int)getpid(), serial + 1, (int)getpid(), serial + 1, list, iv);
		serial++;
		if (w > 0 && (size_t)w < argslen - used) {
			out[n].event_ids = NULL;
			out[n].n_event_ids = 0;
			out[n].keywords = 0x2;
			out[n].level = 4;
			out[n].name = "System.Diagnostics.Metrics";
			out[n].args = a;
			n++;
		}
	}
	return n;
}

int session_start(struct session *s, const struct session_subscription *sub, char *err, size_t errlen)
{
	struct ipc_provider provs[SESSION_MAX_PROVIDERS];
	char args[SESSION_ARGS_MAX];
	const struct ipc_endpoint ep = discovery_endpoint(&s->target);
	size_t n;
	int r;

	r = ipc_process_info(&ep, SESSION_IPC_TIMEOUT_MS, &s->info, err, errlen);
	if (r < 0)
		return r;
	discovery_process_name(&s->target, s->info.entry_assembly, s->name, sizeof(s->name));
	struct session_subscription for_this = *sub;
	session_subscription_set_runtime(&for_this, s->info.runtime_version);
	n = session_providers(&for_this, provs, args, sizeof(args));
	if (n == 0) {
		snprintf(err, errlen, "nothing to subscribe to");
		return -EINVAL;
	}
	r = ipc_collect_tracing(&ep, provs, n, SESSION_BUFFER_MB, SESSION_IPC_TIMEOUT_MS, &s->fd, &s->session_id, err,
	                        errlen);
	if (r < 0)
		return r;
	fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
	s->started = 1;
	s->read_ns = loop_now();
	metrics_start(s->metrics, s->read_ns);
	metrics_set_meter_interval(s->metrics, session_meter_interval_ns(sub));
	return 0;
}

void session_set_stream(struct session *s, int fd, uint64_t session_id, const struct ipc_process_info *info)
{
	if (info) {
		s->info = *info;
		discovery_process_name(&s->target, s->info.entry_assembly, s->name, sizeof(s->name));
	}
	s->fd = fd;
	s->session_id = session_id;
	fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
	s->started = 1;
	s->read_ns = loop_now();
	metrics_start(s->metrics, s->read_ns);
}

int session_take_stream(struct session *s, uint64_t *ret_session_id)
{
	int fd = s->fd;

	if (ret_session_id)
		*ret_session_id = s->session_id;
	s->fd = -1;
	s->started = 0;
	return fd;
}

int session_fd(const struct session *s)
{
	return s->fd;
}

int session_read(struct session *s, char *err, size_t errlen)
{
	for (int rounds = 0; rounds < 64; rounds++) {
		ssize_t n = read(s->fd, s->buf, sizeof(s->buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			int e = errno;
			snprintf(err, errlen, "reading the event stream of pid %d: %s", (int)s->target.pid,
			         strerror(e));
			return -e;
		}
		if (n == 0) {
			s->started = 0;
			int r = nettrace_finish(s->parser);
			if (r < 0) {
				snprintf(err, errlen, "event stream of pid %d ended early: %s", (int)s->target.pid,
				         nettrace_error(s->parser));
				return r;
			}
			return 1;
		}
		s->bytes += (uint64_t)n;
		s->read_ns = loop_now();
		int r = nettrace_feed(s->parser, s->buf, (size_t)n);
		if (r < 0) {
			snprintf(err, errlen, "bad event stream from pid %d: %s", (int)s->target.pid,
			         nettrace_error(s->parser));
			return r;
		}
		if ((size_t)n < sizeof(s->buf))
			return 0;
	}
	return 0; /* let other descriptors have a turn; epoll reports us again */
}

void session_stop(struct session *s, int timeout_ms)
{
	const struct ipc_endpoint ep = discovery_endpoint(&s->target);
	char err[256];

	if (!s->started)
		return;
	s->started = 0;
	/* Empty the socket first: a runtime blocked on a full stream socket
	 * would not get round to answering the stop. */
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(s->fd, s->buf, sizeof(s->buf), MSG_DONTWAIT);
		if (n <= 0)
			break;
		if (nettrace_feed(s->parser, s->buf, (size_t)n) < 0)
			break;
	}
	if (ipc_stop_tracing(&ep, s->session_id, timeout_ms, err, sizeof(err)) < 0) {
		log_debug("pid=%d: stop tracing: %s", (int)s->target.pid, err);
		return;
	}
	/* Drain what the runtime flushes after the stop, up to its end. */
	int64_t deadline = loop_now() + (int64_t)timeout_ms * 1000000LL;
	fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
	setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (loop_now() < deadline) {
		ssize_t n = read(s->fd, s->buf, sizeof(s->buf));
		if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN)))
			break;
		if (n > 0 && nettrace_feed(s->parser, s->buf, (size_t)n) < 0)
			break;
	}
}

const struct dn_target *session_target(const struct session *s)
{
	return &s->target;
}

const struct ipc_process_info *session_info(const struct session *s)
{
	return &s->info;
}

const char *session_name(const struct session *s)
{
	return s->name;
}

struct metrics *session_metrics(struct session *s)
{
	return s->metrics;
}

uint64_t session_bytes(const struct session *s)
{
	return s->bytes;
}

int session_stalled(const struct session *s, int64_t now_ns, int64_t limit_ns, char *err, size_t errlen)
{
	if (!s->started || !nettrace_mid_object(s->parser) || now_ns - s->read_ns < limit_ns)
		return 0;
	snprintf(err, errlen,
	         "event stream of pid %d stalled: nothing for %.0f s in the middle of a block (offset %llu); "
	         "ending the session",
	         (int)s->target.pid, (double)(now_ns - s->read_ns) / 1e9,
	         (unsigned long long)nettrace_offset(s->parser));
	return 1;
}

int64_t session_read_ns(const struct session *s)
{
	return s->read_ns;
}

uint64_t session_events(const struct session *s)
{
	return s->events;
}
