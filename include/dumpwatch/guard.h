/* The guard: dumpwatch as a service. Watches a rules directory, attaches to
 * every .NET process that an enabled rule matches (running at start or started
 * later), evaluates each process's rules on its own event stream, dumps within
 * the rules' limits, and journals everything. main.c only fills
 * guard_options. */
#ifndef DUMPWATCH_GUARD_H
#define DUMPWATCH_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/dump.h"
#include "dumpwatch/hook.h"
#include "dumpwatch/upload.h"

#define GUARD_SOCKET_DIRS_MAX 16
#define GUARD_ALLOW_DUMP_DIRS_MAX 16

struct guard_options {
	const char *rules_dir; /* absolute */
	const char *dump_dir;  /* absolute; rules without dump.dir use it */
	/* A rule's dump.dir must lie inside dump_dir or one of these (absolute,
	 * normalized: --allow-dump-dir). */
	const char *allow_dump_dirs[GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_allow_dump_dirs;
	const char *journal_path; /* NULL: no journal */
	const char *state_dir;    /* NULL: limits are not kept across restarts */
	enum dump_via via;
	uint32_t counter_interval_ms;
	int all_events;           /* --all-events: no filter by event id (.NET 10) */
	int64_t history_ns;       /* metric history for dump contexts; 0: the default */
	int64_t proc_interval_ns; /* polls of /proc; 0: the default */
	int verbose;
	int64_t stop_timeout_ns; /* on SIGTERM, how long a dump in progress may take to finish */
	/* Directories to watch for new diagnostics sockets besides /tmp and the
	 * socket directories of processes seen. */
	const char *socket_dirs[GUARD_SOCKET_DIRS_MAX];
	size_t n_socket_dirs;
	struct store_limits store; /* disk guards checked before every dump */
	int64_t dump_timeout_ns;   /* createdump is killed past it; 0: no limit */
	const char *createdump;    /* --createdump: what the exec path runs; NULL: the host runtime's */
	/* --on-fire, --on-dump (argc 0: none), --hook-user (NULL: the default),
	 * --hook-timeout (0: the default). */
	struct hook_cmd on_fire, on_dump;
	const char *hook_user;
	int64_t hook_timeout_ns;
	const struct upload_options *upload; /* --upload; NULL: none */
	/* The Prometheus exposition (docs/metrics.md): --metrics-listen
	 * (expo_parse_listen's forms) and --metrics-file (absolute), each NULL
	 * when not asked for, and how often the file is rewritten. */
	const char *metrics_listen;
	const char *metrics_file;
	int64_t metrics_interval_ns;
};

/* Runs until SIGTERM or SIGINT. Returns DW_EXIT_OK after a clean stop, or
 * DW_EXIT_USAGE / DW_EXIT_RUNTIME when it cannot start (the reason logged). */
int guard_run(const struct guard_options *o);

#endif
