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
 * Metrics from /proc (rss, private-memory, ...) are polled while attached,
 * every target_config.proc_interval_ns, from files opened once; each poll
 * is evaluated at once, so such a rule fires while the stream is quiet or
 * late.
 *
 * Evaluation happens after every decoded event that can move a metric, not
 * once per read, so a spike that rises and falls within one burst of the
 * stream (the runtime flushes every 100 ms) is still seen at its top. */
#include "dumpwatch/target.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/cgroup.h"
#include "dumpwatch/ctxtrack.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/log.h"
#include "dumpwatch/procstat.h"
#include "dumpwatch/report.h"
#include "dumpwatch/units.h"

#define TARGET_SESSION_BUFFER_MB 16
#define TARGET_SKIP_MAX 4

/* An op's descriptor as registered on the loop. */
struct op_reg {
	int fd; /* -1: none */
	uint32_t ev;
	unsigned attempt;
};

struct target {
	const struct target_config *cfg;
	const struct target_hooks *hooks;
	void *ctx;
	struct dn_target dt;
	enum target_state state;
	char name[256];
	char cmdline[4096];
	struct cgroup_ident ident; /* its container and pod, read once when found */
	struct ipc_process_info info;
	int have_info;
	char error[512];

	struct target_rule *rules;
	size_t n_rules;
	struct session_subscription sub; /* of the attached session */

	/* The request in flight (ProcessInfo or CollectTracing). */
	struct ipc_op *op;
	struct op_reg op_reg;
	int resubscribe; /* the attach in flight replaces a session */
	struct session *session;
	int stream_on_loop;
	int64_t attached_ns;
	int attach_open; /* an attach record without its detach */
	char end_err[512];
	int64_t grace_ns;

	int pidfd;
	int exited;

	/* Retry after a failure. */
	int64_t retry_ns; /* 0: none */
	int64_t backoff_ns;
	struct dn_sock_id skip[TARGET_SKIP_MAX];
	size_t n_skip;

	/* The stop of a session being replaced or detached. */
	struct ipc_op *stop_op;
	struct op_reg stop_reg;
	int stop_stream;
	int64_t stop_deadline;

	/* A dump that could not start, reported from the timer (never from
	 * inside the stream's read). */
	int deferred_end;
	size_t deferred_rule;
	int deferred_rc;

	/* The dump in flight. */
	struct dump_job *job;
	size_t job_rule;
	uint32_t dumps;

	/* The history and GC records behind a dump's context, and the fire
	 * of the dump in flight (its dump_name points into fx_name). */
	struct ctxtrack *ct;
	struct dumpctx_input fx;
	char fx_name[NAME_MAX + 1];
	char fire_desc[512]; /* the values of the last fire's conditions, for its hooks */

	/* /proc polling, for rules on rss, private-memory, swap, threads, fds. */
	unsigned proc_needs; /* NEED_PROC, NEED_PROC_FDS of the rules */
	struct procstat *ps;
	int64_t proc_next_ns; /* 0: no poll due */
	int proc_warned;      /* a failure to open said once per attachment */
	unsigned meter_said;  /* System.Diagnostics.Metrics errors said, by kind, this attachment */
	int64_t tick_ns;      /* the next 250 ms tick while attached */

	int in_event;
	int all_known; /* every metric of the rules known in this attachment */
	struct report_verbose verbose;
	struct loop_timer timer;
};

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

static struct json_object *rec_new(const struct target *t)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int(t->dt.pid));
	json_object_object_add(o, "process", json_object_new_string(t->name));
	if (t->ident.container[0])
		json_object_object_add(o, "container", json_object_new_string(t->ident.container));
	if (t->ident.pod[0])
		json_object_object_add(o, "pod", json_object_new_string(t->ident.pod));
	return o;
}

static struct json_object *rec_rule(const struct target *t, const char *rule)
{
	struct json_object *o = rec_new(t);
	json_object_object_add(o, "rule", json_object_new_string(rule));
	return o;
}

static void journal_err(const struct target *t, const char *event, struct json_object *rec, const char *err)
{
	json_object_object_add(rec, "error", json_object_new_string(err));
	journal_write(t->cfg->journal, event, rec);
}

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

static const char *dump_dir_of(const struct target *t, const struct target_rule *tr)
{
	return tr->fr.dump_dir[0] ? tr->fr.dump_dir : t->cfg->opt->dump_dir;
}

/* ---- descriptors on the loop ------------------------------------------ */

/* Keeps an op's descriptor registered for what it waits for. A new
 * attempt's socket may have the number of the last one, which left the epoll
 * set as it was closed: it is registered anew. */
