/* Allocation ticks on demand: see target_shared.h.
 *
 * Design note: allocation ticks are what a live LOH size or an allocation
 * rate is made of between GCs, and they are the dearest thing a watch asks
 * of a runtime: the GC keyword at level 5 puts the GC into its verbose mode,
 * which also raises GCJoin at every join of every GC, and a busy service
 * sends ~5,000 ticks a second (ShopApi: +1.5 % CPU per request, against ~0.1 %
 * for its GC events alone). A rule on a size or a rate, though, only needs
 * them near its threshold. Far from it, the System.Runtime counters bound the
 * value from above once per interval: a size is at most the last GC's plus
 * everything allocated since (gc-heap-size now, less the heap in use at that
 * GC), a rate of one kind at most the allocation rate of all kinds. So the
 * main session takes GC events and counters, and a second session with the
 * ticks alone runs while a bound or a value reaches half a threshold, a
 * condition holds, or no fresh bound is known; it ends TICKS_HOLD_SAMPLES
 * counter intervals after the last of those. Sizes stay exact at every GC (GCHeapStats, in the main
 * session); between GCs they add the ticks that came, so right after the
 * ticks start they trail by what was allocated between the last GC and that
 * start (an under-estimate, which only delays an "above" condition until the
 * next GC; a busy process collects many times a second). Rates are unknown
 * until the ticks have come for a whole window, and then exact. Only "above"
 * conditions (> and >=) are gated this way: anything else keeps the ticks in
 * the main session, as before. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/units.h"
#include "target_shared.h"

/* A rule is near when a bound or a value reaches this share of its threshold. */
#define TICKS_NEAR 0.5
/* The ticks stay for this many counter intervals (30 s by default) after the
 * last time any rule was near. */
#define TICKS_HOLD_SAMPLES 30
/* After a failure to start them, not again before this. */
#define TICKS_RETRY_NS 30000000000LL
#define TICKS_BUFFER_MB 8

static void on_ticks_op(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_ticks_stream(struct loop *l, int fd, uint32_t events, void *ctx);

static int gateable(const struct rule_cond *c)
{
	switch (c->metric.id) {
	case M_LOH_SIZE:
	case M_POH_SIZE:
	case M_HEAP_SIZE:
	case M_ALLOC_RATE:
	case M_SOH_ALLOC_RATE:
	case M_LOH_ALLOC_RATE:
	case M_POH_ALLOC_RATE:
		return (c->op == COND_GT || c->op == COND_GE) && c->threshold > 0;
	default:
		return 0;
	}
}

int target_ticks_gate(const struct target_rule *rules, size_t n)
{
	int gate = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rule *r = &rules[i].fr.rule;
		for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++) {
			if (!(r->conds[c].metric.needs & NEED_ALLOC_TICKS))
				continue;
			if (!gateable(&r->conds[c]))
				return 0;
			gate = 1;
		}
	}
	return gate;
}

static int64_t interval_ns(const struct target *t)
{
	return (int64_t)(t->cfg->opt->counter_interval_ms ? t->cfg->opt->counter_interval_ms : 1000) * 1000000LL;
}

uint32_t target_bound_interval_ms(const struct target *t)
{
	int64_t iv = interval_ns(t) / 1000000LL, shortest = -1;

	for (size_t i = 0; i < t->n_rules; i++) {
		const struct rule *r = &t->rules[i].fr.rule;
		for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++)
			if ((r->conds[c].metric.needs & NEED_ALLOC_TICKS) &&
			    (shortest < 0 || r->conds[c].for_ns < shortest))
				shortest = r->conds[c].for_ns;
	}
	int64_t ms = shortest > 0 ? shortest / TARGET_BOUND_PER_SUSTAIN / 1000000LL : 0;
	if (ms < TARGET_BOUND_INTERVAL_MS)
		ms = TARGET_BOUND_INTERVAL_MS;
	return (uint32_t)(ms < iv ? ms : iv);
}

/* The newest System.Runtime sample counts as fresh for this long. */
static int64_t fresh_ns(const struct target *t)
{
	return 3 * (int64_t)target_bound_interval_ms(t) * 1000000LL + 1000000000LL;
}

int target_ticks_near(const struct target *t, int64_t now, char *why, size_t whylen)
{
	const struct metrics *m = session_metrics(t->session);
	int64_t fresh = fresh_ns(t);

	for (size_t i = 0; i < t->n_rules; i++) {
		const struct target_rule *tr = &t->rules[i];
		for (uint32_t c = 0; c < tr->fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
			const struct rule_cond *rc = &tr->fr.rule.conds[c];
			double b, v;
			int64_t at;
			char vb[32];
			if (!(rc->metric.needs & NEED_ALLOC_TICKS))
				continue;
			if (tr->st.holding[c]) {
				snprintf(why, whylen, "%s holds", rc->text);
				return 1;
			}
			if (metrics_bound(m, &rc->metric, now, fresh, &b)) {
				if (b >= TICKS_NEAR * rc->threshold) {
					snprintf(why, whylen, "%s: at most %s, half the threshold or more", rc->text,
					         units_format(b, rc->metric.unit, vb, sizeof(vb)));
					return 1;
				}
			} else if (now - t->attached_ns >= fresh && session_events(t->session) > 0) {
				/* A runtime that sends nothing at all would send no
				 * ticks either. */
				snprintf(why, whylen, "%s: no System.Runtime sample bounds it", rc->text);
				return 1;
			}
			if (t->ticks.on_ns && metrics_read(m, &rc->metric, now, &v, &at) &&
			    v >= TICKS_NEAR * rc->threshold) {
				snprintf(why, whylen, "%s: %s, half the threshold or more", rc->text,
				         units_format(v, rc->metric.unit, vb, sizeof(vb)));
				return 1;
			}
		}
	}
	return 0;
}

