/* The guard; see guard.h.
 *
 * Processes. Every .NET process found is kept in a table (guard_procs.c),
 * keyed by pid and start time (a reused pid is another process). A process
 * that some enabled rule matches is attached: one EventPipe session
 * subscribing to the union of what its rules need. A process that no rule
 * matches stays in the table, unattached, so that a later rule can pick it
 * up without asking its runtime again. A process leaves the table when it
 * exits (pidfd) or, if unattached, when a full scan no longer finds it.
 *
 * Each process's attachment, evaluation and dumps are its target's
 * (target.h), on the shared loop and never waiting for one process: the
 * guard decides a process's rules, when it may attach, and what its exit
 * means for the table. A process attaches only while descriptors are left
 * over a reserve (guard_procs.c); else it waits, and the timer tries again.
 *
 * Rules. The ruleset reports each file's load, rejection and removal; after
 * any change every process's rule list is rebuilt. A rule whose definition
 * hash did not change keeps its evaluation state (limits, cooldown); state of
 * rules that stop applying is kept aside (and in the state file) so that it
 * comes back with the rule. The session is restarted only when the
 * subscription changes.
 *
 * The finding of processes is guard_find.c, the process table and its
 * descriptors guard_procs.c, the limits kept across restarts guard_state.c;
 * what they share with this file, and which calls which, is guard_shared.h. */
#include "dumpwatch/guard.h"

#include "dumpwatch/status.h"
#include "guard_shared.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/discovery.h"
#include "dumpwatch/eval.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/report.h"
#include "dumpwatch/ruleset.h"
#include "dumpwatch/session.h"
#include "dumpwatch/state.h"
#include "dumpwatch/target.h"
#include "dumpwatch/watch.h"

/* ---- processes: rules, attach, detach --------------------------------- */

static long uid_of_user(const struct rule_filter *f)
{
	struct passwd *pw;

	if (!f->has_user || !f->user[0] || strspn(f->user, "0123456789") == strlen(f->user))
		return -1;
	pw = getpwnam(f->user);
	return pw ? (long)pw->pw_uid : -1;
}

static int rule_matches(const struct file_rule *fr, const struct proc *p)
{
	return rulefile_filter_match(&fr->filter, target_name(p->tg), target_cmdline(p->tg), p->t.pid, p->t.uid,
	                             uid_of_user(&fr->filter));
}

/* Attaches p (or resubscribes) when its rules ask for it and descriptors
 * allow; not while a retry is scheduled (the target attaches then). */
static void attach(struct proc *p)
{
	size_t n;

	target_rules(p->tg, &n);
	if (n == 0 || p->g->stopping || target_retrying(p->tg, NULL))
		return;
	if (target_state(p->tg) != TARGET_IDLE && target_state(p->tg) != TARGET_ATTACHED)
		return;
	if (!guard_may_attach(p))
		return;
	target_attach(p->tg);
}

/* Rebuilds p's rule list from the rules in force, carrying over the state of
 * unchanged rules, then attaches, resubscribes or detaches as needed. */
