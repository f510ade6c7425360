/* The guard; see guard.h.
 *
 * Processes. Every .NET process found is kept in a table, keyed by pid and
 * start time (a reused pid is another process). A process that some enabled
 * rule matches is attached: one EventPipe session subscribing to the union of
 * what its rules need. A process that no rule matches stays in the table,
 * unattached, so that a later rule can pick it up without asking its runtime
 * again. A process leaves the table when it exits (pidfd) or, if unattached,
 * when a full scan no longer finds it.
 *
 * Finding new processes. A runtime creates its diagnostics socket early in
 * start-up, so an inotify watch on the socket directories (/tmp, every TMPDIR
 * and container /tmp seen, and --socket-dir) catches a new process at once; a
 * socket appearing triggers a full scan 20 ms later (bursts coalesce). A light
 * scan every second probes only pids never seen before (and those seen in the
 * last few seconds, which may not have created their socket yet): that finds
 * processes in directories not watched yet, such as a new container's /tmp,
 * whose directory is then watched too.
 *
 * Rules. The ruleset reports each file's load, rejection and removal; after
 * any change every process's rule list is rebuilt. A rule whose definition
 * hash did not change keeps its evaluation state (limits, cooldown); state of
 * rules that stop applying is kept aside (and in the state file) so that it
 * comes back with the rule. The session is restarted only when the
 * subscription changes.
 *
 * Limits across restarts: after every fire the state file is rewritten
 * (state.h), before the dump starts, so that a crash during a dump cannot
 * lead to a second one. */
#include "dumpwatch/guard.h"

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
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dumpwatch/discovery.h"
#include "dumpwatch/eval.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/report.h"
#include "dumpwatch/ruleset.h"
#include "dumpwatch/session.h"
#include "dumpwatch/state.h"
#include "dumpwatch/watch.h"

#define GUARD_TICK_NS 250000000LL         /* re-evaluation when no events arrive (rates decay) */
#define GUARD_LIGHT_SCAN_NS 1000000000LL  /* probe pids not seen before */
#define GUARD_RESCAN_DELAY_NS 20000000LL  /* after a socket appeared; coalesces bursts */
#define GUARD_YOUNG_NS 5000000000LL       /* a pid without socket is probed again for this long */
#define GUARD_RETRY_MIN_NS 2000000000LL   /* attach failed: first retry */
#define GUARD_RETRY_MAX_NS 300000000000LL /* ... backing off to */
#define GUARD_INFO_TIMEOUT_MS 1000
#define GUARD_STOP_SESSION_MS 500
#define GUARD_WATCHES_MAX 1024

struct guard;

/* One rule applied to one process. */
struct grule {
	struct file_rule fr;
	uint64_t hash;
	struct eval_state st;
	int64_t next_ns; /* 0: nothing pending */
	int at_limit;    /* "limit" journaled since the last fire */
};

struct proc {
	struct guard *g;
	struct dn_target t;
	char name[256];
	char cmdline[4096];
	struct grule *rules;
	size_t n_rules;
	struct session *session;
	int attached;
	struct session_subscription sub;
	int pidfd;
	int gone;          /* the process exited */
	int refused;       /* its socket is served by someone else: never attached */
	int ever_attached; /* an attach record was written: its detach will be too */
	int seen_scan;     /* found by the current full scan */
	int64_t retry_ns;  /* attach failed: next attempt; 0: none */
	int64_t backoff_ns;
	struct dump_job *job;
	size_t job_rule;
	int in_event;
	uint32_t dumps;
	struct report_verbose verbose;
};

struct seen_pid {
	pid_t pid;
	int64_t first_ns;
};

struct watch_dir {
	int wd;
	char path[DISCOVERY_SOCK_MAX];
};

struct guard {
	const struct guard_options *o;
	struct loop *loop;
	struct journal *journal;
	struct ruleset *rs;
	int sigfd, inofd;
	struct proc **procs;
	size_t n_procs, cap_procs;
	struct seen_pid *seen;
	size_t n_seen;
	struct watch_dir *dirs;
	size_t n_dirs;
	int watch_limit_logged;
	struct state_record *kept; /* limit state of (rule, process) pairs not applied now */
	size_t n_kept;
	char state_path[PATH_MAX];
	int64_t rescan_at; /* 0: no full scan pending */
	int64_t light_at;
	int stopping;
	int64_t stop_deadline;
	int exit_code;
	int64_t start_ns;
};

/* ---- journal and log helpers ------------------------------------------ */

static struct json_object *proc_json(const struct proc *p)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int(p->t.pid));
	json_object_object_add(o, "process", json_object_new_string(p->name));
	return o;
}

static struct json_object *proc_rule_json(const struct proc *p, const char *rule)
{
	struct json_object *o = proc_json(p);
	json_object_object_add(o, "rule", json_object_new_string(rule));
	return o;
}

static void journal_error(struct guard *g, const char *event, struct json_object *rec, const char *err)
{
	json_object_object_add(rec, "error", json_object_new_string(err));
	journal_write(g->journal, event, rec);
}

/* ---- state ------------------------------------------------------------ */

static int same_key(const struct state_record *k, const char *rule, uint64_t hash, const struct dn_target *t)
{
	return k->hash == hash && k->pid == t->pid && k->starttime == t->starttime && strcmp(k->rule, rule) == 0;
}

