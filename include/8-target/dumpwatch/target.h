/* One .NET process under guard: the whole per-process pipeline, shared by the
 * one-process watch and the guard. It asks the runtime who it is
 * (ProcessInfo), starts tracing (CollectTracing, newest version first),
 * streams and evaluates the process's rules after every event that can move
 * a metric, fires, dumps, notices the stream's end or the process's exit,
 * stops tracing, and journals each step. Every request to the runtime is a
 * non-blocking exchange on the shared loop with its own deadline, so nothing
 * one process does, or fails to do, delays another.
 *
 * The owner (watch.c: one target; guard.c: many) decides what the target's
 * rules are, whether it may attach now, and what an ending means for it; it
 * hears of each step through target_hooks. A hook is the last thing a target
 * call does; the owner may free the target from inside probed, exited and
 * quiet, and from no other hook. No hook runs from inside the stream's read
 * except attached-side effects of evaluation (fire), which never end it. */
#ifndef DUMPWATCH_TARGET_H
#define DUMPWATCH_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/cgroup.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/dump.h"
#include "dumpwatch/eval.h"
#include "dumpwatch/hook.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/metrics.h"
#include "dumpwatch/rulefile.h"
#include "dumpwatch/session.h"
#include "dumpwatch/store.h"
#include "dumpwatch/upload.h"

/* Deadlines of the requests to a runtime. A live runtime answers in
 * microseconds (ProcessInfo, CollectTracing measured under 1 ms on .NET
 * 10.0.12); the bound is for a process that is stopped or hostile. */
#define TARGET_REQUEST_MS 3000
/* StopTracing, then the stream's end, at detach. */
#define TARGET_STOP_MS 1000
/* After the stream ends, how long to wait for the process's exit before
 * calling it a session failure: the runtime closes its sockets a moment
 * before the process is gone. */
#define TARGET_EXIT_GRACE_NS 1000000000LL
/* Re-evaluation without events (rates decay when allocation stops). */
#define TARGET_TICK_NS 250000000LL
/* While allocation ticks come only near a threshold (target_ticks_gate),
 * System.Runtime's counters bound the sizes and rates from above, every
 * TARGET_BOUND_PER_SUSTAIN-th of the shortest sustain ("for") among the
 * conditions on them, so that a condition that holds meets that many samples
 * within its sustain; at least every TARGET_BOUND_INTERVAL_MS (a condition
 * with no sustain: a spike of a few hundred milliseconds must meet a sample)
 * and at most every counter interval. A sample costs an idle process ~0.4 ms
 * (tests/bench/sample_cost.sh), so a rule that waits 5 s need not pay for
 * ten a second. */
#define TARGET_BOUND_INTERVAL_MS 100
#define TARGET_BOUND_PER_SUSTAIN 10
/* Attach again after a failure (when target_config.retry), backing off. */
#define TARGET_RETRY_MIN_NS 2000000000LL
#define TARGET_RETRY_MAX_NS 300000000000LL

/* What the command line says of every target, the same for the one process
 * of the watch and the many of the guard: where and how dumps are taken,
 * what is subscribed to and polled, what is printed, and the hooks of rules
 * without their own. */
struct target_options {
	const char *dump_dir; /* absolute; for rules without dump.dir */
	enum dump_via via;
	struct store_limits store; /* disk guards checked before every dump */
	int64_t dump_timeout_ns;   /* createdump is killed past it; 0: no limit */
	const char *createdump;    /* --createdump: what the exec path runs; NULL: the host runtime's */
	uint32_t counter_interval_ms;
	int all_events;           /* --all-events: every event of the keywords, not only the decoded ones */
	int ticks_always;         /* --alloc-ticks always: never only near a threshold (target_ticks_gate) */
	int verbose;              /* print events and metrics on stdout */
	int64_t history_ns;       /* metric history kept for dump contexts; 0: DW_DEFAULT_HISTORY_NS */
	int64_t proc_interval_ns; /* polls of /proc for rss, private-memory, ...; 0: DW_DEFAULT_PROC_INTERVAL_NS */
	/* --on-fire, --on-dump (argc 0: none), --hook-user (NULL: the default),
	 * --hook-timeout (0: the default); the owner runs the hooks as that
	 * user (target_config.hooks). */
	struct hook_cmd on_fire, on_dump;
	const char *hook_user;
	int64_t hook_timeout_ns;
};

