/* One .NET process under guard; see target.h.
 *
 * States: NEW -> PROBING (ProcessInfo) -> IDLE -> ATTACHING (CollectTracing)
 * -> ATTACHED -> ENDING (the stream ended: exit, or the runtime stopped it)
 * -> GONE, or back to IDLE (a failure; retried later with .retry). Beside the
 * state, at most one dump job and one stop (StopTracing on its own
 * connection while the old stream is drained to its end) are in flight.
 *
 * Every descriptor is on the shared loop: the request in flight (its
 * direction changes between sending and reading), the stream, the pidfd,
 * the dump job, the stop's request and stream. One timer per target carries
 * the nearest of: the request's deadline, the stop's deadline, the end of
 * the exit grace, the retry, the next evaluation (a sustain or cooldown
 * ending, or the 250 ms tick while attached), the next poll of /proc.
 *
 * Metrics from /proc (rss, private-memory, ...) are polled while attached
 * (procpoll.c); each poll is evaluated at once, so such a rule fires while
 * the stream is quiet or late.
 *
 * Evaluation happens after every decoded event that can move a metric, not
 * once per read, so a spike that rises and falls within one burst of the
 * stream (the runtime flushes every 100 ms) is still seen at its top. What
 * a fire does (journal, hooks, context, the dump and its publication) is
 * fire.c's, what the rules' conditions learn of the process conditions.c's;
 * this file watches the dump job on the loop and reports its end. */
#include "dumpwatch/target.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/cgroup.h"
#include "dumpwatch/ctxtrack.h"
#include "dumpwatch/log.h"
#include "dumpwatch/procstat.h"
#include "dumpwatch/report.h"
#include "target_shared.h"

#define TARGET_SESSION_BUFFER_MB 16

static void arm(struct target *t);
static void collect(struct target *t);
static void on_op(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_stop_op(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_stop_stream(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_pidfd(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_dump(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns);

static int request_ms(const struct target *t)
{
	return t->cfg->request_ms > 0 ? t->cfg->request_ms : TARGET_REQUEST_MS;
}

/* ---- journal ---------------------------------------------------------- */

static struct json_object *rule_names_json(const struct target *t)
{
	struct json_object *a = json_object_new_array();
	for (size_t i = 0; i < t->n_rules; i++)
		json_object_array_add(a, json_object_new_string(t->rules[i].fr.rule.name));
	return a;
}

static void rule_names_text(const struct target *t, char *out, size_t len)
{
	size_t off = 0;
	out[0] = '\0';
	for (size_t i = 0; i < t->n_rules && off < len; i++) {
		int n = snprintf(out + off, len - off, "%s%s", i ? "," : "", t->rules[i].fr.rule.name);
		if (n > 0)
			off += (size_t)n;
	}
}

/* The detach record that closes an attach record, once. */
static void journal_detach(struct target *t, const char *why)
{
	if (!t->attach_open)
		return;
	t->attach_open = 0;
	struct json_object *rec = rec_new(t);
	json_object_object_add(rec, "reason", json_object_new_string(why));
	json_object_object_add(rec, "dumps", json_object_new_int((int)t->dumps));
	journal_write(t->cfg->journal, "detach", rec);
	log_info("detached from pid %d (%s): %s", (int)t->dt.pid, t->name, why);
}

/* ---- descriptors on the loop ------------------------------------------ */

/* Keeps an op's descriptor registered for what it waits for. A new
 * attempt's socket may have the number of the last one, which left the epoll
 * set as it was closed: it is registered anew. */
void target_op_watch(struct target *t, struct ipc_op *op, struct op_reg *reg, loop_fd_fn fn)
{
	int fd = op ? ipc_op_fd(op) : -1;
	uint32_t ev = op ? ipc_op_events(op) : 0;
	unsigned attempt = op ? op->attempt : 0;

	if (reg->fd >= 0 && (reg->fd != fd || reg->attempt != attempt)) {
		loop_del(t->cfg->loop, reg->fd);
		reg->fd = -1;
	}
	if (fd < 0)
		return;
	if (reg->fd == fd) {
		if (reg->ev != ev && loop_mod(t->cfg->loop, fd, ev) == 0)
			reg->ev = ev;
		return;
	}
	if (loop_add(t->cfg->loop, fd, ev, fn, t) == 0) {
		reg->fd = fd;
		reg->ev = ev;
		reg->attempt = attempt;
	}
}

void target_op_unwatch(struct target *t, struct op_reg *reg)
{
	if (reg->fd >= 0)
		loop_del(t->cfg->loop, reg->fd);
	reg->fd = -1;
}

void target_op_drop(struct target *t, struct ipc_op **op, struct op_reg *reg)
{
	if (!*op)
		return;
	target_op_unwatch(t, reg);
	ipc_op_clear(*op);
	free(*op);
	*op = NULL;
}

static void stream_off(struct target *t)
{
	target_ticks_close(t);
	if (t->session && t->stream_on_loop)
		loop_del(t->cfg->loop, session_fd(t->session));
	t->stream_on_loop = 0;
}

/* ---- stopping a session ----------------------------------------------- */

static void stop_done(struct target *t)
{
	target_op_drop(t, &t->stop_op, &t->stop_reg);
	if (t->stop_stream >= 0) {
		loop_del(t->cfg->loop, t->stop_stream);
		close(t->stop_stream);
		t->stop_stream = -1;
	}
	t->stop_deadline = 0;
}

/* Ends the current session without waiting: its stream moves aside and is
 * drained while StopTracing goes out on its own connection; both end at the
 * stream's end or TARGET_STOP_MS. A stop still in flight is abandoned. */
static void session_end(struct target *t)
{
	uint64_t id = 0;
	int fd;

	if (!t->session)
		return;
	target_ticks_close(t);
	stream_off(t);
	fd = session_take_stream(t->session, &id);
	session_free(t->session);
	t->session = NULL;
	t->attached_ns = 0;
	if (fd < 0)
		return;
	stop_done(t);
	if (t->exited) {
		close(fd);
		return;
	}
	t->stop_stream = fd;
	loop_add(t->cfg->loop, fd, EPOLLIN, on_stop_stream, t);
	t->stop_deadline = loop_now() + (int64_t)TARGET_STOP_MS * 1000000LL;
	t->stop_op = calloc(1, sizeof(*t->stop_op));
	if (t->stop_op) {
		const struct ipc_endpoint ep = discovery_endpoint(&t->dt);
		if (ipc_op_stop_tracing(t->stop_op, &ep, id, TARGET_STOP_MS) < 0)
			target_op_drop(t, &t->stop_op, &t->stop_reg); /* not on the loop yet: stop_done took it off */
		else
			target_op_watch(t, t->stop_op, &t->stop_reg, on_stop_op);
	}
}

static void maybe_quiet(struct target *t)
{
	if (!target_busy(t) && t->hooks->quiet)
		t->hooks->quiet(t->ctx, t);
}

static void stop_step(struct target *t)
{
	if (!t->stop_op)
		return;
	int r = ipc_op_step(t->stop_op, loop_now());
	if (r == 0) {
		target_op_watch(t, t->stop_op, &t->stop_reg, on_stop_op);
		return;
	}
	if (r < 0)
		log_debug("pid=%d: stop tracing: %s", (int)t->dt.pid, t->stop_op->err);
	target_op_drop(t, &t->stop_op, &t->stop_reg);
	/* Answered or refused: the stream ends as the runtime flushes; the
	 * deadline still holds. */
}

static void on_stop_op(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)l;
	(void)fd;
	(void)events;
	stop_step(t);
	arm(t);
}

static void on_stop_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)l;
	(void)events;

	/* What the runtime flushes after the stop, to its end; a runtime
	 * blocked on a full socket would not get round to answering. Read and
	 * dropped: one buffer serves every target (one thread). */
	static uint8_t drain[16384];
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(fd, drain, sizeof(drain));
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		stop_done(t);
		arm(t);
		maybe_quiet(t);
		return;
	}
}