static void keep_state(struct guard *g, const struct proc *p, const struct grule *gr)
{
	struct state_record *k;

	if (gr->st.fires == 0)
		return;
	for (size_t i = 0; i < g->n_kept; i++)
		if (same_key(&g->kept[i], gr->fr.rule.name, gr->hash, &p->t)) {
			state_from_eval(&g->kept[i], &gr->st);
			return;
		}
	if (g->n_kept >= STATE_RECORDS_MAX)
		return;
	k = realloc(g->kept, (g->n_kept + 1) * sizeof(*k));
	if (!k)
		return;
	g->kept = k;
	k = &g->kept[g->n_kept++];
	memset(k, 0, sizeof(*k));
	snprintf(k->rule, sizeof(k->rule), "%s", gr->fr.rule.name);
	k->hash = gr->hash;
	k->pid = p->t.pid;
	k->starttime = p->t.starttime;
	state_from_eval(k, &gr->st);
}

/* Takes the kept state of (rule, process) into st, if any. */
static int take_state(struct guard *g, const struct proc *p, const char *rule, uint64_t hash, struct eval_state *st)
{
	for (size_t i = 0; i < g->n_kept; i++) {
		if (!same_key(&g->kept[i], rule, hash, &p->t))
			continue;
		state_to_eval(&g->kept[i], st);
		g->kept[i] = g->kept[--g->n_kept];
		return 1;
	}
	return 0;
}

static void forget_process_state(struct guard *g, const struct dn_target *t)
{
	for (size_t i = 0; i < g->n_kept;) {
		if (g->kept[i].pid == t->pid && g->kept[i].starttime == t->starttime)
			g->kept[i] = g->kept[--g->n_kept];
		else
			i++;
	}
}

static void save_state(struct guard *g)
{
	struct state_record *recs;
	size_t n = g->n_kept, cap = g->n_kept;
	char err[512];

	if (!g->state_path[0])
		return;
	for (size_t i = 0; i < g->n_procs; i++)
		cap += g->procs[i]->n_rules;
	recs = calloc(cap ? cap : 1, sizeof(*recs));
	if (!recs) {
		log_error("cannot save limit state: out of memory");
		return;
	}
	if (g->n_kept)
		memcpy(recs, g->kept, g->n_kept * sizeof(*recs));
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct proc *p = g->procs[i];
		for (size_t k = 0; k < p->n_rules; k++) {
			const struct grule *gr = &p->rules[k];
			if (gr->st.fires == 0)
				continue;
			struct state_record *r = &recs[n++];
			snprintf(r->rule, sizeof(r->rule), "%s", gr->fr.rule.name);
			r->hash = gr->hash;
			r->pid = p->t.pid;
			r->starttime = p->t.starttime;
			state_from_eval(r, &gr->st);
		}
	}
	if (state_save(g->state_path, recs, n, err, sizeof(err)) < 0) {
		log_error("%s; limits will not survive a restart until this is fixed", err);
		journal_error(g, "state-failed", json_object_new_object(), err);
	}
	free(recs);
}

/* ---- socket directories ----------------------------------------------- */

