/* Unit tests for eval.c: scripted timelines of samples and clock readings
 * against the semantics in eval.h (sustain, cooldown, limits, event metrics,
 * several conditions, missing samples) with exact next_ns values. */
#include "dumpwatch/eval.h"

#include <stdint.h>
#include <string.h>

#include "check.h"

#define MS 1000000LL
#define S 1000000000LL

/* A fake metric store: the latest sample per metric name. */
struct fake_metric {
	const char *name;
	int has;
	double value;
	int64_t sample_ns;
};

struct fake {
	struct fake_metric m[4];
	int reads;
};

static int fake_read(void *ctx, const struct metric_ref *m, double *value, int64_t *sample_ns)
{
	struct fake *f = ctx;

	f->reads++;
	for (int i = 0; i < 4; i++) {
		if (f->m[i].name && strcmp(f->m[i].name, m->name) == 0) {
			if (!f->m[i].has)
				return 0;
			*value = f->m[i].value;
			*sample_ns = f->m[i].sample_ns;
			return f->m[i].has; /* 2: a floor */
		}
	}
	return 0;
}

static void set(struct fake *f, const char *name, double value, int64_t at)
{
	for (int i = 0; i < 4; i++) {
		if (!f->m[i].name || strcmp(f->m[i].name, name) == 0) {
			f->m[i].name = name;
			f->m[i].has = 1;
			f->m[i].value = value;
			f->m[i].sample_ns = at;
			return;
		}
	}
}

/* Builds a rule from condition texts; limits are set by the caller. */
static void make_rule(struct rule *r, const char *c1, const char *c2)
{
	char err[256];

	memset(r, 0, sizeof(*r));
	r->dump_type = DUMP_WITHHEAP;
	CHECK_MSG(rule_cond_parse(c1, &r->conds[0], err, sizeof(err)) == 0, "%s", err);
	r->n_conds = 1;
	if (c2) {
		CHECK_MSG(rule_cond_parse(c2, &r->conds[1], err, sizeof(err)) == 0, "%s", err);
		r->n_conds = 2;
	}
}

/* One eval_step with expected result and, unless want_next is SKIP, next_ns. */
#define SKIP INT64_MIN
static void step_at(int line, const struct rule *r, struct eval_state *st, struct fake *f, int64_t now,
                    enum eval_result want, int64_t want_next)
{
	int64_t next = 12345;
	enum eval_result got = eval_step(r, st, fake_read, f, now, &next);

	CHECK_MSG(got == want, "line %d, now=%lld: got %s, want %s", line, (long long)now, eval_result_name(got),
	          eval_result_name(want));
	if (want_next != SKIP)
		CHECK_MSG(next == want_next, "line %d, now=%lld: next %lld, want %lld", line, (long long)now,
		          (long long)next, (long long)want_next);
}
#define STEP(now, want, next) step_at(__LINE__, &r, &st, &f, (now), (want), (next))

/* Fires at now when expected, and records it as the caller would. */
#define FIRE(now)                                                                                                      \
	do {                                                                                                           \
		STEP((now), EVAL_FIRE, (now));                                                                         \
		eval_record_fire(&r, &st, (now));                                                                      \
	} while (0)

static void test_init(void)
{
	struct eval_state st;

	memset(&st, 0x7f, sizeof(st));
	eval_init(&st);
	CHECK(st.last_fire_ns == INT64_MIN);
	CHECK(st.fires == 0 && st.n_recent == 0);
	for (int i = 0; i < RULE_MAX_CONDS; i++)
		CHECK(st.holding[i] == 0);
	CHECK_STR(eval_result_name(EVAL_IDLE), "idle");
	CHECK_STR(eval_result_name(EVAL_PENDING), "pending");
	CHECK_STR(eval_result_name(EVAL_FIRE), "fire");
	CHECK_STR(eval_result_name(EVAL_COOLDOWN), "cooldown");
	CHECK_STR(eval_result_name(EVAL_LIMIT), "limit");
	CHECK_STR(eval_result_name((enum eval_result)42), "unknown");
}

/* The value crosses, falls back before "for" is over: no fire; then crosses
 * again and stays: fire exactly at since + for. */