/* ---- attach ----------------------------------------------------------- */

static void schedule_retry(struct target *t)
{
	t->backoff_ns = t->backoff_ns ? t->backoff_ns * 2 : TARGET_RETRY_MIN_NS;
	if (t->backoff_ns > TARGET_RETRY_MAX_NS)
		t->backoff_ns = TARGET_RETRY_MAX_NS;
	t->retry_ns = loop_now() + t->backoff_ns;
}

/* Before attaching again, the socket is looked for anew: the one it had may
 * be gone or served by someone else now. Cheap: two stats. */
static void refresh_socket(struct target *t)
{
	struct dn_find_opts o = {.exact_only = 1, .skip = t->skip, .n_skip = t->n_skip};
	const char *slash = strrchr(t->dt.socket_path, '/');
	const char *hint = slash ? slash + 1 : NULL;
	struct dn_target found;
	char err[8];

	o.hints = &hint;
	o.n_hints = hint ? 1 : 0;
	if (discovery_find_ex(t->dt.pid, &o, &found, err, sizeof(err)) < 0 || found.starttime != t->dt.starttime)
		return;
	if (strcmp(found.socket_path, t->dt.socket_path) != 0)
		log_debug("pid %d: diagnostics socket now %s", (int)t->dt.pid, found.socket_path);
	memcpy(t->dt.socket_path, found.socket_path, sizeof(t->dt.socket_path));
	t->dt.sock = found.sock;
}

/* Whether t's rules take allocation ticks only near a threshold (ticks.c). */
static int gates_ticks(const struct target *t)
{
	return !t->cfg->opt->ticks_always && target_ticks_gate(t->rules, t->n_rules);
}