static void op_watch(struct target *t, struct ipc_op *op, struct op_reg *reg, loop_fd_fn fn)
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

static void op_unwatch(struct target *t, struct op_reg *reg)
{
	if (reg->fd >= 0)
		loop_del(t->cfg->loop, reg->fd);
	reg->fd = -1;
}

static void op_drop(struct target *t)
{
	if (!t->op)
		return;
	op_unwatch(t, &t->op_reg);
	ipc_op_clear(t->op);
	free(t->op);
	t->op = NULL;
}

static void stream_off(struct target *t)
{
	if (t->session && t->stream_on_loop)
		loop_del(t->cfg->loop, session_fd(t->session));
	t->stream_on_loop = 0;
}

/* ---- stopping a session ----------------------------------------------- */

static void stop_done(struct target *t)
{
	if (t->stop_op) {
		op_unwatch(t, &t->stop_reg);
		ipc_op_clear(t->stop_op);
		free(t->stop_op);
		t->stop_op = NULL;
	}
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
		if (ipc_op_stop_tracing(t->stop_op, &ep, id, TARGET_STOP_MS) < 0) {
			ipc_op_clear(t->stop_op);
			free(t->stop_op);
			t->stop_op = NULL;
		} else {
			op_watch(t, t->stop_op, &t->stop_reg, on_stop_op);
		}
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
		op_watch(t, t->stop_op, &t->stop_reg, on_stop_op);
		return;
	}
	if (r < 0)
		log_debug("pid=%d: stop tracing: %s", (int)t->dt.pid, t->stop_op->err);
	op_unwatch(t, &t->stop_reg);
	ipc_op_clear(t->stop_op);
	free(t->stop_op);
	t->stop_op = NULL;
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

static void build_subscription(const struct target *t, struct session_subscription *sub)
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

/* Marks the conditions whose metric is known at now and has not been said so;
 * adds each such metric once to known (name -> value and basis) and each
 * metric still unknown once to unknown (name -> true). Returns how many
 * conditions are still unknown. */
static int scan_known(struct target *t, int64_t now, struct json_object *known, struct json_object *unknown, char *line,
                      size_t linelen)
{
	const struct metrics *m = t->session ? session_metrics(t->session) : NULL;
	int left = 0;
	size_t off = 0;

	if (linelen)
		line[0] = '\0';
	for (size_t i = 0; i < t->n_rules; i++) {
		struct target_rule *tr = &t->rules[i];
		for (uint32_t c = 0; c < tr->fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
			const struct metric_ref *ref = &tr->fr.rule.conds[c].metric;
			const char *basis = m ? metrics_basis(m, ref, now) : NULL;
			double v;
			int64_t sample;
			if (tr->known[c])
				continue;
			if (!basis || !metrics_read(m, ref, now, &v, &sample)) {
				left++;
				if (!json_object_object_get_ex(unknown, ref->name, NULL))
					json_object_object_add(unknown, ref->name, json_object_new_boolean(1));
				continue;
			}
			tr->known[c] = 1;
			if (json_object_object_get_ex(known, ref->name, NULL))
				continue;
			struct json_object *one = json_object_new_object();
			json_object_object_add(one, "value", report_num(v, -1));
			json_object_object_add(one, "basis", json_object_new_string(basis));
			json_object_object_add(known, ref->name, one);
			if (off < linelen) {
				char vb[32];
				int n = snprintf(line + off, linelen - off, "%s%s=%s (%s)", off ? " " : "", ref->name,
				                 units_format(v, ref->unit, vb, sizeof(vb)), basis);
				if (n > 0)
					off += (size_t)n;
			}
		}
	}
	return left;
}

static struct json_object *names_of(struct json_object *set)
{
	struct json_object *a = json_object_new_array();
	json_object_object_foreach(set, k, v)
	{
		(void)v;
		json_object_array_add(a, json_object_new_string(k));
	}
	return a;
}

/* Whether a condition's metric became known since it was last looked at:
 * checked before anything is built, as a metric that never becomes known (a
 * counter its process does not publish) is looked at after every event. */
static int any_newly_known(const struct target *t, int64_t now)
{
	const struct metrics *m = session_metrics(t->session);
	double v;
	int64_t sample;

	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++)
			if (!t->rules[i].known[c] &&
			    metrics_read(m, &t->rules[i].fr.rule.conds[c].metric, now, &v, &sample))
				return 1;
	return 0;
}

/* Journals the metrics of the rules that became known since the last call
 * ("metrics-known": each with its value and how it is known), until all are. */