static void test_sustain(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	make_rule(&r, "loh-size > 200MB for 5s", NULL);
	eval_init(&st);
	STEP(0, EVAL_IDLE, INT64_MAX); /* no sample yet */
	set(&f, "loh-size", 100e6, 0);
	STEP(500 * MS, EVAL_IDLE, INT64_MAX);
	set(&f, "loh-size", 300e6, 1 * S);
	STEP(1 * S + 50 * MS, EVAL_PENDING, 6 * S);
	CHECK(st.holding[0] == 1 && st.since_ns[0] == 1 * S);
	STEP(3 * S, EVAL_PENDING, 6 * S);
	set(&f, "loh-size", 150e6, 4 * S); /* falls back before 6 s */
	STEP(4 * S + 50 * MS, EVAL_IDLE, INT64_MAX);
	STEP(6 * S, EVAL_IDLE, INT64_MAX);
	STEP(20 * S, EVAL_IDLE, INT64_MAX);
	CHECK(st.fires == 0);

	set(&f, "loh-size", 300e6, 21 * S);
	STEP(21 * S + 100 * MS, EVAL_PENDING, 26 * S);
	/* A newer sample that still holds keeps the first one's time. */
	set(&f, "loh-size", 350e6, 23 * S);
	STEP(23 * S + 100 * MS, EVAL_PENDING, 26 * S);
	STEP(26 * S - 1, EVAL_PENDING, 26 * S);
	FIRE(26 * S);
	CHECK(st.fires == 1 && st.last_fire_ns == 26 * S);

	/* Exactly at the threshold does not hold for ">". */
	make_rule(&r, "loh-size > 200MB", NULL);
	eval_init(&st);
	set(&f, "loh-size", 200e6, 30 * S);
	STEP(30 * S, EVAL_IDLE, INT64_MAX);
	make_rule(&r, "loh-size >= 200MB", NULL);
	FIRE(30 * S);
}

/* A rule checked late fires at once: the value has stood since its sample. */
static void test_late_check_and_future_samples(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	make_rule(&r, "heap-size > 1GB for 10s", NULL);
	eval_init(&st);
	set(&f, "heap-size", 2e9, 5 * S);
	FIRE(60 * S);

	/* A sample stamped in the future (another clock's skew) counts from
	 * now, not from its stamp. */
	eval_init(&st);
	set(&f, "heap-size", 2e9, 100 * S);
	STEP(70 * S, EVAL_PENDING, 80 * S);
	CHECK(st.since_ns[0] == 70 * S);
	STEP(79 * S, EVAL_PENDING, 80 * S);
	FIRE(80 * S);

	/* A NaN value never holds. */
	eval_init(&st);
	set(&f, "heap-size", 0.0 / 0.0, 1 * S);
	STEP(90 * S, EVAL_IDLE, INT64_MAX);
}

static void test_cooldown(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	make_rule(&r, "loh-size > 200MB", NULL);
	r.limits.cooldown_ns = 60 * S;
	eval_init(&st);
	set(&f, "loh-size", 300e6, 1 * S);
	FIRE(1 * S);
	STEP(2 * S, EVAL_COOLDOWN, 61 * S);
	STEP(61 * S - 1, EVAL_COOLDOWN, 61 * S);
	/* A condition on a level (not an event) that keeps holding fires
	 * again once the cooldown is over, without a new sustain. */
	FIRE(61 * S);
	STEP(62 * S, EVAL_COOLDOWN, 121 * S);
	/* When the value drops, the cooldown is not reported: nothing holds. */
	set(&f, "loh-size", 100e6, 70 * S);
	STEP(71 * S, EVAL_IDLE, INT64_MAX);
	CHECK(st.fires == 2);

	/* With a sustain, PENDING reports the sustain moment even when the
	 * cooldown ends later; at that moment COOLDOWN gives the real time. */
	make_rule(&r, "loh-size > 200MB for 5s", NULL);
	r.limits.cooldown_ns = 60 * S;
	eval_init(&st);
	set(&f, "loh-size", 300e6, 0);
	FIRE(5 * S);
	set(&f, "loh-size", 100e6, 6 * S);
	STEP(6 * S, EVAL_IDLE, INT64_MAX);
	set(&f, "loh-size", 300e6, 10 * S);
	STEP(10 * S, EVAL_PENDING, 15 * S);
	STEP(15 * S, EVAL_COOLDOWN, 65 * S);
	FIRE(65 * S);
}