static void build_subscription(const struct target *t, struct session_subscription *sub, int *ticks_gated)
{
	memset(sub, 0, sizeof(*sub));
	sub->counter_interval_ms = t->cfg->opt->counter_interval_ms ? t->cfg->opt->counter_interval_ms : 1000;
	sub->all_events = t->cfg->opt->all_events;
	for (size_t i = 0; i < t->n_rules; i++) {
		const struct rule *r = &t->rules[i].fr.rule;
		for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++)
			session_subscription_add_metric(sub, &r->conds[c].metric);
	}
	if (t->cfg->runtime_counters && t->n_rules > 0)
		session_subscription_add_runtime_counters(sub);
	/* The ticks come and go with a second session (ticks.c); the counters
	 * bound the values meanwhile. */
	*ticks_gated = gates_ticks(t);
	if (*ticks_gated) {
		/* The GC events stay: the runtime raises the ticks of the
		 * second session only beside them (seen on .NET 10: a rate
		 * rule's ticks session alone got none). */
		sub->needs = (sub->needs & ~NEED_ALLOC_TICKS) | NEED_GC;
		session_subscription_add_runtime_counters(sub);
		sub->runtime_interval_ms = target_bound_interval_ms(t);
	}
}

static void gone(struct target *t);

static void attach_failed(struct target *t, int r, const char *err)
{
	snprintf(t->error, sizeof(t->error), "%s", err);
	t->state = TARGET_IDLE;
	if (discovery_exited(t->dt.pid, t->dt.starttime)) {
		gone(t);
		return;
	}
	if (r == -EPERM)
		discovery_skip_add(t->skip, &t->n_skip, TARGET_SKIP_MAX,
		                   t->dt.sock); /* served by someone else now: not this socket again */
	struct json_object *rec = rec_new(t);
	json_object_object_add(rec, "rules", rule_names_json(t));
	if (t->cfg->retry) {
		schedule_retry(t);
		json_object_object_add(rec, "retry_in_s", json_object_new_int64(t->backoff_ns / 1000000000LL));
		log_error("cannot attach to pid %d (%s): %s; trying again in %lld s", (int)t->dt.pid, t->name, err,
		          (long long)(t->backoff_ns / 1000000000LL));
	} else {
		log_error("%s", err);
	}
	journal_err(t, "attach-failed", rec, err);
	arm(t);
	if (t->hooks->attach_failed)
		t->hooks->attach_failed(t->ctx, t, r, err);
}

static void attached(struct target *t)
{
	int fd = ipc_op_take_stream(t->op);
	uint64_t id = t->op->session_id;
	char names[512];
	int again = t->resubscribe;

	target_op_drop(t, &t->op, &t->op_reg);
	if (again) {
		session_end(t); /* the replaced session, now that its successor runs */
	} else if (t->session) {
		session_free(t->session); /* of an attachment that ended */
		t->session = NULL;
	}
	if (t->ct)
		ctxtrack_session_end(t->ct);
	target_ticks_close(t); /* of the replaced session's metrics */
	t->session = session_new(&t->dt, on_event, t);
	if (!t->session) {
		close(fd);
		attach_failed(t, -ENOMEM, "out of memory");
		return;
	}
	session_set_stream(t->session, fd, id, &t->info);
	metrics_set_meter_interval(session_metrics(t->session), session_meter_interval_ns(&t->sub));
	metrics_ticks_gated(session_metrics(t->session), t->ticks_gated);
	t->ticks.gated = t->ticks_gated;
	t->ticks.retry_ns = 0;
	target_watch_exceptions(t);
	if (loop_add(t->cfg->loop, fd, EPOLLIN, on_stream, t) < 0) {
		session_free(t->session);
		t->session = NULL;
		attach_failed(t, -ENOMEM, "cannot watch the event stream");
		return;
	}
	t->stream_on_loop = 1;
	t->state = TARGET_ATTACHED;
	t->retry_ns = 0;
	t->backoff_ns = 0;
	t->error[0] = '\0';
	t->attached_ns = loop_now();
	t->tick_ns = t->attached_ns + TARGET_TICK_NS;
	t->proc_warned = 0;
	t->meter_said = 0;
	t->verbose.start_ns = t->attached_ns;
	t->attach_open = 1;
	if (t->pidfd < 0) {
		t->pidfd = (int)syscall(SYS_pidfd_open, t->dt.pid, 0);
		if (t->pidfd >= 0)
			loop_add(t->cfg->loop, t->pidfd, EPOLLIN, on_pidfd, t);
	}
	struct json_object *rec = rec_new(t), *conds = json_object_new_array(), *dirs = json_object_new_array();
	json_object_object_add(rec, "rules", rule_names_json(t));
	for (size_t i = 0; i < t->n_rules; i++) {
		const struct rule *r = &t->rules[i].fr.rule;
		for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++)
			json_object_array_add(conds, json_object_new_string(r->conds[c].text));
		int seen = 0;
		for (size_t k = 0; k < i; k++)
			seen |= strcmp(dump_dir_of(t, &t->rules[k]), dump_dir_of(t, &t->rules[i])) == 0;
		if (!seen)
			json_object_array_add(dirs, json_object_new_string(dump_dir_of(t, &t->rules[i])));
	}
	json_object_object_add(rec, "conditions", conds);
	/* Nothing is known of a metric yet but what the runtime has already
	 * sent: "metrics-known" records follow as the rest become known. */
	struct json_object *known = json_object_new_object(), *unknown = json_object_new_object();
	for (size_t i = 0; i < t->n_rules; i++) {
		memset(t->rules[i].known, 0, sizeof(t->rules[i].known));
		memset(t->rules[i].meter_warned, 0, sizeof(t->rules[i].meter_warned));
	}
	t->all_known = target_scan_known(t, t->attached_ns, known, unknown, NULL, 0) == 0;
	json_object_object_add(rec, "known", target_names_of(known));
	json_object_object_add(rec, "unknown", target_names_of(unknown));
	json_object_put(known);
	json_object_put(unknown);
	json_object_object_add(rec, "runtime_version", json_object_new_string(t->info.runtime_version));
	json_object_object_add(rec, "command_line", json_object_new_string(t->cmdline));
	json_object_object_add(rec, "dump_dirs", dirs);
	if (t->ticks.gated)
		json_object_object_add(rec, "bound_interval_ms", json_object_new_int((int)target_bound_interval_ms(t)));
	if (again)
		json_object_object_add(rec, "resubscribed", json_object_new_boolean(1));
	journal_write(t->cfg->journal, "attach", rec);
	rule_names_text(t, names, sizeof(names));
	log_info("%s pid %d (%s, .NET %s) for rules %s", again ? "resubscribed to" : "attached to", (int)t->dt.pid,
	         t->name, t->info.runtime_version[0] ? t->info.runtime_version : "?", names);
	arm(t);
	if (t->hooks->attached)
		t->hooks->attached(t->ctx, t);
}