static void watch_socket_dir(struct guard *g, const char *dir)
{
	struct watch_dir *d;
	int wd;

	if (g->inofd < 0 || !dir[0])
		return;
	for (size_t i = 0; i < g->n_dirs; i++)
		if (strcmp(g->dirs[i].path, dir) == 0)
			return;
	if (g->n_dirs >= GUARD_WATCHES_MAX) {
		if (!g->watch_limit_logged++)
			log_warn("watching %d socket directories already; %s is found by the periodic scan only",
			         GUARD_WATCHES_MAX, dir);
		return;
	}
	wd = inotify_add_watch(g->inofd, dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	if (wd < 0) {
		log_debug("cannot watch %s for new diagnostics sockets: %s", dir, strerror(errno));
		return;
	}
	/* The same directory seen through another path (each container
	 * process's /proc/PID/root/tmp) gives the same watch: keep one entry. */
	for (size_t i = 0; i < g->n_dirs; i++)
		if (g->dirs[i].wd == wd)
			return;
	d = realloc(g->dirs, (g->n_dirs + 1) * sizeof(*d));
	if (!d)
		return;
	g->dirs = d;
	g->dirs[g->n_dirs].wd = wd;
	snprintf(g->dirs[g->n_dirs].path, sizeof(g->dirs[g->n_dirs].path), "%s", dir);
	g->n_dirs++;
	log_debug("watching %s for new diagnostics sockets", dir);
}

static void watch_dir_of_socket(struct guard *g, const char *socket_path)
{
	char dir[DISCOVERY_SOCK_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", socket_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	watch_socket_dir(g, dir);
}

static void arm_timer(struct guard *g);

static void schedule_rescan(struct guard *g, int64_t delay_ns)
{
	int64_t at = loop_now() + delay_ns;
	if (!g->rescan_at || at < g->rescan_at)
		g->rescan_at = at;
	arm_timer(g);
}

static void on_inotify(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct guard *g = ctx;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int found = 0;
	(void)l;
	(void)events;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				found = 1;
			else if (ev->len > 0 && discovery_is_socket_name(ev->name))
				found = 1;
			if (ev->mask & IN_IGNORED) {
				for (size_t i = 0; i < g->n_dirs; i++)
					if (g->dirs[i].wd == ev->wd) {
						g->dirs[i] = g->dirs[--g->n_dirs];
						break;
					}
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	if (found)
		schedule_rescan(g, GUARD_RESCAN_DELAY_NS);
}

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
	return rulefile_filter_match(&fr->filter, p->name, p->cmdline, p->t.pid, p->t.uid, uid_of_user(&fr->filter));
}

static void build_subscription(const struct proc *p, struct session_subscription *sub)
{
	memset(sub, 0, sizeof(*sub));
	sub->counter_interval_sec = p->g->o->counter_interval_sec ? p->g->o->counter_interval_sec : 1;
	for (size_t i = 0; i < p->n_rules; i++)
		session_subscription_add(sub, &p->rules[i].fr.rule);
}

static struct json_object *rule_names_json(const struct proc *p)
{
	struct json_object *a = json_object_new_array();
	for (size_t i = 0; i < p->n_rules; i++)
		json_object_array_add(a, json_object_new_string(p->rules[i].fr.rule.name));
	return a;
}

static void rule_names_text(const struct proc *p, char *out, size_t len)
{
	size_t off = 0;
	out[0] = '\0';
	for (size_t i = 0; i < p->n_rules && off < len; i++) {
		int n = snprintf(out + off, len - off, "%s%s", i ? "," : "", p->rules[i].fr.rule.name);
		if (n > 0)
			off += (size_t)n;
	}
}

static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_pidfd(struct loop *l, int fd, uint32_t events, void *ctx);
static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns);

static void session_close(struct proc *p)
{
	if (!p->session)
		return;
	if (session_fd(p->session) >= 0)
		loop_del(p->g->loop, session_fd(p->session));
	if (p->attached && !p->gone)
		session_stop(p->session, GUARD_STOP_SESSION_MS);
	session_free(p->session);
	p->session = NULL;
	p->attached = 0;
}

static void detach(struct proc *p, const char *why)
{
	if (!p->attached)
		return;
	session_close(p);
	struct json_object *rec = proc_json(p);
	json_object_object_add(rec, "reason", json_object_new_string(why));
	json_object_object_add(rec, "dumps", json_object_new_int((int)p->dumps));
	journal_write(p->g->journal, "detach", rec);
	log_info("detached from pid %d (%s): %s", (int)p->t.pid, p->name, why);
}

/* Starts (or restarts) the session with the subscription of p's rules. */
static void attach(struct proc *p)
{
	struct guard *g = p->g;
	struct session_subscription sub;
	char err[512], names[512];
	int r;

	if (p->gone || p->n_rules == 0 || g->stopping)
		return;
	build_subscription(p, &sub);
	if (p->attached && session_subscription_equal(&sub, &p->sub))
		return;
	int again = p->attached;
	session_close(p);
	p->session = session_new(&p->t, on_event, p);
	if (!p->session) {
		log_error("cannot attach to pid %d: out of memory", (int)p->t.pid);
		return;
	}
	r = session_start(p->session, &sub, err, sizeof(err));
	if (r < 0) {
		session_free(p->session);
		p->session = NULL;
		if (discovery_exited(p->t.pid, p->t.starttime)) {
			p->gone = 1;
			return;
		}
		p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : GUARD_RETRY_MIN_NS;
		if (p->backoff_ns > GUARD_RETRY_MAX_NS)
			p->backoff_ns = GUARD_RETRY_MAX_NS;
		p->retry_ns = loop_now() + p->backoff_ns;
		struct json_object *rec = proc_json(p);
		json_object_object_add(rec, "rules", rule_names_json(p));
		json_object_object_add(rec, "retry_in_s", json_object_new_int64(p->backoff_ns / 1000000000LL));
		journal_error(g, "attach-failed", rec, err);
		log_error("cannot attach to pid %d (%s): %s; trying again in %lld s", (int)p->t.pid, p->name, err,
		          (long long)(p->backoff_ns / 1000000000LL));
		return;
	}
	p->retry_ns = 0;
	p->backoff_ns = 0;
	p->attached = 1;
	p->ever_attached = 1;
	p->sub = sub;
	p->verbose.start_ns = loop_now();
	loop_add(g->loop, session_fd(p->session), EPOLLIN, on_stream, p);
	if (p->pidfd < 0) {
		p->pidfd = (int)syscall(SYS_pidfd_open, p->t.pid, 0);
		if (p->pidfd >= 0)
			loop_add(g->loop, p->pidfd, EPOLLIN, on_pidfd, p);
	}
	rule_names_text(p, names, sizeof(names));
	const struct ipc_process_info *pi = session_info(p->session);
	struct json_object *rec = proc_json(p);
	json_object_object_add(rec, "rules", rule_names_json(p));
	json_object_object_add(rec, "runtime_version", json_object_new_string(pi->runtime_version));
	json_object_object_add(rec, "command_line", json_object_new_string(p->cmdline));
	if (again)
		json_object_object_add(rec, "resubscribed", json_object_new_boolean(1));
	journal_write(g->journal, "attach", rec);
	log_info("%s pid %d (%s, .NET %s) for rules %s", again ? "resubscribed to" : "attached to", (int)p->t.pid,
	         p->name, pi->runtime_version[0] ? pi->runtime_version : "?", names);
}

/* Rebuilds p's rule list from the rules in force, carrying over the state of
 * unchanged rules, then attaches, resubscribes or detaches as needed. */
static void apply_rules(struct proc *p)
{
	struct guard *g = p->g;
	const struct file_rule *const *active;
	size_t n_active = g->rs ? ruleset_active(g->rs, &active) : 0;
	struct grule *nr = NULL;
	size_t n = 0;

	if (p->gone || p->refused)
		return;
	/* A dump in progress refers to its rule by index: rebuild after it
	 * (on_dump_ready applies the rules again). */
	if (p->job)
		return;
	if (n_active > 0) {
		nr = calloc(n_active, sizeof(*nr));
		if (!nr) {
			log_error("out of memory applying rules to pid %d", (int)p->t.pid);
			return;
		}
	}
	for (size_t i = 0; i < n_active; i++) {
		const struct file_rule *fr = active[i];
		if (!rule_matches(fr, p))
			continue;
		struct grule *gr = &nr[n++];
		gr->fr = *fr;
		gr->hash = ruleset_rule_hash(fr);
		eval_init(&gr->st);
		int carried = 0;
		for (size_t k = 0; k < p->n_rules; k++) {
			struct grule *old = &p->rules[k];
			if (old->hash == gr->hash && strcmp(old->fr.rule.name, fr->rule.name) == 0) {
				gr->st = old->st;
				gr->at_limit = old->at_limit;
				old->hash = 0; /* taken */
				old->st.fires = 0;
				carried = 1;
				break;
			}
		}
		if (!carried)
			take_state(g, p, fr->rule.name, gr->hash, &gr->st);
	}
	for (size_t k = 0; k < p->n_rules; k++)
		keep_state(g, p, &p->rules[k]);
	free(p->rules);
	p->rules = nr;
	p->n_rules = n;
	if (n == 0)
		detach(p, "no rule matches it any more");
	else if (!p->retry_ns)
		attach(p);
}

static struct proc *proc_find(struct guard *g, pid_t pid)
{
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i]->t.pid == pid)
			return g->procs[i];
	return NULL;
}

