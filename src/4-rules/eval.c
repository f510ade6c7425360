/* The decision for one rule and one process: from the latest metric samples,
 * the rule's state and the time passed in, whether to dump now, later, or not
 * at all. Pure: the caller supplies the clock and the metric reader; the
 * semantics are stated in eval.h.
 *
 * Design note. A condition's "since" is the sample time of the first sample
 * seen to satisfy it, not the time eval_step noticed it, so a rule checked
 * late still fires at since + for. Order of verdicts: a condition that does
 * not hold (IDLE) before a sustain not yet reached (PENDING) before the dump
 * limit (LIMIT) before the cooldown (COOLDOWN); only then FIRE. */
#include "dumpwatch/eval.h"

#include <string.h>

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

void eval_init(struct eval_state *st)
{
	memset(st, 0, sizeof(*st));
	st->last_fire_ns = INT64_MIN;
}

/* Drops the fires that have slid out of the window at now: a fire at t counts
 * while now < t + window. */
static void prune_window(const struct rule *r, struct eval_state *st, int64_t now_ns)
{
	uint32_t drop = 0;

	if (st->n_recent > EVAL_MAX_WINDOW_FIRES)
		st->n_recent = EVAL_MAX_WINDOW_FIRES;
	if (r->limits.window_ns <= 0)
		return;
	while (drop < st->n_recent && sat_add(st->recent_ns[drop], r->limits.window_ns) <= now_ns)
		drop++;
	if (drop == 0)
		return;
	memmove(st->recent_ns, st->recent_ns + drop, (st->n_recent - drop) * sizeof(st->recent_ns[0]));
	st->n_recent -= drop;
}

/* Updates holding/since of condition i from its current sample. */
static void update_cond(const struct rule_cond *c, struct eval_state *st, uint32_t i, eval_read_fn read, void *ctx,
                        int64_t now_ns)
{
	double value = 0.0;
	int64_t sample_ns = 0;
	int r = read(ctx, &c->metric, &value, &sample_ns);
	/* A floor proves an "above" condition, never a "below" one. */
	int ok = r == 1 || (r == 2 && (c->op == COND_GT || c->op == COND_GE));

	if (ok && sample_ns > now_ns)
		sample_ns = now_ns;
	/* An event value belongs to its moment: once a fire has used it, only
	 * a newer sample can hold again. */
	if (ok && c->metric.is_event && st->last_fire_ns != INT64_MIN && sample_ns <= st->last_fire_ns)
		ok = 0;
	if (ok && rule_cond_test(c, value)) {
		if (!st->holding[i]) {
			st->holding[i] = 1;
			st->since_ns[i] = sample_ns;
		}
	} else {
		st->holding[i] = 0;
		st->since_ns[i] = 0;
	}
}

enum eval_result eval_step(const struct rule *r, struct eval_state *st, eval_read_fn read, void *ctx, int64_t now_ns,
                           int64_t *next_ns)
{
	int64_t ready = INT64_MIN, cooldown_end = INT64_MIN, next;
	uint32_t n, max;
	int all = 1;

	if (next_ns)
		*next_ns = INT64_MAX;
	if (!r || !st || !read || r->n_conds == 0 || r->n_conds > RULE_MAX_CONDS)
		return EVAL_IDLE;
	n = r->n_conds;

	/* Every condition is updated, even after one fails, so that each
	 * since_ns stays the true start of its holding. */
	for (uint32_t i = 0; i < n; i++) {
		update_cond(&r->conds[i], st, i, read, ctx, now_ns);
		if (!st->holding[i])
			all = 0;
	}
	if (!all)
		return EVAL_IDLE;

	for (uint32_t i = 0; i < n; i++) {
		int64_t at = sat_add(st->since_ns[i], r->conds[i].for_ns > 0 ? r->conds[i].for_ns : 0);
		if (at > ready)
			ready = at;
	}
	if (now_ns < ready) {
		if (next_ns)
			*next_ns = ready;
		return EVAL_PENDING;
	}

	if (st->last_fire_ns != INT64_MIN && r->limits.cooldown_ns > 0)
		cooldown_end = sat_add(st->last_fire_ns, r->limits.cooldown_ns);

	prune_window(r, st, now_ns);
	max = r->limits.max_dumps;
	if (max > 0) {
		if (r->limits.window_ns > 0) {
			if (max > EVAL_MAX_WINDOW_FIRES)
				max = EVAL_MAX_WINDOW_FIRES;
			if (st->n_recent >= max) {
				/* Room opens when the fire max places back
				 * from the newest slides out. */
				next = sat_add(st->recent_ns[st->n_recent - max], r->limits.window_ns);
				if (next_ns)
					*next_ns = next > cooldown_end ? next : cooldown_end;
				return EVAL_LIMIT;
			}
		} else if (st->fires >= max) {
			return EVAL_LIMIT;
		}
	}

	if (now_ns < cooldown_end) {
		if (next_ns)
			*next_ns = cooldown_end;
		return EVAL_COOLDOWN;
	}
	if (next_ns)
		*next_ns = now_ns;
	return EVAL_FIRE;
}

void eval_record_fire(const struct rule *r, struct eval_state *st, int64_t now_ns)
{
	if (!r || !st)
		return;
	st->last_fire_ns = now_ns;
	if (st->fires < UINT32_MAX)
		st->fires++;
	prune_window(r, st, now_ns);
	if (st->n_recent == EVAL_MAX_WINDOW_FIRES) {
		memmove(st->recent_ns, st->recent_ns + 1, (EVAL_MAX_WINDOW_FIRES - 1) * sizeof(st->recent_ns[0]));
		st->n_recent--;
	}
	st->recent_ns[st->n_recent++] = now_ns;
}

const char *eval_result_name(enum eval_result r)
{
	switch (r) {
	case EVAL_IDLE:
		return "idle";
	case EVAL_PENDING:
		return "pending";
	case EVAL_FIRE:
		return "fire";
	case EVAL_COOLDOWN:
		return "cooldown";
	case EVAL_LIMIT:
		return "limit";
	}
	return "unknown";
}
