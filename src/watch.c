/* The watcher; see watch.h.
 *
 * Rules are evaluated after every decoded event that can move a metric, not
 * once per read, so a spike that rises and falls within one burst of the
 * stream (the runtime flushes every 100 ms) is still seen at its top. A
 * timer re-evaluates when a sustain duration or cooldown ends without new
 * events, and every 250 ms so that rates decay when allocation stops. */
#include "dumpwatch/watch.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/discovery.h"
#include "dumpwatch/eval.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/report.h"
#include "dumpwatch/session.h"
#include "dumpwatch/units.h"

#define WATCH_TICK_NS 250000000LL

struct rule_slot {
	const struct rule *rule;
	struct eval_state st;
	int64_t next_ns; /* 0: nothing pending */
};

struct watcher {
	const struct watch_options *o;
	struct loop *loop;
	struct journal *journal;
	struct session *session;
	struct rule_slot *slots;
	size_t n_slots;
	int sigfd;
	int pidfd;
	struct dump_job *job;
	size_t job_slot;
	int64_t job_fire_ns;
	int exit_code;
	int target_gone;
	int stream_ended;
	uint32_t dumps_done;
	struct report_verbose verbose;
	int in_event; /* evaluating because an event arrived */
};

static struct json_object *target_json(struct watcher *w)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int(session_target(w->session)->pid));
	json_object_object_add(o, "process", json_object_new_string(session_name(w->session)));
	return o;
}

static void finish(struct watcher *w, int code)
{
	w->exit_code = code;
	loop_stop(w->loop);
}

/* Every rule has taken all its dumps for good (no window to slide). */
static int all_rules_done(const struct watcher *w)
{
	for (size_t i = 0; i < w->n_slots; i++) {
		const struct rule *r = w->slots[i].rule;
		if (r->limits.max_dumps == 0 || r->limits.window_ns != 0 || w->slots[i].st.fires < r->limits.max_dumps)
			return 0;
	}
	return 1;
}

static void on_dump_ready(struct loop *l, int fd, uint32_t events, void *ctx);

/* A stored dump deleted to make room (--store-full delete-oldest). */
static void on_dump_deleted(void *ctx, const char *path, uint64_t bytes)
{
	struct watcher *w = ctx;
	struct json_object *rec = target_json(w);

	json_object_object_add(rec, "deleted", json_object_new_string(path));
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)bytes));
	journal_write(w->journal, "dump-deleted", rec);
	log_info("deleted %s (%.1f MB) to make room", path, (double)bytes / 1e6);
}

static void fire(struct watcher *w, size_t i, int64_t now)
{
	struct rule_slot *slot = &w->slots[i];
	const struct rule *r = slot->rule;
	const struct dn_target *t = session_target(w->session);
	struct json_object *rec = target_json(w);
	char desc[512], err[512];

	report_fire(rec, r, session_metrics(w->session), now, w->in_event ? session_read_ns(w->session) : 0, desc,
	            sizeof(desc));
	json_object_object_add(rec, "fired_unix_us", json_object_new_int64(loop_wall_now() / 1000));
	journal_write(w->journal, "fire", rec);
	log_info("rule %s fired for pid %d (%s): %s", r->name, (int)t->pid, session_name(w->session), desc);

	eval_record_fire(r, &slot->st, now);
	struct dump_request req = {
	    .pid = t->pid,
	    .uid = t->uid,
	    .gid = t->gid,
	    .other_mount_ns = t->other_mount_ns,
	    .socket_path = t->socket_path,
	    .tmpdir = t->tmpdir,
	    .runtime_version = session_info(w->session)->runtime_version,
	    .createdump = w->o->createdump,
	    .dir = w->o->dump_dir,
	    .process_name = session_name(w->session),
	    .rule_name = r->name,
	    .type = r->dump_type,
	    .via = w->o->via,
	    .unix_ns = loop_wall_now(),
	    .limits = &w->o->store,
	    .timeout_ns = w->o->dump_timeout_ns,
	    .deleted = on_dump_deleted,
	    .ctx = w,
	};
	int rc2 = dump_start(&req, &w->job, err, sizeof(err));
	if (rc2 < 0) {
		struct json_object *f = target_json(w);
		json_object_object_add(f, "rule", json_object_new_string(r->name));
		json_object_object_add(f, "error", json_object_new_string(err));
		journal_write(w->journal, rc2 == -ENOSPC ? "dump-skipped" : "dump-failed", f);
		if (rc2 == -ENOSPC)
			log_error("dump of pid %d %s", (int)t->pid, err);
		else
			log_error("dump of pid %d failed: %s", (int)t->pid, err);
		w->job = NULL;
		finish(w, DW_EXIT_DUMP);
		return;
	}
	w->job_slot = i;
	w->job_fire_ns = now;
	loop_add(w->loop, dump_job_fd(w->job), EPOLLIN, on_dump_ready, w);
	log_info("dumping pid %d to %s", (int)t->pid, dump_job_path(w->job));
}

