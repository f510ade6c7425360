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
 * and container /tmp seen, and --socket-dir) catches a new process at once.
 * Anyone can create names in those directories, so a name is only a hint,
 * handled incrementally: the pid it names is looked at 20 ms later (a runtime
 * binds before it listens), by its start time and the one name its runtime
 * would use (discovery_find_ex, exact_only), never by a scan of /proc or a
 * listing of the directory. A name of a pid that does not exist costs a
 * kill(pid, 0); a pid is looked at no more than once per 100 ms; and at most
 * 2000 pids a second, whatever the rate of names: the rest wait for the next
 * turn. A name in a container's directory carries a pid of its namespace: the
 * processes known there are looked at, and a light scan (below) is asked for,
 * at most five a second. A light scan every second probes only pids never
 * seen before (and those seen in the last few seconds, which may not have
 * created their socket yet), also by the exact name: that finds processes in
 * directories not watched yet, such as a new container's /tmp, whose
 * directory is then watched too. A full scan (discovery_list: every process,
 * and a listing of each socket directory where some process's own name is
 * missing) runs at start, on SIGHUP, every 30 s, and when inotify lost events
 * (at most every 5 s): it finds what the rest cannot, such as a runtime in
 * another time namespace whose key is not our start time.
 *
 * Candidates. A socket of another uid is never a candidate (discovery.h). A
 * candidate whose listener is not the process (a refusal) or that nobody
 * listens on (dead, or not listening yet) is not kept: the process is not
 * added, its pid is looked at again with a backoff from 50 ms to 30 s (at
 * once when a new name of it appears), a refused socket is skipped by
 * identity from then on, and a refusal is logged once per process and path.
 * So a planted or stale socket never shadows the real one that comes later.
 *
 * Descriptors. An attached process holds two (its event stream and its
 * pidfd). The soft limit is raised to the hard limit at start, and a reserve
 * (GUARD_FDS_RESERVE) is kept for discovery, the journal, the state file and
 * a dump: a process whose attachment would eat into it is not attached but
 * waits, logged and journaled once (attach-paused) until descriptors are
 * free again (attach-resumed); the processes attached are served as before.
 * Descriptors in use are estimated from what the guard holds and counted in
 * /proc/self/fd only near the limit.
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
#include "dumpwatch/fds.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/report.h"
#include "dumpwatch/ruleset.h"
#include "dumpwatch/session.h"
#include "dumpwatch/state.h"
#include "dumpwatch/watch.h"

#define GUARD_TICK_NS 250000000LL               /* re-evaluation when no events arrive (rates decay) */
#define GUARD_LIGHT_SCAN_NS 1000000000LL        /* probe pids not seen before */
#define GUARD_LIGHT_SOON_NS 200000000LL         /* least time between light scans asked for by names */
#define GUARD_LIGHT_PROBES_MAX 512              /* pids probed per light scan; the rest next time */
#define GUARD_SWEEP_NS 30000000000LL            /* full scan */
#define GUARD_SWEEP_SOON_NS 5000000000LL        /* least time between full scans after lost events */
#define GUARD_CHECK_DELAY_NS 20000000LL         /* a name appeared: look then (bind, then listen) */
#define GUARD_PID_RECHECK_NS 100000000LL        /* one pid looked at no more often */
#define GUARD_CHECKS_PER_SEC 2000               /* pids looked at per second, at most */
#define GUARD_CHECKS_BURST 200                  /* ... and per turn */
#define GUARD_PEND_MAX 8192                     /* pids waiting to be looked at */
#define GUARD_CAND_BACKOFF_MIN_NS 50000000LL    /* a candidate refused or dead: look again after */
#define GUARD_CAND_BACKOFF_MAX_NS 30000000000LL /* ... backing off to */
#define GUARD_HINTS_MAX 4                       /* names of one pid remembered until it is looked at */
#define GUARD_SKIP_MAX 4                        /* sockets of one process found served by someone else */
#define GUARD_WARNED_MAX 256                    /* (process, path) pairs whose refusal was logged */
#define GUARD_WARN_WINDOW_NS 60000000000LL      /* refusals logged per window, at most ... */
#define GUARD_WARN_PER_WINDOW 20
#define GUARD_YOUNG_NS 5000000000LL /* a pid without socket is probed again for this long */
/* Descriptors an attached process holds: its event stream and its pidfd. */
#define GUARD_FDS_PER_PROCESS 2
/* Kept free for what must never fail for want of a descriptor: discovery
 * (/proc, a socket directory, a /proc file: 3), a ProcessInfo connection
 * (and the directory of a long path: 2), the state file (the new file and
 * its directory: 2) and one dump (store and staging directories, the IPC
 * connection or pidfd, an epoll, a timer, the partial file, a store listing
 * and a file in it: 8): 15, doubled. The journal's descriptor is held from
 * the start. */
