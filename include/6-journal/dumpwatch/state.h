/* The daemon's memory across restarts: for each (rule, process) that has
 * fired, how many dumps were taken and when, so that a restarted daemon does
 * not dump again a process that already reached its limit or is in its
 * cooldown. A record is keyed by the rule's name and definition hash (see
 * ruleset_rule_hash) and the process's pid and start time (field 22 of
 * /proc/pid/stat), so that an edited rule or a reused pid starts afresh.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, which keep counting across a daemon
 * restart but not across a reboot; the file carries the kernel's boot id and
 * a file from another boot is ignored (its processes are gone anyway).
 *
 * The file is JSON, written to a temporary name, synced and renamed, so it is
 * always either the old or the new version. */
#ifndef DUMPWATCH_STATE_H
#define DUMPWATCH_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/eval.h"
#include "dumpwatch/rules.h"

#define STATE_RECORDS_MAX 100000
#define STATE_FILE_MAX (64 * 1024 * 1024)

struct state_record {
	char rule[RULE_NAME_MAX];
	uint64_t hash;
	pid_t pid;
	unsigned long long starttime;
	uint32_t fires;
	int64_t last_fire_ns;
	uint32_t n_recent;
	int64_t recent_ns[EVAL_MAX_WINDOW_FIRES];
};

/* Copies the persistent part of an evaluation state (fires, last fire, the
 * window) into rec, and back. Conditions' holding state is not persisted. */
void state_from_eval(struct state_record *rec, const struct eval_state *st);
void state_to_eval(const struct state_record *rec, struct eval_state *st);

/* Parses a state file's text. boot_id is the current boot's; records of
 * another boot are dropped (0 records, return 0). Returns 0 with *ret
 * (malloc'd) and *ret_n, or -EINVAL with a sentence in err. Pure. */
int state_parse(const char *text, size_t len, const char *boot_id, struct state_record **ret, size_t *ret_n, char *err,
                size_t errlen);

/* Formats records as the state file's text: one JSON line (jsonl_format),
 * malloc'd, NUL-terminated. NULL on out of memory. Pure. */
char *state_format(const struct state_record *recs, size_t n, const char *boot_id);

/* Reads /proc/sys/kernel/random/boot_id into out (37 bytes). 0 or -errno. */
int state_boot_id(char *out, size_t outlen);

/* Loads path: a missing file gives 0 records. 0 or -errno with a sentence. */
int state_load(const char *path, struct state_record **ret, size_t *ret_n, char *err, size_t errlen);

/* Writes path atomically (path.tmp, fsync, rename, fsync of the directory),
 * mode 0600. 0 or -errno with a sentence. */
int state_save(const char *path, const struct state_record *recs, size_t n, char *err, size_t errlen);

#endif
