/* The watcher: attaches to a process, evaluates rules on its metrics as events
 * arrive, runs dumps when they fire and journals everything. It owns the event
 * loop, the sessions, the dump jobs and the journal; cmd_watch.c only fills
 * watch_options. */
#ifndef DUMPWATCH_WATCH_H
#define DUMPWATCH_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/rules.h"
#include "dumpwatch/target.h"

#include "dumpwatch/exitcodes.h"

struct watch_options {
	struct target_options target; /* dumps, subscriptions, output and hooks */
	pid_t pid;
	const struct rule *rules;
	size_t n_rules;
	const char *journal_path; /* NULL: no journal */
	const char *launcher;     /* the desktop entry to show dumps on (launcher.h); "off": none */
};

/* Runs until every rule has reached its max dumps, the target exits, or a
 * signal stops it. Returns one of the DW_EXIT_* codes. */
int watch_run(const struct watch_options *o);

#endif