static void apply_rules(struct proc *p)
{
	struct guard *g = p->g;
	const struct file_rule *const *active;
	size_t n_active = g->rs ? ruleset_active(g->rs, &active) : 0;
	struct target_rule *nr = NULL;
	size_t n = 0, n_old = 0;
	enum target_state st = target_state(p->tg);

	if (st == TARGET_NEW || st == TARGET_PROBING || st == TARGET_GONE)
		return; /* matched when its probe answers */
	/* A dump in progress refers to its rule by index: rebuild after it
	 * (dump_ended applies the rules again). */
	if (target_dumping(p->tg))
		return;
	if (n_active > 0) {
		nr = calloc(n_active, sizeof(*nr));
		if (!nr) {
			log_error("out of memory applying rules to pid %d", (int)p->t.pid);
			return;
		}
	}
	struct target_rule *old = (struct target_rule *)target_rules(p->tg, &n_old);
	for (size_t i = 0; i < n_active; i++) {
		const struct file_rule *fr = active[i];
		if (!rule_matches(fr, p))
			continue;
		struct target_rule *gr = &nr[n++];
		gr->fr = *fr;
		if (ruleset_rule_path(g->rs, fr, gr->file, sizeof(gr->file)) < 0)
			gr->file[0] = '\0';
		gr->hash = ruleset_rule_hash(fr);
		eval_init(&gr->st);
		int carried = 0;
		for (size_t k = 0; k < n_old; k++) {
			struct target_rule *o = &old[k];
			if (o->hash == gr->hash && strcmp(o->fr.rule.name, fr->rule.name) == 0) {
				gr->st = o->st;
				memcpy(gr->known, o->known, sizeof(gr->known));
				gr->at_limit = o->at_limit;
				o->hash = 0; /* taken */
				o->st.fires = 0;
				carried = 1;
				break;
			}
		}
		if (!carried)
			guard_take_state(g, p, fr->rule.name, gr->hash, &gr->st);
	}
	for (size_t k = 0; k < n_old; k++)
		guard_keep_state(g, p, &old[k]);
	if (n == 0) {
		free(nr);
		nr = NULL;
		guard_fd_wait_end(p);
	}
	target_set_rules(p->tg, nr, n);
	if (n > 0)
		attach(p);
}

/* ---- the targets' hooks ---------------------------------------------- */

static void maybe_finish_stop(struct guard *g);

/* The runtime answered ProcessInfo (or not): name and command line known.
 * A socket refused or dead is not kept (guard_candidate_failed). */
static void hook_probed(void *ctx, struct target *t, int r, const char *err)
{
	struct proc *p = ctx;
	struct guard *g = p->g;

	if (r == -EPERM || r == -ECONNREFUSED || r == -ENOENT) {
		struct dn_target dt = p->t;
		guard_proc_remove(g, p, "");
		if (!discovery_exited(dt.pid, dt.starttime))
			guard_candidate_failed(g, &dt, r, err);
		return;
	}
	if (r < 0)
		log_debug("pid %d: process info: %s", (int)p->t.pid, err);
	log_debug("found .NET process %d (%s): %s", (int)p->t.pid, target_name(t), target_cmdline(t));
	apply_rules(p);
}

static void hook_attached(void *ctx, struct target *t)
{
	(void)t;
	guard_fd_wait_end(ctx);
}

static void hook_attach_failed(void *ctx, struct target *t, int r, const char *err)
{
	struct proc *p = ctx;
	(void)t;
	(void)r;
	(void)err;
	p->g->n_attach_failed++;
}

static int hook_may_attach(void *ctx, struct target *t)
{
	struct proc *p = ctx;
	(void)t;
	return !p->g->stopping && guard_may_attach(p);
}

static void hook_fired(void *ctx, struct target *t, size_t rule)
{
	struct proc *p = ctx;
	(void)t;
	(void)rule;
	/* Before the dump starts: a crash during it cannot lead to a second. */
	guard_save_state(p->g);
}

static void hook_dump_ended(void *ctx, struct target *t, size_t rule, int r)
{
	struct proc *p = ctx;
	(void)t;
	(void)rule;
	if (r == 0)
		p->g->n_dumps++;
	else if (r == -ENOSPC)
		p->g->n_dumps_skipped++;
	else
		p->g->n_dumps_failed++;
	if (p->g->stopping) {
		maybe_finish_stop(p->g);
		return;
	}
	apply_rules(p); /* rules may have changed during the dump */
}

static void hook_exited(void *ctx, struct target *t)
{
	struct proc *p = ctx;
	struct guard *g = p->g;
	(void)t;
	guard_proc_remove(g, p, "exited");
	if (g->stopping)
		maybe_finish_stop(g);
}

static void hook_quiet(void *ctx, struct target *t)
{
	struct proc *p = ctx;
	(void)t;
	if (p->g->stopping)
		maybe_finish_stop(p->g);
}