/* What all targets of one owner share. */
struct target_config {
	struct loop *loop;
	struct journal *journal;
	const struct target_options *opt;
	int pid_prefix;        /* verbose lines start with the pid (many targets) */
	int retry;             /* attach again after a failure, backing off */
	int request_ms;        /* 0: TARGET_REQUEST_MS (tests shorten it) */
	int64_t exit_grace_ns; /* 0: TARGET_EXIT_GRACE_NS */
	/* Hooks: where they run (NULL: none run). */
	struct hook_runner *hooks;
	/* Uploads: the queue (NULL: no --upload), and whether rules that do not
	 * say are uploaded. */
	struct uploader *uploads;
	int upload_default;
	int runtime_counters; /* subscribe to System.Runtime's counters even when no rule reads them */
};

/* One rule applied to the process, with its evaluation state. */
struct target_rule {
	struct file_rule fr;
	char file[PATH_MAX]; /* the rule file it comes from; "": the command line */
	uint64_t hash;       /* ruleset_rule_hash, for carrying state over a reload */
	struct eval_state st;
	int64_t next_ns; /* 0: nothing pending */
	int at_limit;    /* "limit" journaled since the last fire */
	enum eval_result last;
	unsigned char known[RULE_MAX_CONDS];        /* condition i's metric journaled as known */
	unsigned char meter_warned[RULE_MAX_CONDS]; /* its instrument's unit or kind said not to fit */
};

enum target_state {
	TARGET_NEW,       /* not asked yet */
	TARGET_PROBING,   /* ProcessInfo under way */
	TARGET_IDLE,      /* known, not attached */
	TARGET_ATTACHING, /* CollectTracing under way */
	TARGET_ATTACHED,  /* streaming */
	TARGET_ENDING,    /* the stream ended; did the process exit? */
	TARGET_GONE,      /* the process exited */
};

struct target;

struct target_hooks {
	/* ProcessInfo answered (r 0) or not (r -errno, err says why); the
	 * name and command line are known either way (from /proc). */
	void (*probed)(void *ctx, struct target *t, int r, const char *err);
	void (*attached)(void *ctx, struct target *t);
	/* Journaled already; with target_config.retry a retry is scheduled. */
	void (*attach_failed)(void *ctx, struct target *t, int r, const char *err);
	/* A retry is due: may it attach now? NULL: yes. When not, the target
	 * stays idle until the owner calls target_attach. */
	int (*may_attach)(void *ctx, struct target *t);
	/* A rule fired; called before its dump starts. */
	void (*fired)(void *ctx, struct target *t, size_t rule);
	/* A dump ended: 0 published, -ENOSPC skipped by the disk guards,
	 * another -errno failed. */
	void (*dump_ended)(void *ctx, struct target *t, size_t rule, int r);
	/* The stream broke or stalled, or the runtime ended it while the
	 * process lives on. Journaled already; retried with .retry. */
	void (*session_failed)(void *ctx, struct target *t, const char *err);
	/* The process exited (after a dump in progress ended). */
	void (*exited)(void *ctx, struct target *t);
	/* Nothing is in flight any more (no dump, no stop): see target_busy. */
	void (*quiet)(void *ctx, struct target *t);
};

/* A target for process dt; nothing happens until target_probe. NULL on out
 * of memory. cfg and hooks must outlive it. */
struct target *target_new(const struct target_config *cfg, const struct target_hooks *hooks, void *ctx,
                          const struct dn_target *dt);
/* Frees t at once: a dump in progress is abandoned (journaled, its partial
 * file removed), tracing is left to end with the connection. NULL is a
 * no-op. */
void target_free(struct target *t);

/* Asks the runtime for its process info (non-blocking; hooks.probed). */
void target_probe(struct target *t);

