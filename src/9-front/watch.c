/* The watcher; see watch.h.
 *
 * One target (target.h) and its exit: the watcher decides only what an
 * event of the target means for the exit code (DW_EXIT_*): the process
 * exited, every rule has taken its dumps, a dump failed, the session or the
 * attach failed, or a signal stopped it. */
#include "dumpwatch/watch.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/discovery.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/launcher.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/target.h"

/* How long the end of tracing may take when watch stops. */
#define WATCH_STOP_NS 2000000000LL
/* How often the launcher's progress bar follows a dump being written. */
#define PROGRESS_EVERY_NS 200000000LL

struct watcher {
	const struct watch_options *o;
	struct loop *loop;
	struct journal *journal;
	struct target_config cfg;
	struct target *t;
	int exit_code;
	struct hook_user hook_user;
	int have_hooks;
	struct hook_runner *hooks;
	int waiting_hooks; /* the loop runs again only for them */
	int session_lost;  /* the session failed while a dump ran: end after it */
	int stopping;      /* waiting for tracing to end */
	struct launcher *launcher;
	struct loop_timer progress;
};

/* The launcher's progress bar: the file written against the estimate,
 * short of 1 until the dump is published. */
static void on_progress(struct loop *l, void *ctx)
{
	struct watcher *w = ctx;
	uint64_t written, estimate;

	if (!w->t || target_dump_progress(w->t, &written, &estimate) < 0)
		return;
	if (estimate > 0) {
		double f = (double)written / (double)estimate;
		launcher_progress(w->launcher, f > 0.99 ? 0.99 : f);
	}
	loop_timer_arm(l, &w->progress, loop_now() + PROGRESS_EVERY_NS);
}

static void on_fired(void *ctx, struct target *t, size_t rule)
{
	struct watcher *w = ctx;
	(void)t;
	(void)rule;

	if (!w->launcher)
		return;
	launcher_urgent(w->launcher, 1);
	launcher_progress(w->launcher, 0);
	loop_timer_arm(w->loop, &w->progress, loop_now() + PROGRESS_EVERY_NS);
}

static void finish(struct watcher *w, int code)
{
	w->exit_code = code;
	loop_stop(w->loop);
}

/* Every rule has taken all its dumps for good (no window to slide). */
static int all_rules_done(const struct watcher *w)
{
	size_t n;
	const struct target_rule *rules = target_rules(w->t, &n);

	for (size_t i = 0; i < n; i++) {
		const struct rule *r = &rules[i].fr.rule;
		if (r->limits.max_dumps == 0 || r->limits.window_ns != 0 || rules[i].st.fires < r->limits.max_dumps)
			return 0;
	}
	return 1;
}

static void on_probed(void *ctx, struct target *t, int r, const char *err)
{
	struct watcher *w = ctx;

	if (r < 0) {
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "pid", json_object_new_int(target_process(t)->pid));
		json_object_object_add(rec, "process", json_object_new_string(target_name(t)));
		json_object_object_add(rec, "error", json_object_new_string(err));
		journal_write(w->journal, "attach-failed", rec);
		log_error("%s", err);
		finish(w, DW_EXIT_TARGET);
		return;
	}
	target_attach(t);
}

static void on_attached(void *ctx, struct target *t)
{
	struct watcher *w = ctx;
	const struct ipc_process_info *pi = target_info(t);

	log_info("watching pid %d (%s, .NET %s); dumps go to %s", (int)target_process(t)->pid, target_name(t),
	         pi->runtime_version[0] ? pi->runtime_version : "?", w->o->target.dump_dir);
}

static void on_attach_failed(void *ctx, struct target *t, int r, const char *err)
{
	(void)t;
	(void)r;
	(void)err;
	finish(ctx, DW_EXIT_TARGET);
}

static void on_dump_ended(void *ctx, struct target *t, size_t rule, int r)
{
	struct watcher *w = ctx;
	(void)rule;

	if (w->launcher) {
		loop_timer_disarm(w->loop, &w->progress);
		if (r == 0) {
			launcher_progress(w->launcher, 1);
			launcher_count(w->launcher, target_dumps(t));
		} else {
			launcher_urgent(w->launcher, 1);
		}
		launcher_progress(w->launcher, -1);
	}
	if (r < 0)
		finish(w, DW_EXIT_DUMP);
	else if (w->session_lost)
		finish(w, DW_EXIT_RUNTIME);
	else if (all_rules_done(w))
		finish(w, DW_EXIT_OK);
}

static void on_session_failed(void *ctx, struct target *t, const char *err)
{
	struct watcher *w = ctx;
	(void)err;

	if (target_dumping(t))
		w->session_lost = 1;
	else
		finish(w, DW_EXIT_RUNTIME);
}

static void on_exited(void *ctx, struct target *t)
{
	struct watcher *w = ctx;

	log_info("process %d (%s) exited; %u dump(s) taken", (int)target_process(t)->pid, target_name(t),
	         target_dumps(t));
	/* A dump that failed as the process went keeps its exit code. */
	finish(w, w->exit_code);
}

static void on_quiet(void *ctx, struct target *t)
{
	struct watcher *w = ctx;
	(void)t;

	if (w->stopping)
		loop_stop(w->loop);
}

static const struct target_hooks watch_hooks = {
    .probed = on_probed,
    .attached = on_attached,
    .attach_failed = on_attach_failed,
    .fired = on_fired,
    .dump_ended = on_dump_ended,
    .session_failed = on_session_failed,
    .exited = on_exited,
    .quiet = on_quiet,
};

