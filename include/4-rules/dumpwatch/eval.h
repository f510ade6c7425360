/* The decision: given a rule, its state, the current metric values and the
 * time, does it fire now? Pure: the caller passes the clock and a way to read
 * metrics; nothing here does I/O.
 *
 * Semantics. A condition holds from the time of the sample that first made it
 * true until a sample makes it false; between samples the last value stands.
 * A condition with "for D" is satisfied once it has held for D. A rule fires
 * when every condition is satisfied, the cooldown since its last fire has
 * passed, and fewer than max_dumps fires fall in the window. A condition on an
 * event metric (metric_ref.is_event) holds only for samples newer than the
 * rule's last fire, so one long GC fires once, not once per cooldown. */
#ifndef DUMPWATCH_EVAL_H
#define DUMPWATCH_EVAL_H

#include <stdint.h>

#include "dumpwatch/rules.h"

#define EVAL_MAX_WINDOW_FIRES 64

/* Reads a metric. Returns 1 and fills value and sample_ns (the time the value
 * was measured, same clock as now) when known; 2 when only a floor is known
 * (the metric is at least value): it makes "above" conditions (>, >=) hold,
 * never "below" ones; 0 when nothing is known yet. */
typedef int (*eval_read_fn)(void *ctx, const struct metric_ref *m, double *value, int64_t *sample_ns);

struct eval_state {
	int holding[RULE_MAX_CONDS];
	int64_t since_ns[RULE_MAX_CONDS];
	int64_t last_fire_ns; /* INT64_MIN when never */
	uint32_t fires;       /* total */
	uint32_t n_recent;    /* fire times kept for the window, oldest first */
	int64_t recent_ns[EVAL_MAX_WINDOW_FIRES];
};

enum eval_result {
	EVAL_IDLE = 0, /* some condition does not hold */
	EVAL_PENDING,  /* all hold, some sustain not yet reached: see next_ns */
	EVAL_FIRE,     /* fire now; the caller calls eval_record_fire when it acts */
	EVAL_COOLDOWN, /* would fire, but within the cooldown: see next_ns */
	EVAL_LIMIT,    /* would fire, but max_dumps reached in the window */
};

void eval_init(struct eval_state *st);

/* Updates the state from the current values and decides. When the result is
 * EVAL_PENDING or EVAL_COOLDOWN, *next_ns (if not NULL) is the earliest time at
 * which calling again could give EVAL_FIRE without a new sample: for PENDING
 * the moment every sustain is met (the cooldown may still hold then), for
 * COOLDOWN last fire + cooldown. For EVAL_LIMIT it is when the oldest counted
 * fire leaves the window (or the cooldown ends, if later), INT64_MAX when the
 * window is the whole watch; for EVAL_IDLE INT64_MAX (only a new sample can
 * change it); for EVAL_FIRE now_ns. With a window, max_dumps above
 * EVAL_MAX_WINDOW_FIRES counts as EVAL_MAX_WINDOW_FIRES. A rule with no
 * conditions (or more than RULE_MAX_CONDS) is always EVAL_IDLE. */
enum eval_result eval_step(const struct rule *r, struct eval_state *st, eval_read_fn read, void *ctx, int64_t now_ns,
                           int64_t *next_ns);

/* Records that the rule fired (a dump was started) at now_ns. */
void eval_record_fire(const struct rule *r, struct eval_state *st, int64_t now_ns);

const char *eval_result_name(enum eval_result r);

#endif