static void evaluate(struct watcher *w, int64_t now)
{
	struct metrics_at rc = {session_metrics(w->session), now};

	if (w->job || w->target_gone)
		return; /* one dump at a time; the process is frozen meanwhile anyway */
	for (size_t i = 0; i < w->n_slots; i++) {
		struct rule_slot *slot = &w->slots[i];
		int64_t next = 0;
		enum eval_result res = eval_step(slot->rule, &slot->st, metrics_read_at, &rc, now, &next);
		slot->next_ns = (res == EVAL_PENDING || res == EVAL_COOLDOWN) ? next : 0;
		if (res == EVAL_FIRE) {
			fire(w, i, now);
			return;
		}
	}
}

static void arm_timer(struct watcher *w);

static void stream_failed(struct watcher *w, const char *err);

static void on_timer(struct loop *l, void *ctx)
{
	struct watcher *w = ctx;
	char err[512];
	int64_t now = loop_now();

	/* A stream stuck inside a block; not while a dump freezes the process
	 * on purpose. */
	if (!w->job && !w->stream_ended && session_stalled(w->session, now, SESSION_STALL_NS, err, sizeof(err))) {
		loop_del(l, session_fd(w->session));
		w->stream_ended = 1;
		stream_failed(w, err);
	}
	evaluate(w, now);
	arm_timer(w);
}

static void arm_timer(struct watcher *w)
{
	int64_t now = loop_now();
	int64_t deadline = now + WATCH_TICK_NS;

	for (size_t i = 0; i < w->n_slots; i++)
		if (w->slots[i].next_ns > 0 && w->slots[i].next_ns < deadline)
			deadline = w->slots[i].next_ns > now ? w->slots[i].next_ns : now + 1;
	loop_set_timer(w->loop, deadline, on_timer, w);
}

static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	struct watcher *w = ctx;
	(void)s;
	if (w->o->verbose)
		report_verbose_event(stdout, &w->verbose, "", session_metrics(w->session), r, t_ns);
	if (metrics_event_matters(r)) {
		w->in_event = 1;
		evaluate(w, loop_now());
		w->in_event = 0;
	}
}

static void target_ended(struct watcher *w, const char *why)
{
	if (w->target_gone)
		return;
	w->target_gone = 1;
	struct json_object *rec = target_json(w);
	json_object_object_add(rec, "reason", json_object_new_string(why));
	journal_write(w->journal, "detach", rec);
	if (!w->job) {
		log_info("process %d (%s) %s; %u dump(s) taken", (int)session_target(w->session)->pid,
		         session_name(w->session), why, w->dumps_done);
		finish(w, DW_EXIT_OK);
	}
}

static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct watcher *w = ctx;
	char err[512];
	int r;
	(void)events;

	r = session_read(w->session, err, sizeof(err));
	if (r == 0)
		return;
	loop_del(l, fd);
	w->stream_ended = 1;
	if (r == 1) {
		/* The runtime ends the stream when the process exits. */
		target_ended(w, "exited");
		return;
	}
	const struct dn_target *t = session_target(w->session);
	if (!w->target_gone && discovery_wait_exited(t->pid, t->starttime, 200)) {
		target_ended(w, "exited");
		return;
	}
	stream_failed(w, err);
}

static void stream_failed(struct watcher *w, const char *err)
{
	struct json_object *rec = target_json(w);
	json_object_object_add(rec, "error", json_object_new_string(err));
	journal_write(w->journal, "session-failed", rec);
	log_error("%s", err);
	if (!w->job)
		finish(w, DW_EXIT_RUNTIME);
}

static void on_pidfd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct watcher *w = ctx;
	(void)events;
	loop_del(l, fd);
	target_ended(w, "exited");
}

static void on_dump_ready(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct watcher *w = ctx;
	struct dump_result res;
	char err[512];
	const struct rule *r = w->slots[w->job_slot].rule;
	(void)events;

	loop_del(l, fd);
	int rc = dump_job_finish(w->job, &res, err, sizeof(err));
	if (rc == -EAGAIN) {
		loop_add(l, dump_job_fd(w->job), EPOLLIN, on_dump_ready, w);
		return;
	}
	dump_job_free(w->job);
	w->job = NULL;
	struct json_object *rec = target_json(w);
	json_object_object_add(rec, "rule", json_object_new_string(r->name));
	if (rc < 0) {
		json_object_object_add(rec, "error", json_object_new_string(err));
		journal_write(w->journal, "dump-failed", rec);
		log_error("dump of pid %d failed: %s", (int)session_target(w->session)->pid, err);
		finish(w, DW_EXIT_DUMP);
		return;
	}
	w->dumps_done++;
	report_dump(rec, &res, r->dump_type);
	journal_write(w->journal, "dump", rec);
	log_info("dump written: %s (%.1f MB in %.1f s, via %s)", res.path, (double)res.bytes / 1e6,
	         res.duration_ms / 1e3, res.via);
	if (w->target_gone) {
		log_info("process %d (%s) exited; %u dump(s) taken", (int)session_target(w->session)->pid,
		         session_name(w->session), w->dumps_done);
		finish(w, DW_EXIT_OK);
	} else if (all_rules_done(w)) {
		finish(w, DW_EXIT_OK);
	} else {
		evaluate(w, loop_now());
	}
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct watcher *w = ctx;
	struct signalfd_siginfo si;
	(void)l;
	(void)events;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP)
		return;
	log_info("stopping on signal %u", si.ssi_signo);
	finish(w, DW_EXIT_SIGNAL);
}

