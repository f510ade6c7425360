/* Allocation by type: sums by type and kind, the order of the top, the
 * bound on types (the rest as other) and on memory, the reuse of entries
 * that left the window, the window's expiry, hostile names. */
#include <string.h>

#include "check.h"
#include "dumpwatch/alloctypes.h"

#define MS 1000000LL
#define SEC 1000000000LL

static void test_sums_and_order(void)
{
	struct alloctypes *a = alloctypes_new(60 * SEC, 0);
	struct alloctypes_entry top[8];
	struct alloctypes_summary s;

	CHECK(a != NULL);
	CHECK(alloctypes_top(a, 0, top, 8, &s) == 0 && s.bytes == 0 && s.until_ns == 0);
	int64_t t = 1000 * SEC;
	/* 400 x 1 MiB byte[] in the LOH, small strings, a pinned buffer. */
	for (int i = 0; i < 400; i++)
		CHECK(alloctypes_add(a, t + i * MS, "System.Byte[]", EV_ALLOC_LARGE, 1048576 + 24) == 1);
	for (int i = 0; i < 50; i++)
		CHECK(alloctypes_add(a, t + i * MS, "System.String", EV_ALLOC_SMALL, 100000) == 1);
	CHECK(alloctypes_add(a, t, "System.Byte[]", EV_ALLOC_SMALL, 100100) == 1);
	CHECK(alloctypes_add(a, t, "System.Byte[]", EV_ALLOC_PINNED, 200000) == 1);
	/* Out of order, within the window. */
	CHECK(alloctypes_add(a, t - 5 * SEC, "System.String", EV_ALLOC_SMALL, 100000) == 1);

	size_t n = alloctypes_top(a, 0, top, 8, &s);
	CHECK(n == 4);
	CHECK_STR(top[0].type, "System.Byte[]");
	CHECK(top[0].kind == EV_ALLOC_LARGE && top[0].bytes == 400ull * (1048576 + 24) && top[0].ticks == 400);
	CHECK_STR(top[1].type, "System.String");
	CHECK(top[1].kind == EV_ALLOC_SMALL && top[1].bytes == 5100000 && top[1].ticks == 51);
	CHECK(top[2].kind == EV_ALLOC_PINNED && top[2].bytes == 200000);
	CHECK(top[3].kind == EV_ALLOC_SMALL && top[3].bytes == 100100);
	CHECK(s.types == 4 && s.ticks == 453 && s.other_bytes == 0);
	CHECK(s.bytes == 400ull * (1048576 + 24) + 5100000 + 200000 + 100100);
	CHECK(s.until_ns == t + 399 * MS);
	/* The window is 60 s but the first tick came 5 s before the newest:
	 * the sums run from it (the ticks may have started late). */
	CHECK(s.since_ns == t - 5 * SEC);

	/* Fewer asked for than there are: the largest, the totals all. */
	CHECK(alloctypes_top(a, 0, top, 1, &s) == 1 && top[0].kind == EV_ALLOC_LARGE && s.types == 4);
	CHECK_STR(alloctypes_kind_name(EV_ALLOC_LARGE), "loh");
	CHECK_STR(alloctypes_kind_name(7), "?");

	/* Ties: by name, then kind. */
	struct alloctypes *b = alloctypes_new(60 * SEC, 0);
	alloctypes_add(b, t, "B", EV_ALLOC_SMALL, 5);
	alloctypes_add(b, t, "A", EV_ALLOC_LARGE, 5);
	alloctypes_add(b, t, "A", EV_ALLOC_SMALL, 5);
	CHECK(alloctypes_top(b, 0, top, 8, NULL) == 3);
	CHECK(strcmp(top[0].type, "A") == 0 && top[0].kind == EV_ALLOC_SMALL);
	CHECK(strcmp(top[1].type, "A") == 0 && top[1].kind == EV_ALLOC_LARGE);
	CHECK_STR(top[2].type, "B");
	/* Once the first tick is older than the window, the window's start
	 * (the oldest bucket's: 3 s buckets). */
	CHECK(alloctypes_top(b, t + 100 * SEC, top, 8, &s) == 0 && s.since_ns > t + 40 * SEC &&
	      s.since_ns <= t + 43 * SEC);
	alloctypes_free(b);
	alloctypes_free(a);
	alloctypes_free(NULL);
	CHECK(alloctypes_new(0, 0) == NULL);
	CHECK(alloctypes_new(SEC, ALLOCTYPES_MAX + 1) == NULL);
}

