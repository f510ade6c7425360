/* The journal: an append-only file of JSON lines, one for every rule load,
 * attach, fire, dump and failure. Each record is written with a single
 * write(2) on an O_APPEND descriptor and synced, so a reader never sees half a
 * record and a crash loses nothing that was reported as written. A record that
 * cannot be written (disk full) is kept in memory, bounded, and written before
 * the next one when space returns. Every record is one line of valid UTF-8
 * JSON whatever the strings in it hold (jsonl_format: control characters
 * escaped, invalid UTF-8 bytes as U+FFFD, NaN and infinities as null). */
#ifndef DUMPWATCH_JOURNAL_H
#define DUMPWATCH_JOURNAL_H

#include <json-c/json.h>
#include <stddef.h>

struct journal;

/* Opens (creating, mode 0600) the journal at path. path NULL gives a journal
 * that records nothing. Returns 0 or -errno with a sentence in err. */
int journal_open(const char *path, struct journal **ret, char *err, size_t errlen);

/* Writes one record: the object gets "time" (UTC, milliseconds) and "event"
 * added first, then is consumed (its reference is dropped). Returns 0, or
 * -errno when it could not be written now (it is kept and retried), or the
 * error of jsonl_format (the record is dropped). */
int journal_write(struct journal *j, const char *event, struct json_object *obj);

/* Records still waiting to be written. */
size_t journal_pending(const struct journal *j);

void journal_close(struct journal *j);

/* Formats a CLOCK_REALTIME time in ns as "2026-11-22T10:58:01.123Z". */
void journal_format_time(long long unix_ns, char *buf, size_t len);

#endif