static const struct target_hooks guard_hooks = {
    .probed = hook_probed,
    .attached = hook_attached,
    .attach_failed = hook_attach_failed,
    .may_attach = hook_may_attach,
    .fired = hook_fired,
    .dump_ended = hook_dump_ended,
    .exited = hook_exited,
    .quiet = hook_quiet,
};

/* ---- timer, signals, stop --------------------------------------------- */

static void arm_timer(struct guard *g);

static void on_timer(struct loop *l, void *ctx)
{
	struct guard *g = ctx;
	int64_t now = loop_now();

	if (g->stopping) {
		/* The stop deadline: dumps still running are abandoned as
		 * the processes are freed. */
		loop_stop(l);
		return;
	}
	if (now >= g->sweep_at)
		guard_full_scan(g);
	if (now >= g->light_at)
		guard_light_scan(g, 0);
	else if (g->light_soon_at && now >= g->light_soon_at)
		guard_light_scan(g, 1);
	guard_pend_run(g, now);
	/* Processes waiting for descriptors, in turn, while there is room. */
	for (size_t i = 0; i < g->n_procs && g->n_fd_wait > 0; i++) {
		struct proc *p = g->procs[i];
		if (!p->fd_wait || target_retrying(p->tg, NULL) || target_busy(p->tg))
			continue;
		int probe = target_state(p->tg) == TARGET_NEW;
		if (!guard_fds_allow(g, probe ? 1 : (uint64_t)target_fds_to_attach(p->tg)))
			break;
		guard_fd_wait_end(p);
		if (probe)
			target_probe(p->tg); /* may remove p: not touched after */
		else
			attach(p);
	}
	arm_timer(g);
}

static void arm_timer(struct guard *g)
{
	int64_t now = loop_now();
	int64_t deadline = now + GUARD_IDLE_TICK_NS;

	if (g->stopping)
		return;
	if (g->sweep_at < deadline)
		deadline = g->sweep_at;
	if (g->light_at < deadline)
		deadline = g->light_at;
	if (g->light_soon_at && g->light_soon_at < deadline)
		deadline = g->light_soon_at;
	if (g->pend_due_min && g->pend_due_min < deadline)
		deadline = g->pend_due_min;
	if (deadline <= now)
		deadline = now + 1;
	loop_set_timer(g->loop, deadline, on_timer, g);
}

static void apply_all(struct guard *g)
{
	/* apply_rules never removes a process: the table stays as it is. */
	for (size_t i = 0; i < g->n_procs; i++)
		apply_rules(g->procs[i]);
	arm_timer(g);
}

/* New socket names: the finder looks, then the timer is set for what it
 * scheduled. */
static void on_inotify(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct guard *g = ctx;
	(void)l;
	(void)events;
	guard_on_inotify(g, fd);
	arm_timer(g);
}

static void on_rules(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct guard *g = ctx;
	(void)l;
	(void)fd;
	(void)events;
	int r = ruleset_process(g->rs);
	if (r < 0) {
		log_error("watching %s failed (%s); reading it again", g->o->rules_dir, strerror(-r));
		r = ruleset_reload(g->rs);
	}
	if (r > 0)
		g->n_rule_reloads++;
	if (r > 0 && !g->stopping)
		apply_all(g);
}

/* Stopping: the loop ends when no target has a dump or a stop in flight. */
static void maybe_finish_stop(struct guard *g)
{
	for (size_t i = 0; i < g->n_procs; i++)
		if (target_busy(g->procs[i]->tg))
			return;
	if (hook_running(g->hooks) + hook_waiting(g->hooks))
		return;
	loop_stop(g->loop);
}

static void on_upload_done(void *ctx, int ok)
{
	struct guard *g = ctx;

	if (ok)
		g->n_uploads++;
	else
		g->n_uploads_failed++;
}

static void on_hook_done(void *ctx, int ok)
{
	struct guard *g = ctx;

	if (ok)
		g->n_hooks++;
	else
		g->n_hooks_failed++;
	if (g->stopping)
		maybe_finish_stop(g);
}

