/* The guard's finding of .NET processes; see guard.c for the whole.
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
 * So a planted or stale socket never shadows the real one that comes later. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "dumpwatch/log.h"
#include "guard_shared.h"

/* ---- socket directories ----------------------------------------------- */

void guard_watch_dir(struct guard *g, const char *dir)
{
	struct socket_dir *d;
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

void guard_watch_dir_of_socket(struct guard *g, const char *socket_path)
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
	guard_watch_dir(g, dir);
}

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
static void note_name(struct guard *g, const struct socket_dir *d, const char *name, int64_t now)
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
			if (p->t.other_mount_ns && p->t.nspid == nspid && !guard_proc_attached(p))
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
	const struct proc *p = guard_proc_find(g, nspid);
	if (p && guard_proc_attached(p))
		return; /* its pidfd says when it exits */
	note_pid(g, nspid, nspid, key, now);
}

static const struct socket_dir *socket_dir_of_wd(struct guard *g, int wd)
{
	for (size_t i = 0; i < g->n_dirs; i++)
		if (g->dirs[i].wd == wd)
			return &g->dirs[i];
	return NULL;
}

/* New names in the socket directories. At most 64 reads a turn, so that a
 * flood of names cannot keep the loop from everything else (epoll reports
 * the descriptor again). */
void guard_on_inotify(struct guard *g, int fd)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int64_t now = loop_now();
	const struct socket_dir *last = NULL;

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
					last = socket_dir_of_wd(g, ev->wd);
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
void guard_candidate_failed(struct guard *g, const struct dn_target *t, int r, const char *err)
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
		discovery_skip_add(e->skip, &e->n_skip, GUARD_SKIP_MAX, t->sock);
	e->backoff_ns = e->backoff_ns ? e->backoff_ns * 2 : GUARD_CAND_BACKOFF_MIN_NS;
	if (e->backoff_ns > GUARD_CAND_BACKOFF_MAX_NS)
		e->backoff_ns = GUARD_CAND_BACKOFF_MAX_NS;
	e->due_ns = now + e->backoff_ns;
	if (!g->pend_due_min || e->due_ns < g->pend_due_min)
		g->pend_due_min = e->due_ns;
}

/* A .NET process found, not in the table: into it, with nothing more to look
 * for under its pid, its socket's directory watched, and its runtime asked
 * who it is (a refusal or a dead socket comes back as
 * guard_candidate_failed, which sets the pid's backoff: after the pend entry
 * is gone). */
static void found(struct guard *g, const struct dn_target *t)
{
	struct proc *p = guard_proc_add(g, t);

	if (!p)
		return;
	guard_pend_forget(g, t->pid);
	guard_watch_dir_of_socket(g, t->socket_path);
	guard_proc_probe(p); /* may remove p */
}

/* Whether a pid is in the hands of its pend entry (a candidate of it failed
 * and it is looked at again after a backoff): scans leave it alone. */
static int pend_holds(struct guard *g, const struct dn_target *t)
{
	const struct pend *e = pend_find(&g->pend, t->pid);
	return e && e->backoff_ns && e->starttime == t->starttime;
}

/* Full scan: every process with a diagnostics socket. */
void guard_full_scan(struct guard *g)
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
		struct proc *p = guard_proc_find(g, v[i].pid);
		if (p && p->t.starttime != v[i].starttime) {
			guard_proc_remove(g, p, "exited");
			p = NULL;
		}
		if (p) {
			p->seen_scan = 1;
			continue;
		}
		if (pend_holds(g, &v[i]))
			continue;
		found(g, &v[i]);
		p = guard_proc_find(g, v[i].pid);
		if (p)
			p->seen_scan = 1;
	}
	/* Unattached processes absent from the scan are gone; attached ones
	 * leave through their pidfd. */
	for (size_t i = 0; i < g->n_procs;) {
		struct proc *p = g->procs[i];
		if (!p->seen_scan && target_state(p->tg) == TARGET_IDLE && !target_busy(p->tg) &&
		    discovery_exited(p->t.pid, p->t.starttime)) {
			guard_proc_remove(g, p, "exited");
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
void guard_light_scan(struct guard *g, int new_only)
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
		if (guard_proc_find(g, (pid_t)pid) || (old && (new_only || now - old->first_ns > GUARD_YOUNG_NS)))
			continue;
		const struct pend *e = pend_find(&g->pend, (pid_t)pid);
		if (e && e->backoff_ns)
			continue;
		probes++;
		if (discovery_find_ex((pid_t)pid, &o, &t, err, sizeof(err)) == 0) {
			found(g, &t);
		} else {
			if (o.foreign[0])
				warn_foreign(g, &t, o.foreign, o.foreign_uid);
			if (!old && discovery_socket_dir((pid_t)pid, dir, sizeof(dir)) == 0 &&
			    strncmp(dir, "/proc/", 6) == 0) {
				/* A process in a container: its /tmp is where
				 * that container's next .NET process will show
				 * up. */
				guard_watch_dir(g, dir);
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
	struct proc *p = guard_proc_find(g, pid);
	if (p && p->t.starttime == st) {
		/* Known, and its attachment failing: a new name of it is
		 * worth trying at once. */
		target_retry_soon(p->tg);
		pend_del(&g->pend, e);
		return;
	}
	if (p) {
		guard_proc_remove(g, p, "exited"); /* the pid is another process's now */
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
		found(g, &t); /* removes the entry, or sets its backoff */
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
void guard_pend_run(struct guard *g, int64_t now)
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

void guard_pend_forget(struct guard *g, pid_t pid)
{
	struct pend *e = pend_find(&g->pend, pid);
	if (e)
		pend_del(&g->pend, e);
}