static void note_known(struct target *t, int64_t now)
{
	struct json_object *known, *unknown;
	char line[512];
	int left;

	if (t->all_known || !t->session || !any_newly_known(t, now))
		return;
	known = json_object_new_object();
	unknown = json_object_new_object();
	left = scan_known(t, now, known, unknown, line, sizeof(line));
	if (json_object_object_length(known) > 0) {
		struct json_object *rec = rec_new(t);
		double after = (double)(now - t->attached_ns) / 1e6;
		json_object_object_add(rec, "metrics", json_object_get(known));
		json_object_object_add(rec, "unknown", names_of(unknown));
		json_object_object_add(rec, "after_attach_ms", report_num(after, 3));
		journal_write(t->cfg->journal, "metrics-known", rec);
		log_info("pid %d (%s): known %.0f ms after the attach: %s%s", (int)t->dt.pid, t->name, after, line,
		         left ? "; others still unknown" : "");
	}
	json_object_put(known);
	json_object_put(unknown);
	t->all_known = left == 0;
}

/* Has the session's metrics count the exceptions of every exception
 * condition of the rules, and of no other (the rules changed): a condition
 * that stays keeps its count. */
static void watch_exceptions(struct target *t)
{
	const struct metric_ref *keep[METRICS_EXC_FILTERS_MAX];
	size_t n = 0;

	if (!t->session)
		return;
	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++)
			if (t->rules[i].fr.rule.conds[c].metric.id == M_EXCEPTIONS && n < METRICS_EXC_FILTERS_MAX)
				keep[n++] = &t->rules[i].fr.rule.conds[c].metric;
	metrics_unwatch_exceptions(session_metrics(t->session), keep, n);
	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
			const struct metric_ref *ref = &t->rules[i].fr.rule.conds[c].metric;
			if (ref->id == M_EXCEPTIONS && metrics_watch_exceptions(session_metrics(t->session), ref) < 0)
				log_warn("pid %d (%s): rule %s: \"%s\" is not counted: one process counts at most %d "
				         "different exception conditions",
				         (int)t->dt.pid, t->name, t->rules[i].fr.rule.name, ref->name,
				         METRICS_EXC_FILTERS_MAX);
		}
}

static void attached(struct target *t)
{
	int fd = ipc_op_take_stream(t->op);
	uint64_t id = t->op->session_id;
	char names[512];
	int again = t->resubscribe;

	op_drop(t);
	if (again) {
		session_end(t); /* the replaced session, now that its successor runs */
	} else if (t->session) {
		session_free(t->session); /* of an attachment that ended */
		t->session = NULL;
	}
	if (t->ct)
		ctxtrack_session_end(t->ct);
	t->session = session_new(&t->dt, on_event, t);
	if (!t->session) {
		close(fd);
		attach_failed(t, -ENOMEM, "out of memory");
		return;
	}
	session_set_stream(t->session, fd, id, &t->info);
	metrics_set_meter_interval(session_metrics(t->session), session_meter_interval_ns(&t->sub));
	watch_exceptions(t);
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
	t->all_known = scan_known(t, t->attached_ns, known, unknown, NULL, 0) == 0;
	json_object_object_add(rec, "known", names_of(known));
	json_object_object_add(rec, "unknown", names_of(unknown));
	json_object_put(known);
	json_object_put(unknown);
	json_object_object_add(rec, "runtime_version", json_object_new_string(t->info.runtime_version));
	json_object_object_add(rec, "command_line", json_object_new_string(t->cmdline));
	json_object_object_add(rec, "dump_dirs", dirs);
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
	op_drop(t);
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
		op_watch(t, t->op, &t->op_reg, on_op);
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
		op_drop(t);
		collect(t);
		return;
	}
	if (r < 0) {
		char err[512];
		snprintf(err, sizeof(err), "%s", t->op->err);
		op_drop(t);
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

	if (t->n_rules == 0 || t->exited || t->op || t->state == TARGET_NEW || t->state == TARGET_PROBING ||
	    t->state == TARGET_ENDING || t->state == TARGET_GONE)
		return;
	build_subscription(t, &sub);
	if (t->state == TARGET_ATTACHED && session_subscription_equal(&sub, &t->sub))
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
	op_drop(t);
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
	if (t->job)
		return; /* on_dump finishes the story */
	op_drop(t);
	stream_off(t);
	if (t->session) {
		uint64_t id;
		int fd = session_take_stream(t->session, &id);
		if (fd >= 0)
			close(fd);
	}
	stop_done(t);
	if (t->pidfd >= 0) {
		loop_del(t->cfg->loop, t->pidfd);
		close(t->pidfd);
		t->pidfd = -1;
	}
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

/* ---- evaluation, fire, dump ------------------------------------------- */

static void on_dump_deleted(void *ctx, const char *path, uint64_t bytes, int context_only)
{
	struct target *t = ctx;
	struct json_object *rec = rec_new(t);

	json_object_object_add(rec, "deleted", json_object_new_string(path));
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)bytes));
	journal_write(t->cfg->journal, context_only ? "context-deleted" : "dump-deleted", rec);
	log_info("deleted %s%s (%.1f MB) to make room for a dump of pid %d", path,
	         context_only ? ", the context of a dump not taken," : " and its context files", (double)bytes / 1e6,
	         (int)t->dt.pid);
}