static void probed(struct target *t, int r, const char *err)
{
	if (r == 0) {
		t->info = t->op->info;
		t->have_info = 1;
	}
	target_op_drop(t, &t->op, &t->op_reg);
	discovery_process_name(&t->dt, t->have_info ? t->info.entry_assembly : "", t->name, sizeof(t->name));
	if (discovery_cmdline(t->dt.pid, t->cmdline, sizeof(t->cmdline)) < 0)
		snprintf(t->cmdline, sizeof(t->cmdline), "%s", t->info.command_line);
	t->state = TARGET_IDLE;
	if (r < 0)
		snprintf(t->error, sizeof(t->error), "%s", err);
	arm(t);
	if (t->hooks->probed)
		t->hooks->probed(t->ctx, t, r, err);
}

/* Advances the request in flight. */
static void op_step(struct target *t)
{
	int r = ipc_op_step(t->op, loop_now());

	if (r == 0) {
		target_op_watch(t, t->op, &t->op_reg, on_op);
		arm(t);
		return;
	}
	if (t->state == TARGET_PROBING) {
		char err[512];
		snprintf(err, sizeof(err), "%s", r < 0 ? t->op->err : "");
		probed(t, r < 0 ? r : 0, err);
		return;
	}
	if (r == 1 && t->op->kind == IPC_OP_PROCESS_INFO) {
		/* Attaching after a failed probe: now the stream. */
		t->info = t->op->info;
		t->have_info = 1;
		discovery_process_name(&t->dt, t->info.entry_assembly, t->name, sizeof(t->name));
		target_op_drop(t, &t->op, &t->op_reg);
		collect(t);
		return;
	}
	if (r < 0) {
		char err[512];
		snprintf(err, sizeof(err), "%s", t->op->err);
		target_op_drop(t, &t->op, &t->op_reg);
		if (t->resubscribe) {
			/* The old session goes on: it is only replaced on success. */
			t->state = TARGET_ATTACHED;
			t->resubscribe = 0;
			log_error("cannot resubscribe to pid %d (%s): %s; keeping the current session", (int)t->dt.pid,
			          t->name, err);
			arm(t);
			return;
		}
		attach_failed(t, r, err);
		return;
	}
	attached(t);
}

static void on_op(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)l;
	(void)fd;
	(void)events;
	op_step(t);
}

void target_probe(struct target *t)
{
	const struct ipc_endpoint ep = discovery_endpoint(&t->dt);

	if (t->state != TARGET_NEW)
		return;
	t->op = calloc(1, sizeof(*t->op));
	if (!t->op) {
		probed(t, -ENOMEM, "out of memory");
		return;
	}
	t->state = TARGET_PROBING;
	ipc_op_process_info(t->op, &ep, request_ms(t));
	op_step(t);
}

/* Starts CollectTracing with the rules' subscription. */
static void collect(struct target *t)
{
	struct ipc_provider provs[SESSION_MAX_PROVIDERS];
	char args[SESSION_ARGS_MAX];
	session_subscription_set_runtime(&t->sub, t->have_info ? t->info.runtime_version : "");
	size_t n = session_providers(&t->sub, provs, args, sizeof(args));
	const struct ipc_endpoint ep = discovery_endpoint(&t->dt);

	if (!t->op)
		t->op = calloc(1, sizeof(*t->op));
	if (!t->op || n == 0) {
		attach_failed(t, -ENOMEM, n == 0 ? "nothing to subscribe to" : "out of memory");
		return;
	}
	ipc_op_collect_tracing(t->op, &ep, provs, n, TARGET_SESSION_BUFFER_MB, request_ms(t));
	op_step(t);
}