static void proc_free(struct guard *g, struct proc *p)
{
	if (p->job) {
		struct json_object *rec = proc_rule_json(p, p->rules[p->job_rule].fr.rule.name);
		journal_error(g, "dump-failed", rec, "stopped before the dump completed; the partial file was removed");
		loop_del(g->loop, dump_job_fd(p->job));
		dump_job_abort(p->job);
		p->job = NULL;
	}
	session_close(p);
	if (p->pidfd >= 0) {
		loop_del(g->loop, p->pidfd);
		close(p->pidfd);
	}
	free(p->rules);
	free(p);
}

static void proc_remove(struct guard *g, struct proc *p, const char *why)
{
	/* Detach records pair with attach records; a process whose every
	 * attach failed has its attach-failed records instead. */
	if (p->attached || p->ever_attached) {
		struct json_object *rec = proc_json(p);
		json_object_object_add(rec, "reason", json_object_new_string(why));
		json_object_object_add(rec, "dumps", json_object_new_int((int)p->dumps));
		journal_write(g->journal, "detach", rec);
		log_info("detached from pid %d (%s): %s", (int)p->t.pid, p->name, why);
		p->attached = 0;
	}
	forget_process_state(g, &p->t);
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i] == p) {
			g->procs[i] = g->procs[--g->n_procs];
			break;
		}
	proc_free(g, p);
}

/* A .NET process found: learn its name and command line, then apply rules. */
static void proc_add(struct guard *g, const struct dn_target *t)
{
	struct ipc_process_info *pi;
	struct proc *p;
	char err[256];

	if (g->n_procs == g->cap_procs) {
		size_t c = g->cap_procs ? g->cap_procs * 2 : 16;
		struct proc **np = realloc(g->procs, c * sizeof(*np));
		if (!np)
			return;
		g->procs = np;
		g->cap_procs = c;
	}
	p = calloc(1, sizeof(*p));
	pi = calloc(1, sizeof(*pi));
	if (!p || !pi) {
		free(p);
		free(pi);
		return;
	}
	p->g = g;
	p->t = *t;
	p->pidfd = -1;
	const struct ipc_endpoint ep = discovery_endpoint(t);
	/* The entry assembly, when the runtime already knows it, names the
	 * process; otherwise its executable or the dll "dotnet" runs. */
	int r = ipc_process_info(&ep, GUARD_INFO_TIMEOUT_MS, pi, err, sizeof(err));
	if (r == -EPERM) {
		log_warn("pid %d: %s; not watching it", (int)t->pid, err);
		p->refused = 1;
	} else if (r < 0) {
		log_debug("pid %d: process info: %s", (int)t->pid, err);
	}
	if (r < 0)
		pi->entry_assembly[0] = '\0';
	discovery_process_name(t, pi->entry_assembly, p->name, sizeof(p->name));
	if (discovery_cmdline(t->pid, p->cmdline, sizeof(p->cmdline)) < 0)
		snprintf(p->cmdline, sizeof(p->cmdline), "%s", pi->command_line);
	free(pi);
	g->procs[g->n_procs++] = p;
	watch_dir_of_socket(g, t->socket_path);
	log_debug("found .NET process %d (%s): %s", (int)t->pid, p->name, p->cmdline);
	apply_rules(p);
	if (p->gone)
		proc_remove(g, p, "exited");
}