/* Replaces the rules (t takes the array, malloc'd, which may be NULL for
 * none). Without rules an attached target detaches. Refused (-EBUSY, the
 * array is not taken) while a dump runs: its rule is referred to by index. */
/* The dump in progress: bytes written and expected (dump_job_progress);
 * -1 when none runs. */
int target_dump_progress(const struct target *t, uint64_t *written, uint64_t *estimate);

/* Memory held for its dumps' context: the history and GC records (ctxtrack_bytes). */
size_t target_history_bytes(const struct target *t);

int target_set_rules(struct target *t, struct target_rule *rules, size_t n);
const struct target_rule *target_rules(const struct target *t, size_t *ret_n);

/* Attaches with the subscription of the rules, or resubscribes when that
 * changed; nothing when it is attached with the same subscription, probing,
 * gone, or has no rules. */
void target_attach(struct target *t);

/* Ends tracing (StopTracing without waiting here) and journals "detach"
 * with why. The target stays known (idle). */
void target_detach(struct target *t, const char *why);

/* Journals "detach" with why when it is attached, then frees t. */
void target_end(struct target *t, const char *why);

/* A retry is scheduled: make it now (a new name of its socket appeared). */
void target_retry_soon(struct target *t);

/* A dump or a stop in flight. */
int target_busy(const struct target *t);
int target_dumping(const struct target *t);
/* A retry is scheduled (after a failure). */
int target_retrying(const struct target *t, int64_t *ret_at);
/* Counted in the descriptors the owner estimates: those held now, and
 * those an attachment under way will take without asking (its pidfd and the
 * /proc files its rules poll, opened when the stream starts), so that several
 * attachments allowed at once do not together take more than was allowed.
 * target_fds_to_attach: what an attachment holds (the event stream, the
 * pidfd, the /proc files, and the request and stream of the session that
 * brings allocation ticks near a threshold), to ask for before attaching. */
int target_fds(const struct target *t);
int target_fds_pending(const struct target *t);
int target_fds_to_attach(const struct target *t);

enum target_state target_state(const struct target *t);
const struct dn_target *target_process(const struct target *t);
/* The name users know it by (entry assembly, else executable). */
const char *target_name(const struct target *t);
const char *target_cmdline(const struct target *t);
/* Its container id and pod uid (cgroup.h), read from /proc when it was
 * found; "" each when none. */
const struct cgroup_ident *target_ident(const struct target *t);
const struct ipc_process_info *target_info(const struct target *t);
/* The current session (metrics, bytes), NULL when never attached. */
struct session *target_session(const struct target *t);
/* Whether the rules' allocation ticks can come and go with a second session
 * that runs only while a rule is near its threshold: every condition that
 * needs them is an "above" one (> or >=, threshold over 0) on loh-size,
 * poh-size, heap-size or an allocation rate, and one at least needs them. */
int target_ticks_gate(const struct target_rule *rules, size_t n);

/* Where the allocation ticks of t's rules come from now. */
enum target_alloc_ticks {
	TARGET_TICKS_NONE,   /* no rule reads them (or not attached) */
	TARGET_TICKS_ALWAYS, /* the main session, from the attach on */
	TARGET_TICKS_OFF,    /* only near a threshold, and no rule is near */
	TARGET_TICKS_ON,     /* only near a threshold, and they come now */
};
enum target_alloc_ticks target_alloc_ticks(const struct target *t);
/* "always", "off", "on"; NULL for TARGET_TICKS_NONE. */
const char *target_alloc_ticks_name(enum target_alloc_ticks k);

/* The bytes and events t's process streamed to us in its current session,
 * with those of the second sessions that brought allocation ticks beside it. */
void target_stream_totals(const struct target *t, uint64_t *bytes, uint64_t *events);
uint32_t target_dumps(const struct target *t);
/* When the current attachment began (CLOCK_MONOTONIC), 0 when none. */
int64_t target_attached_ns(const struct target *t);
/* The last failure's sentence, "" when none. */
const char *target_error(const struct target *t);
/* The socket of t is skipped from now on (found served by someone else). */
const struct dn_sock_id *target_skipped(const struct target *t, size_t *ret_n);

#endif
