/* The guard's process table and its descriptors; see guard.c for the whole.
 *
 * The table. Every .NET process found is kept here, keyed by pid and start
 * time (a reused pid is another process), with a target of its own whose
 * hooks are guard.c's: what the target does to the process, and the guard's
 * decisions on it, happen there. This file only adds, finds and removes.
 *
 * Descriptors. An attached process holds two (its event stream and its
 * pidfd) and the /proc files its rules poll, and one more while a request to
 * its runtime is in flight; an attachment under way counts what it will open
 * when its stream starts. The soft limit is raised to the hard limit at
 * start, and a reserve (GUARD_FDS_RESERVE) is kept for discovery, the
 * journal, the state file and a dump: a process whose attachment would eat
 * into it is not attached but waits, logged and journaled once
 * (attach-paused) until descriptors are free again (attach-resumed); the
 * processes attached are served as before. Descriptors in use are estimated
 * from what the guard holds and counted in /proc/self/fd only near the
 * limit. */
#include <json-c/json.h>
#include <stdlib.h>

#include "dumpwatch/exposrv.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "guard_shared.h"

/* ---- the table -------------------------------------------------------- */

int guard_proc_attached(const struct proc *p)
{
	return p->tg && target_state(p->tg) == TARGET_ATTACHED;
}

const char *guard_proc_name(const struct proc *p)
{
	return p->tg ? target_name(p->tg) : "";
}

struct proc *guard_proc_find(struct guard *g, pid_t pid)
{
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i]->t.pid == pid)
			return g->procs[i];
	return NULL;
}

struct proc *guard_proc_add(struct guard *g, const struct dn_target *t)
{
	struct proc *p;

	if (g->n_procs == g->cap_procs) {
		size_t c = g->cap_procs ? g->cap_procs * 2 : 16;
		struct proc **np = realloc(g->procs, c * sizeof(*np));
		if (!np)
			return NULL;
		g->procs = np;
		g->cap_procs = c;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->g = g;
	p->t = *t;
	p->tg = target_new(&g->tcfg, g->proc_hooks, p, t);
	if (!p->tg) {
		free(p);
		return NULL;
	}
	g->procs[g->n_procs++] = p;
	return p;
}

void guard_proc_probe(struct proc *p)
{
	/* Even asking who it is takes a descriptor: a flood of new processes
	 * waits its turn like attachments do (on_timer probes it then). */
	if (!guard_fds_allow(p->g, 1)) {
		guard_fd_wait_begin(p);
		return;
	}
	target_probe(p->tg); /* may remove p (the probed hook) */
}

void guard_proc_remove(struct guard *g, struct proc *p, const char *why)
{
	guard_fd_wait_end(p);
	guard_forget_state(g, &p->t);
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i] == p) {
			g->procs[i] = g->procs[--g->n_procs];
			break;
		}
	target_end(p->tg, why);
	p->tg = NULL;
	free(p);
}

void guard_proc_free(struct proc *p)
{
	if (target_dumping(p->tg))
		log_warn("stopping: abandoning the dump of pid %d; its partial file was removed", (int)p->t.pid);
	target_free(p->tg);
	free(p);
}

/* ---- descriptors ------------------------------------------------------ */

/* The descriptors the guard holds, by its own reckoning, and in ret_pending
 * those that attachments under way will still take (target_fds_pending). */
static int64_t fds_held(const struct guard *g, int64_t *ret_pending)
{
	int64_t held = (g->fd_base > 0 ? g->fd_base : 0) + (int64_t)hook_fds(g->hooks) +
	               (int64_t)exposrv_connections(g->expo),
	        pending = 0;

	for (size_t i = 0; i < g->n_procs; i++) {
		held += target_fds(g->procs[i]->tg);
		pending += target_fds_pending(g->procs[i]->tg);
	}
	if (ret_pending)
		*ret_pending = pending;
	return held;
}

static int64_t fds_estimate(const struct guard *g)
{
	int64_t pending, held = fds_held(g, &pending);
	return held + pending;
}

/* Estimated from what the guard holds; near the limit, counted in
 * /proc/self/fd, at most every GUARD_FDS_RECOUNT_NS (in between, the count
 * moves with the estimate), so that a flood of processes at the limit does
 * not list a directory of tens of thousands of descriptors for each. What
 * attachments under way will still take is added to both: a count cannot
 * see it yet. */