static void journal_ticks(struct target *t, int on, const char *why)
{
	struct json_object *rec = rec_new(t);
	json_object_object_add(rec, "on", json_object_new_boolean(on));
	json_object_object_add(rec, "reason", json_object_new_string(why));
	journal_write(t->cfg->journal, "ticks", rec);
	log_debug("pid %d (%s): allocation ticks %s: %s", (int)t->dt.pid, t->name, on ? "on" : "off", why);
}

void target_ticks_close(struct target *t)
{
	struct target_ticks *k = &t->ticks;

	target_op_drop(t, &t->ticks.op, &t->ticks.reg);
	if (k->s) {
		uint64_t id;
		if (k->on_loop)
			loop_del(t->cfg->loop, session_fd(k->s));
		/* Closed: the runtime ends a session whose client is gone at
		 * its next write. */
		int fd = session_take_stream(k->s, &id);
		if (fd >= 0)
			close(fd);
		k->bytes += session_bytes(k->s);
		k->events += session_events(k->s);
		session_free(k->s);
		k->s = NULL;
	}
	k->on_loop = 0;
	k->stopping = 0;
	k->stop_deadline = 0;
	if (k->on_ns && t->session)
		metrics_ticks_on(session_metrics(t->session), 0, loop_now());
	k->on_ns = 0;
}

static void on_ticks_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	struct target *t = ctx;
	(void)s;
	/* A runtime that cannot filter sends every GC event of the level:
	 * those come to the main session too. */
	if (t->ticks.stopping || !t->ticks.on_ns || r->type != EV_GC_ALLOC_TICK || !t->session)
		return;
	metrics_on_event(session_metrics(t->session), r, t_ns);
	target_on_event(t, r, t_ns);
}

static void started(struct target *t)
{
	struct target_ticks *k = &t->ticks;
	uint64_t id = k->op->session_id;
	int fd = ipc_op_take_stream(k->op);

	target_op_drop(t, &t->ticks.op, &t->ticks.reg);
	k->s = fd >= 0 ? session_new(&t->dt, on_ticks_event, t) : NULL;
	if (!k->s) {
		if (fd >= 0)
			close(fd);
		k->retry_ns = loop_now() + TICKS_RETRY_NS;
		return;
	}
	session_set_stream(k->s, fd, id, &t->info);
	session_share_clock(k->s, t->session);
	k->session_id = id;
	if (loop_add(t->cfg->loop, fd, EPOLLIN, on_ticks_stream, t) < 0) {
		target_ticks_close(t);
		k->retry_ns = loop_now() + TICKS_RETRY_NS;
		return;
	}
	k->on_loop = 1;
	k->on_ns = loop_now();
	/* Counted from the request: no tick of this session is older. */
	metrics_ticks_on(session_metrics(t->session), 1, k->asked_ns);
	journal_ticks(t, 1, k->why);
}

void target_ticks_step(struct target *t)
{
	struct target_ticks *k = &t->ticks;
	if (!k->op)
		return;
	int r = ipc_op_step(k->op, loop_now());
	if (r == 0) {
		target_op_watch(t, k->op, &k->reg, on_ticks_op);
		return;
	}
	if (k->op->kind == IPC_OP_STOP_TRACING) {
		/* Answered or not: the stream ends as the runtime flushes, or at
		 * the deadline. */
		if (r < 0)
			log_debug("pid=%d: stop tracing (allocation ticks): %s", (int)t->dt.pid, k->op->err);
		target_op_drop(t, &t->ticks.op, &t->ticks.reg);
		return;
	}
	if (r < 0) {
		log_warn("pid %d (%s): cannot start the allocation ticks a rule near its threshold needs: %s; "
		         "trying again in %lld s",
		         (int)t->dt.pid, t->name, k->op->err, TICKS_RETRY_NS / 1000000000LL);
		target_op_drop(t, &t->ticks.op, &t->ticks.reg);
		k->retry_ns = loop_now() + TICKS_RETRY_NS;
		return;
	}
	started(t);
}

static void on_ticks_op(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)l;
	(void)fd;
	(void)events;
	target_ticks_step(t);
	target_rearm(t);
}