void target_attach(struct target *t)
{
	struct session_subscription sub;
	struct ipc_provider provs[SESSION_MAX_PROVIDERS];
	char args[SESSION_ARGS_MAX];
	int gated;

	if (t->n_rules == 0 || t->exited || t->op || t->state == TARGET_NEW || t->state == TARGET_PROBING ||
	    t->state == TARGET_ENDING || t->state == TARGET_GONE)
		return;
	build_subscription(t, &sub, &gated);
	if (t->state == TARGET_ATTACHED && session_subscription_equal(&sub, &t->sub) && gated == t->ticks_gated)
		return;
	if (session_providers(&sub, provs, args, sizeof(args)) == 0)
		return;
	t->resubscribe = t->state == TARGET_ATTACHED;
	if (!t->resubscribe) {
		refresh_socket(t);
		t->state = TARGET_ATTACHING;
	}
	t->retry_ns = 0;
	t->sub = sub;
	t->ticks_gated = gated;
	if (!t->have_info) {
		/* The probe got no answer worth having: the runtime must say
		 * who it is (its version picks createdump) before we trace. */
		const struct ipc_endpoint ep = discovery_endpoint(&t->dt);
		t->op = calloc(1, sizeof(*t->op));
		if (!t->op) {
			attach_failed(t, -ENOMEM, "out of memory");
			return;
		}
		ipc_op_process_info(t->op, &ep, request_ms(t));
		op_step(t);
		return;
	}
	collect(t);
}

void target_detach(struct target *t, const char *why)
{
	target_op_drop(t, &t->op, &t->op_reg);
	t->resubscribe = 0;
	session_end(t);
	if (t->state == TARGET_ATTACHED || t->state == TARGET_ATTACHING)
		t->state = TARGET_IDLE;
	t->retry_ns = 0;
	journal_detach(t, why);
	arm(t);
}

/* ---- the stream's end, the process's exit ----------------------------- */

/* The process exited: once nothing is in flight, say so. */
static void gone(struct target *t)
{
	t->exited = 1;
	/* Its pidfd has said what it had to say; left on the loop it stays
	 * readable and would call here on every turn while a dump or a heap
	 * summary of the dead process ends (a core spun at 100 %). */
	if (t->pidfd >= 0) {
		loop_del(t->cfg->loop, t->pidfd);
		close(t->pidfd);
		t->pidfd = -1;
	}
	if (t->job)
		return; /* on_dump finishes the story */
	target_op_drop(t, &t->op, &t->op_reg);
	stream_off(t);
	if (t->session) {
		uint64_t id;
		int fd = session_take_stream(t->session, &id);
		if (fd >= 0)
			close(fd);
	}
	stop_done(t);
	t->state = TARGET_GONE;
	t->retry_ns = 0;
	procstat_close(t->ps);
	t->ps = NULL;
	loop_timer_disarm(t->cfg->loop, &t->timer);
	journal_detach(t, "exited");
	if (t->hooks->exited)
		t->hooks->exited(t->ctx, t);
}

/* The session ended or broke while the process lives on. */
static void session_failed(struct target *t, const char *err)
{
	stream_off(t);
	if (t->session) {
		uint64_t id;
		int fd = session_take_stream(t->session, &id);
		if (fd >= 0)
			close(fd);
	}
	t->state = TARGET_IDLE;
	t->attached_ns = 0;
	snprintf(t->error, sizeof(t->error), "%s", err);
	struct json_object *rec = rec_new(t);
	if (t->cfg->retry) {
		schedule_retry(t);
		json_object_object_add(rec, "retry_in_s", json_object_new_int64(t->backoff_ns / 1000000000LL));
		log_error("%s; attaching again in %lld s", err, (long long)(t->backoff_ns / 1000000000LL));
	} else {
		log_error("%s", err);
	}
	journal_err(t, "session-failed", rec, err);
	arm(t);
	if (t->hooks->session_failed)
		t->hooks->session_failed(t->ctx, t, err);
}

/* The stream ended (cleanly or not): the process exiting, most often; its
 * exit completes a moment after its sockets close. Wait for the pidfd, up to
 * the grace, before calling it a failure. */
static void stream_ended(struct target *t, const char *err)
{
	stream_off(t);
	snprintf(t->end_err, sizeof(t->end_err), "%s", err);
	if (discovery_exited(t->dt.pid, t->dt.starttime)) {
		gone(t);
		return;
	}
	t->state = TARGET_ENDING;
	t->grace_ns = loop_now() + (t->cfg->exit_grace_ns ? t->cfg->exit_grace_ns : TARGET_EXIT_GRACE_NS);
	arm(t);
}

