/* The heap snapshot driver; see heapsnap.h. One session, read under poll()
 * with a deadline: the runtime starts the walk when the session starts
 * (GCHeapCollect), so everything needed arrives on this one stream. */
#include "dumpwatch/heapsnap.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/events.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/nettrace.h"

#define DEFAULT_TIMEOUT_NS (120 * 1000000000LL)
/* After StopTracing the runtime writes what it still holds and closes the
 * stream; that takes well under a second on an idle process. */
#define DRAIN_NS (10 * 1000000000LL)
/* No byte for this long in the middle of a walk: its events were dropped. */
#define STALL_NS (15 * 1000000000LL)

struct snapctx {
	struct heapgraph *g;
	struct nettrace_info info;
	int have_info;
	int failed; /* the first hg_feed error, kept in err */
	char err[256];
	uint64_t events;
};

static void on_info(void *ctx, const struct nettrace_info *info)
{
	struct snapctx *c = ctx;

	c->info = *info;
	c->have_info = 1;
}

static void on_event(void *ctx, const struct nettrace_event *ev)
{
	struct snapctx *c = ctx;

	c->events++;
	if (c->failed || !c->have_info)
		return;
	int r = hg_feed(c->g, ev, c->info.pointer_size, c->err, sizeof(c->err));
	if (r < 0)
		c->failed = r;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The runtime names each type (GCBulkType) once, remembers that it did, and
 * forgets when its provider's keywords are recomputed without the Type
 * keyword, that is when a session on the runtime provider starts or the
 * last one stops. When another session stays open on the process
 * (dumpwatch's own watch, a `dumpwatch gc`, dotnet-trace), ours stopping
 * recomputes nothing, and every snapshot after the first came without names
 * ("Type 0x7f..."; dotnet-gcdump's as well, "UNKNOWN 0x7f..."). A session on
 * the runtime provider with the GC keyword alone, started and stopped before
 * ours, makes it forget. Best effort: a failure here leaves the names to
 * chance, not the snapshot. */
static void flush_type_table(const struct ipc_endpoint *ep)
{
	const struct ipc_provider prov = {.keywords = 1, .level = 4, .name = EV_RUNTIME_PROVIDER};
	char err[256];
	uint64_t session;
	int sock = -1;

	if (ipc_collect_tracing(ep, &prov, 1, 1, 3000, &sock, &session, err, sizeof(err)) < 0)
		return;
	ipc_stop_tracing(ep, session, 3000, err, sizeof(err));
	close(sock);
}

int heapsnap_take(const struct ipc_endpoint *ep, const struct heapsnap_opts *opts, struct heapsnap *out, char *err,
                  size_t errlen)
{
	const struct ipc_provider prov = {
	    .keywords = HG_KEYWORDS | HG_KEYWORD_GENERATIONS, .level = 5, .name = EV_RUNTIME_PROVIDER};
	struct snapctx c = {0};
	struct nettrace_callbacks cb = {.ctx = &c, .on_info = on_info, .on_event = on_event};
	int64_t t0 = loop_now(), timeout = opts && opts->timeout_ns > 0 ? opts->timeout_ns : DEFAULT_TIMEOUT_NS;
	uint32_t buffer_mb = opts && opts->buffer_mb ? opts->buffer_mb : HEAPSNAP_BUFFER_MB;
	int save_fd = opts ? opts->save_fd : -1;
	uint64_t session, bytes = 0;
	int sock = -1, r, stopped = 0, ended = 0;
	/* 1 MiB reads: a 10 M-object walk is some 440 MB of events. */
	static uint8_t buf[1 << 20];

	memset(out, 0, sizeof(*out));
	c.g = opts && opts->histogram ? hg_new_histogram(opts->limits) : hg_new(opts ? opts->limits : NULL);
	nettrace_parser *p = nettrace_new(&cb, NULL);
	if (!c.g || !p) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	flush_type_table(ep);
	r = ipc_collect_tracing(ep, &prov, 1, buffer_mb, 3000, &sock, &session, err, errlen);
	if (r < 0)
		goto fail;
	int64_t deadline = t0 + timeout, last_data = t0;
	int stalled = 0;
	for (;;) {
		int64_t now = loop_now();
		/* Once the walk has begun its events come without a break; when
		 * they stop, the rest was dropped (the runtime's buffer filled) and
		 * the walk's end will never be seen: give up now, not at the
		 * deadline. */
		if (!stopped && hg_gc_count(c.g) && !hg_walk_done(c.g) && now - last_data >= STALL_NS)
			stalled = 1;
		if (!stopped && (hg_walk_done(c.g) || c.failed || stalled || now >= deadline)) {
			/* The stream drains to its closing tag after the stop. */
			char serr[256];
			if (ipc_stop_tracing(ep, session, 3000, serr, sizeof(serr)) < 0)
				break;
			stopped = 1;
			if (deadline > now + DRAIN_NS || hg_walk_done(c.g))
				deadline = now + DRAIN_NS;
			continue;
		}
		if (stopped && now >= deadline)
			break;
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		int64_t wake = deadline;
		if (!stopped && last_data + STALL_NS < wake)
			wake = last_data + STALL_NS;
		int pr = poll(&pfd, 1, wake > now ? (int)((wake - now) / 1000000 + 1) : 0);
		if (pr < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "reading the trace: %s", strerror(errno));
			goto fail;
		}
		if (pr <= 0)
			continue;
		ssize_t got = read(sock, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			ended = 1;
			break; /* end of stream: stopped, or the process exited */
		}
		bytes += (uint64_t)got;
		last_data = loop_now();
		if (save_fd >= 0 && (r = write_all(save_fd, buf, (size_t)got)) < 0) {
			snprintf(err, errlen, "writing the trace copy: %s", strerror(-r));
			goto fail;
		}
		r = nettrace_feed(p, buf, (size_t)got);
		if (r < 0) {
			snprintf(err, errlen, "the trace cannot be read: %s", nettrace_error(p));
			goto fail;
		}
	}
	(void)ended;
	if (c.failed) {
		r = c.failed;
		snprintf(err, errlen, "%s", c.failed == -ENOMEM ? "out of memory" : c.err);
		goto fail;
	}
	if (!hg_walk_done(c.g) && stalled) {
		r = -ETIMEDOUT;
		snprintf(err, errlen,
		         "the runtime's heap walk stopped sending events for %lld s before its end: the rest was "
		         "dropped (a session buffer of %u MB is too small for this heap)",
		         (long long)(STALL_NS / 1000000000LL), buffer_mb);
		goto fail;
	}
	if (!hg_walk_done(c.g)) {
		r = -ETIMEDOUT;
		snprintf(err, errlen, "the runtime's heap walk did not %s within %lld s%s",
		         hg_gc_count(c.g) ? "end" : "begin", (long long)(timeout / 1000000000LL),
		         hg_cut(c.g)->lost_events ? " (the runtime dropped events: its session buffer filled)" : "");
		goto fail;
	}
	if (hg_finish(c.g) < 0) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int64_t b, e;
	out->pause_ns = -1;
	out->walk_ns = -1;
	if (hg_pause(c.g, &b, &e) == 0)
		out->pause_ns = nettrace_qpc_to_ns(&c.info, e) - nettrace_qpc_to_ns(&c.info, b);
	if (hg_walk_span(c.g, &b, &e) == 0)
		out->walk_ns = nettrace_qpc_to_ns(&c.info, e) - nettrace_qpc_to_ns(&c.info, b);
	out->walk_bytes = hg_walk_bytes(c.g);
	const struct hg_cut *cut = hg_cut(c.g);
	uint64_t reported = hg_reported_bytes(c.g);
	out->complete = !cut->lost_events && !cut->lost_batches && !cut->nodes &&
	                (reported == 0 || out->walk_bytes >= reported / 100 * 95);
	out->graph = c.g;
	out->stream_bytes = bytes;
	out->events = c.events;
	out->pointer_size = c.info.pointer_size;
	out->elapsed_ns = loop_now() - t0;
	close(sock);
	nettrace_free(p);
	return 0;
fail:
	if (sock >= 0)
		close(sock);
	nettrace_free(p);
	hg_free(c.g);
	return r;
}