static void test_limits(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	/* max_dumps over the whole watch. */
	make_rule(&r, "gc-count >= 1", NULL);
	r.limits.max_dumps = 2;
	eval_init(&st);
	set(&f, "gc-count", 5, 0);
	FIRE(1 * S);
	FIRE(2 * S);
	STEP(3 * S, EVAL_LIMIT, INT64_MAX);
	STEP(3600 * S, EVAL_LIMIT, INT64_MAX);
	CHECK(st.fires == 2);

	/* max_dumps within a sliding window: old fires slide out. */
	r.limits.window_ns = 10 * S;
	eval_init(&st);
	FIRE(1 * S);
	FIRE(2 * S);
	STEP(3 * S, EVAL_LIMIT, 11 * S);
	STEP(11 * S - 1, EVAL_LIMIT, 11 * S);
	FIRE(11 * S); /* the fire at 1 s left the window */
	STEP(11 * S + 500 * MS, EVAL_LIMIT, 12 * S);
	FIRE(12 * S);
	STEP(13 * S, EVAL_LIMIT, 21 * S);
	CHECK(st.n_recent == 2 && st.recent_ns[0] == 11 * S && st.recent_ns[1] == 12 * S);
	FIRE(30 * S);
	CHECK(st.n_recent == 1 && st.fires == 5);

	/* A limit lowered (a rule reloaded with its state kept): room opens
	 * when the fire max places back from the newest leaves, not the oldest. */
	r.limits.max_dumps = 5;
	eval_init(&st);
	FIRE(1 * S);
	FIRE(2 * S);
	FIRE(3 * S);
	r.limits.max_dumps = 2;
	STEP(4 * S, EVAL_LIMIT, 12 * S);
	STEP(11 * S, EVAL_LIMIT, 12 * S);
	FIRE(13 * S);

	/* LIMIT and cooldown together: next is the later of the two. */
	r.limits.max_dumps = 1;
	r.limits.window_ns = 10 * S;
	r.limits.cooldown_ns = 20 * S;
	eval_init(&st);
	FIRE(0);
	STEP(5 * S, EVAL_LIMIT, 20 * S);
	STEP(15 * S, EVAL_COOLDOWN, 20 * S);
	FIRE(20 * S);

	/* max_dumps 0 = unlimited. */
	r.limits.max_dumps = 0;
	r.limits.window_ns = 0;
	r.limits.cooldown_ns = 0;
	eval_init(&st);
	for (int i = 0; i < 100; i++)
		FIRE(i * S);
	CHECK(st.fires == 100);
	/* The recent list keeps the last EVAL_MAX_WINDOW_FIRES fires. */
	CHECK(st.n_recent == EVAL_MAX_WINDOW_FIRES);
	CHECK(st.recent_ns[0] == (100 - EVAL_MAX_WINDOW_FIRES) * S);
	CHECK(st.recent_ns[EVAL_MAX_WINDOW_FIRES - 1] == 99 * S);

	/* With a window, max_dumps above EVAL_MAX_WINDOW_FIRES counts as that. */
	r.limits.max_dumps = 1000;
	r.limits.window_ns = 3600 * S;
	eval_init(&st);
	for (int i = 0; i < EVAL_MAX_WINDOW_FIRES; i++)
		FIRE(i * MS);
	STEP(1 * S, EVAL_LIMIT, 3600 * S);
	FIRE(3600 * S); /* the first one (at 0) has left */
}

/* A condition on an event metric holds only for samples newer than the last
 * fire: one long GC fires once. */
static void test_event_metric(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	make_rule(&r, "gc-pause > 200ms", NULL);
	CHECK(r.conds[0].metric.is_event == 1);
	eval_init(&st);
	set(&f, "gc-pause", 500, 1 * S);
	FIRE(1 * S + 10 * MS);
	STEP(2 * S, EVAL_IDLE, INT64_MAX);
	STEP(100 * S, EVAL_IDLE, INT64_MAX);
	set(&f, "gc-pause", 300, 101 * S); /* the next long GC */
	FIRE(101 * S + 10 * MS);
	STEP(102 * S, EVAL_IDLE, INT64_MAX);
	set(&f, "gc-pause", 100, 103 * S); /* a short GC */
	STEP(103 * S, EVAL_IDLE, INT64_MAX);

	/* With a cooldown, a long GC during the cooldown fires after it. */
	r.limits.cooldown_ns = 10 * S;
	eval_init(&st);
	set(&f, "gc-pause", 500, 200 * S);
	FIRE(200 * S);
	set(&f, "gc-pause", 600, 203 * S);
	STEP(203 * S, EVAL_COOLDOWN, 210 * S);
	FIRE(210 * S);
	STEP(211 * S, EVAL_IDLE, INT64_MAX);
	/* A sample stamped exactly at the last fire is not newer. */
	set(&f, "gc-pause", 900, 210 * S);
	STEP(230 * S, EVAL_IDLE, INT64_MAX);
	CHECK(st.fires == 2);

	/* The same value on a level metric fires again after the cooldown. */
	make_rule(&r, "heap-size > 1MB", NULL);
	r.limits.cooldown_ns = 10 * S;
	eval_init(&st);
	set(&f, "heap-size", 2e6, 0);
	FIRE(1 * S);
	FIRE(11 * S);
}