#define GUARD_FDS_RESERVE 32
/* Below the limit by more than this (estimated), descriptors are not counted. */
#define GUARD_FDS_SLACK 64
#define GUARD_FDS_PER_DUMP 8
#define GUARD_FDS_RECOUNT_NS 100000000LL
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
	int gone;                               /* the process exited */
	int fd_wait;                            /* not attached: the descriptor reserve was reached */
	int ever_attached;                      /* an attach record was written: its detach will be too */
	struct dn_sock_id skip[GUARD_SKIP_MAX]; /* its sockets found served by someone else */
	size_t n_skip;
	int seen_scan;    /* found by the current full scan */
	int64_t retry_ns; /* attach failed: next attempt; 0: none */
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
	int ns_dir; /* under /proc/PID/root: names carry pids of another namespace */
	char path[DISCOVERY_SOCK_MAX];
};

/* A pid to look at that is not in the process table: a name of it appeared
 * (due a moment later), or its last candidate was refused or dead (due after
 * a backoff). */
struct pend {
	pid_t pid;                    /* 0: free slot */
	unsigned long long starttime; /* the process the backoff and skips are about; 0: not known */
	int64_t due_ns;               /* 0: not scheduled */
	int64_t last_ns;              /* last look */
	int64_t backoff_ns;           /* 0: no candidate failed */
	size_t n_hints, next_hint;    /* the last names seen of it: */
	pid_t hint_nspid[GUARD_HINTS_MAX];
	unsigned long long hint_key[GUARD_HINTS_MAX];
	struct dn_sock_id skip[GUARD_SKIP_MAX];
	size_t n_skip;
};

/* Open addressing on pid, linear probing, deletion by backward shift. */
struct pend_table {
	struct pend *slot;
	size_t cap, n; /* cap: a power of two, or 0 */
	size_t cursor; /* where the next pass starts, so that all are served in turn */
};

struct warned {
	pid_t pid;
	unsigned long long starttime;
	uint64_t path_hash;
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
	int64_t light_at;
	int64_t light_soon_at; /* 0: none asked for; else a light scan of new pids only */
	int64_t last_light_ns;
	int64_t sweep_at; /* next periodic full scan */
	int64_t last_sweep_ns;
	struct pend_table pend;
	int64_t pend_due_min; /* 0: nothing due */
	double check_tokens;
	int64_t tokens_ns;
	struct warned warned[GUARD_WARNED_MAX];
	size_t n_warned, next_warned;
	int64_t warn_window_ns;
	unsigned warn_count, warn_suppressed;
	/* Descriptors. */
	struct fds_limit fdl;
	int fd_base;                                 /* open when the guard started serving */
	int64_t fd_count, fd_count_est, fd_count_ns; /* the last count, the estimate then, when */
	int fd_paused;                               /* attach-paused journaled, attach-resumed not yet */
	size_t n_fd_wait;
	/* Work done, in the stop record. */
	uint64_t n_full_scan_listings;
	uint64_t n_full_scans, n_light_scans, n_socket_events, n_pid_checks, n_events_dropped, n_events_nopid;
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
	g->dirs[g->n_dirs].ns_dir = strncmp(dir, "/proc/", 6) == 0;
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

static struct proc *proc_find(struct guard *g, pid_t pid);

/* ---- pids to look at -------------------------------------------------- */

static size_t pend_home(pid_t pid, size_t cap)
{
	return (size_t)((uint32_t)pid * 2654435761u) & (cap - 1);
}

static struct pend *pend_find(struct pend_table *t, pid_t pid)
{
	if (!t->cap || pid <= 0)
		return NULL;
	for (size_t i = pend_home(pid, t->cap);; i = (i + 1) & (t->cap - 1)) {
		if (t->slot[i].pid == pid)
			return &t->slot[i];
		if (t->slot[i].pid == 0)
			return NULL;
	}
}

static int pend_grow(struct pend_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct pend *ns = calloc(cap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i].pid)
			continue;
		size_t k = pend_home(t->slot[i].pid, cap);
		while (ns[k].pid)
			k = (k + 1) & (cap - 1);
		ns[k] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = cap;
	t->cursor = 0;
	return 0;
}

/* The entry of pid, made when missing; NULL when the table is full. Any
 * pointer into the table taken before is invalid afterwards. */
static struct pend *pend_get(struct pend_table *t, pid_t pid)
{
	struct pend *e = pend_find(t, pid);
	size_t i;