static void begin_stop(struct guard *g, int signo)
{
	size_t jobs = 0;

	if (g->stopping)
		return;
	g->stopping = 1;
	log_info("stopping on signal %d", signo);
	for (size_t i = 0; i < g->n_procs; i++) {
		struct proc *p = g->procs[i];
		enum target_state st = target_state(p->tg);
		if (st == TARGET_ATTACHED || st == TARGET_ATTACHING)
			target_detach(p->tg, "dumpwatch is stopping");
		jobs += target_dumping(p->tg) ? 1u : 0u;
	}
	if (jobs > 0)
		log_info("waiting up to %.1f s for %zu dump(s) in progress", (double)g->o->stop_timeout_ns / 1e9, jobs);
	if (hook_running(g->hooks) + hook_waiting(g->hooks) > 0) {
		log_info("waiting up to %.1f s for %zu hook(s) running and %zu waiting",
		         (double)g->o->stop_timeout_ns / 1e9, hook_running(g->hooks), hook_waiting(g->hooks));
		jobs += hook_running(g->hooks) + hook_waiting(g->hooks);
	}
	/* Tracing ends within TARGET_STOP_MS; dumps get the stop timeout. */
	int64_t wait_ns = jobs ? g->o->stop_timeout_ns : (int64_t)TARGET_STOP_MS * 1000000LL;
	g->stop_deadline = loop_now() + wait_ns;
	loop_set_timer(g->loop, g->stop_deadline, on_timer, g);
	maybe_finish_stop(g);
}

static void on_signal(struct loop *l, int signo, void *ctx)
{
	struct guard *g = ctx;
	(void)l;

	if (signo == SIGHUP) {
		if (g->stopping)
			return;
		log_info("SIGHUP: reloading %s and scanning for processes", g->o->rules_dir);
		journal_write(g->journal, "reload", json_object_new_object());
		ruleset_reload(g->rs);
		g->n_rule_reloads++;
		guard_full_scan(g);
		apply_all(g);
		return;
	}
	begin_stop(g, signo);
}

/* ---- run -------------------------------------------------------------- */

static void on_ruleset(void *ctx, const struct ruleset_change *c)
{
	struct guard *g = ctx;
	report_ruleset(g->journal, c);
}