/* A table of 4: the fifth type is other while the four allocate within the
 * window; an unknown kind is other too. */
static void test_bound_and_other(void)
{
	struct alloctypes *a = alloctypes_new(60 * SEC, 4);
	struct alloctypes_entry top[8];
	struct alloctypes_summary s;
	int64_t t = 50 * SEC;
	char name[16];

	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "T%d", i);
		CHECK(alloctypes_add(a, t, name, EV_ALLOC_SMALL, 1000u * (unsigned)(i + 1)) == 1);
	}
	CHECK(alloctypes_add(a, t + SEC, "T4", EV_ALLOC_SMALL, 7000) == 0);
	CHECK(alloctypes_add(a, t + SEC, "T5", EV_ALLOC_LARGE, 9000) == 0);
	CHECK(alloctypes_add(a, t + SEC, "T0", EV_ALLOC_SMALL, 500) == 1); /* known: still counted */
	CHECK(alloctypes_add(a, t + SEC, "T0", 3, 100) == 0);
	size_t n = alloctypes_top(a, 0, top, 8, &s);
	CHECK(n == 4 && s.types == 4);
	CHECK(s.other_bytes == 16100 && s.other_ticks == 3);
	CHECK(s.bytes == 10000 + 500 + 16100);
	CHECK_STR(top[0].type, "T3");
	CHECK(alloctypes_bytes(a) <= 4096 + 4 * 512);
	alloctypes_free(a);

	/* The full table: 10,000 types cost no more than ALLOCTYPES_MAX entries. */
	a = alloctypes_new(60 * SEC, 0);
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "Type%d", i);
		CHECK(alloctypes_add(a, t + i * MS / 10, name, EV_ALLOC_SMALL, 100) == (i < ALLOCTYPES_MAX ? 1 : 0));
	}
	size_t full = alloctypes_bytes(a);
	CHECK_MSG(full <= 4096 + ALLOCTYPES_MAX * 512, "%zu bytes", full);
	n = alloctypes_top(a, 0, top, 8, &s);
	CHECK(s.types == ALLOCTYPES_MAX && s.other_ticks == 10000 - ALLOCTYPES_MAX && s.bytes == 1000000);
	alloctypes_free(a);
}

/* Bytes leave the sums with the window; a type whose bytes all left makes
 * room for a new one; a tick older than the window is dropped; a sum at a
 * time before the newest tick leaves later buckets out. */