int watch_run(const struct watch_options *o)
{
	struct watcher w;
	struct dn_target target;
	struct session_subscription sub;
	char err[512];
	sigset_t mask;
	int r;

	memset(&w, 0, sizeof(w));
	w.o = o;
	w.sigfd = w.pidfd = -1;
	w.exit_code = DW_EXIT_OK;

	r = discovery_find(o->pid, &target, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return DW_EXIT_TARGET;
	}
	r = journal_open(o->journal_path, &w.journal, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return DW_EXIT_USAGE;
	}
	w.slots = calloc(o->n_rules, sizeof(*w.slots));
	w.loop = loop_new();
	w.session = session_new(&target, on_event, &w);
	if (!w.slots || !w.loop || !w.session) {
		log_error("out of memory");
		r = DW_EXIT_RUNTIME;
		goto out;
	}
	w.n_slots = o->n_rules;
	for (size_t i = 0; i < o->n_rules; i++) {
		w.slots[i].rule = &o->rules[i];
		eval_init(&w.slots[i].st);
	}
	memset(&sub, 0, sizeof(sub));
	sub.counter_interval_sec = o->counter_interval_sec ? o->counter_interval_sec : 1;
	for (size_t i = 0; i < o->n_rules; i++)
		session_subscription_add(&sub, &o->rules[i]);
	r = session_start(w.session, &sub, err, sizeof(err));
	if (r < 0) {
		struct json_object *rec = target_json(&w);
		json_object_object_add(rec, "error", json_object_new_string(err));
		journal_write(w.journal, "attach-failed", rec);
		log_error("%s", err);
		r = DW_EXIT_TARGET;
		goto out;
	}
	{
		const struct ipc_process_info *pi = session_info(w.session);
		struct json_object *rec = target_json(&w), *rules = json_object_new_array();
		json_object_object_add(rec, "runtime_version", json_object_new_string(pi->runtime_version));
		json_object_object_add(rec, "command_line", json_object_new_string(pi->command_line));
		for (size_t i = 0; i < o->n_rules; i++)
			for (uint32_t c = 0; c < o->rules[i].n_conds; c++)
				json_object_array_add(rules, json_object_new_string(o->rules[i].conds[c].text));
		json_object_object_add(rec, "conditions", rules);
		json_object_object_add(rec, "dump_dir", json_object_new_string(o->dump_dir));
		journal_write(w.journal, "attach", rec);
		log_info("watching pid %d (%s, .NET %s); dumps go to %s", (int)target.pid, session_name(w.session),
		         pi->runtime_version[0] ? pi->runtime_version : "?", o->dump_dir);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	w.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	w.pidfd = (int)syscall(SYS_pidfd_open, target.pid, 0);
	loop_add(w.loop, w.sigfd, EPOLLIN, on_signal, &w);
	if (w.pidfd >= 0)
		loop_add(w.loop, w.pidfd, EPOLLIN, on_pidfd, &w);
	loop_add(w.loop, session_fd(w.session), EPOLLIN, on_stream, &w);
	w.verbose.start_ns = loop_now();
	arm_timer(&w);

	r = loop_run(w.loop);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		w.exit_code = DW_EXIT_RUNTIME;
	}
	if (w.job) {
		struct json_object *rec = target_json(&w);
		json_object_object_add(rec, "rule", json_object_new_string(w.slots[w.job_slot].rule->name));
		json_object_object_add(rec, "error",
		                       json_object_new_string("stopped before the dump completed; the "
		                                              "partial file was removed"));
		journal_write(w.journal, "dump-failed", rec);
		dump_job_abort(w.job);
		w.job = NULL;
	}
	if (!w.stream_ended && !w.target_gone)
		session_stop(w.session, 2000);
	{
		struct json_object *rec = target_json(&w);
		json_object_object_add(rec, "exit_code", json_object_new_int(w.exit_code));
		json_object_object_add(rec, "dumps", json_object_new_int((int)w.dumps_done));
		json_object_object_add(rec, "stream_bytes", json_object_new_int64((int64_t)session_bytes(w.session)));
		json_object_object_add(rec, "events", json_object_new_int64((int64_t)session_events(w.session)));
		journal_write(w.journal, "stop", rec);
	}
	r = w.exit_code;
out:
	session_free(w.session);
	if (w.pidfd >= 0)
		close(w.pidfd);
	if (w.sigfd >= 0)
		close(w.sigfd);
	loop_free(w.loop);
	free(w.slots);
	journal_close(w.journal);
	return r;
}