int guard_run(const struct guard_options *o)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
	struct guard g;
	char err[512];
	int r, code = DW_EXIT_OK;

	memset(&g, 0, sizeof(g));
	g.o = o;
	g.inofd = -1;
	g.start_ns = loop_now();
	g.start_wall_ns = loop_wall_now();
	g.tokens_ns = g.start_ns;
	g.check_tokens = GUARD_CHECKS_BURST;

	/* Two descriptors per attached process: the soft limit (1024 under
	 * systemd's default) would let a few hundred processes of anyone's
	 * leave none for the rest. */
	r = fds_raise_limit(&g.fdl);
	if (r < 0)
		log_warn("cannot raise the limit on open files (%s): %llu", strerror(-r),
		         (unsigned long long)g.fdl.soft);
	else if (o->target.verbose)
		log_info("open files: soft limit %llu (was %llu), hard limit %llu", (unsigned long long)g.fdl.soft,
		         (unsigned long long)g.fdl.soft_before, (unsigned long long)g.fdl.hard);

	r = journal_open(o->journal_path, &g.journal, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return DW_EXIT_USAGE;
	}
	if (o->state_dir) {
		struct state_record *recs;
		size_t n;
		if (mkdir(o->state_dir, 0700) < 0 && errno != EEXIST) {
			log_error("cannot create state directory %s: %s", o->state_dir, strerror(errno));
			journal_close(g.journal);
			return DW_EXIT_USAGE;
		}
		snprintf(g.state_path, sizeof(g.state_path), "%s/state.json", o->state_dir);
		if (state_load(g.state_path, &recs, &n, err, sizeof(err)) < 0) {
			log_error("%s; starting without the limits it held", err);
			guard_state_failed(&g, err);
		} else {
			g.kept = recs;
			g.n_kept = n;
			/* Drop records of processes that are gone. */
			for (size_t i = 0; i < g.n_kept;) {
				unsigned long long st;
				if (discovery_starttime(g.kept[i].pid, &st) == 0 && st == g.kept[i].starttime)
					i++;
				else
					g.kept[i] = g.kept[--g.n_kept];
			}
		}
	}

	g.loop = loop_new();
	if (!g.loop) {
		log_error("cannot create the event loop: %s", strerror(errno));
		code = DW_EXIT_RUNTIME;
		goto out;
	}
	r = loop_add_signals(g.loop, signals, 3, on_signal, &g);
	if (r < 0) {
		log_error("cannot take signals: %s", strerror(-r));
		code = DW_EXIT_RUNTIME;
		goto out;
	}
	if (g.state_path[0]) {
		char sock[PATH_MAX];
		snprintf(sock, sizeof(sock), "%s/%s", o->state_dir, STATUS_SOCKET_NAME);
		if (control_open(g.loop, sock, guard_status_text, &g, &g.control, err, sizeof(err)) < 0)
			log_warn("%s; `dumpwatch status` will not answer", err);
	}
	{
		struct hook_user hu;
		int hr = hook_user_resolve(o->target.hook_user, &hu, err, sizeof(err));
		if (hr < 0 && (o->target.hook_user || o->target.on_fire.argc || o->target.on_dump.argc)) {
			log_error("%s", err);
			code = DW_EXIT_USAGE;
			goto out;
		}
		if (hr == 0 && hook_user_warning(&hu, err, sizeof(err)))
			log_warn("%s", err);
		/* Without a user to run them as (one named that does not exist),
		 * hooks of rule files are refused when they are due, each
		 * journaled. */
		g.hooks = hook_runner_new(g.loop, g.journal, hr < 0 ? NULL : &hu, on_hook_done, &g);
		if (!g.hooks) {
			log_error("out of memory");
			code = DW_EXIT_RUNTIME;
			goto out;
		}
	}
	if (o->upload) {
		g.uploads = uploader_new(g.loop, g.journal, o->upload, on_upload_done, &g, err, sizeof(err));
		if (!g.uploads) {
			log_error("--upload: %s", err);
			code = DW_EXIT_USAGE;
			goto out;
		}
	}
	g.proc_hooks = &guard_hooks;
	g.tcfg = (struct target_config){
	    .loop = g.loop,
	    .journal = g.journal,
	    .opt = &o->target,
	    .pid_prefix = 1,
	    .retry = 1,
	    .hooks = g.hooks,
	    .uploads = g.uploads,
	    .upload_default = g.uploads != NULL,
	    .runtime_counters = guard_metrics_wanted(o),
	};

	{
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "rules_dir", json_object_new_string(o->rules_dir));
		json_object_object_add(rec, "dump_dir", json_object_new_string(o->target.dump_dir));
		if (o->n_allow_dump_dirs) {
			struct json_object *allowed = json_object_new_array();
			for (size_t i = 0; i < o->n_allow_dump_dirs; i++)
				json_object_array_add(allowed, json_object_new_string(o->allow_dump_dirs[i]));
			json_object_object_add(rec, "allow_dump_dirs", allowed);
		}
		json_object_object_add(rec, "restored_limits", json_object_new_int((int)g.n_kept));
		json_object_object_add(rec, "pid", json_object_new_int(getpid()));
		journal_write(g.journal, "start", rec);
	}
	{
		const char *dump_dirs[1 + GUARD_ALLOW_DUMP_DIRS_MAX];
		struct ruleset_policy policy = {.dump_dirs = dump_dirs, .n_dump_dirs = 1};
		dump_dirs[0] = o->target.dump_dir;
		for (size_t i = 0; i < o->n_allow_dump_dirs && i < GUARD_ALLOW_DUMP_DIRS_MAX; i++)
			dump_dirs[policy.n_dump_dirs++] = o->allow_dump_dirs[i];
		r = ruleset_open(o->rules_dir, &policy, on_ruleset, &g, &g.rs, err, sizeof(err));
	}
	if (r < 0) {
		log_error("%s", err);
		code = DW_EXIT_USAGE;
		goto out;
	}
	loop_add(g.loop, ruleset_fd(g.rs), EPOLLIN, on_rules, &g);
	code = guard_metrics_open(&g);
	if (code != DW_EXIT_OK)
		goto out;

	g.inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (g.inofd < 0)
		log_warn("inotify unavailable (%s): new processes are found by the periodic scan only",
		         strerror(errno));
	else
		loop_add(g.loop, g.inofd, EPOLLIN, on_inotify, &g);
	guard_watch_dir(&g, "/tmp");
	for (size_t i = 0; i < o->n_socket_dirs; i++)
		guard_watch_dir(&g, o->socket_dirs[i]);

	g.fd_base = fds_count_open();
	guard_full_scan(&g);
	guard_light_scan(&g, 0);
	{
		const struct file_rule *const *active;
		size_t n_rules = ruleset_active(g.rs, &active);
		/* Attachments complete on the loop, each on its own: the
		 * attach records say which. */
		log_info("guarding with %zu rule(s) from %s, %zu .NET process(es) found; dumps go to %s", n_rules,
		         o->rules_dir, g.n_procs, o->target.dump_dir);
	}
	arm_timer(&g);
	r = loop_run(g.loop);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		code = DW_EXIT_RUNTIME;
	}

