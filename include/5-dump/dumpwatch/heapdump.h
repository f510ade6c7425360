/* A heap snapshot of one process, as a dump: taken over the process's
 * diagnostics socket (heapsnap.h), summarised (heapsum.h) as JSON for the
 * dump's context and `dumpwatch heap --json`, and optionally written as a
 * .gcdump (gcdump.h). Blocking: the dump job runs it in a child of its own
 * (dump.c), so that the loop goes on. */
#ifndef DUMPWATCH_HEAPDUMP_H
#define DUMPWATCH_HEAPDUMP_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/heapsnap.h"
#include "dumpwatch/heapsum.h"
#include "dumpwatch/ipc.h"

/* Types a summary lists (the rest are counted in "other"), and the types it
 * gives a retention path. */
#define HEAPDUMP_SUMMARY_TYPES 30
#define HEAPDUMP_SUMMARY_PATHS 10
/* Types a summary lists by retained bytes. */
#define HEAPDUMP_RETAINED_TYPES 30

/* The summary as JSON: totals, generations, the top max_types types (and
 * "other_types" for the rest), the retention paths, what was cut, the
 * target's pause; when heapsum_retained was run, each type's
 * "retained_bytes" and "retained": the HEAPDUMP_RETAINED_TYPES types that
 * retain the most, or why that was not computed. Names from the target are JSON strings (json-c escapes
 * them); readers escape them again where they print. NULL when out of
 * memory. */
struct json_object *heapdump_json(pid_t pid, const struct heapsnap *snap, const struct heapsum *s, size_t max_types);

struct heapdump_request {
	struct ipc_endpoint ep; /* the target's socket, checked to be served by it */
	const char *process_name;
	int64_t timeout_ns; /* the snapshot's; 0: heapsnap's default */
	int gcdump_fd;      /* >= 0: the .gcdump is written there */
	int summary_fd;     /* >= 0: the summary's JSON is written there */
};

/* Takes the snapshot and writes what req asks for. 0, or -errno with a
 * sentence in err. */
int heapdump_run(const struct heapdump_request *req, char *err, size_t errlen);

#endif