static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	char err[512];
	(void)l;
	(void)fd;
	(void)events;

	int r = session_read(t->session, err, sizeof(err));
	if (r == 0 || t->state != TARGET_ATTACHED)
		return;
	stream_ended(t, r == 1 ? "the runtime ended the event stream" : err);
}

static void on_pidfd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)l;
	(void)fd;
	(void)events;
	gone(t);
}

/* ---- evaluation ------------------------------------------------------ */

/* A rule fired (target_fire): its dump is watched on the loop, or, when it
 * could not start, its end is reported from the timer (never from inside
 * the stream's read). */
static void fire(struct target *t, size_t i, int64_t now)
{
	int rc = target_fire(t, i, now);

	if (rc < 0) {
		t->deferred_end = 1;
		t->deferred_rule = i;
		t->deferred_rc = rc;
		loop_timer_arm(t->cfg->loop, &t->timer, loop_now());
		return;
	}
	loop_add(t->cfg->loop, dump_job_fd(t->job), EPOLLIN, on_dump, t);
}

/* Evaluates every rule; fires the first that is due (one dump at a time:
 * the process is frozen meanwhile anyway). Returns 1 when a hook ran (t may
 * be gone), else 0. */
static int evaluate(struct target *t, int64_t now)
{
	struct metrics_at rc;

	if (t->job || t->deferred_end || t->state != TARGET_ATTACHED || !t->session)
		return 0;
	rc.m = session_metrics(t->session);
	rc.now_ns = now;
	target_note_known(t, now);
	for (size_t i = 0; i < t->n_rules; i++) {
		struct target_rule *tr = &t->rules[i];
		int64_t next = 0;
		enum eval_result res = eval_step(&tr->fr.rule, &tr->st, metrics_read_eval, &rc, now, &next);
		tr->last = res;
		tr->next_ns = (res == EVAL_PENDING || res == EVAL_COOLDOWN) ? next : 0;
		if (res == EVAL_LIMIT && !tr->at_limit) {
			/* Once per fire: the conditions hold again, but the rule
			 * has taken all the dumps its limits allow. */
			tr->at_limit = 1;
			struct json_object *rec = rec_rule(t, tr->fr.rule.name);
			json_object_object_add(rec, "fires", json_object_new_int64(tr->st.fires));
			json_object_object_add(rec, "max_dumps", json_object_new_int64(tr->fr.rule.limits.max_dumps));
			journal_write(t->cfg->journal, "limit", rec);
			log_info("rule %s holds for pid %d (%s) but has reached its limit of %u dump(s)",
			         tr->fr.rule.name, (int)t->dt.pid, t->name, tr->fr.rule.limits.max_dumps);
		}
		if (res == EVAL_FIRE) {
			fire(t, i, now);
			return 1;
		}
	}
	return 0;
}

static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	(void)s;
	target_on_event(ctx, r, t_ns);
}

void target_on_event(struct target *t, const struct ev_record *r, int64_t t_ns)
{
	int matters = metrics_event_matters(r);
	if (r->type == EV_METER_ERROR)
		target_meter_error(t, &r->u.meter);
	else if (r->type == EV_METER_VALUE)
		matters = target_meter_fit(t, &r->u.meter);

	if (t->cfg->opt->verbose) {
		char prefix[32] = "";
		if (t->cfg->pid_prefix)
			snprintf(prefix, sizeof(prefix), "pid %d: ", (int)t->dt.pid);
		report_verbose_event(stdout, &t->verbose, prefix, session_metrics(t->session), r, t_ns);
	}
	if (t->ct)
		ctxtrack_on_event(t->ct, session_metrics(t->session), r, t_ns);
	/* A sample may bring a rule near: its ticks start now, not at the
	 * next tick of the timer. */
	if (r->type == EV_COUNTER && t->ticks.gated && !t->ticks.on_ns && !t->in_event)
		target_ticks_update(t, loop_now());
	if (matters && !t->deferred_end) {
		t->in_event = 1;
		evaluate(t, loop_now());
		t->in_event = 0;
	}
}

static void on_dump(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	(void)events;

	loop_del(l, fd);
	int rc = target_fire_finish(t);
	if (rc == -EAGAIN) {
		loop_add(l, dump_job_fd(t->job), EPOLLIN, on_dump, t);
		return;
	}
	size_t i = t->job_rule;
	/* The stream was not read while the process was frozen: its stall
	 * clock starts again now. */
	if (t->exited) {
		if (t->hooks->dump_ended)
			t->hooks->dump_ended(t->ctx, t, i, rc);
		gone(t);
		return;
	}
	arm(t);
	if (t->hooks->dump_ended)
		t->hooks->dump_ended(t->ctx, t, i, rc);
}

/* ---- the timer -------------------------------------------------------- */