/* Full scan: every process with a diagnostics socket. */
static void rescan(struct guard *g)
{
	struct dn_target *v = NULL;
	size_t n = 0;
	int r;

	g->rescan_at = 0;
	r = discovery_list(&v, &n);
	if (r < 0) {
		log_error("cannot list processes: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < g->n_procs; i++)
		g->procs[i]->seen_scan = 0;
	for (size_t i = 0; i < n; i++) {
		struct proc *p = proc_find(g, v[i].pid);
		if (p && p->t.starttime != v[i].starttime) {
			proc_remove(g, p, "exited");
			p = NULL;
		}
		if (p) {
			p->seen_scan = 1;
			continue;
		}
		proc_add(g, &v[i]);
		p = proc_find(g, v[i].pid);
		if (p)
			p->seen_scan = 1;
	}
	/* Unattached processes absent from the scan are gone; attached ones
	 * leave through their pidfd. */
	for (size_t i = 0; i < g->n_procs;) {
		struct proc *p = g->procs[i];
		if (!p->seen_scan && !p->attached && !p->job && discovery_exited(p->t.pid, p->t.starttime)) {
			proc_remove(g, p, "exited");
			continue;
		}
		i++;
	}
	free(v);
}

static int cmp_seen(const void *a, const void *b)
{
	const struct seen_pid *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Light scan: probes only pids not seen before, or seen recently without a
 * socket (a runtime still starting). */
static void light_scan(struct guard *g)
{
	struct seen_pid *now_seen = NULL;
	size_t n = 0, cap = 0;
	int64_t now = loop_now();
	DIR *d = opendir("/proc");
	struct dirent *de;

	g->light_at = now + GUARD_LIGHT_SCAN_NS;
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		struct seen_pid key, *old;
		struct dn_target t;
		char err[8], dir[DISCOVERY_SOCK_MAX];

		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		key.pid = (pid_t)pid;
		old = g->n_seen ? bsearch(&key, g->seen, g->n_seen, sizeof(key), cmp_seen) : NULL;
		key.first_ns = old ? old->first_ns : now;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct seen_pid *ns = realloc(now_seen, c * sizeof(*ns));
			if (!ns)
				break;
			now_seen = ns;
			cap = c;
		}
		now_seen[n++] = key;
		if (proc_find(g, (pid_t)pid) || (old && now - old->first_ns > GUARD_YOUNG_NS))
			continue;
		if (discovery_find((pid_t)pid, &t, err, sizeof(err)) == 0) {
			proc_add(g, &t);
		} else if (!old && discovery_socket_dir((pid_t)pid, dir, sizeof(dir)) == 0 &&
		           strncmp(dir, "/proc/", 6) == 0) {
			/* A process in a container: its /tmp is where that
			 * container's next .NET process will show up. */
			watch_socket_dir(g, dir);
		}
	}
	closedir(d);
	qsort(now_seen, n, sizeof(*now_seen), cmp_seen);
	free(g->seen);
	g->seen = now_seen;
	g->n_seen = n;
}

/* ---- evaluation and dumps --------------------------------------------- */

static void on_dump_ready(struct loop *l, int fd, uint32_t events, void *ctx);

/* A stored dump deleted to make room for one of p (--store-full delete-oldest). */
static void on_dump_deleted(void *ctx, const char *path, uint64_t bytes)
{
	struct proc *p = ctx;
	struct json_object *rec = proc_json(p);

	json_object_object_add(rec, "deleted", json_object_new_string(path));
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)bytes));
	journal_write(p->g->journal, "dump-deleted", rec);
	log_info("deleted %s (%.1f MB) to make room for a dump of pid %d", path, (double)bytes / 1e6, (int)p->t.pid);
}

static void fire(struct proc *p, size_t i, int64_t now)
{
	struct guard *g = p->g;
	struct grule *gr = &p->rules[i];
	const struct rule *r = &gr->fr.rule;
	struct json_object *rec = proc_json(p);
	char desc[512], err[512];

	report_fire(rec, r, session_metrics(p->session), now, p->in_event ? session_read_ns(p->session) : 0, desc,
	            sizeof(desc));
	json_object_object_add(rec, "fired_unix_us", json_object_new_int64(loop_wall_now() / 1000));
	journal_write(g->journal, "fire", rec);
	log_info("rule %s fired for pid %d (%s): %s", r->name, (int)p->t.pid, p->name, desc);
	eval_record_fire(r, &gr->st, now);
	gr->at_limit = 0;
	save_state(g);

	struct dump_request req = {
	    .pid = p->t.pid,
	    .uid = p->t.uid,
	    .gid = p->t.gid,
	    .other_mount_ns = p->t.other_mount_ns,
	    .socket_path = p->t.socket_path,
	    .tmpdir = p->t.tmpdir,
	    .runtime_version = session_info(p->session)->runtime_version,
	    .createdump = g->o->createdump,
	    .dir = gr->fr.dump_dir[0] ? gr->fr.dump_dir : g->o->dump_dir,
	    .process_name = p->name,
	    .rule_name = r->name,
	    .type = r->dump_type,
	    .via = g->o->via,
	    .unix_ns = loop_wall_now(),
	    .name_template = gr->fr.name_template,
	    .limits = &g->o->store,
	    .timeout_ns = g->o->dump_timeout_ns,
	    .deleted = on_dump_deleted,
	    .ctx = p,
	};
	int rc = dump_start(&req, &p->job, err, sizeof(err));
	if (rc == -ENOSPC) {
		p->job = NULL;
		journal_error(g, "dump-skipped", proc_rule_json(p, r->name), err);
		log_warn("dump of pid %d (%s) for rule %s %s", (int)p->t.pid, p->name, r->name, err);
		return;
	}
	if (rc < 0) {
		p->job = NULL;
		journal_error(g, "dump-failed", proc_rule_json(p, r->name), err);
		log_error("dump of pid %d (%s) for rule %s failed: %s", (int)p->t.pid, p->name, r->name, err);
		return;
	}
	p->job_rule = i;
	loop_add(g->loop, dump_job_fd(p->job), EPOLLIN, on_dump_ready, p);
	log_info("dumping pid %d to %s", (int)p->t.pid, dump_job_path(p->job));
}

