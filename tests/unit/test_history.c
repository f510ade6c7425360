/* The metric history: merging within a slot, the window's eviction (also of a
 * series that is not written), the bound on points and memory, time order
 * when blocks of values arrive out of order, and what is refused. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "dumpwatch/history.h"

#define MS 1000000LL
#define SEC 1000000000LL

static void test_merge_and_order(void)
{
	struct history *h = history_new(10 * SEC, 250 * MS);
	CHECK(h != NULL);
	int a = history_series(h, "loh-size", UNIT_BYTES);
	CHECK(a == 0);
	CHECK(history_series(h, "loh-size", UNIT_BYTES) == 0);
	int b = history_series(h, "gc-pause", UNIT_MS);
	CHECK(b == 1);
	CHECK(history_n_series(h) == 2);
	enum unit_kind u;
	CHECK_STR(history_series_key(h, 1, &u), "gc-pause");
	CHECK(u == UNIT_MS);

	/* Three values in one slot: last, min and max. */
	CHECK(history_add(h, 0, 100 * SEC + 10 * MS, 5e6) == 1);
	CHECK(history_add(h, 0, 100 * SEC + 100 * MS, 9e6) == 1);
	CHECK(history_add(h, 0, 100 * SEC + 200 * MS, 7e6) == 1);
	CHECK(history_count(h, 0) == 1);
	struct history_point p;
	CHECK(history_get(h, 0, 0, &p) == 0);
	CHECK(p.t_ns == 100 * SEC);
	CHECK(p.last == 7e6 && p.min == 5e6 && p.max == 9e6);
	CHECK(history_get(h, 0, 1, &p) == -ERANGE);
	/* A value older than the latest, in the same slot: min/max only. */
	CHECK(history_add(h, 0, 100 * SEC + 50 * MS, 1e6) == 1);
	CHECK(history_get(h, 0, 0, &p) == 0 && p.last == 7e6 && p.min == 1e6);
	/* Exactness of a float: 350 MB within 32 bytes. */
	CHECK(history_add(h, 0, 101 * SEC, 350e6) == 1);
	CHECK(history_get(h, 0, 1, &p) == 0 && fabs(p.last - 350e6) <= 32);

	/* Refused: not finite, beyond a float, unknown series. */
	CHECK(history_add(h, 1, 101 * SEC, NAN) == 0);
	CHECK(history_add(h, 1, 101 * SEC, INFINITY) == 0);
	CHECK(history_add(h, 1, 101 * SEC, 1e300) == 0);
	CHECK(history_add(h, 7, 101 * SEC, 1) == 0);
	CHECK(history_count(h, 1) == 0);
	CHECK(history_series(h, "", UNIT_NONE) == -EINVAL);
	history_free(h);
	history_free(NULL);
	CHECK(history_new(0, 0) == NULL);
	CHECK(history_new(SEC, 2 * SEC) == NULL);
}

/* Blocks of consecutive values delivered in shuffled order (as the runtime's
 * per-thread buffers reach the stream) end up in time order, each slot with
 * the extremes of its values. */
