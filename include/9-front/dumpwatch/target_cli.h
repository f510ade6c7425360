/* The options the one-process watch and the guard share, parsed once for
 * both: what every target of either is given (target_options: the dump
 * directory, how dumps are taken and their disk limits, subscriptions, what
 * is printed, the hooks), the journal and the log. cmd_watch.c and
 * cmd_guard.c each join this table to their own and hand it the codes that
 * are not theirs. */
#ifndef DUMPWATCH_TARGET_CLI_H
#define DUMPWATCH_TARGET_CLI_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "dumpwatch/cli.h"
#include "dumpwatch/target.h"

struct target_cli {
	const char *dump_dir; /* as given */
	const char *journal;  /* NULL: none */
	const char *createdump;
	enum dump_via via;
	int verbose, all_events, ticks_always, ticks_set; /* ticks_set: --alloc-ticks given */
	int64_t counter_interval_ns, dump_timeout_ns, history_ns, proc_interval_ns, hook_timeout_ns;
	struct store_limits store;
	struct hook_cmd on_fire, on_dump; /* argc 0: not given */
	const char *hook_user;
};

/* The shared options; --log acts at once (log_set_journald). */
extern const struct cli_option target_cli_options[];

/* c with every default (defaults.h). */
void target_cli_init(struct target_cli *c);

/* One option of target_cli_options into c: 0, -EINVAL after one line saying
 * what was wrong, or -ENOENT when opt is not one of them. */
int target_cli_option(struct target_cli *c, int opt, const char *arg);

/* After the last option: --createdump implies --dump-via exec. 0, or
 * -EINVAL after one line. */
int target_cli_finish(struct target_cli *c);

/* The dump directory as a real path into out (PATH_MAX): 0, or -EINVAL
 * after one line (it must exist). */
int target_cli_dump_dir(const struct target_cli *c, char *out);

/* The target_options of c, dump_dir (absolute) for rules without their own. */
void target_cli_target_options(const struct target_cli *c, const char *dump_dir, struct target_options *to);

/* --help's list of the shared options. */
void target_cli_help(FILE *f);

#endif