static void evaluate(struct proc *p, int64_t now)
{
	struct metrics_at rc;

	if (p->job || p->gone || !p->attached || p->g->stopping)
		return;
	rc.m = session_metrics(p->session);
	rc.now_ns = now;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct grule *gr = &p->rules[i];
		int64_t next = 0;
		enum eval_result res = eval_step(&gr->fr.rule, &gr->st, metrics_read_at, &rc, now, &next);
		gr->next_ns = (res == EVAL_PENDING || res == EVAL_COOLDOWN) ? next : 0;
		if (res == EVAL_LIMIT && !gr->at_limit) {
			/* Once per fire: the conditions hold again, but the rule
			 * has taken all the dumps its limits allow. */
			gr->at_limit = 1;
			struct json_object *rec = proc_rule_json(p, gr->fr.rule.name);
			json_object_object_add(rec, "fires", json_object_new_int64(gr->st.fires));
			json_object_object_add(rec, "max_dumps", json_object_new_int64(gr->fr.rule.limits.max_dumps));
			journal_write(p->g->journal, "limit", rec);
			log_info("rule %s holds for pid %d (%s) but has reached its limit of %u dump(s)",
			         gr->fr.rule.name, (int)p->t.pid, p->name, gr->fr.rule.limits.max_dumps);
		}
		if (res == EVAL_FIRE) {
			fire(p, i, now);
			return;
		}
	}
}

static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	struct proc *p = ctx;
	(void)s;
	if (p->g->o->verbose) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "pid %d: ", (int)p->t.pid);
		report_verbose_event(stdout, &p->verbose, prefix, session_metrics(p->session), r, t_ns);
	}
	if (metrics_event_matters(r)) {
		p->in_event = 1;
		evaluate(p, loop_now());
		p->in_event = 0;
	}
}

static void maybe_finish_stop(struct guard *g);

static void on_dump_ready(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct proc *p = ctx;
	struct guard *g = p->g;
	struct dump_result res;
	char err[512];
	(void)events;

	loop_del(l, fd);
	int rc = dump_job_finish(p->job, &res, err, sizeof(err));
	if (rc == -EAGAIN) {
		loop_add(l, dump_job_fd(p->job), EPOLLIN, on_dump_ready, p);
		return;
	}
	const struct grule *gr = &p->rules[p->job_rule];
	dump_job_free(p->job);
	p->job = NULL;
	if (rc < 0) {
		journal_error(g, "dump-failed", proc_rule_json(p, gr->fr.rule.name), err);
		log_error("dump of pid %d (%s) for rule %s failed: %s", (int)p->t.pid, p->name, gr->fr.rule.name, err);
	} else {
		struct json_object *rec = proc_rule_json(p, gr->fr.rule.name);
		p->dumps++;
		report_dump(rec, &res, gr->fr.rule.dump_type);
		journal_write(g->journal, "dump", rec);
		log_info("dump written: %s (%.1f MB in %.1f s, via %s)", res.path, (double)res.bytes / 1e6,
		         res.duration_ms / 1e3, res.via);
	}
	if (g->stopping) {
		maybe_finish_stop(g);
		return;
	}
	if (p->gone) {
		proc_remove(g, p, "exited");
		return;
	}
	apply_rules(p); /* rules may have changed during the dump */
	evaluate(p, loop_now());
	arm_timer(g);
}

/* The session of p failed (err says how; its descriptor is out of the loop):
 * journal it and attach again later, backing off. */
static void session_broke(struct proc *p, const char *err)
{
	struct guard *g = p->g;

	session_free(p->session);
	p->session = NULL;
	p->attached = 0;
	p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : GUARD_RETRY_MIN_NS;
	if (p->backoff_ns > GUARD_RETRY_MAX_NS)
		p->backoff_ns = GUARD_RETRY_MAX_NS;
	p->retry_ns = loop_now() + p->backoff_ns;
	journal_error(g, "session-failed", proc_json(p), err);
	log_error("%s; attaching again in %lld s", err, (long long)(p->backoff_ns / 1000000000LL));
	arm_timer(g);
}

static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct proc *p = ctx;
	struct guard *g = p->g;
	char err[512];
	int r;
	(void)events;

	r = session_read(p->session, err, sizeof(err));
	if (r == 0)
		return;
	loop_del(l, fd);
	/* A stream cut off mid-block is most often a process killed: its
	 * exit completes a moment after its sockets close. */
	if (r == 1 || discovery_wait_exited(p->t.pid, p->t.starttime, 200)) {
		/* The runtime ends the stream as the process shuts down, a
		 * moment before it is gone; the pidfd says so too and removes
		 * it. */
		p->gone = discovery_wait_exited(p->t.pid, p->t.starttime, 500);
		if (!p->gone && !g->stopping) {
			/* Someone else ended our session: attach again later. */
			session_free(p->session);
			p->session = NULL;
			p->attached = 0;
			p->retry_ns = loop_now() + GUARD_RETRY_MIN_NS;
			journal_error(g, "session-failed", proc_json(p), "the runtime ended the event stream");
			log_warn("pid %d (%s): the runtime ended the event stream; attaching again", (int)p->t.pid,
			         p->name);
			arm_timer(g);
		}
		return;
	}
	session_broke(p, err);
}