	if (e)
		return e;
	if (pid <= 0 || t->n >= GUARD_PEND_MAX || ((t->n + 1) * 2 > t->cap && pend_grow(t) < 0))
		return NULL;
	for (i = pend_home(pid, t->cap); t->slot[i].pid; i = (i + 1) & (t->cap - 1))
		;
	memset(&t->slot[i], 0, sizeof(t->slot[i]));
	t->slot[i].pid = pid;
	t->n++;
	return &t->slot[i];
}

static void pend_del(struct pend_table *t, struct pend *e)
{
	size_t i = (size_t)(e - t->slot), j = i, mask = t->cap - 1;

	t->slot[i].pid = 0;
	t->n--;
	/* Backward shift: an entry after the hole moves into it unless its
	 * home lies cyclically in (hole, entry]. */
	for (;;) {
		j = (j + 1) & mask;
		if (!t->slot[j].pid)
			return;
		size_t k = pend_home(t->slot[j].pid, t->cap);
		if (((j - k) & mask) >= ((j - i) & mask)) {
			t->slot[i] = t->slot[j];
			t->slot[j].pid = 0;
			i = j;
		}
	}
}

static void ask_light_scan(struct guard *g, int64_t now)
{
	int64_t at = now + GUARD_CHECK_DELAY_NS;

	if (at < g->last_light_ns + GUARD_LIGHT_SOON_NS)
		at = g->last_light_ns + GUARD_LIGHT_SOON_NS;
	if (!g->light_soon_at || at < g->light_soon_at)
		g->light_soon_at = at;
}

static void ask_sweep(struct guard *g, int64_t now)
{
	int64_t at = now + GUARD_CHECK_DELAY_NS;

	if (at < g->last_sweep_ns + GUARD_SWEEP_SOON_NS)
		at = g->last_sweep_ns + GUARD_SWEEP_SOON_NS;
	if (at < g->sweep_at)
		g->sweep_at = at;
}

/* A name of pid (in its namespace: nspid, key) appeared: look at pid a
 * moment later, no sooner than GUARD_PID_RECHECK_NS after the last look. */
static void note_pid(struct guard *g, pid_t pid, pid_t nspid, unsigned long long key, int64_t now)
{
	struct pend *e = pend_get(&g->pend, pid);
	int64_t due = now + GUARD_CHECK_DELAY_NS;
	size_t i;

	if (!e) {
		/* Full: what was not looked at is found by a full scan. */
		g->n_events_dropped++;
		ask_sweep(g, now);
		return;
	}
	for (i = 0; i < e->n_hints; i++)
		if (e->hint_nspid[i] == nspid && e->hint_key[i] == key)
			break;
	if (i == e->n_hints) {
		e->hint_nspid[e->next_hint] = nspid;
		e->hint_key[e->next_hint] = key;
		e->next_hint = (e->next_hint + 1) % GUARD_HINTS_MAX;
		if (e->n_hints < GUARD_HINTS_MAX)
			e->n_hints++;
	}
	if (e->last_ns && due < e->last_ns + GUARD_PID_RECHECK_NS)
		due = e->last_ns + GUARD_PID_RECHECK_NS;
	if (!e->due_ns || due < e->due_ns)
		e->due_ns = due;
	if (!g->pend_due_min || e->due_ns < g->pend_due_min)
		g->pend_due_min = e->due_ns;
}

/* A socket name appeared in the watched directory d. */
static void note_name(struct guard *g, const struct watch_dir *d, const char *name, int64_t now)
{
	pid_t nspid;
	unsigned long long key;

	if (!discovery_parse_socket_name(name, &nspid, &key))
		return;
	g->n_socket_events++;
	if (d && d->ns_dir) {
		/* A container's directory: the name carries a pid of its
		 * namespace. Look at the processes known there with that
		 * pid, and let a light scan find a new one. */
		for (size_t i = 0; i < g->n_procs; i++) {
			const struct proc *p = g->procs[i];
			if (p->t.other_mount_ns && p->t.nspid == nspid && !p->attached)
				note_pid(g, p->t.pid, nspid, key, now);
		}
		ask_light_scan(g, now);
		return;
	}
	if (kill(nspid, 0) < 0 && errno == ESRCH) {
		/* No such pid: planted, or the name of a process in another
		 * pid namespace (which a light scan finds). */
		g->n_events_nopid++;
		ask_light_scan(g, now);
		return;
	}
	const struct proc *p = proc_find(g, nspid);
	if (p && p->attached)
		return; /* its pidfd says when it exits */
	note_pid(g, nspid, nspid, key, now);
}

