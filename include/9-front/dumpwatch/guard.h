/* The guard: dumpwatch as a service. Watches a rules directory, attaches to
 * every .NET process that an enabled rule matches (running at start or started
 * later), evaluates each process's rules on its own event stream, dumps within
 * the rules' limits, and journals everything. cmd_guard.c only fills
 * guard_options. */
#ifndef DUMPWATCH_GUARD_H
#define DUMPWATCH_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/target.h"
#include "dumpwatch/upload.h"

#define GUARD_SOCKET_DIRS_MAX 16
#define GUARD_ALLOW_DUMP_DIRS_MAX 16

struct guard_options {
	/* Dumps, subscriptions, output and hooks of every process; its dump_dir
	 * (absolute) is for rules without dump.dir. */
	struct target_options target;
	const char *rules_dir; /* absolute */
	/* A rule's dump.dir must lie inside target.dump_dir or one of these
	 * (absolute, normalized: --allow-dump-dir). */
	const char *allow_dump_dirs[GUARD_ALLOW_DUMP_DIRS_MAX];
	size_t n_allow_dump_dirs;
	const char *journal_path; /* NULL: no journal */
	const char *state_dir;    /* NULL: limits are not kept across restarts */
	int64_t stop_timeout_ns;  /* on SIGTERM, how long a dump in progress may take to finish */
	/* Directories to watch for new diagnostics sockets besides /tmp and the
	 * socket directories of processes seen. */
	const char *socket_dirs[GUARD_SOCKET_DIRS_MAX];
	size_t n_socket_dirs;
	const struct upload_options *upload; /* --upload; NULL: none */
	/* The Prometheus exposition (docs/metrics.md): --metrics-listen
	 * (expo_parse_listen's forms) and --metrics-file (absolute), each NULL
	 * when not asked for, and how often the file is rewritten. */
	const char *metrics_listen;
	const char *metrics_allow; /* --metrics-allow, or NULL: anyone who can connect */
	const char *metrics_file;
	int64_t metrics_interval_ns;
};

/* Runs until SIGTERM or SIGINT. Returns DW_EXIT_OK after a clean stop, or
 * DW_EXIT_USAGE / DW_EXIT_RUNTIME when it cannot start (the reason logged). */
int guard_run(const struct guard_options *o);

#endif