/* Writes the context files of the fire in t->fx beside its dump (res: the
 * dump published, NULL when none was) and names them in rec, or says there
 * why they are missing. Their paths also go to ret_json and ret_plot
 * (PATH_MAX each; "" when not written) unless NULL. */
static void context_publish(struct target *t, enum dumpctx_outcome outcome, const char *err,
                            const struct dump_result *res, struct json_object *rec, char *ret_json, char *ret_plot)
{
	struct dumpctx_input *in = &t->fx;
	char jbuf[PATH_MAX], sbuf[PATH_MAX], why[768];
	char *jp = ret_json ? ret_json : jbuf, *sp = ret_plot ? ret_plot : sbuf;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];

	jp[0] = sp[0] = '\0';
	if (!t->ct || !in->rule)
		return;
	in->outcome = outcome;
	in->error = err;
	if (in->dump_start_unix_ns)
		in->dump_end_unix_ns = loop_wall_now();
	if (res) {
		in->dump_bytes = (int64_t)res->bytes;
		in->dump_duration_ms = res->duration_ms;
		in->via = res->via;
	}
	in->cmdline = t->cmdline;
	in->runtime_version = t->info.runtime_version;
	in->user = getpwuid_r(t->dt.uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp ? pw.pw_name : NULL;
	int64_t t0 = loop_now();
	int r = ctxtrack_publish(t->ct, in, &t->cfg->opt->store, jp, sp, why, sizeof(why));
	if (r == 0) {
		json_object_object_add(rec, "context", json_object_new_string(jp));
		json_object_object_add(rec, "plot", json_object_new_string(sp));
		json_object_object_add(rec, "context_ms", report_num((double)(loop_now() - t0) / 1e6, 3));
	} else {
		jp[0] = sp[0] = '\0';
		json_object_object_add(rec, "context_error", json_object_new_string(why));
		log_warn("the context of the dump of pid %d (%s) for rule %s is missing: %s", (int)t->dt.pid, t->name,
		         in->rule->rule.name, why);
	}
	in->rule = NULL;
}

/* Notes what the context of this fire needs from its moment: the values the
 * conditions read, the times, the process. */
static void context_fire(struct target *t, const struct target_rule *tr, int64_t now, int64_t unix_ns)
{
	struct dumpctx_input *in = &t->fx;
	struct metrics_at at = {.m = session_metrics(t->session), .now_ns = now};

	/* The history holds the moment of the fire. */
	if (t->ct)
		ctxtrack_tick(t->ct, at.m, now);
	memset(in, 0, sizeof(*in));
	in->rule = &tr->fr;
	in->rule_file = tr->file[0] ? tr->file : NULL;
	for (uint32_t c = 0; c < tr->fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
		int64_t when;
		in->read[c] = metrics_read_eval(&at, &tr->fr.rule.conds[c].metric, &in->value[c], &when);
	}
	struct metrics_exception x;
	if (report_fire_exception(&tr->fr.rule, at.m, &x, &in->exc_cond)) {
		in->exc_set = 1;
		snprintf(in->exc_type, sizeof(in->exc_type), "%s", x.type);
		snprintf(in->exc_message, sizeof(in->exc_message), "%s", x.message);
		in->exc_hresult = x.hresult;
		in->exc_ns = x.t_ns;
	}
	in->fire_ns = now;
	in->fire_unix_ns = unix_ns;
	in->dump_dir = dump_dir_of(t, tr);
	dump_file_name_ids(tr->fr.name_template, t->name, t->dt.pid, tr->fr.rule.name, t->ident.container, t->ident.pod,
	                   unix_ns, t->fx_name, sizeof(t->fx_name));
	in->dump_name = t->fx_name;
	in->dump_bytes = -1;
	in->dump_duration_ms = -1;
	in->pid = t->dt.pid;
	in->process_name = t->name;
	in->uid = t->dt.uid;
}