static const struct watch_dir *watch_dir_of_wd(struct guard *g, int wd)
{
	for (size_t i = 0; i < g->n_dirs; i++)
		if (g->dirs[i].wd == wd)
			return &g->dirs[i];
	return NULL;
}

/* New names in the socket directories. At most 64 reads a turn, so that a
 * flood of names cannot keep the loop from everything else (epoll reports
 * the descriptor again). */
static void on_inotify(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct guard *g = ctx;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int64_t now = loop_now();
	const struct watch_dir *last = NULL;
	(void)l;
	(void)events;

	for (int reads = 0; reads < 64; reads++) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW) {
				g->n_events_dropped++;
				ask_sweep(g, now);
				ask_light_scan(g, now);
			} else if (ev->len > 0) {
				if (!last || last->wd != ev->wd)
					last = watch_dir_of_wd(g, ev->wd);
				note_name(g, last, ev->name, now);
			}
			if (ev->mask & IN_IGNORED) {
				for (size_t i = 0; i < g->n_dirs; i++)
					if (g->dirs[i].wd == ev->wd) {
						g->dirs[i] = g->dirs[--g->n_dirs];
						break;
					}
				last = NULL;
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	arm_timer(g);
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

/* ---- descriptors ------------------------------------------------------ */

/* Whether need more descriptors can be held without eating into the
 * reserve. Estimated from what the guard holds; near the limit, counted in
 * /proc/self/fd, at most every GUARD_FDS_RECOUNT_NS (in between, the count
 * moves with the estimate), so that a flood of processes at the limit does
 * not list a directory of tens of thousands of descriptors for each. */
static int fds_allow(struct guard *g, uint64_t need)
{
	int64_t est = g->fd_base > 0 ? g->fd_base : 0, open, now;

	if (!g->fdl.soft)
		return 1;
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct proc *p = g->procs[i];
		est += (p->session ? 1 : 0) + (p->pidfd >= 0 ? 1 : 0) + (p->job ? GUARD_FDS_PER_DUMP : 0);
	}
	if (fds_room((uint64_t)est + GUARD_FDS_SLACK, need, GUARD_FDS_RESERVE, g->fdl.soft))
		return 1;
	now = loop_now();
	if (!g->fd_count_ns || now - g->fd_count_ns >= GUARD_FDS_RECOUNT_NS) {
		int n = fds_count_open();
		if (n < 0)
			return 1;
		g->fd_count = n;
		g->fd_count_est = est;
		g->fd_count_ns = now;
	}
	open = g->fd_count + (est - g->fd_count_est);
	return fds_room(open > 0 ? (uint64_t)open : 0, need, GUARD_FDS_RESERVE, g->fdl.soft);
}

static size_t count_attached(const struct guard *g)
{
	size_t n = 0;
	for (size_t i = 0; i < g->n_procs; i++)
		n += g->procs[i]->attached ? 1u : 0u;
	return n;
}

/* p is not attached for want of descriptors: said once until that ends. */
static void fd_wait_begin(struct proc *p)
{
	struct guard *g = p->g;

	if (!p->fd_wait) {
		p->fd_wait = 1;
		g->n_fd_wait++;
	}
	if (g->fd_paused)
		return;
	g->fd_paused = 1;
	int open = fds_count_open();
	size_t attached = count_attached(g);
	struct json_object *rec = proc_json(p);
	json_object_object_add(rec, "open_fds", json_object_new_int(open));
	json_object_object_add(rec, "fd_limit", json_object_new_int64((int64_t)g->fdl.soft));
	json_object_object_add(rec, "fd_reserve", json_object_new_int(GUARD_FDS_RESERVE));
	json_object_object_add(rec, "attached", json_object_new_int64((int64_t)attached));
	journal_write(g->journal, "attach-paused", rec);
	log_warn("descriptors: %d of %llu open; not attaching pid %d (%s) nor other new processes until some are "
	         "free, keeping %d for discovery, the journal and dumps; the %zu attached processes are still served",
	         open, (unsigned long long)g->fdl.soft, (int)p->t.pid, p->name, GUARD_FDS_RESERVE, attached);
}

/* p no longer waits for descriptors (attached, gone, or no rule wants it). */
static void fd_wait_end(struct proc *p)
{
	struct guard *g = p->g;

	if (!p->fd_wait)
		return;
	p->fd_wait = 0;
	g->n_fd_wait--;
	if (g->n_fd_wait > 0 || !g->fd_paused)
		return;
	g->fd_paused = 0;
	int open = fds_count_open();
	struct json_object *rec = json_object_new_object();
	json_object_object_add(rec, "open_fds", json_object_new_int(open));
	json_object_object_add(rec, "fd_limit", json_object_new_int64((int64_t)g->fdl.soft));
	json_object_object_add(rec, "attached", json_object_new_int64((int64_t)count_attached(g)));
	journal_write(g->journal, "attach-resumed", rec);
	log_info("descriptors: %d of %llu open; attaching new processes again", open, (unsigned long long)g->fdl.soft);
}

