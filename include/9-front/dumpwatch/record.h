/* `dumpwatch record`: saves the raw nettrace stream of a process to a file, for
 * offline analysis and for the parser's test data. */
#ifndef DUMPWATCH_RECORD_H
#define DUMPWATCH_RECORD_H

#include <stdint.h>
#include <sys/types.h>

/* Records pid's stream with the providers that needs (NEED_* bits; counters
 * means System.Runtime at 1 s) and, when meters is not NULL, the
 * System.Diagnostics.Metrics provider for those meters (its "Metrics"
 * argument: "Meter" or "Meter\\instrument", ';'-separated; values every 1 s)
 * into path for duration_ns, then stops the session and drains the stream
 * to its end. Returns 0 or -errno with a sentence. */
int record_run(pid_t pid, const char *path, int64_t duration_ns, unsigned needs, const char *meters, char *err,
               size_t errlen);

#endif