out:
	guard_save_state(&g);
	/* The last figures, while the processes are still in the table. */
	guard_metrics_close(&g);
	/* Dumps still running are abandoned (journaled) before the stop
	 * record, which is the journal's last. */
	size_t n_procs = g.n_procs;
	while (g.n_procs > 0) {
		struct proc *p = g.procs[--g.n_procs];
		guard_proc_free(p);
	}
	hook_runner_free(g.hooks); /* hooks still running are killed (journaled) */
	g.hooks = NULL;
	if (uploader_pending(g.uploads))
		log_info("%zu upload(s) still queued: they go on at the next start", uploader_pending(g.uploads));
	uploader_free(g.uploads); /* an upload under way stays queued */
	g.uploads = NULL;
	{
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "exit_code", json_object_new_int(code));
		json_object_object_add(rec, "processes", json_object_new_int((int)n_procs));
		/* The work discovery did: what tests and figures read. */
		struct dn_stats ds;
		struct json_object *d = json_object_new_object();
		discovery_get_stats(&ds);
		json_object_object_add(d, "full_scans", json_object_new_int64((int64_t)g.n_full_scans));
		json_object_object_add(d, "light_scans", json_object_new_int64((int64_t)g.n_light_scans));
		json_object_object_add(d, "socket_names", json_object_new_int64((int64_t)g.n_socket_events));
		json_object_object_add(d, "names_of_no_pid", json_object_new_int64((int64_t)g.n_events_nopid));
		json_object_object_add(d, "pid_checks", json_object_new_int64((int64_t)g.n_pid_checks));
		json_object_object_add(d, "names_dropped", json_object_new_int64((int64_t)g.n_events_dropped));
		json_object_object_add(d, "probes", json_object_new_int64((int64_t)ds.probes));
		json_object_object_add(d, "listings", json_object_new_int64((int64_t)ds.listings));
		json_object_object_add(d, "listings_outside_full_scans",
		                       json_object_new_int64((int64_t)(ds.listings - g.n_full_scan_listings)));
		json_object_object_add(d, "listed_names", json_object_new_int64((int64_t)ds.listed_names));
		json_object_object_add(d, "socket_stats", json_object_new_int64((int64_t)ds.lookups));
		json_object_object_add(rec, "discovery", d);
		journal_write(g.journal, "stop", rec);
	}

	free(g.procs);
	free(g.pend.slot);
	free(g.seen);
	free(g.dirs);
	free(g.kept);
	control_free(g.control);
	ruleset_free(g.rs);
	if (g.inofd >= 0)
		close(g.inofd);
	loop_free(g.loop);
	journal_close(g.journal);
	if (code == DW_EXIT_OK)
		log_info("stopped");
	return code;
}