static void skip_socket(struct dn_sock_id *skip, size_t *n, struct dn_sock_id id)
{
	for (size_t i = 0; i < *n; i++)
		if (skip[i].dev == id.dev && skip[i].ino == id.ino)
			return;
	if (*n == GUARD_SKIP_MAX) {
		memmove(skip, skip + 1, (GUARD_SKIP_MAX - 1) * sizeof(*skip));
		(*n)--;
	}
	skip[(*n)++] = id;
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
	/* A resubscription swaps one stream for another; a new attachment
	 * takes a stream and a pidfd. */
	if (!again && !fds_allow(g, p->pidfd >= 0 ? GUARD_FDS_PER_PROCESS - 1u : GUARD_FDS_PER_PROCESS)) {
		fd_wait_begin(p);
		return;
	}
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
		/* Served by someone else now: not this socket again. */
		if (r == -EPERM)
			skip_socket(p->skip, &p->n_skip, p->t.sock);
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
	fd_wait_end(p);
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

	if (p->gone)
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
	if (n == 0) {
		fd_wait_end(p);
		detach(p, "no rule matches it any more");
	} else if (!p->retry_ns)
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
	fd_wait_end(p);
	forget_process_state(g, &p->t);
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i] == p) {
			g->procs[i] = g->procs[--g->n_procs];
			break;
		}
	proc_free(g, p);
}

/* Logs a refused or foreign socket once per (process, path), and no more
 * than GUARD_WARN_PER_WINDOW a minute in all: anyone can plant names by the
 * thousand, and the log must stay the operator's. */