static void test_window(void)
{
	struct alloctypes *a = alloctypes_new(20 * SEC, 2); /* buckets of 1 s */
	struct alloctypes_entry top[4];
	struct alloctypes_summary s;
	int64_t t = 100 * SEC;

	CHECK(alloctypes_add(a, t, "Old", EV_ALLOC_SMALL, 100) == 1);
	CHECK(alloctypes_add(a, t + 10 * SEC, "Mid", EV_ALLOC_LARGE, 200) == 1);
	CHECK(alloctypes_add(a, t + 10 * SEC, "New", EV_ALLOC_SMALL, 400) == 0); /* full */
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 2 && s.bytes == 700);
	/* At t + 5 s: Mid's bucket is after it. */
	CHECK(alloctypes_top(a, t + 5 * SEC, top, 4, &s) == 1 && s.bytes == 100);
	CHECK_STR(top[0].type, "Old");

	/* 25 s on: Old's bucket has left, Mid's and other's have not. */
	CHECK(alloctypes_add(a, t + 25 * SEC, "Mid", EV_ALLOC_LARGE, 1) == 1);
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 1 && s.bytes == 601 && s.other_bytes == 400);
	CHECK_STR(top[0].type, "Mid");
	/* Old makes room for New. */
	CHECK(alloctypes_add(a, t + 25 * SEC, "New", EV_ALLOC_SMALL, 50) == 1);
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 2 && s.types == 2);
	CHECK_STR(top[0].type, "Mid");
	CHECK_STR(top[1].type, "New");
	/* Older than the window: dropped. */
	CHECK(alloctypes_add(a, t + 2 * SEC, "Mid", EV_ALLOC_LARGE, 1000) == -1);
	CHECK(alloctypes_add(a, t + 6 * SEC, "Mid", EV_ALLOC_LARGE, 1000) == 1);
	/* Much later: everything has left, also a ring that was not charged. */
	CHECK(alloctypes_top(a, t + 100 * SEC, top, 4, &s) == 0 && s.bytes == 0 && s.types == 0);
	/* A charge far ahead clears the buckets it skips. */
	CHECK(alloctypes_add(a, t + 1000 * SEC + 500 * MS, "Mid", EV_ALLOC_LARGE, 3) == 1);
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 1 && top[0].bytes == 3 && top[0].ticks == 1);
	alloctypes_free(a);

	/* Negative times bucket as well. */
	a = alloctypes_new(20 * SEC, 0);
	CHECK(alloctypes_add(a, -5 * SEC - 1, "X", EV_ALLOC_SMALL, 1) == 1);
	CHECK(alloctypes_add(a, 3 * SEC, "X", EV_ALLOC_SMALL, 1) == 1);
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 1 && top[0].bytes == 2);
	alloctypes_free(a);
}

/* Names as the target sends them: empty, as long as the decoder keeps, NULL;
 * a name longer than EV_NAME_MAX (not from the decoder) is cut. Events other
 * than ticks are ignored. */
static void test_names_and_events(void)
{
	struct alloctypes *a = alloctypes_new(60 * SEC, 0);
	struct alloctypes_entry top[4];
	struct alloctypes_summary s;
	char longname[400];
	struct ev_record r;

	memset(longname, 'A', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(alloctypes_add(a, SEC, longname, EV_ALLOC_SMALL, 10) == 1);
	CHECK(alloctypes_add(a, SEC, longname, EV_ALLOC_SMALL, 10) == 1);
	CHECK(alloctypes_add(a, SEC, "", EV_ALLOC_SMALL, 5) == 1);
	CHECK(alloctypes_add(a, SEC, NULL, EV_ALLOC_SMALL, 5) == 1);
	memset(&r, 0, sizeof(r));
	r.type = EV_GC_ALLOC_TICK;
	r.u.alloc.kind = EV_ALLOC_LARGE;
	r.u.alloc.amount = 90000;
	snprintf(r.u.alloc.type_name, sizeof(r.u.alloc.type_name), "Ev\"il\n\x1b[31m");
	alloctypes_on_event(a, &r, SEC);
	r.type = EV_GC_HEAP_STATS;
	alloctypes_on_event(a, &r, SEC);
	CHECK(alloctypes_top(a, 0, top, 4, &s) == 3 && s.ticks == 5);
	CHECK_STR(top[0].type, "Ev\"il\n\x1b[31m");
	CHECK(strlen(top[1].type) == EV_NAME_MAX - 1 && top[1].bytes == 20);
	CHECK(top[2].type[0] == '\0' && top[2].bytes == 10);
	alloctypes_free(a);
}

int main(void)
{
	test_sums_and_order();
	test_bound_and_other();
	test_window();
	test_names_and_events();
	return check_done();
}
