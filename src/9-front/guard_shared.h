/* What the guard's files share: the guard's state, a process of its table,
 * the figures they tune, and each file's functions. Not a public header.
 *
 * Calls run one way: guard.c (the run, the rules, the targets' hooks, the
 * timer) uses guard_find.c (finding processes), guard_procs.c (the process
 * table and its descriptors), guard_state.c (limits kept), guard_metrics.c
 * and guard_status.c; guard_find.c uses guard_procs.c; guard_procs.c uses
 * guard_state.c. What a lower file must tell a higher one goes through the
 * targets' hooks (guard.c's, which guard_procs.c hands every new target) or
 * is done by the caller (guard.c re-arms the timer after the finder ran). */
#ifndef DUMPWATCH_GUARD_SHARED_H
#define DUMPWATCH_GUARD_SHARED_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/control.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/guard.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/ruleset.h"
#include "dumpwatch/state.h"
#include "dumpwatch/target.h"

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
#define GUARD_FDS_RECOUNT_NS 100000000LL
#define GUARD_WATCHES_MAX 1024
#define GUARD_IDLE_TICK_NS 1000000000LL /* the guard's own timer when nothing is due */

struct guard;
struct exposrv;

/* A .NET process found. Its attachment, evaluation and dumps are its
 * target's (target.h); the guard decides its rules and when it may attach. */
struct proc {
	struct guard *g;
	struct dn_target t; /* as found (the key: pid and start time) */
	struct target *tg;
	int fd_wait;   /* not attached: the descriptor reserve was reached */
	int seen_scan; /* found by the current full scan */
};

struct seen_pid {
	pid_t pid;
	int64_t first_ns;
};

struct socket_dir {
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
	struct target_config tcfg;
	const struct target_hooks *proc_hooks; /* guard.c's: what every process's target tells the guard */
	struct loop *loop;
	struct journal *journal;
	struct ruleset *rs;
	int inofd;
	struct proc **procs;
	size_t n_procs, cap_procs;
	struct seen_pid *seen;
	size_t n_seen;
	struct socket_dir *dirs;
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
	int64_t fd_count, fd_count_est, fd_count_ns; /* the last count, what was held then, when */
	int fd_paused;                               /* attach-paused journaled, attach-resumed not yet */
	size_t n_fd_wait;
	/* Work done, in the stop record. */
	uint64_t n_full_scan_listings;
	uint64_t n_full_scans, n_light_scans, n_socket_events, n_pid_checks, n_events_dropped, n_events_nopid;
	int stopping;
	int64_t stop_deadline;
	/* What `dumpwatch status` reads (guard_status.c). */
	struct control *control;
	int64_t start_wall_ns;
	uint64_t n_dumps, n_dumps_failed, n_dumps_skipped;
	struct hook_runner *hooks;
	struct uploader *uploads;
	/* What the metrics exposition shows besides (guard_metrics.c). */
	uint64_t n_attach_failed, n_rule_reloads;
	uint64_t n_uploads, n_uploads_failed; /* dumps uploaded, uploads that failed */
	uint64_t n_hooks, n_hooks_failed;     /* hooks run, hooks that failed */
	struct exposrv *expo;                 /* NULL: no --metrics-listen nor --metrics-file */
	int exit_code;
	int64_t start_ns;
};

/* guard_procs.c: the process table and its descriptors. */
struct proc *guard_proc_find(struct guard *g, pid_t pid);
int guard_proc_attached(const struct proc *p);
const char *guard_proc_name(const struct proc *p);
/* A .NET process found: into the table with a target of its own (hooks:
 * g->proc_hooks). Returns it, or NULL when out of memory. */
struct proc *guard_proc_add(struct guard *g, const struct dn_target *t);
/* Asks p's runtime who it is (without waiting: the probed hook answers),
 * when a descriptor is free; else p waits for one. May remove p. */
void guard_proc_probe(struct proc *p);
/* Takes p out of the table and frees it; its detach record (when it was
 * attached) says why. */
void guard_proc_remove(struct guard *g, struct proc *p, const char *why);
/* Frees p at the guard's stop (a dump in progress is abandoned). */
void guard_proc_free(struct proc *p);
/* Whether need more descriptors can be held without eating into the reserve. */
int guard_fds_allow(struct guard *g, uint64_t need);
/* Whether p may take the descriptors of an attachment now; if not, it waits
 * for them (guard_fd_wait_begin). */
int guard_may_attach(struct proc *p);
/* p is not attached for want of descriptors, or no longer waits (attached,
 * gone, or no rule wants it): journaled once for all processes waiting. */
void guard_fd_wait_begin(struct proc *p);
void guard_fd_wait_end(struct proc *p);

/* guard_find.c: finding processes. */
void guard_watch_dir(struct guard *g, const char *dir);
void guard_watch_dir_of_socket(struct guard *g, const char *socket_path);
/* New names in the socket directories, read from the inotify descriptor fd. */
void guard_on_inotify(struct guard *g, int fd);
/* A candidate's socket was refused (-EPERM) or dead: look again later. */
void guard_candidate_failed(struct guard *g, const struct dn_target *t, int r, const char *err);
void guard_full_scan(struct guard *g);
void guard_light_scan(struct guard *g, int new_only);
void guard_pend_run(struct guard *g, int64_t now);
void guard_pend_forget(struct guard *g, pid_t pid);

/* guard_status.c: the document `dumpwatch status` prints (control.h's
 * build callback: malloc'd JSON text, NULL on failure). */
char *guard_status_text(void *ctx);

/* guard_metrics.c: the Prometheus exposition (docs/metrics.md). */
/* Whether the options ask for it. */
int guard_metrics_wanted(const struct guard_options *o);
/* Starts serving it: 0, or a DW_EXIT_* code after logging the reason. */
int guard_metrics_open(struct guard *g);
/* Writes the file a last time and stops serving. */
void guard_metrics_close(struct guard *g);
/* The text (exposrv.h's build callback: malloc'd, NULL on failure). */
char *guard_metrics_text(void *ctx);

/* guard_state.c: limits kept across rule changes and restarts. */
/* The state file could not be read or written: journaled (state-failed). */
void guard_state_failed(struct guard *g, const char *err);
void guard_keep_state(struct guard *g, const struct proc *p, const struct target_rule *gr);
int guard_take_state(struct guard *g, const struct proc *p, const char *rule, uint64_t hash, struct eval_state *st);
void guard_forget_state(struct guard *g, const struct dn_target *t);
void guard_save_state(struct guard *g);

#endif
