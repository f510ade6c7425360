/* What the watcher and the guard say about a process: the journal's fire and
 * dump records and the -v lines, built the same way in both modes. */
#ifndef DUMPWATCH_REPORT_H
#define DUMPWATCH_REPORT_H

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#include "dumpwatch/dump.h"
#include "dumpwatch/events.h"
#include "dumpwatch/journal.h"
#include "dumpwatch/metrics.h"
#include "dumpwatch/rules.h"
#include "dumpwatch/ruleset.h"

/* A JSON number with the given decimals (negative: 15 significant digits),
 * not with the 17 digits a double would otherwise get. */
struct json_object *report_num(double v, int decimals);

/* Adds to rec what a fire of r at now is about: "rule", "conditions", the
 * "metrics" they read, "detect_delay_ms" (now minus the newest sample) and,
 * when read_ns > 0 (the decision follows a read), "read_to_fire_ms"; writes
 * "metric=value ..." into desc for the log. */
/* The exception that made rule r fire: the last that counted for its first
 * exception condition. 1 with *x and that condition's index, 0 when r has
 * none or nothing counted yet. */
int report_fire_exception(const struct rule *r, const struct metrics *m, struct metrics_exception *x,
                          uint32_t *ret_cond);

void report_fire(struct json_object *rec, const struct rule *r, const struct metrics *m, int64_t now, int64_t read_ns,
                 char *desc, size_t desclen);

/* Adds a published dump's path, bytes, duration_ms, via and type to rec. */
void report_dump(struct json_object *rec, const struct dump_result *res, enum dump_type type);

/* State of the -v output of one process. */
struct report_verbose {
	int64_t start_ns;
	int64_t last_describe_ns;
	uint32_t last_gc_index, last_gc_gen;
};

/* Prints the -v line for an event, if it has one, to out, prefixed with
 * prefix ("" or "pid 4807: "). */
void report_verbose_event(FILE *out, struct report_verbose *v, const char *prefix, const struct metrics *m,
                          const struct ev_record *r, int64_t t_ns);

/* Journals and logs a change of the rules directory (loaded, rejected,
 * removed, the directory gone or back): one record and one line each. */
void report_ruleset(struct journal *journal, const struct ruleset_change *c);

#endif
