/* What the files of a target share (target.c, fire.c, procpoll.c,
 * conditions.c): the target's state and the journal records they all start
 * from. target.c holds the attach state machine and calls the others; they
 * never call back into it. Not a public header. */
#ifndef DUMPWATCH_TARGET_SHARED_H
#define DUMPWATCH_TARGET_SHARED_H

#include <json-c/json.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/ctxtrack.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/procstat.h"
#include "dumpwatch/report.h"
#include "dumpwatch/target.h"

#define TARGET_SKIP_MAX 4

/* An op's descriptor as registered on the loop. */
struct op_reg {
	int fd; /* -1: none */
	uint32_t ev;
	unsigned attempt;
};

/* The second session that brings allocation ticks while a rule is near its
 * threshold (ticks.c). */
struct target_ticks {
	int gated;         /* the rules' ticks come from here, not the main session */
	struct ipc_op *op; /* its CollectTracing, or StopTracing, in flight */
	struct op_reg reg;
	struct session *s; /* its stream, once started (and while it drains) */
	uint64_t session_id;
	int on_loop;
	int64_t asked_ns; /* when CollectTracing went out */
	int64_t on_ns;    /* when the ticks began to count; 0: not counting */
	int stopping;     /* StopTracing sent: the stream drains to its end */
	int64_t stop_deadline;
	int64_t hot_ns;         /* the last time a rule was near */
	int64_t retry_ns;       /* after a failure, not before */
	char why[384];          /* why they were started */
	uint64_t bytes, events; /* of the sessions that ended */
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
	int ticks_gated;                 /* sub leaves the ticks to t->ticks */
	struct target_ticks ticks;

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
	 * of the dump in flight: its directory and file name, decided once
	 * (fx.dump_dir; fx.dump_name points into fx_name), and the store they
	 * name, opened once for the dump and its context files (-1: closed, or
	 * not opened, fx_store_err saying why). */
	struct ctxtrack *ct;
	struct dumpctx_input fx;
	char fx_name[NAME_MAX + 1];
	int fx_store;
	char fx_store_err[512];
	char fire_desc[512]; /* the values of the last fire's conditions, for its hooks */
	/* A rule with heap-summary: its core dump is published and its heap
	 * snapshot runs as t->job; the dump's result waits here for it. */
	int fx_summing;
	struct dump_result fx_res;
	char fx_heap_err[512];

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

/* ---- journal records (every file) ------------------------------------- */

/* A record naming the process: pid, process, container and pod when known. */
static inline struct json_object *rec_new(const struct target *t)
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

/* The same, with the rule. */
static inline struct json_object *rec_rule(const struct target *t, const char *rule)
{
	struct json_object *o = rec_new(t);
	json_object_object_add(o, "rule", json_object_new_string(rule));
	return o;
}

/* Journals rec as event with its error. */
static inline void journal_err(const struct target *t, const char *event, struct json_object *rec, const char *err)
{
	json_object_object_add(rec, "error", json_object_new_string(err));
	journal_write(t->cfg->journal, event, rec);
}

/* Where a rule's dumps go: its dump.dir, else --dump-dir. */
static inline const char *dump_dir_of(const struct target *t, const struct target_rule *tr)
{
	return tr->fr.dump_dir[0] ? tr->fr.dump_dir : t->cfg->opt->dump_dir;
}

/* ---- fire.c: a rule fired; its dump, context, hooks and upload -------- */

/* Fires rule i at now: journals and runs the on-fire hook, notes the
 * context, tells the owner (hooks.fired) and starts the dump. 0 when the
 * dump runs (t->job, t->job_rule): the caller watches dump_job_fd. Else the
 * -errno of a dump that could not start (-ENOSPC: skipped by the disk
 * guards), already journaled with its context: the caller reports its end. */
int target_fire(struct target *t, size_t i, int64_t now);

/* The job's descriptor was readable: -EAGAIN while the dump runs on (watch
 * dump_job_fd again); else it ended, with 0 (published) or -errno (failed),
 * journaled with its context, hooks run and upload queued; the job is freed. */
int target_fire_finish(struct target *t);

/* Abandons the dump in flight (the target is going): journaled as failed
 * with why and its context, the partial file removed, the job freed. The
 * caller has taken its descriptor off the loop. */
void target_fire_abandon(struct target *t, const char *why);

/* ---- procpoll.c: metrics from /proc ------------------------------------ */

/* Opens or closes the /proc files as the rules and the state need them; a
 * new poll is due at once. */
void target_proc_sync(struct target *t);

/* One poll of /proc at now, taken into the metrics and the history; the
 * next is scheduled. 1 when a sample was taken (the caller evaluates), 0
 * when polling stopped. */
int target_proc_poll(struct target *t, int64_t now);

/* The /proc files the rules poll: status, and the fd directory for fds. */
int target_proc_files(const struct target *t);

/* ---- conditions.c: the rules' metrics in the current attachment -------- */

/* Marks the conditions whose metric is known at now and has not been said
 * so; adds each such metric once to known (name -> value and basis) and each
 * metric still unknown once to unknown (name -> true); line (linelen, may be
 * 0) says the known ones. Returns how many conditions are still unknown. */
int target_scan_known(struct target *t, int64_t now, struct json_object *known, struct json_object *unknown, char *line,
                      size_t linelen);

/* The keys of set as a JSON array. */
struct json_object *target_names_of(struct json_object *set);

/* Journals the metrics of the rules that became known since the last call
 * ("metrics-known"), until all are. */
void target_note_known(struct target *t, int64_t now);

/* Has the session's metrics count the exceptions of every exception
 * condition of the rules, and of no other. */
void target_watch_exceptions(struct target *t);

/* What System.Diagnostics.Metrics says went wrong, said once per kind and
 * attachment. */
void target_meter_error(struct target *t, const struct ev_meter *m);

/* A meter value of instrument m: says once a condition that cannot read it;
 * returns whether any rule reads it. */
int target_meter_fit(struct target *t, const struct ev_meter *m);

/* ---- target.c, for the other files ------------------------------------ */

/* Keeps an op's descriptor on the loop for what it waits for (fn gets t). */
void target_op_watch(struct target *t, struct ipc_op *op, struct op_reg *reg, loop_fd_fn fn);
void target_op_unwatch(struct target *t, struct op_reg *reg);
/* The request *op, taken off the loop, cleared and freed; *op NULL after
 * (nothing when it is NULL already). */
void target_op_drop(struct target *t, struct ipc_op **op, struct op_reg *reg);
/* An event of t's process (after its metrics took it): context, verbose
 * output, evaluation. */
void target_on_event(struct target *t, const struct ev_record *r, int64_t t_ns);
/* Arms t's timer for what it waits for now. */
void target_rearm(struct target *t);

/* ---- ticks.c ------------------------------------------------------------ */

/* Whether a rule is near (why says which, and how); t has a session. */
int target_ticks_near(const struct target *t, int64_t now, char *why, size_t whylen);
/* How often System.Runtime's counters bound t's gated values, in ms
 * (TARGET_BOUND_INTERVAL_MS). */
uint32_t target_bound_interval_ms(const struct target *t);
/* Starts or stops the ticks as the rules are near or not (every tick). */
void target_ticks_update(struct target *t, int64_t now);
/* Advances the request in flight. */
void target_ticks_step(struct target *t);
/* Ends them at once: the stream closed, the request dropped. */
void target_ticks_close(struct target *t);
/* When the request in flight or the stop's deadline wants the timer (0: not). */
int64_t target_ticks_wake(const struct target *t);
int target_ticks_fds(const struct target *t);

#endif