static void on_timer(struct loop *l, void *ctx)
{
	struct target *t = ctx;
	int64_t now = loop_now();
	char err[512];
	(void)l;

	if (t->deferred_end) {
		t->deferred_end = 0;
		arm(t);
		if (t->hooks->dump_ended)
			t->hooks->dump_ended(t->ctx, t, t->deferred_rule, t->deferred_rc);
		return;
	}
	if (t->stop_deadline && now >= t->stop_deadline) {
		stop_done(t);
		maybe_quiet(t);
		/* t may be freed by the owner in quiet only when it is done
		 * with it: then nothing else is pending here. */
		return;
	}
	if (t->op && now >= ipc_op_wake(t->op)) {
		op_step(t);
		return;
	}
	if (t->stop_op && now >= ipc_op_wake(t->stop_op))
		stop_step(t);
	if (t->ticks.op && now >= ipc_op_wake(t->ticks.op))
		target_ticks_step(t);
	if (t->state == TARGET_ENDING && now >= t->grace_ns) {
		if (discovery_exited(t->dt.pid, t->dt.starttime)) {
			gone(t);
			return;
		}
		char why[512];
		snprintf(why, sizeof(why), "%s", t->end_err);
		session_failed(t, why);
		return;
	}
	if (t->state == TARGET_IDLE && t->retry_ns && now >= t->retry_ns && !t->job) {
		t->retry_ns = 0;
		if (discovery_exited(t->dt.pid, t->dt.starttime)) {
			gone(t);
			return;
		}
		if (!t->hooks->may_attach || t->hooks->may_attach(t->ctx, t))
			target_attach(t);
		else
			arm(t);
		return;
	}
	/* A stream stuck inside a block; not while a dump freezes the process
	 * on purpose. */
	if (t->state == TARGET_ATTACHED && !t->job && t->session &&
	    session_stalled(t->session, now, SESSION_STALL_NS, err, sizeof(err))) {
		stream_off(t);
		session_failed(t, err);
		return;
	}
	int polled = 0;
	if (t->ps && t->state == TARGET_ATTACHED && t->session && !t->job && t->proc_next_ns &&
	    now >= t->proc_next_ns) {
		if (target_proc_poll(t, now))
			evaluate(t, now);
		polled = 1;
	}
	if (t->state == TARGET_ATTACHED && t->tick_ns && now < t->tick_ns) {
		/* Woken for a poll or a rule's sustain or cooldown end. */
		if (!polled)
			evaluate(t, now);
		arm(t);
		return;
	}
	if (t->state == TARGET_ATTACHED)
		t->tick_ns = now + TARGET_TICK_NS;
	if (t->state == TARGET_ATTACHED || t->ticks.s || t->ticks.op)
		target_ticks_update(t, now);
	if (t->ct && t->state == TARGET_ATTACHED && t->session && !t->job)
		ctxtrack_tick(t->ct, session_metrics(t->session), now);
	evaluate(t, now);
	arm(t);
}

void target_rearm(struct target *t)
{
	arm(t);
}

/* Arms the timer for the nearest thing t waits for. */
static void arm(struct target *t)
{
	int64_t now = loop_now(), at = 0;
#define NEAR(x)                                                                                                        \
	do {                                                                                                           \
		int64_t x_ = (x);                                                                                      \
		if (x_ > 0 && (at == 0 || x_ < at))                                                                    \
			at = x_;                                                                                       \
	} while (0)

	if (t->state == TARGET_GONE) {
		loop_timer_disarm(t->cfg->loop, &t->timer);
		return;
	}
	target_proc_sync(t);
	if (t->op)
		NEAR(ipc_op_wake(t->op));
	if (t->stop_op)
		NEAR(ipc_op_wake(t->stop_op));
	NEAR(t->stop_deadline);
	NEAR(target_ticks_wake(t));
	if (t->deferred_end)
		NEAR(now); /* a dump that could not start, reported from the timer */
	if (t->state == TARGET_ENDING)
		NEAR(t->grace_ns);
	if (t->state == TARGET_IDLE)
		NEAR(t->retry_ns);
	if (t->state == TARGET_ATTACHED) {
		NEAR(t->tick_ns ? t->tick_ns : now + TARGET_TICK_NS);
		if (t->ps && !t->job)
			NEAR(t->proc_next_ns);
		for (size_t i = 0; i < t->n_rules; i++)
			NEAR(t->rules[i].next_ns);
	}
#undef NEAR
	if (at && at <= now)
		at = now + 1;
	loop_timer_arm(t->cfg->loop, &t->timer, at);
}

/* ---- life ------------------------------------------------------------- */

struct target *target_new(const struct target_config *cfg, const struct target_hooks *hooks, void *ctx,
                          const struct dn_target *dt)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cfg = cfg;
	t->hooks = hooks;
	t->ctx = ctx;
	t->dt = *dt;
	t->op_reg.fd = t->stop_reg.fd = t->ticks.reg.fd = t->stop_stream = t->pidfd = t->fx_store = -1;
	loop_timer_init(&t->timer, on_timer, t);
	discovery_process_name(&t->dt, "", t->name, sizeof(t->name));
	{
		/* Gone already, or unreadable: no container said, which is what
		 * a host process has too. */
		char err[256];
		if (cgroup_read(t->dt.pid, &t->ident, err, sizeof(err)) < 0)
			memset(&t->ident, 0, sizeof(t->ident));
	}
	/* Without memory for it, dumps go without their context. */
	t->ct = ctxtrack_new(cfg->opt->history_ns);
	return t;
}