static void on_ticks_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	char err[512];
	(void)l;
	(void)fd;
	(void)events;

	int r = session_read(t->ticks.s, err, sizeof(err));
	if (r == 0)
		return;
	if (!t->ticks.stopping) {
		/* Ended under us: the process is going, or the runtime ended it.
		 * The main session says which; the ticks come back later if still
		 * wanted. */
		log_debug("pid=%d: the allocation ticks' stream ended: %s", (int)t->dt.pid,
		          r == 1 ? "by the runtime" : err);
		t->ticks.retry_ns = loop_now() + TICKS_RETRY_NS;
	}
	target_ticks_close(t);
	target_rearm(t);
}

static void start(struct target *t)
{
	struct target_ticks *k = &t->ticks;
	struct session_subscription sub = {.needs = NEED_ALLOC_TICKS, .ticks_only = 1, .all_events = 0};
	struct ipc_provider provs[SESSION_MAX_PROVIDERS];
	char args[8];
	const struct ipc_endpoint ep = discovery_endpoint(&t->dt);

	sub.all_events = t->cfg->opt->all_events;
	size_t n = session_providers(&sub, provs, args, sizeof(args));
	k->op = calloc(1, sizeof(*k->op));
	if (!k->op) {
		k->retry_ns = loop_now() + TICKS_RETRY_NS;
		return;
	}
	k->asked_ns = loop_now();
	ipc_op_collect_tracing(k->op, &ep, provs, n, TICKS_BUFFER_MB,
	                       t->cfg->request_ms > 0 ? t->cfg->request_ms : TARGET_REQUEST_MS);
	target_ticks_step(t);
}

static void stop(struct target *t)
{
	struct target_ticks *k = &t->ticks;
	int64_t now = loop_now();
	char why[160];

	snprintf(why, sizeof(why), "no rule near its threshold for %lld s", (now - k->hot_ns) / 1000000000LL);
	metrics_ticks_on(session_metrics(t->session), 0, now);
	k->on_ns = 0;
	k->stopping = 1;
	k->stop_deadline = now + (int64_t)TARGET_STOP_MS * 1000000LL;
	journal_ticks(t, 0, why);
	k->op = calloc(1, sizeof(*k->op));
	if (!k->op)
		return;
	const struct ipc_endpoint ep = discovery_endpoint(&t->dt);
	if (ipc_op_stop_tracing(k->op, &ep, k->session_id, TARGET_STOP_MS) < 0) {
		target_op_drop(t, &t->ticks.op, &t->ticks.reg);
		return;
	}
	target_ticks_step(t);
}

void target_ticks_update(struct target *t, int64_t now)
{
	struct target_ticks *k = &t->ticks;

	if (k->stopping) {
		if (now >= k->stop_deadline)
			target_ticks_close(t);
		return;
	}
	if (!k->gated || t->state != TARGET_ATTACHED || !t->session) {
		target_ticks_close(t);
		return;
	}
	if (t->job)
		return; /* the process is frozen for its dump */
	char why[sizeof(k->why)];
	if (target_ticks_near(t, now, why, sizeof(why))) {
		k->hot_ns = now;
		if (!k->s && !k->op && now >= k->retry_ns) {
			snprintf(k->why, sizeof(k->why), "%s", why);
			start(t);
		}
		return;
	}
	if (k->s && k->on_ns && now - k->hot_ns >= TICKS_HOLD_SAMPLES * interval_ns(t))
		stop(t);
}

int64_t target_ticks_wake(const struct target *t)
{
	int64_t at = 0;
	if (t->ticks.op)
		at = ipc_op_wake(t->ticks.op);
	if (t->ticks.stop_deadline && (!at || t->ticks.stop_deadline < at))
		at = t->ticks.stop_deadline;
	return at;
}

int target_ticks_fds(const struct target *t)
{
	int open = (t->ticks.op != NULL) + (t->ticks.s != NULL);
	/* Gated and attached: both are counted, open or not, as the attach
	 * asked for them (target_fds_to_attach). */
	return t->ticks.gated && t->session && open < 2 ? 2 : open;
}

void target_stream_totals(const struct target *t, uint64_t *bytes, uint64_t *events)
{
	*bytes = t->ticks.bytes + (t->ticks.s ? session_bytes(t->ticks.s) : 0) +
	         (t->session ? session_bytes(t->session) : 0);
	*events = t->ticks.events + (t->ticks.s ? session_events(t->ticks.s) : 0) +
	          (t->session ? session_events(t->session) : 0);
}

enum target_alloc_ticks target_alloc_ticks(const struct target *t)
{
	if (!t->session || t->state != TARGET_ATTACHED)
		return TARGET_TICKS_NONE;
	if (t->ticks.gated)
		return t->ticks.on_ns ? TARGET_TICKS_ON : TARGET_TICKS_OFF;
	return (t->sub.needs & NEED_ALLOC_TICKS) ? TARGET_TICKS_ALWAYS : TARGET_TICKS_NONE;
}

const char *target_alloc_ticks_name(enum target_alloc_ticks k)
{
	static const char *const names[] = {NULL, "always", "off", "on"};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : NULL;
}
