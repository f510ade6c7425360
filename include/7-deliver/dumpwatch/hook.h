/* Hooks: commands the operator asks dumpwatch to run when a rule fires
 * (on-fire) and when its dump is published (on-dump). A hook is an argv,
 * executed without a shell, in a clean environment that says what happened
 * (DUMPWATCH_* variables), with the dump and its context open on descriptors
 * 3 and 4 (the files are root's; the hook reads them through those), under a
 * timeout. Its program is checked as createdump is (trust_exec_path): root's,
 * in directories only root can change. Each run is journaled ("hook", or
 * "hook-failed" with the reason) when it ends; the runner lives on the shared
 * loop and outlives the process the hook is about.
 *
 * Whom it runs as: as root, by default, a uid of its own for each run (a
 * transient uid, uidpool.h), so that nothing but the hook's own processes
 * can trace it or take its descriptors; or a user the operator names.
 * Everything the hook started dies with it, also what left its session or
 * was double-forked. Slots are shared fairly between the owners of the
 * processes the hooks are about; a hook that finds none waits, and one that
 * cannot wait is dropped, journaled. */
#ifndef DUMPWATCH_HOOK_H
#define DUMPWATCH_HOOK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/hookcmd.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/loop.h"

#define HOOK_RUNNING_MAX 16      /* hooks running at once */
#define HOOK_RUNNING_PER_OWNER 4 /* of them, for the processes of one user */
#define HOOK_WAITING_MAX 32      /* hooks waiting for a slot; more are dropped (journaled) */
#define HOOK_WAITING_PER_OWNER 8 /* of them, for the processes of one user */
#define HOOK_OUTPUT_TAIL 512     /* bytes of a hook's output kept for the journal */
#define HOOK_GROUPS_MAX 64       /* supplementary groups of the hook's user */

/* Whom hooks run as. */
struct hook_user {
	char name[64]; /* "transient" for a uid of its own per run */
	int transient;
	uid_t uid;
	gid_t gid;
	gid_t groups[HOOK_GROUPS_MAX];
	size_t n_groups;
};

/* Resolves name (a user name or a decimal uid; NULL: the default) into u.
 * As root, NULL means a transient uid per run; root itself and nobody (whom
 * every daemon that drops privileges shares, and could take the dump from a
 * running hook) are refused. Not root, hooks run as ourselves: any other name
 * is refused. 0, or -errno with a sentence in err. */
int hook_user_resolve(const char *name, struct hook_user *u, char *err, size_t errlen);

/* Whether the start should warn about u: as root, a named user whose uid
 * other processes run as now can read what its hooks hold (the dump). 1 with
 * the sentence in out, or 0. */
int hook_user_warning(const struct hook_user *u, char *out, size_t outlen);

/* What a hook is told (each string may be NULL: the variable is left out).
 * The strings are copied; what a process chose (its name) is escaped. */
struct hook_env {
	const char *event; /* "on-fire" or "on-dump" */
	pid_t pid;
	uid_t owner; /* the uid of the process the hook is about: its share of the slots */
	const char *process;
	const char *rule;
	const char *values;    /* "metric=value ..." of the rule's conditions at the fire */
	const char *dump;      /* on-dump: the dump's path */
	const char *context;   /* on-dump: its context file's path */
	uint64_t dump_bytes;   /* on-dump */
	const char *container; /* container id, pod uid, when the process has them */
	const char *pod;
	int dump_fd; /* on-dump: the dump, open for reading (given to the hook as fd 3); -1: none */
	int ctx_fd;  /* its context (fd 4); -1: none */
};

struct hook_runner;

/* Called when a hook ended (ran, was refused or dropped): ok is 1 when it
 * exited with status 0. */
typedef void (*hook_done_fn)(void *ctx, int ok);

/* A runner on loop l journaling to j (NULL: no journal), running hooks as
 * user (NULL: none can be run; each is refused, journaled). NULL on out of
 * memory. */
struct hook_runner *hook_runner_new(struct loop *l, struct journal *j, const struct hook_user *user, hook_done_fn done,
                                    void *done_ctx);

/* Kills the hooks still running with all they started, journals them as
 * failed ("dumpwatch stopped"), journals those waiting as not run, and frees
 * h. NULL is a no-op. */
void hook_runner_free(struct hook_runner *h);

/* Starts cmd for env with a timeout (0: DW_DEFAULT_HOOK_TIMEOUT_NS), or
 * queues it until a slot is free (the descriptors in env are duplicated; the
 * caller keeps its own). Returns 0 when it runs or waits (the end is
 * journaled later), or -errno when it was refused or dropped (journaled
 * "hook-failed" here, err says why). */
int hook_run(struct hook_runner *h, const struct hook_cmd *cmd, int64_t timeout_ns, const struct hook_env *env,
             char *err, size_t errlen);

/* Hooks running now, and waiting for a slot. */
size_t hook_running(const struct hook_runner *h);
size_t hook_waiting(const struct hook_runner *h);

/* Descriptors the runner holds now (three per running hook, those of the
 * waiting ones): for the guard's count. */
size_t hook_fds(const struct hook_runner *h);

/* The latest deadline of the hooks running or waiting (CLOCK_MONOTONIC), 0
 * when none: how long a stop may wait for them. */
int64_t hook_last_deadline(const struct hook_runner *h);

#endif