int guard_fds_allow(struct guard *g, uint64_t need)
{
	int64_t held, pending, open, now;

	if (!g->fdl.soft)
		return 1;
	held = fds_held(g, &pending);
	if (fds_room((uint64_t)(held + pending) + GUARD_FDS_SLACK, need, GUARD_FDS_RESERVE, g->fdl.soft))
		return 1;
	now = loop_now();
	if (!g->fd_count_ns || now - g->fd_count_ns >= GUARD_FDS_RECOUNT_NS) {
		int n = fds_count_open();
		/* No count (at the limit, listing /proc/self/fd needs the
		 * descriptor there is not): the estimate, which said no. */
		if (n < 0)
			return 0;
		g->fd_count = n;
		g->fd_count_est = held;
		g->fd_count_ns = now;
	}
	open = g->fd_count + (held - g->fd_count_est) + pending;
	return fds_room(open > 0 ? (uint64_t)open : 0, need, GUARD_FDS_RESERVE, g->fdl.soft);
}

/* Descriptors open now, for the log and journal: counted, or when even
 * that fails (no descriptor left to list them with) estimated. */
static int open_fds(const struct guard *g)
{
	int n = fds_count_open();
	return n >= 0 ? n : (int)fds_estimate(g);
}

static size_t count_attached(const struct guard *g)
{
	size_t n = 0;
	for (size_t i = 0; i < g->n_procs; i++)
		n += guard_proc_attached(g->procs[i]) ? 1u : 0u;
	return n;
}

void guard_fd_wait_begin(struct proc *p)
{
	struct guard *g = p->g;

	if (!p->fd_wait) {
		p->fd_wait = 1;
		g->n_fd_wait++;
	}
	if (g->fd_paused)
		return;
	g->fd_paused = 1;
	int open = open_fds(g);
	size_t attached = count_attached(g);
	struct json_object *rec = json_object_new_object();
	json_object_object_add(rec, "pid", json_object_new_int(p->t.pid));
	json_object_object_add(rec, "process", json_object_new_string(guard_proc_name(p)));
	json_object_object_add(rec, "open_fds", json_object_new_int(open));
	json_object_object_add(rec, "fd_limit", json_object_new_int64((int64_t)g->fdl.soft));
	json_object_object_add(rec, "fd_reserve", json_object_new_int(GUARD_FDS_RESERVE));
	json_object_object_add(rec, "attached", json_object_new_int64((int64_t)attached));
	journal_write(g->journal, "attach-paused", rec);
	log_warn("descriptors: %d of %llu open; not attaching pid %d (%s) nor other new processes until some are "
	         "free, keeping %d for discovery, the journal and dumps; the %zu attached processes are still served",
	         open, (unsigned long long)g->fdl.soft, (int)p->t.pid, guard_proc_name(p), GUARD_FDS_RESERVE, attached);
}

void guard_fd_wait_end(struct proc *p)
{
	struct guard *g = p->g;

	if (!p->fd_wait)
		return;
	p->fd_wait = 0;
	g->n_fd_wait--;
	if (g->n_fd_wait > 0 || !g->fd_paused)
		return;
	g->fd_paused = 0;
	int open = open_fds(g);
	struct json_object *rec = json_object_new_object();
	json_object_object_add(rec, "open_fds", json_object_new_int(open));
	json_object_object_add(rec, "fd_limit", json_object_new_int64((int64_t)g->fdl.soft));
	json_object_object_add(rec, "attached", json_object_new_int64((int64_t)count_attached(g)));
	journal_write(g->journal, "attach-resumed", rec);
	log_info("descriptors: %d of %llu open; attaching new processes again", open, (unsigned long long)g->fdl.soft);
}

/* The timer tries again when there is room (guard.c's on_timer). */
int guard_may_attach(struct proc *p)
{
	/* A resubscription swaps one stream for another; a new attachment
	 * takes a stream, a pidfd and the /proc files its rules poll. */
	if (guard_proc_attached(p) || guard_fds_allow(p->g, (uint64_t)target_fds_to_attach(p->tg)))
		return 1;
	guard_fd_wait_begin(p);
	return 0;
}