static void warn_socket(struct guard *g, const struct dn_target *t, const char *path, const char *line)
{
	uint64_t h = 1469598103934665603ULL;
	int64_t now = loop_now();

	for (const char *c = path; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	for (size_t i = 0; i < g->n_warned; i++)
		if (g->warned[i].pid == t->pid && g->warned[i].starttime == t->starttime && g->warned[i].path_hash == h)
			return;
	g->warned[g->next_warned] = (struct warned){.pid = t->pid, .starttime = t->starttime, .path_hash = h};
	g->next_warned = (g->next_warned + 1) % GUARD_WARNED_MAX;
	if (g->n_warned < GUARD_WARNED_MAX)
		g->n_warned++;
	if (now - g->warn_window_ns >= GUARD_WARN_WINDOW_NS) {
		if (g->warn_suppressed)
			log_warn("%u more sockets of other users or processes ignored in the last minute, not logged "
			         "one by one",
			         g->warn_suppressed);
		g->warn_window_ns = now;
		g->warn_count = g->warn_suppressed = 0;
	}
	if (g->warn_count++ >= GUARD_WARN_PER_WINDOW) {
		g->warn_suppressed++;
		return;
	}
	log_warn("pid %d: %s", (int)t->pid, line);
}

static void warn_foreign(struct guard *g, const struct dn_target *t, const char *path, uid_t owner)
{
	char line[DISCOVERY_SOCK_MAX + 160];

	discovery_describe_foreign(t, path, owner, line, sizeof(line));
	warn_socket(g, t, path, line);
}

static void on_foreign(void *ctx, const struct dn_target *t, const char *path, uid_t owner)
{
	warn_foreign(ctx, t, path, owner);
}

/* t's socket was refused (r -EPERM: someone else listens on it) or dead
 * (-ECONNREFUSED, -ENOENT): t is not added; its pid is looked at again after
 * a backoff, without that socket if it was refused. */
static void candidate_failed(struct guard *g, const struct dn_target *t, int r, const char *err)
{
	struct pend *e = pend_get(&g->pend, t->pid);
	int64_t now = loop_now();

	if (r == -EPERM) {
		char line[1024];
		snprintf(line, sizeof(line), "%s; looking for its own socket", err);
		warn_socket(g, t, t->socket_path, line);
	} else {
		log_debug("pid %d: %s; looking again", (int)t->pid, err);
	}
	if (!e) {
		g->n_events_dropped++;
		ask_sweep(g, now);
		return;
	}
	if (e->starttime != t->starttime) {
		e->starttime = t->starttime;
		e->n_skip = 0;
		e->backoff_ns = 0;
	}
	if (r == -EPERM)
		skip_socket(e->skip, &e->n_skip, t->sock);
	e->backoff_ns = e->backoff_ns ? e->backoff_ns * 2 : GUARD_CAND_BACKOFF_MIN_NS;
	if (e->backoff_ns > GUARD_CAND_BACKOFF_MAX_NS)
		e->backoff_ns = GUARD_CAND_BACKOFF_MAX_NS;
	e->due_ns = now + e->backoff_ns;
	if (!g->pend_due_min || e->due_ns < g->pend_due_min)
		g->pend_due_min = e->due_ns;
}

/* A .NET process found: learn its name and command line, then apply rules.
 * A socket that is refused or dead is not kept (candidate_failed). */
static void proc_add(struct guard *g, const struct dn_target *t)
{
	struct ipc_process_info *pi;
	struct proc *p;
	char err[512];

	if (g->n_procs == g->cap_procs) {
		size_t c = g->cap_procs ? g->cap_procs * 2 : 16;
		struct proc **np = realloc(g->procs, c * sizeof(*np));
		if (!np)
			return;
		g->procs = np;
		g->cap_procs = c;
	}
	pi = calloc(1, sizeof(*pi));
	if (!pi)
		return;
	const struct ipc_endpoint ep = discovery_endpoint(t);
	/* The entry assembly, when the runtime already knows it, names the
	 * process; otherwise its executable or the dll "dotnet" runs. */
	int r = ipc_process_info(&ep, GUARD_INFO_TIMEOUT_MS, pi, err, sizeof(err));
	if (r == -EPERM || r == -ECONNREFUSED || r == -ENOENT) {
		free(pi);
		if (!discovery_exited(t->pid, t->starttime))
			candidate_failed(g, t, r, err);
		return;
	}
	if (r < 0) {
		log_debug("pid %d: process info: %s", (int)t->pid, err);
		pi->entry_assembly[0] = '\0';
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		free(pi);
		return;
	}
	p->g = g;
	p->t = *t;
	p->pidfd = -1;
	discovery_process_name(t, pi->entry_assembly, p->name, sizeof(p->name));
	if (discovery_cmdline(t->pid, p->cmdline, sizeof(p->cmdline)) < 0)
		snprintf(p->cmdline, sizeof(p->cmdline), "%s", pi->command_line);
	free(pi);
	/* Found: nothing more to look for under its pid. */
	struct pend *e = pend_find(&g->pend, t->pid);
	if (e)
		pend_del(&g->pend, e);
	g->procs[g->n_procs++] = p;
	watch_dir_of_socket(g, t->socket_path);
	log_debug("found .NET process %d (%s): %s", (int)t->pid, p->name, p->cmdline);
	apply_rules(p);
	if (p->gone)
		proc_remove(g, p, "exited");
}

/* Whether a pid is in the hands of its pend entry (a candidate of it failed
 * and it is looked at again after a backoff): scans leave it alone. */
static int pend_holds(struct guard *g, const struct dn_target *t)
{
	const struct pend *e = pend_find(&g->pend, t->pid);
	return e && e->backoff_ns && e->starttime == t->starttime;
}

/* Full scan: every process with a diagnostics socket. */
static void rescan(struct guard *g)
{
	struct dn_stats before, after;
	struct dn_target *v = NULL;
	size_t n = 0;
	int64_t now = loop_now();
	int r;

	g->n_full_scans++;
	g->last_sweep_ns = now;
	g->sweep_at = now + GUARD_SWEEP_NS;
	discovery_get_stats(&before);
	r = discovery_list_ex(on_foreign, g, &v, &n);
	discovery_get_stats(&after);
	g->n_full_scan_listings += after.listings - before.listings;
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
		if (pend_holds(g, &v[i]))
			continue;
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

/* Light scan: probes only pids not seen before, or (unless new_only) seen
 * recently without a socket (a runtime still starting), by the name their
 * runtime would use; at most GUARD_LIGHT_PROBES_MAX, the rest next time. */
static void light_scan(struct guard *g, int new_only)
{
	struct seen_pid *now_seen = NULL;
	size_t n = 0, cap = 0, probes = 0;
	int64_t now = loop_now();
	DIR *d = opendir("/proc");
	struct dirent *de;

	g->n_light_scans++;
	g->last_light_ns = now;
	g->light_soon_at = 0;
	if (!new_only)
		g->light_at = now + GUARD_LIGHT_SCAN_NS;
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		struct seen_pid key, *old;
		struct dn_target t;
		struct dn_find_opts o = {.exact_only = 1};
		char err[8], dir[DISCOVERY_SOCK_MAX];

		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		key.pid = (pid_t)pid;
		old = g->n_seen ? bsearch(&key, g->seen, g->n_seen, sizeof(key), cmp_seen) : NULL;
		/* Beyond the probes allowed, a new pid is not recorded: it is
		 * new again next time. */
		if (!old && probes >= GUARD_LIGHT_PROBES_MAX)
			continue;
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
		if (proc_find(g, (pid_t)pid) || (old && (new_only || now - old->first_ns > GUARD_YOUNG_NS)))
			continue;
		const struct pend *e = pend_find(&g->pend, (pid_t)pid);
		if (e && e->backoff_ns)
			continue;
		probes++;
		if (discovery_find_ex((pid_t)pid, &o, &t, err, sizeof(err)) == 0) {
			proc_add(g, &t);
		} else {
			if (o.foreign[0])
				warn_foreign(g, &t, o.foreign, o.foreign_uid);
			if (!old && discovery_socket_dir((pid_t)pid, dir, sizeof(dir)) == 0 &&
			    strncmp(dir, "/proc/", 6) == 0) {
				/* A process in a container: its /tmp is where
				 * that container's next .NET process will show
				 * up. */
				watch_socket_dir(g, dir);
			}
		}
	}
	closedir(d);
	qsort(now_seen, n, sizeof(*now_seen), cmp_seen);
	free(g->seen);
	g->seen = now_seen;
	g->n_seen = n;
}

/* Looks at pid (its pend entry is due): its start time, then the name its
 * runtime would use and the last name seen of it. */
static void pend_check(struct guard *g, pid_t pid, int64_t now)
{
	struct pend *e = pend_find(&g->pend, pid);
	struct dn_target t;
	unsigned long long st;
	char hint[GUARD_HINTS_MAX][80], err[512];
	const char *hints[GUARD_HINTS_MAX];

	if (!e)
		return;
	e->due_ns = 0;
	e->last_ns = now;
	g->n_pid_checks++;
	if (discovery_starttime(pid, &st) < 0) {
		pend_del(&g->pend, e);
		return;
	}
	struct proc *p = proc_find(g, pid);
	if (p && p->t.starttime == st) {
		/* Known, and its attachment failing: a new name of it is
		 * worth trying at once. */
		if (!p->attached && p->retry_ns > now && !p->job)
			p->retry_ns = now;
		pend_del(&g->pend, e);
		return;
	}
	if (p) {
		proc_remove(g, p, "exited"); /* the pid is another process's now */
		e = pend_find(&g->pend, pid);
		if (!e)
			return;
	}
	if (e->starttime != st) {
		e->starttime = st;
		e->n_skip = 0;
		e->backoff_ns = 0;
	}
	struct dn_find_opts o = {.exact_only = 1, .skip = e->skip, .n_skip = e->n_skip};
	for (size_t i = 0; i < e->n_hints; i++) {
		snprintf(hint[i], sizeof(hint[i]), "dotnet-diagnostic-%d-%llu-socket", (int)e->hint_nspid[i],
		         e->hint_key[i]);
		hints[i] = hint[i];
	}
	o.hints = hints;
	o.n_hints = e->n_hints;
	int r = discovery_find_ex(pid, &o, &t, err, sizeof(err));
	if (r == 0 && t.starttime == st) {
		e->n_hints = e->next_hint = 0;
		proc_add(g, &t); /* removes the entry, or sets its backoff */
		return;
	}
	if (r == 0) {
		/* Another process took the pid between the two reads. */
		e->due_ns = now + GUARD_CHECK_DELAY_NS;
		return;
	}
	if (o.foreign[0])
		warn_foreign(g, &t, o.foreign, o.foreign_uid);
	if (r == -ESRCH || (r < 0 && !e->backoff_ns)) {
		pend_del(&g->pend, e);
		return;
	}
	/* A candidate failed before: keep looking, backing off. */
	e->backoff_ns = e->backoff_ns ? e->backoff_ns * 2 : GUARD_CAND_BACKOFF_MIN_NS;
	if (e->backoff_ns > GUARD_CAND_BACKOFF_MAX_NS)
		e->backoff_ns = GUARD_CAND_BACKOFF_MAX_NS;
	e->due_ns = now + e->backoff_ns;
}

/* Looks at the pids that are due, within the budget: GUARD_CHECKS_PER_SEC,
 * at most GUARD_CHECKS_BURST a turn, taken round-robin through the table so
 * that every pid gets its turn whatever the rest do. */
static void pend_run(struct guard *g, int64_t now)
{
	pid_t due[GUARD_CHECKS_BURST];
	size_t n = 0, budget, mask;

	if (!g->pend_due_min || now < g->pend_due_min)
		return;
	g->check_tokens += (double)(now - g->tokens_ns) / 1e9 * GUARD_CHECKS_PER_SEC;
	g->tokens_ns = now;
	if (g->check_tokens > GUARD_CHECKS_BURST)
		g->check_tokens = GUARD_CHECKS_BURST;
	budget = g->check_tokens >= 1 ? (size_t)g->check_tokens : 0;
	g->pend_due_min = 0;
	if (!g->pend.cap)
		return;
	mask = g->pend.cap - 1;
	size_t start = g->pend.cursor;
	for (size_t k = 0; k < g->pend.cap && n < budget; k++) {
		size_t i = (start + k) & mask;
		const struct pend *e = &g->pend.slot[i];
		if (e->pid && e->due_ns && e->due_ns <= now) {
			due[n++] = e->pid;
			g->pend.cursor = (i + 1) & mask;
		}
	}
	g->check_tokens -= (double)n;
	for (size_t i = 0; i < n; i++)
		pend_check(g, due[i], now);
	/* The next turn: the earliest due, and in 10 ms at the soonest for
	 * those left over budget. */
	for (size_t i = 0; i < g->pend.cap; i++) {
		const struct pend *e = &g->pend.slot[i];
		int64_t at;
		if (!e->pid || !e->due_ns)
			continue;
		at = e->due_ns > now ? e->due_ns : now + 10000000LL;
		if (!g->pend_due_min || at < g->pend_due_min)
			g->pend_due_min = at;
	}
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

/* Before p is attached again, its socket is looked for anew: the one it had
 * may be gone or served by someone else now, and its runtime's own name may
 * have appeared. Cheap: the runtime's name and the current one are stat'ed. */
static void refresh_socket(struct proc *p)
{
	struct dn_find_opts o = {.exact_only = 1, .skip = p->skip, .n_skip = p->n_skip};
	const char *slash = strrchr(p->t.socket_path, '/');
	struct dn_target t;
	char err[8];

	const char *hint = slash ? slash + 1 : NULL;
	o.hints = &hint;
	o.n_hints = hint ? 1 : 0;
	if (discovery_find_ex(p->t.pid, &o, &t, err, sizeof(err)) < 0 || t.starttime != p->t.starttime)
		return;
	if (strcmp(t.socket_path, p->t.socket_path) != 0)
		log_debug("pid %d: diagnostics socket now %s", (int)p->t.pid, t.socket_path);
	memcpy(p->t.socket_path, t.socket_path, sizeof(p->t.socket_path));
	p->t.sock = t.sock;
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
	if (now >= g->sweep_at)
		rescan(g);
	if (now >= g->light_at)
		light_scan(g, 0);
	else if (g->light_soon_at && now >= g->light_soon_at)
		light_scan(g, 1);
	pend_run(g, now);
	/* Processes waiting for descriptors, in turn, while there is room. */
	for (size_t i = 0; i < g->n_procs && g->n_fd_wait > 0; i++) {
		struct proc *p = g->procs[i];
		if (!p->fd_wait || p->retry_ns || p->job)
			continue;
		attach(p);
		if (p->gone) {
			proc_remove(g, p, "exited");
			i--;
			continue;
		}
		if (p->fd_wait)
			break;
	}
	for (size_t i = 0; i < g->n_procs; i++) {
		struct proc *p = g->procs[i];
		if (p->retry_ns && now >= p->retry_ns && !p->job) {
			p->retry_ns = 0;
			if (discovery_exited(p->t.pid, p->t.starttime)) {
				proc_remove(g, p, "exited");
				i--;
				continue;
			}
			refresh_socket(p);
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
	if (g->sweep_at < deadline)
		deadline = g->sweep_at;
	if (g->light_at < deadline)
		deadline = g->light_at;
	if (g->light_soon_at && g->light_soon_at < deadline)
		deadline = g->light_soon_at;
	if (g->pend_due_min && g->pend_due_min < deadline)
		deadline = g->pend_due_min;
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
	g.tokens_ns = g.start_ns;
	g.check_tokens = GUARD_CHECKS_BURST;

	/* Two descriptors per attached process: the soft limit (1024 under
	 * systemd's default) would let a few hundred processes of anyone's
	 * leave none for the rest. */
	r = fds_raise_limit(&g.fdl);
	if (r < 0)
		log_warn("cannot raise the limit on open files (%s): %llu", strerror(-r),
		         (unsigned long long)g.fdl.soft);
	else if (o->verbose)
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
			journal_error(&g, "state-failed", json_object_new_object(), err);
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

	g.fd_base = fds_count_open();
	rescan(&g);
	light_scan(&g, 0);
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
	while (g.n_procs > 0) {
		struct proc *p = g.procs[--g.n_procs];
		proc_free(&g, p);
	}
	free(g.procs);
	free(g.pend.slot);
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