static void on_pidfd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct proc *p = ctx;
	(void)events;
	loop_del(l, fd);
	close(p->pidfd);
	p->pidfd = -1;
	p->gone = 1;
	if (!p->job && !p->g->stopping)
		proc_remove(p->g, p, "exited");
}

/* ---- timer, signals, stop --------------------------------------------- */

static void on_timer(struct loop *l, void *ctx)
{
	struct guard *g = ctx;
	int64_t now = loop_now();
	(void)l;

	if (g->stopping) {
		if (now >= g->stop_deadline) {
			for (size_t i = 0; i < g->n_procs; i++) {
				struct proc *p = g->procs[i];
				if (!p->job)
					continue;
				journal_error(g, "dump-failed", proc_rule_json(p, p->rules[p->job_rule].fr.rule.name),
				              "stopped before the dump completed; the partial file was removed");
				log_warn("stopping: abandoning the dump of pid %d; its partial file was removed",
				         (int)p->t.pid);
				loop_del(l, dump_job_fd(p->job));
				dump_job_abort(p->job);
				p->job = NULL;
			}
			maybe_finish_stop(g);
			return;
		}
		loop_set_timer(l, g->stop_deadline, on_timer, g);
		return;
	}
	if (g->rescan_at && now >= g->rescan_at)
		rescan(g);
	if (now >= g->light_at)
		light_scan(g);
	for (size_t i = 0; i < g->n_procs; i++) {
		struct proc *p = g->procs[i];
		if (p->retry_ns && now >= p->retry_ns && !p->job) {
			p->retry_ns = 0;
			if (discovery_exited(p->t.pid, p->t.starttime)) {
				proc_remove(g, p, "exited");
				i--;
				continue;
			}
			attach(p);
			if (p->gone) {
				proc_remove(g, p, "exited");
				i--;
				continue;
			}
		}
		/* A stream stuck inside a block; not while a dump freezes
		 * the process on purpose. */
		char err[512];
		if (p->attached && !p->job && session_stalled(p->session, now, SESSION_STALL_NS, err, sizeof(err))) {
			loop_del(g->loop, session_fd(p->session));
			session_broke(p, err);
			continue;
		}
		evaluate(p, now);
	}
	arm_timer(g);
}

static void arm_timer(struct guard *g)
{
	int64_t now = loop_now();
	int64_t deadline = now + GUARD_TICK_NS;

	if (g->stopping)
		return;
	if (g->rescan_at && g->rescan_at < deadline)
		deadline = g->rescan_at;
	if (g->light_at < deadline)
		deadline = g->light_at;
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct proc *p = g->procs[i];
		if (p->retry_ns && p->retry_ns < deadline)
			deadline = p->retry_ns;
		for (size_t k = 0; k < p->n_rules; k++)
			if (p->rules[k].next_ns > 0 && p->rules[k].next_ns < deadline)
				deadline = p->rules[k].next_ns;
	}
	if (deadline <= now)
		deadline = now + 1;
	loop_set_timer(g->loop, deadline, on_timer, g);
}

static void apply_all(struct guard *g)
{
	for (size_t i = 0; i < g->n_procs;) {
		struct proc *p = g->procs[i];
		apply_rules(p);
		if (p->gone && !p->job) {
			proc_remove(g, p, "exited");
			continue;
		}
		i++;
	}
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
	if (r > 0 && !g->stopping)
		apply_all(g);
}

static void maybe_finish_stop(struct guard *g)
{
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i]->job)
			return;
	loop_stop(g->loop);
}

static void begin_stop(struct guard *g, unsigned signo)
{
	size_t jobs = 0;

	if (g->stopping)
		return;
	g->stopping = 1;
	log_info("stopping on signal %u", signo);
	for (size_t i = 0; i < g->n_procs; i++) {
		struct proc *p = g->procs[i];
		if (p->attached)
			detach(p, "dumpwatch is stopping");
		jobs += p->job != NULL;
	}
	if (jobs == 0) {
		loop_stop(g->loop);
		return;
	}
	log_info("waiting up to %.1f s for %zu dump(s) in progress", (double)g->o->stop_timeout_ns / 1e9, jobs);
	g->stop_deadline = loop_now() + g->o->stop_timeout_ns;
	loop_set_timer(g->loop, g->stop_deadline, on_timer, g);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct guard *g = ctx;
	struct signalfd_siginfo si;
	(void)l;
	(void)events;

	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			if (g->stopping)
				continue;
			log_info("SIGHUP: reloading %s and scanning for processes", g->o->rules_dir);
			journal_write(g->journal, "reload", json_object_new_object());
			ruleset_reload(g->rs);
			rescan(g);
			apply_all(g);
			continue;
		}
		begin_stop(g, si.ssi_signo);
	}
}

/* ---- rules reports ---------------------------------------------------- */