static void on_signal(struct loop *l, int signo, void *ctx)
{
	struct watcher *w = ctx;
	(void)l;

	if (signo == SIGHUP)
		return;
	log_info("stopping on signal %d", signo);
	finish(w, DW_EXIT_SIGNAL);
}

static void on_hook_done(void *ctx, int ok)
{
	struct watcher *w = ctx;
	(void)ok;

	if (w->waiting_hooks && hook_running(w->hooks) + hook_waiting(w->hooks) == 0)
		loop_stop(w->loop);
}

static void on_stop_deadline(struct loop *l, void *ctx)
{
	(void)ctx;
	loop_stop(l);
}

/* The rules of the command line, as the target takes them. */
static struct target_rule *target_rules_of(const struct watch_options *o)
{
	struct target_rule *rules = calloc(o->n_rules ? o->n_rules : 1, sizeof(*rules));

	if (!rules)
		return NULL;
	for (size_t i = 0; i < o->n_rules; i++) {
		rules[i].fr.rule = o->rules[i];
		rules[i].fr.enabled = 1;
		eval_init(&rules[i].st);
	}
	return rules;
}

int watch_run(const struct watch_options *o)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
	struct watcher w;
	struct dn_target dt;
	struct target_rule *rules;
	char err[512];
	int r;

	memset(&w, 0, sizeof(w));
	w.o = o;
	w.exit_code = DW_EXIT_OK;

	r = discovery_find(o->pid, &dt, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return DW_EXIT_TARGET;
	}
	r = journal_open(o->journal_path, &w.journal, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return DW_EXIT_USAGE;
	}
	if (o->target.on_fire.argc || o->target.on_dump.argc || o->target.hook_user) {
		struct hook_user hu;
		if (hook_user_resolve(o->target.hook_user, &hu, err, sizeof(err)) < 0) {
			log_error("%s", err);
			journal_close(w.journal);
			return DW_EXIT_USAGE;
		}
		w.hook_user = hu;
		w.have_hooks = 1;
		if (hook_user_warning(&hu, err, sizeof(err)))
			log_warn("%s", err);
	}
	/* Forked before anything else runs: the child takes nothing along. */
	w.launcher = launcher_start(o->launcher, o->target.verbose);
	w.loop = loop_new();
	loop_timer_init(&w.progress, on_progress, &w);
	rules = target_rules_of(o);
	if (w.loop && w.have_hooks)
		w.hooks = hook_runner_new(w.loop, w.journal, &w.hook_user, on_hook_done, &w);
	w.cfg = (struct target_config){
	    .loop = w.loop,
	    .journal = w.journal,
	    .opt = &o->target,
	    .hooks = w.hooks,
	};
	w.t = w.loop ? target_new(&w.cfg, &watch_hooks, &w, &dt) : NULL;
	if (!w.loop || !rules || !w.t || (w.have_hooks && !w.hooks) ||
	    loop_add_signals(w.loop, signals, 3, on_signal, &w) < 0) {
		log_error("out of memory");
		free(rules);
		r = DW_EXIT_RUNTIME;
		goto out;
	}
	target_set_rules(w.t, rules, o->n_rules);
	target_probe(w.t);

	r = loop_run(w.loop);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		w.exit_code = DW_EXIT_RUNTIME;
	}
	/* A dump in progress is abandoned (journaled by the target); tracing
	 * is ended, waiting a bounded time for the runtime's answer. */
	uint64_t bytes = 0, events = 0;
	target_stream_totals(w.t, &bytes, &events);
	if (target_dumping(w.t)) {
		target_free(w.t);
		w.t = NULL;
	} else if (target_state(w.t) == TARGET_ATTACHED) {
		target_detach(w.t, w.exit_code == DW_EXIT_SIGNAL ? "dumpwatch is stopping" : "finished");
		if (target_busy(w.t)) {
			w.stopping = 1;
			loop_set_timer(w.loop, loop_now() + WATCH_STOP_NS, on_stop_deadline, &w);
			loop_run(w.loop);
		}
	}
	/* Hooks of the dumps taken run to their end (or their timeout), unless
	 * a signal stopped the watch. */
	if (hook_running(w.hooks) + hook_waiting(w.hooks) > 0 && w.exit_code != DW_EXIT_SIGNAL) {
		log_info("waiting for %zu hook(s) to end", hook_running(w.hooks) + hook_waiting(w.hooks));
		w.waiting_hooks = 1;
		loop_set_timer(w.loop, hook_last_deadline(w.hooks) + 1000000000LL, on_stop_deadline, &w);
		loop_run(w.loop);
	}
	hook_runner_free(w.hooks); /* what still runs is killed, journaled */
	w.hooks = NULL;
	{
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "pid", json_object_new_int(dt.pid));
		json_object_object_add(rec, "process", json_object_new_string(w.t ? target_name(w.t) : ""));
		json_object_object_add(rec, "exit_code", json_object_new_int(w.exit_code));
		json_object_object_add(rec, "dumps", json_object_new_int(w.t ? (int)target_dumps(w.t) : 0));
		json_object_object_add(rec, "stream_bytes", json_object_new_int64((int64_t)bytes));
		json_object_object_add(rec, "events", json_object_new_int64((int64_t)events));
		journal_write(w.journal, "stop", rec);
	}
	r = w.exit_code;
out:
	if (w.loop)
		loop_timer_disarm(w.loop, &w.progress);
	target_free(w.t);
	hook_runner_free(w.hooks);
	loop_free(w.loop);
	launcher_stop(w.launcher); /* cleared, whatever ended the watch */
	journal_close(w.journal);
	return r;
}
