/* The watcher: attaches to a process, evaluates rules on its metrics as events
 * arrive, runs dumps when they fire and journals everything. It owns the event
 * loop, the sessions, the dump jobs and the journal; main.c only fills
 * watch_options. */
#ifndef DUMPWATCH_WATCH_H
#define DUMPWATCH_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/dump.h"
#include "dumpwatch/hook.h"
#include "dumpwatch/rules.h"

#include "dumpwatch/exitcodes.h"

struct watch_options {
	pid_t pid;
	const struct rule *rules;
	size_t n_rules;
	const char *dump_dir; /* absolute */
	enum dump_via via;
	const char *journal_path; /* NULL: no journal */
	int verbose;              /* print metrics as they arrive, on stdout */
	uint32_t counter_interval_ms;
	int all_events;                   /* --all-events: no filter by event id (.NET 10) */
	int64_t history_ns;               /* metric history for dump contexts; 0: the default */
	int64_t proc_interval_ns;         /* polls of /proc; 0: the default */
	struct store_limits store;        /* disk guards checked before every dump */
	int64_t dump_timeout_ns;          /* createdump is killed past it; 0: no limit */
	const char *createdump;           /* --createdump: what the exec path runs; NULL: the host runtime's */
	const char *launcher;             /* the desktop entry to show dumps on (launcher.h); "off": none */
	struct hook_cmd on_fire, on_dump; /* argc 0: none */
	const char *hook_user;            /* NULL: the default */
	int64_t hook_timeout_ns;          /* 0: the default */
};

/* Runs until every rule has reached its max dumps, the target exits, or a
 * signal stops it. Returns one of the DW_EXIT_* codes. */
int watch_run(const struct watch_options *o);

#endif