static void test_two_conditions(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};

	make_rule(&r, "loh-size > 200MB for 5s", "cpu-usage > 90% for 2s");
	eval_init(&st);
	set(&f, "loh-size", 300e6, 1 * S);
	STEP(2 * S, EVAL_IDLE, INT64_MAX); /* cpu-usage has no sample */
	CHECK(st.holding[0] == 1 && st.since_ns[0] == 1 * S);
	set(&f, "System.Runtime/cpu-usage", 50, 3 * S);
	STEP(3 * S, EVAL_IDLE, INT64_MAX);
	set(&f, "System.Runtime/cpu-usage", 95, 5 * S);
	STEP(5 * S, EVAL_PENDING, 7 * S); /* loh at 6 s, cpu at 7 s */
	STEP(6 * S, EVAL_PENDING, 7 * S);
	FIRE(7 * S);

	/* One condition drops: the other keeps its own since. */
	eval_init(&st);
	set(&f, "loh-size", 300e6, 10 * S);
	set(&f, "System.Runtime/cpu-usage", 95, 10 * S);
	STEP(10 * S, EVAL_PENDING, 15 * S);
	set(&f, "loh-size", 100e6, 11 * S);
	STEP(11 * S, EVAL_IDLE, INT64_MAX);
	CHECK(st.holding[0] == 0 && st.holding[1] == 1 && st.since_ns[1] == 10 * S);
	set(&f, "loh-size", 300e6, 12 * S);
	STEP(12 * S, EVAL_PENDING, 17 * S);
	FIRE(17 * S);
}

static void test_degenerate(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f = {0};
	int64_t next = 5;

	make_rule(&r, "loh-size > 1MB", NULL);
	set(&f, "loh-size", 2e6, 0);
	eval_init(&st);
	CHECK(eval_step(&r, &st, NULL, &f, 0, &next) == EVAL_IDLE && next == INT64_MAX);
	CHECK(eval_step(NULL, &st, fake_read, &f, 0, &next) == EVAL_IDLE);
	CHECK(eval_step(&r, NULL, fake_read, &f, 0, &next) == EVAL_IDLE);
	CHECK(eval_step(&r, &st, fake_read, &f, 0, NULL) == EVAL_FIRE);
	r.n_conds = 0;
	f.reads = 0;
	CHECK(eval_step(&r, &st, fake_read, &f, 0, &next) == EVAL_IDLE && f.reads == 0);
	r.n_conds = RULE_MAX_CONDS + 1;
	CHECK(eval_step(&r, &st, fake_read, &f, 0, &next) == EVAL_IDLE && f.reads == 0);
	eval_record_fire(NULL, &st, 0);
	eval_record_fire(&r, NULL, 0);

	/* Huge durations saturate instead of overflowing. */
	make_rule(&r, "loh-size > 1MB", NULL);
	r.conds[0].for_ns = INT64_MAX;
	eval_init(&st);
	set(&f, "loh-size", 2e6, 10 * S);
	STEP(20 * S, EVAL_PENDING, INT64_MAX);
	r.conds[0].for_ns = 0;
	r.limits.cooldown_ns = INT64_MAX;
	FIRE(30 * S);
	STEP(40 * S, EVAL_COOLDOWN, INT64_MAX);
	r.limits.cooldown_ns = 0;
	r.limits.window_ns = INT64_MAX;
	r.limits.max_dumps = 1;
	STEP(50 * S, EVAL_LIMIT, INT64_MAX);

	/* Every condition is read on every step, even after one fails. */
	make_rule(&r, "loh-size > 1MB", "heap-size > 1MB");
	eval_init(&st);
	memset(&f, 0, sizeof(f));
	f.reads = 0;
	STEP(0, EVAL_IDLE, INT64_MAX);
	CHECK(f.reads == 2);
}

/* A floor (the reader's 2: the metric is at least the value) proves an
 * "above" condition and never a "below" one. */
static void test_floor(void)
{
	struct rule r;
	struct eval_state st;
	struct fake f;

	memset(&f, 0, sizeof(f));
	make_rule(&r, "loh-size > 100MB", NULL);
	eval_init(&st);
	set(&f, "loh-size", 50e6, 1 * S);
	f.m[0].has = 2;
	STEP(1 * S, EVAL_IDLE, INT64_MAX);
	set(&f, "loh-size", 150e6, 2 * S);
	f.m[0].has = 2;
	FIRE(2 * S);
	make_rule(&r, "loh-size >= 150MB", NULL);
	eval_init(&st);
	FIRE(2 * S);
	make_rule(&r, "loh-size < 200MB", NULL);
	eval_init(&st);
	STEP(3 * S, EVAL_IDLE, INT64_MAX);
	make_rule(&r, "loh-size <= 200MB", NULL);
	eval_init(&st);
	STEP(3 * S, EVAL_IDLE, INT64_MAX);
	/* Once known, the same value makes it hold. */
	set(&f, "loh-size", 150e6, 3 * S);
	FIRE(3 * S);
}

int main(void)
{
	test_init();
	test_floor();
	test_sustain();
	test_late_check_and_future_samples();
	test_cooldown();
	test_limits();
	test_event_metric();
	test_two_conditions();
	test_degenerate();
	return check_done();
}