void target_free(struct target *t)
{
	if (!t)
		return;
	if (t->job) {
		loop_del(t->cfg->loop, dump_job_fd(t->job));
		target_fire_abandon(t, "stopped before the dump completed; the partial file was removed");
	}
	target_op_drop(t, &t->op, &t->op_reg);
	stream_off(t);
	target_ticks_close(t);
	if (t->session) {
		/* Closing the connection ends the runtime's session as well: it
		 * stops one whose client is gone at its next write. */
		uint64_t id;
		int fd = session_take_stream(t->session, &id);
		if (fd >= 0)
			close(fd);
		session_free(t->session);
	}
	stop_done(t);
	if (t->pidfd >= 0) {
		loop_del(t->cfg->loop, t->pidfd);
		close(t->pidfd);
	}
	loop_timer_disarm(t->cfg->loop, &t->timer);
	procstat_close(t->ps);
	ctxtrack_free(t->ct);
	free(t->rules);
	free(t);
}

void target_end(struct target *t, const char *why)
{
	if (!t)
		return;
	journal_detach(t, why);
	target_free(t);
}

void target_retry_soon(struct target *t)
{
	if (t->state != TARGET_IDLE || !t->retry_ns || t->job)
		return;
	t->retry_ns = loop_now();
	arm(t);
}

int target_dump_progress(const struct target *t, uint64_t *written, uint64_t *estimate)
{
	if (!t->job)
		return -1;
	return dump_job_progress(t->job, written, estimate);
}

size_t target_history_bytes(const struct target *t)
{
	return t->ct ? ctxtrack_bytes(t->ct) : 0;
}

int target_set_rules(struct target *t, struct target_rule *rules, size_t n)
{
	if (t->job)
		return -EBUSY;
	free(t->rules);
	t->rules = rules;
	t->n_rules = rules ? n : 0;
	t->proc_needs = 0;
	for (size_t i = 0; i < t->n_rules; i++) {
		if (t->ct)
			ctxtrack_add_conditions(t->ct, &t->rules[i].fr.rule);
		t->proc_needs |= rule_needs(&t->rules[i].fr.rule) & (NEED_PROC | NEED_PROC_FDS);
	}
	t->all_known = 0; /* a new rule's metrics are journaled when known */
	target_watch_exceptions(t);
	if (t->n_rules == 0) {
		t->retry_ns = 0;
		target_detach(t, "no rule matches it any more");
	}
	arm(t);
	return 0;
}

const struct target_rule *target_rules(const struct target *t, size_t *ret_n)
{
	*ret_n = t->n_rules;
	return t->rules;
}

int target_busy(const struct target *t)
{
	return t->job || t->stop_stream >= 0 || t->stop_op;
}

int target_dumping(const struct target *t)
{
	return t->job != NULL;
}

int target_retrying(const struct target *t, int64_t *ret_at)
{
	if (ret_at)
		*ret_at = t->retry_ns;
	return t->state == TARGET_IDLE && t->retry_ns != 0;
}

int target_fds(const struct target *t)
{
	return (t->session && session_fd(t->session) >= 0) + (t->pidfd >= 0) + (t->op != NULL) + (t->stop_stream >= 0) +
	       (t->stop_op != NULL) + target_ticks_fds(t) + (t->job ? 8 : 0) + (t->ps ? procstat_fds(t->ps) : 0);
}

/* The /proc files the rules poll: status, and the fd directory for fds. */

int target_fds_to_attach(const struct target *t)
{
	/* With the second session near a threshold: its request and stream. */
	int ticks = gates_ticks(t) ? 2 : 0;
	return 2 + ticks + target_proc_files(t);
}

int target_fds_pending(const struct target *t)
{
	if (t->state != TARGET_ATTACHING)
		return 0;
	int ticks = gates_ticks(t) ? 2 : 0;
	return (t->pidfd < 0) + (t->ps ? 0 : target_proc_files(t)) + ticks;
}

enum target_state target_state(const struct target *t)
{
	return t->state;
}

const struct dn_target *target_process(const struct target *t)
{
	return &t->dt;
}

const char *target_name(const struct target *t)
{
	return t->name;
}

const char *target_cmdline(const struct target *t)
{
	return t->cmdline;
}

const struct cgroup_ident *target_ident(const struct target *t)
{
	return &t->ident;
}

const struct ipc_process_info *target_info(const struct target *t)
{
	return &t->info;
}

struct session *target_session(const struct target *t)
{
	return t->session;
}

uint32_t target_dumps(const struct target *t)
{
	return t->dumps;
}

int64_t target_attached_ns(const struct target *t)
{
	return t->attached_ns;
}

const char *target_error(const struct target *t)
{
	return t->error;
}

const struct dn_sock_id *target_skipped(const struct target *t, size_t *ret_n)
{
	*ret_n = t->n_skip;
	return t->skip;
}
