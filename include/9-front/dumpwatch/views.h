/* Live views, in the habits of dotnet-counters: `dumpwatch counters` (a table
 * refreshed in place on a terminal, JSON lines when piped) and `dumpwatch gc`
 * (one line per completed GC). A view follows one process by pid, or every
 * process whose name matches a glob, present and future (it waits for them). */
#ifndef DUMPWATCH_VIEWS_H
#define DUMPWATCH_VIEWS_H

#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/session.h"

enum view_kind { VIEW_COUNTERS, VIEW_GC };

struct view_options {
	enum view_kind kind;
	pid_t pid;             /* 0: by name */
	const char *name_glob; /* process name (entry assembly, else executable), fnmatch */
	int64_t interval_ns;   /* counters: refresh and EventCounters interval (whole seconds, >= 1) */
	int json;              /* JSON lines instead of text */
	int64_t duration_ns;   /* 0: until SIGINT/SIGTERM (or, by pid, the process exits) */
	/* counters: EventCounters providers besides System.Runtime. */
	size_t n_providers;
	const char *providers[SESSION_MAX_COUNTER_PROVIDERS - 1];
	/* counters: System.Diagnostics.Metrics meters whose instruments are
	 * shown (only their names are used). */
	struct session_subscription meters;
};

/* Runs the view until it is done. Returns an exit status (DW_EXIT_*). */
int view_run(const struct view_options *o);

#endif