static void on_ruleset(void *ctx, const struct ruleset_change *c)
{
	struct guard *g = ctx;
	struct json_object *rec = json_object_new_object();

	switch (c->kind) {
	case RULESET_LOADED: {
		struct json_object *names = json_object_new_array();
		for (size_t i = 0; i < c->n_rules; i++)
			json_object_array_add(names, json_object_new_string(c->rules[i].rule.name));
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		json_object_object_add(rec, "rules", names);
		journal_write(g->journal, "rules-loaded", rec);
		log_info("rules: loaded %s (%zu rule%s)", c->file, c->n_rules, c->n_rules == 1 ? "" : "s");
		break;
	}
	case RULESET_REJECTED: {
		struct json_object *errs = json_object_new_array();
		for (size_t i = 0; i < c->n_diags; i++) {
			json_object_array_add(errs, json_object_new_string(c->diags[i]));
			log_error("%s", c->diags[i]);
		}
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		json_object_object_add(rec, "errors", errs);
		json_object_object_add(rec, "kept_last_good", json_object_new_boolean(c->kept_last_good));
		if (c->refused) {
			json_object_object_add(rec, "refused", json_object_new_boolean(1));
			json_object_object_add(rec, "withdrawn_rules",
			                       json_object_new_int64((int64_t)c->withdrawn_rules));
		}
		journal_write(g->journal, "rules-rejected", rec);
		if (c->refused)
			break; /* its one line, "FILE: refused: REASON", is said */
		if (c->kept_last_good)
			log_warn("rules: %s rejected; its last good version (%zu rule%s) stays in force", c->file,
			         c->kept_rules, c->kept_rules == 1 ? "" : "s");
		else
			log_warn("rules: %s rejected, ignoring it until it is fixed", c->file);
		break;
	}
	case RULESET_REMOVED:
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		journal_write(g->journal, "rules-removed", rec);
		log_info("rules: %s removed; its rules are withdrawn", c->file);
		break;
	case RULESET_DIR_GONE:
		json_object_object_add(rec, "dir", json_object_new_string(c->dir));
		journal_write(g->journal, "rules-dir-gone", rec);
		log_warn("rules: directory %s is missing; no rules in force until it appears", c->dir);
		break;
	case RULESET_DIR_BACK:
		json_object_object_add(rec, "dir", json_object_new_string(c->dir));
		journal_write(g->journal, "rules-dir-back", rec);
		log_info("rules: directory %s is back", c->dir);
		break;
	default:
		json_object_put(rec);
		break;
	}
}

/* ---- run -------------------------------------------------------------- */

int guard_run(const struct guard_options *o)
{
	struct guard g;
	char err[512];
	sigset_t mask;
	int r, code = DW_EXIT_OK;

	memset(&g, 0, sizeof(g));
	g.o = o;
	g.sigfd = g.inofd = -1;
	g.start_ns = loop_now();

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
			journal_error(&g, "state-failed", json_object_new_object(), err);
		} else {
			g.kept = recs;
			g.n_kept = n;
			/* Drop records of processes that are gone. */
			for (size_t i = 0; i < g.n_kept;) {
				struct dn_target t;
				char e2[8];
				if (discovery_find(g.kept[i].pid, &t, e2, sizeof(e2)) == 0 &&
				    t.starttime == g.kept[i].starttime)
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
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	g.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	loop_add(g.loop, g.sigfd, EPOLLIN, on_signal, &g);

	{
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "rules_dir", json_object_new_string(o->rules_dir));
		json_object_object_add(rec, "dump_dir", json_object_new_string(o->dump_dir));
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
		dump_dirs[0] = o->dump_dir;
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

	g.inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (g.inofd < 0)
		log_warn("inotify unavailable (%s): new processes are found by the periodic scan only",
		         strerror(errno));
	else
		loop_add(g.loop, g.inofd, EPOLLIN, on_inotify, &g);
	watch_socket_dir(&g, "/tmp");
	for (size_t i = 0; i < o->n_socket_dirs; i++)
		watch_socket_dir(&g, o->socket_dirs[i]);

	rescan(&g);
	light_scan(&g);
	{
		const struct file_rule *const *active;
		size_t attached = 0, n_rules = ruleset_active(g.rs, &active);
		for (size_t i = 0; i < g.n_procs; i++)
			attached += g.procs[i]->attached ? 1u : 0u;
		log_info("guarding %zu of %zu .NET process(es) with %zu rule(s) from %s; dumps go to %s", attached,
		         g.n_procs, n_rules, o->rules_dir, o->dump_dir);
	}
	arm_timer(&g);
	r = loop_run(g.loop);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		code = DW_EXIT_RUNTIME;
	}

out:
	save_state(&g);
	{
		struct json_object *rec = json_object_new_object();
		json_object_object_add(rec, "exit_code", json_object_new_int(code));
		json_object_object_add(rec, "processes", json_object_new_int((int)g.n_procs));
		journal_write(g.journal, "stop", rec);
	}
	while (g.n_procs > 0) {
		struct proc *p = g.procs[--g.n_procs];
		proc_free(&g, p);
	}
	free(g.procs);
	free(g.seen);
	free(g.dirs);
	free(g.kept);
	ruleset_free(g.rs);
	if (g.inofd >= 0)
		close(g.inofd);
	if (g.sigfd >= 0)
		close(g.sigfd);
	loop_free(g.loop);
	journal_close(g.journal);
	if (code == DW_EXIT_OK)
		log_info("stopped");
	return code;
}