/* Runs the rule's on-fire or on-dump hook (the daemon's when the rule has
 * none), if any. dump and context name the files published (on-dump). */
static void run_hook(struct target *t, const struct target_rule *tr, int on_dump, const char *dump, const char *context,
                     uint64_t bytes)
{
	const struct hook_cmd *cmd = on_dump ? &tr->fr.on_dump : &tr->fr.on_fire;
	char err[512];

	if (!t->cfg->hooks)
		return;
	if (cmd->argc == 0)
		cmd = on_dump ? &t->cfg->opt->on_dump : &t->cfg->opt->on_fire;
	if (cmd->argc == 0)
		return;
	struct hook_env e = {
	    .event = on_dump ? "on-dump" : "on-fire",
	    .pid = t->dt.pid,
	    .owner = t->dt.uid,
	    .process = t->name,
	    .rule = tr->fr.rule.name,
	    .values = t->fire_desc,
	    .dump = dump,
	    .context = context,
	    .dump_bytes = bytes,
	    .container = t->ident.container[0] ? t->ident.container : NULL,
	    .pod = t->ident.pod[0] ? t->ident.pod : NULL,
	    .dump_fd = dump ? open(dump, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1,
	    .ctx_fd = context ? open(context, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1,
	};
	hook_run(t->cfg->hooks, cmd, tr->fr.hook_timeout_ns ? tr->fr.hook_timeout_ns : t->cfg->opt->hook_timeout_ns, &e,
	         err, sizeof(err));
	if (e.dump_fd >= 0)
		close(e.dump_fd);
	if (e.ctx_fd >= 0)
		close(e.ctx_fd);
}

/* Queues the dump and its context files for upload when the rule (or, when
 * it does not say, the daemon) wants it. */
static void ship(struct target *t, const struct target_rule *tr, const char *dump, const char *context,
                 const char *plot)
{
	char err[512];
	int want = tr->fr.upload < 0 ? t->cfg->upload_default : tr->fr.upload;

	if (!want)
		return;
	if (!t->cfg->uploads) {
		struct json_object *rec = rec_rule(t, tr->fr.rule.name);
		json_object_object_add(rec, "dump", json_object_new_string(dump));
		json_object_object_add(rec, "permanent", json_object_new_boolean(1));
		json_object_object_add(rec, "local", json_object_new_string("kept"));
		journal_err(t, "upload-failed", rec,
		            "the rule asks for an upload, but dumpwatch runs without --upload: start it with "
		            "--upload s3://BUCKET[/PREFIX]");
		log_warn("rule %s asks for an upload of %s, but dumpwatch runs without --upload", tr->fr.rule.name,
		         dump);
		return;
	}
	struct upload_item it = {.n_files = 0,
	                         .prefix = tr->fr.upload_prefix[0] ? tr->fr.upload_prefix : NULL,
	                         .keep_local = tr->fr.upload_keep,
	                         .pid = t->dt.pid,
	                         .process = t->name,
	                         .rule = tr->fr.rule.name};
	it.files[it.n_files++] = dump;
	if (context && context[0])
		it.files[it.n_files++] = context;
	if (plot && plot[0])
		it.files[it.n_files++] = plot;
	uploader_enqueue(t->cfg->uploads, &it, err, sizeof(err));
}

static void fire(struct target *t, size_t i, int64_t now)
{
	struct target_rule *tr = &t->rules[i];
	const struct rule *r = &tr->fr.rule;
	struct json_object *rec = rec_new(t);
	char desc[512], err[512];

	report_fire(rec, r, session_metrics(t->session), now, t->in_event ? session_read_ns(t->session) : 0, desc,
	            sizeof(desc));
	json_object_object_add(rec, "fired_unix_us", json_object_new_int64(loop_wall_now() / 1000));
	journal_write(t->cfg->journal, "fire", rec);
	log_info("rule %s fired for pid %d (%s): %s", r->name, (int)t->dt.pid, t->name, desc);
	snprintf(t->fire_desc, sizeof(t->fire_desc), "%s", desc);
	run_hook(t, tr, 0, NULL, NULL, 0);
	eval_record_fire(r, &tr->st, now);
	tr->at_limit = 0;
	int64_t unix_ns = loop_wall_now();
	context_fire(t, tr, now, unix_ns);
	if (t->hooks->fired)
		t->hooks->fired(t->ctx, t, i);

	struct dump_request req = {
	    .pid = t->dt.pid,
	    .uid = t->dt.uid,
	    .gid = t->dt.gid,
	    .other_mount_ns = t->dt.other_mount_ns,
	    .socket_path = t->dt.socket_path,
	    .tmpdir = t->dt.tmpdir,
	    .runtime_version = t->info.runtime_version,
	    .createdump = t->cfg->opt->createdump,
	    .dir = dump_dir_of(t, tr),
	    .process_name = t->name,
	    .rule_name = r->name,
	    .container = t->ident.container,
	    .pod = t->ident.pod,
	    .type = r->dump_type,
	    .via = t->cfg->opt->via,
	    .unix_ns = unix_ns,
	    .name_template = tr->fr.name_template,
	    .limits = &t->cfg->opt->store,
	    .timeout_ns = t->cfg->opt->dump_timeout_ns,
	    .deleted = on_dump_deleted,
	    .ctx = t,
	};
	t->fx.dump_start_unix_ns = loop_wall_now();
	int rc = dump_start(&req, &t->job, err, sizeof(err));
	if (rc < 0) {
		struct json_object *frec = rec_rule(t, r->name);
		t->job = NULL;
		t->fx.dump_start_unix_ns = 0;
		context_publish(t, rc == -ENOSPC ? DUMPCTX_SKIPPED : DUMPCTX_FAILED, err, NULL, frec, NULL, NULL);
		if (rc == -ENOSPC) {
			journal_err(t, "dump-skipped", frec, err);
			log_warn("dump of pid %d (%s) for rule %s %s", (int)t->dt.pid, t->name, r->name, err);
		} else {
			journal_err(t, "dump-failed", frec, err);
			log_error("dump of pid %d (%s) for rule %s failed: %s", (int)t->dt.pid, t->name, r->name, err);
		}
		t->deferred_end = 1;
		t->deferred_rule = i;
		t->deferred_rc = rc;
		loop_timer_arm(t->cfg->loop, &t->timer, loop_now());
		return;
	}
	t->job_rule = i;
	const char *slash = strrchr(dump_job_path(t->job), '/');
	snprintf(t->fx_name, sizeof(t->fx_name), "%s", slash ? slash + 1 : dump_job_path(t->job));
	loop_add(t->cfg->loop, dump_job_fd(t->job), EPOLLIN, on_dump, t);
	log_info("dumping pid %d to %s", (int)t->dt.pid, dump_job_path(t->job));
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
	note_known(t, now);
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

/* ---- /proc ------------------------------------------------------------ */

static int64_t proc_interval(const struct target *t)
{
	return t->cfg->opt->proc_interval_ns > 0 ? t->cfg->opt->proc_interval_ns : DW_DEFAULT_PROC_INTERVAL_NS;
}

/* Opens or closes the /proc files as the rules and the state need them;
 * a new poll is due at once. */
static void proc_sync(struct target *t)
{
	int want = t->proc_needs && t->state == TARGET_ATTACHED && !t->exited && t->session;
	int want_fds = (t->proc_needs & NEED_PROC_FDS) != 0;
	char err[256];

	if (t->ps && (!want || (want_fds && procstat_fds(t->ps) < 2))) {
		procstat_close(t->ps);
		t->ps = NULL;
	}
	if (!want) {
		t->proc_next_ns = 0;
		return;
	}
	if (!t->ps && t->proc_warned)
		return; /* refused once in this attachment: not tried again until the next */
	if (!t->ps) {
		int r = procstat_open(t->dt.pid, t->dt.starttime, want_fds, &t->ps, err, sizeof(err));
		if (r < 0) {
			/* An exit is the pidfd's to report. */
			if (r != -ESRCH && !t->proc_warned)
				log_warn(
				    "pid %d (%s): cannot poll /proc: %s; rules on rss, private-memory, swap, threads "
				    "and fds stay unknown for it",
				    (int)t->dt.pid, t->name, err);
			t->proc_warned = 1;
			t->proc_next_ns = 0;
			return;
		}
	}
	if (!t->proc_next_ns)
		t->proc_next_ns = loop_now();
}

static int evaluate(struct target *t, int64_t now);

/* One poll of /proc, taken in and evaluated at once. The next is due at the
 * next multiple of the interval on the monotonic clock: every target polls
 * on the same grid, so one wake of the loop serves them all. A wake costs
 * far more than a poll (tests/bench/proc.sh: about 8 us per poll, about 120
 * us per wake of an otherwise idle process in a VM, mostly the scheduler). */
static void proc_poll(struct target *t, int64_t now)
{
	struct proc_sample p;
	char err[256];
	int r = procstat_read(t->ps, &p, err, sizeof(err));
	int64_t iv = proc_interval(t);

	t->proc_next_ns = (now / iv + 1) * iv;
	if (r < 0) {
		procstat_close(t->ps);
		t->ps = NULL;
		t->proc_next_ns = 0;
		if (r != -ESRCH && !t->proc_warned)
			log_warn("pid %d (%s): polling /proc stopped: %s", (int)t->dt.pid, t->name, err);
		t->proc_warned = 1;
		return;
	}
	metrics_on_proc(session_metrics(t->session), &p, now);
	if (t->ct)
		ctxtrack_on_proc(t->ct, session_metrics(t->session), now);
	evaluate(t, now);
}

/* ---- events ----------------------------------------------------------- */

/* What System.Diagnostics.Metrics says went wrong, once per kind and
 * attachment: another tool's session that excludes or disagrees with
 * dumpwatch's, a limit reached, a gauge's callback that threw. */
static void meter_error(struct target *t, const struct ev_meter *m)
{
	static const struct {
		const char *event, *means;
	} kinds[] = {
	    {"MultipleSessionsNotSupportedError",
	     "another tool holds the process's only metrics session (a runtime before .NET 8, or a tool that does not "
	     "share it): meter rules get no values in this attachment"},
	    {"MultipleSessionsConfiguredIncorrectlyError",
	     "another tool runs the process's shared metrics session with other settings than dumpwatch's (its "
	     "interval is --counter-interval): meter rules get no values in this attachment"},
	    {"TimeSeriesLimitReached",
	     "the shared session's 1000 time series are taken: new tag sets are not published"},
	    {"HistogramLimitReached", "the shared session's 10 histograms are taken: more are not published"},
	    {"ObservableInstrumentCallbackError", "a gauge's or observable counter's callback threw"},
	    {"Error", "the metrics session failed"},
	};
	char mine[32];

	/* Another tool's refusal is said to it, not to dumpwatch: a tool that
	 * cannot join the shared session dumpwatch runs (the running one is
	 * "SHARED"), one whose settings disagree (not this identifier). */
	snprintf(mine, sizeof(mine), "dumpwatch-%d-", (int)getpid());
	if ((strncmp(m->error, "MultipleSessionsNotSupportedError", 33) == 0 && strcmp(m->session, "SHARED") == 0) ||
	    (strncmp(m->error, "MultipleSessionsConfiguredIncorrectlyError", 42) == 0 &&
	     strncmp(m->session, mine, strlen(mine)) != 0))
		return;
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t n = strlen(kinds[k].event);
		if (strncmp(m->error, kinds[k].event, n) != 0 || (m->error[n] && m->error[n] != ':'))
			continue;
		if (!(t->meter_said & (1u << k)))
			log_warn("pid %d (%s): System.Diagnostics.Metrics: %s; it says: %s", (int)t->dt.pid, t->name,
			         kinds[k].means, m->error);
		t->meter_said |= 1u << k;
		return;
	}
}

/* A meter condition whose instrument, now seen, cannot give what it asks
 * (a percentile of a counter, seconds of an instrument in bytes): said once.
 * Returns whether any rule reads this instrument (else its values need no
 * evaluation: another tool's, in the shared session, or an instrument of a
 * watched meter no rule names). */
static int meter_fit(struct target *t, const struct ev_meter *m)
{
	int used = 0;

	for (size_t i = 0; i < t->n_rules; i++) {
		struct target_rule *tr = &t->rules[i];
		for (uint32_t c = 0; c < tr->fr.rule.n_conds; c++) {
			const struct rule_cond *rc = &tr->fr.rule.conds[c];
			const struct meters *ms = metrics_meters(session_metrics(t->session));
			const char *what;
			if (rc->metric.id != M_METER || strcmp(rc->metric.provider, m->meter) != 0 ||
			    strcasecmp(rc->metric.counter, m->instrument) != 0)
				continue;
			used = 1;
			if (tr->meter_warned[c])
				continue;
			if (meters_stat_mismatch(ms, &rc->metric, &what)) {
				log_warn("pid %d (%s): rule %s: %s/%s is a %s, which has no %s: \"%s\" never holds",
				         (int)t->dt.pid, t->name, tr->fr.rule.name, m->meter, m->instrument, what,
				         catalog_meter_stat_name(rc->metric.stat), rc->text);
				tr->meter_warned[c] = 1;
			} else if (meters_unit_mismatch(ms, &rc->metric, &what)) {
				log_warn("pid %d (%s): rule %s: %s/%s is measured in \"%s\", which is not %s: \"%s\" "
				         "never holds; write the threshold as a plain number in its unit",
				         (int)t->dt.pid, t->name, tr->fr.rule.name, m->meter, m->instrument, what,
				         rc->metric.unit == UNIT_MS              ? "a duration"
				         : rc->metric.unit == UNIT_BYTES         ? "a size"
				         : rc->metric.unit == UNIT_BYTES_PER_SEC ? "bytes per second"
				                                                 : "a percentage or a ratio",
				         rc->text);
				tr->meter_warned[c] = 1;
			}
		}
	}
	return used;
}

static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	struct target *t = ctx;
	(void)s;

	int matters = metrics_event_matters(r);
	if (r->type == EV_METER_ERROR)
		meter_error(t, &r->u.meter);
	else if (r->type == EV_METER_VALUE)
		matters = meter_fit(t, &r->u.meter);

	if (t->cfg->opt->verbose) {
		char prefix[32] = "";
		if (t->cfg->pid_prefix)
			snprintf(prefix, sizeof(prefix), "pid %d: ", (int)t->dt.pid);
		report_verbose_event(stdout, &t->verbose, prefix, session_metrics(t->session), r, t_ns);
	}
	if (t->ct)
		ctxtrack_on_event(t->ct, session_metrics(t->session), r, t_ns);
	if (matters && !t->deferred_end) {
		t->in_event = 1;
		evaluate(t, loop_now());
		t->in_event = 0;
	}
}

static void on_dump(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct target *t = ctx;
	struct dump_result res;
	char err[512];
	(void)events;

	loop_del(l, fd);
	int rc = dump_job_finish(t->job, &res, err, sizeof(err));
	if (rc == -EAGAIN) {
		loop_add(l, dump_job_fd(t->job), EPOLLIN, on_dump, t);
		return;
	}
	size_t i = t->job_rule;
	const struct target_rule *tr = &t->rules[i];
	dump_job_free(t->job);
	t->job = NULL;
	if (rc < 0) {
		struct json_object *rec = rec_rule(t, tr->fr.rule.name);
		context_publish(t, DUMPCTX_FAILED, err, NULL, rec, NULL, NULL);
		journal_err(t, "dump-failed", rec, err);
		log_error("dump of pid %d (%s) for rule %s failed: %s", (int)t->dt.pid, t->name, tr->fr.rule.name, err);
	} else {
		struct json_object *rec = rec_rule(t, tr->fr.rule.name);
		t->dumps++;
		report_dump(rec, &res, tr->fr.rule.dump_type);
		char context[PATH_MAX], plot[PATH_MAX];
		context_publish(t, DUMPCTX_DUMP, NULL, &res, rec, context, plot);
		journal_write(t->cfg->journal, "dump", rec);
		log_info("dump written: %s (%.1f MB in %.1f s, via %s)", res.path, (double)res.bytes / 1e6,
		         res.duration_ms / 1e3, res.via);
		run_hook(t, tr, 1, res.path, context[0] ? context : NULL, res.bytes);
		ship(t, tr, res.path, context, plot);
	}
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
		proc_poll(t, now);
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
	if (t->ct && t->state == TARGET_ATTACHED && t->session && !t->job)
		ctxtrack_tick(t->ct, session_metrics(t->session), now);
	evaluate(t, now);
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
	proc_sync(t);
	if (t->op)
		NEAR(ipc_op_wake(t->op));
	if (t->stop_op)
		NEAR(ipc_op_wake(t->stop_op));
	NEAR(t->stop_deadline);
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
	t->op_reg.fd = t->stop_reg.fd = t->stop_stream = t->pidfd = -1;
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
		const char *why = "stopped before the dump completed; the partial file was removed";
		struct json_object *rec = rec_rule(t, t->rules[t->job_rule].fr.rule.name);
		context_publish(t, DUMPCTX_FAILED, why, NULL, rec, NULL, NULL);
		journal_err(t, "dump-failed", rec, why);
		loop_del(t->cfg->loop, dump_job_fd(t->job));
		dump_job_abort(t->job);
		t->job = NULL;
	}
	op_drop(t);
	stream_off(t);
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
	watch_exceptions(t);
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
	       (t->stop_op != NULL) + (t->job ? 8 : 0) + (t->ps ? procstat_fds(t->ps) : 0);
}

/* The /proc files the rules poll: status, and the fd directory for fds. */
static int proc_files(const struct target *t)
{
	return t->proc_needs ? 1 + ((t->proc_needs & NEED_PROC_FDS) != 0) : 0;
}

int target_fds_to_attach(const struct target *t)
{
	return 2 + proc_files(t);
}

int target_fds_pending(const struct target *t)
{
	if (t->state != TARGET_ATTACHING)
		return 0;
	return (t->pidfd < 0) + (t->ps ? 0 : proc_files(t));
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