static void test_out_of_order_blocks(void)
{
	struct history *h = history_new(60 * SEC, 100 * MS);
	int s = history_series(h, "alloc-rate", UNIT_BYTES_PER_SEC);
	const int blocks = 20, per = 37; /* 37 values 10 ms apart per block */
	int order[20];
	for (int i = 0; i < blocks; i++)
		order[i] = i;
	srand(7);
	for (int i = blocks - 1; i > 0; i--) {
		int j = rand() % (i + 1), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	for (int bi = 0; bi < blocks; bi++) {
		int b = order[bi];
		for (int k = 0; k < per; k++) {
			int idx = b * per + k;
			int64_t t = 500 * SEC + idx * 10 * MS;
			CHECK(history_add(h, (size_t)s, t, (double)idx) == 1);
		}
	}
	size_t n = history_count(h, (size_t)s);
	/* 740 values over 7.4 s: 74 slots of 100 ms. */
	CHECK_MSG(n == 74, "%zu points", n);
	int64_t prev = -1;
	int ordered = 1, extremes = 1;
	for (size_t k = 0; k < n; k++) {
		struct history_point p;
		CHECK(history_get(h, (size_t)s, k, &p) == 0);
		if (p.t_ns <= prev)
			ordered = 0;
		prev = p.t_ns;
		/* Slot k holds values 10k .. 10k+9, the last of them last. */
		if (p.min != (double)(10 * k) || p.max != (double)(10 * k + 9) || p.last != (double)(10 * k + 9))
			extremes = 0;
	}
	CHECK(ordered);
	CHECK(extremes);
	history_free(h);
}

/* A slot's last value is the one of its latest time, also when a newer slot
 * was written in between: values of the slot of the fire arrive after the
 * fire's own (issue 29: the demo's slot at -151 ms showed 500 MB as its last
 * value, its band reaching 600.5 MB). */
static void test_last_by_time(void)
{
	struct history *h = history_new(60 * SEC, 250 * MS);
	int s = history_series(h, "heap-size", UNIT_BYTES);
	struct history_point p;

	CHECK(history_add(h, (size_t)s, 100 * SEC + 10 * MS, 1e6) == 1);
	CHECK(history_add(h, (size_t)s, 100 * SEC + 20 * MS, 500e6) == 1);
	/* A newer slot, then more of the older one, later in it. */
	CHECK(history_add(h, (size_t)s, 100 * SEC + 300 * MS, 500e6) == 1);
	CHECK(history_add(h, (size_t)s, 100 * SEC + 150 * MS, 600e6) == 1);
	CHECK(history_add(h, (size_t)s, 100 * SEC + 120 * MS, 550e6) == 1);
	CHECK(history_count(h, (size_t)s) == 2);
	CHECK(history_get(h, (size_t)s, 0, &p) == 0);
	CHECK_MSG(p.last == 600e6 && p.min == 1e6 && p.max == 600e6, "last %g min %g max %g", p.last, p.min, p.max);
	/* In the newest slot: an earlier value written after a later one. */
	CHECK(history_add(h, (size_t)s, 100 * SEC + 260 * MS, 400e6) == 1);
	CHECK(history_get(h, (size_t)s, 1, &p) == 0);
	CHECK_MSG(p.last == 500e6 && p.min == 400e6, "last %g min %g", p.last, p.min);
	/* A tie: the value written later. */
	CHECK(history_add(h, (size_t)s, 100 * SEC + 300 * MS, 450e6) == 1);
	CHECK(history_get(h, (size_t)s, 1, &p) == 0 && p.last == 450e6);
	history_free(h);

	/* Slots of an hour's window, 3 s: an offset into one needs more than
	 * 32 bits of nanoseconds. */
	h = history_new(3600 * SEC, 3 * SEC);
	s = history_series(h, "heap-size", UNIT_BYTES);
	CHECK(history_add(h, (size_t)s, 999 * SEC + 2900 * MS, 2) == 1);
	CHECK(history_add(h, (size_t)s, 999 * SEC + 100 * MS, 1) == 1);
	CHECK(history_get(h, (size_t)s, 0, &p) == 0 && p.last == 2 && p.min == 1);
	history_free(h);
}

/* The window: points older than it leave, also from a series that is not
 * written any more; a value older than the window is refused; a series never
 * holds more than window / slot + 1 points, and memory follows. */
static void test_window_and_bound(void)
{
	struct history *h = history_new(5 * 60 * SEC, 250 * MS);
	int a = history_series(h, "heap-size", UNIT_BYTES);
	int b = history_series(h, "time-in-gc", UNIT_PERCENT);
	size_t empty = history_bytes(h);

	CHECK(history_add(h, (size_t)b, 1000 * SEC, 3) == 1);
	/* 20 minutes, a value every 50 ms. */
	for (int64_t t = 1000 * SEC; t < 2200 * SEC; t += 50 * MS)
		history_add(h, (size_t)a, t, (double)(t / MS));
	size_t n = history_count(h, (size_t)a);
	CHECK_MSG(n <= 5 * 60 * 4 + 1 && n >= 5 * 60 * 4, "%zu points", n);
	struct history_point first, last, p;
	CHECK(history_get(h, (size_t)a, 0, &first) == 0);
	CHECK(history_get(h, (size_t)a, n - 1, &last) == 0);
	CHECK_MSG(last.t_ns - first.t_ns <= 5 * 60 * SEC, "span %lld", (long long)(last.t_ns - first.t_ns));
	CHECK(last.t_ns == 2200 * SEC - 250 * MS);
	/* The other series' value is 20 minutes old and was never replaced:
	 * it holds, from the window's start. */
	CHECK(history_count(h, (size_t)b) == 1);
	CHECK(history_get(h, (size_t)b, 0, &p) == 0 && p.last == 3 && p.t_ns == first.t_ns);
	/* Older than the window: refused. */
	CHECK(history_add(h, (size_t)a, 1500 * SEC, 1) == 0);
	/* Inside it, out of order: merged into its slot. */
	CHECK(history_add(h, (size_t)a, 2100 * SEC + 10 * MS, -5) == 1);
	CHECK(history_count(h, (size_t)a) == n);
	size_t per_series = (5 * 60 * 4 + 1) * HISTORY_POINT_BYTES;
	size_t used = history_bytes(h) - empty;
	CHECK_MSG(used <= 2 * per_series, "%zu bytes", used);
	CHECK_MSG(used >= per_series - HISTORY_POINT_BYTES, "%zu bytes", used);
	history_free(h);

	/* A value that does not change adds no point: the one before holds. */
	h = history_new(5 * 60 * SEC, 250 * MS);
	a = history_series(h, "gen2-size", UNIT_BYTES);
	for (int i = 0; i < 400; i++)
		history_add(h, (size_t)a, (int64_t)i * 250 * MS, 7e6);
	CHECK(history_count(h, (size_t)a) == 1);
	history_add(h, (size_t)a, 400 * 250 * MS, 8e6);
	history_add(h, (size_t)a, 401 * 250 * MS, 8e6);
	history_add(h, (size_t)a, 402 * 250 * MS, 8e6);
	CHECK(history_count(h, (size_t)a) == 2);
	CHECK(history_get(h, (size_t)a, 1, &last) == 0 && last.t_ns == 400 * 250 * MS && last.last == 8e6);
	/* Out of order between two points: in its place. */
	CHECK(history_add(h, (size_t)a, 200 * 250 * MS + 10 * MS, 9e6) == 1);
	CHECK(history_count(h, (size_t)a) == 3);
	CHECK(history_get(h, (size_t)a, 1, &p) == 0 && p.t_ns == 200 * 250 * MS && p.last == 9e6);
	/* Ten minutes later, the value that held from before the window holds
	 * at its start. */
	for (int i = 403; i < 403 + 2400; i++)
		history_add(h, (size_t)a, (int64_t)i * 250 * MS, 8e6);
	CHECK(history_count(h, (size_t)a) == 1);
	CHECK(history_get(h, (size_t)a, 0, &first) == 0 && first.last == 8e6);
	CHECK(first.t_ns == (403 + 2399 - 1200) * 250 * MS);
	history_free(h);

	/* Idle: a few points take a few points' room. */
	h = history_new(5 * 60 * SEC, 250 * MS);
	a = history_series(h, "gen2-size", UNIT_BYTES);
	for (int i = 0; i < 5; i++)
		history_add(h, (size_t)a, (int64_t)i * 30 * SEC, 1e6);
	CHECK(history_count(h, (size_t)a) == 1);
	CHECK(history_bytes(h) - empty <= 16 * HISTORY_POINT_BYTES);
	history_free(h);
}

static void test_series_cap(void)
{
	struct history *h = history_new(SEC, 100 * MS);
	char key[32];
	for (int i = 0; i < HISTORY_SERIES_MAX; i++) {
		snprintf(key, sizeof(key), "P/c%d", i);
		CHECK(history_series(h, key, UNIT_NONE) == i);
	}
	CHECK(history_series(h, "P/one-more", UNIT_NONE) == -ENOSPC);
	char longkey[HISTORY_KEY_MAX + 1];
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[HISTORY_KEY_MAX] = '\0';
	CHECK(history_series(h, longkey, UNIT_NONE) == -EINVAL);
	/* Negative and extreme times neither crash nor keep what a slot
	 * offset cannot hold. */
	CHECK(history_add(h, 0, -5 * SEC, 1) == 1);
	CHECK(history_add(h, 0, INT64_MAX, 1) == 0);
	CHECK(history_add(h, 0, INT64_MIN, 1) == 0);
	CHECK(history_count(h, 0) == 1);
	history_free(h);
}

int main(void)
{
	test_merge_and_order();
	test_out_of_order_blocks();
	test_last_by_time();
	test_window_and_bound();
	test_series_cap();
	return check_done();
}
