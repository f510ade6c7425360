/* Unit tests for rules.c: the condition grammar (good and bad expressions),
 * comparisons, dump types, rule names and needs. */
#include "dumpwatch/rules.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define S 1000000000LL

struct good_cond {
	const char *text;
	const char *metric; /* canonical name */
	enum cond_op op;
	double threshold;
	int64_t for_ns;
	const char *kept; /* text as kept, NULL = same as text */
};

static const struct good_cond good_conds[] = {
    {"loh-size > 200MB", "loh-size", COND_GT, 200e6, 0, NULL},
    {"loh-size>200MB", "loh-size", COND_GT, 200e6, 0, NULL},
    {"loh-size > 200 MB", "loh-size", COND_GT, 200e6, 0, NULL},
    {"  loh-size   >=   1.5GiB  ", "loh-size", COND_GE, 1.5 * 1073741824.0, 0, "loh-size   >=   1.5GiB"},
    {"heap-size < 1GB", "heap-size", COND_LT, 1e9, 0, NULL},
    {"heap-size<=1GB", "heap-size", COND_LE, 1e9, 0, NULL},
    {"loh-size above 200MB", "loh-size", COND_GT, 200e6, 0, NULL},
    {"loh-size ABOVE 200MB", "loh-size", COND_GT, 200e6, 0, NULL},
    {"gen2-size below 10MB", "gen2-size", COND_LT, 10e6, 0, NULL},
    {"loh-size > 200MB for 5s", "loh-size", COND_GT, 200e6, 5 * S, NULL},
    {"loh-size>200MB for 5s", "loh-size", COND_GT, 200e6, 5 * S, NULL},
    {"loh-size > 200 MB for 5 s", "loh-size", COND_GT, 200e6, 5 * S, NULL},
    {"loh-size > 200MB FOR 500ms", "loh-size", COND_GT, 200e6, 500000000, NULL},
    {"loh-size > 200MB for 0", "loh-size", COND_GT, 200e6, 0, NULL},
    {"loh-alloc-rate > 50MB/s for 2s", "loh-alloc-rate", COND_GT, 50e6, 2 * S, NULL},
    {"alloc-rate > 1GiB/min", "alloc-rate", COND_GT, 1073741824.0 / 60, 0, NULL},
    {"gc-rate > 10/min for 1m", "gc-rate", COND_GT, 10.0 / 60, 60 * S, NULL},
    {"gen2-gc-rate>=1/s", "gen2-gc-rate", COND_GE, 1, 0, NULL},
    {"gc-pause > 200ms", "gc-pause", COND_GT, 200, 0, NULL},
    {"gc-pause > 1s", "gc-pause", COND_GT, 1000, 0, NULL},
    {"gc-count >= 100", "gc-count", COND_GE, 100, 0, NULL},
    {"System.Runtime/cpu-usage > 90% for 10s", "System.Runtime/cpu-usage", COND_GT, 90, 10 * S, NULL},
    {"cpu-usage > 90%", "System.Runtime/cpu-usage", COND_GT, 90, 0, NULL},
    {"time-in-gc >= 50 %", "time-in-gc", COND_GE, 50, 0, NULL},
    {"System.Runtime/time-in-gc >= 50 %", "System.Runtime/time-in-gc", COND_GE, 50, 0, NULL},
    {"gc-heap-size > 500MB", "System.Runtime/gc-heap-size", COND_GT, 500e6, 0, NULL},
    {"working-set > 2GiB for 30s", "System.Runtime/working-set", COND_GT, 2147483648.0, 30 * S, NULL},
    {"exception-count > 5", "System.Runtime/exception-count", COND_GT, 5, 0, NULL},
    {"threadpool-queue-length > 100 for 1min", "System.Runtime/threadpool-queue-length", COND_GT, 100, 60 * S, NULL},
    {"total-pause-time-by-gc > 100ms", "System.Runtime/total-pause-time-by-gc", COND_GT, 100, 0, NULL},
    {"Microsoft.AspNetCore.Hosting/requests-per-second > 1000", "Microsoft.AspNetCore.Hosting/requests-per-second",
     COND_GT, 1000, 0, NULL},
    {"My.Provider/temperature < -5.5", "My.Provider/temperature", COND_LT, -5.5, 0, NULL},
    {"loh-size > 0", "loh-size", COND_GT, 0, 0, NULL},
    {"loh-size\t>\t200MB\tfor\t5s", "loh-size", COND_GT, 200e6, 5 * S, NULL},
};

struct bad_cond {
	const char *text;
	int want_r;
	const char *want; /* substring of the error */
};

static const struct bad_cond bad_conds[] = {
    {"", -EINVAL, "empty condition: write METRIC OP VALUE [for DURATION], as in loh-size > 200MB"},
    {"   ", -EINVAL, "empty condition"},
    {"loh-szie > 200MB", -ENOENT, "unknown metric \"loh-szie\"; did you mean \"loh-size\"?"},
    {"> 200MB", -EINVAL, "missing metric before the operator"},
    {"loh-size 200MB", -EINVAL,
     "missing operator after \"loh-size\": use >, >=, < or <= (or above, below), as in loh-size > 200MB"},
    {"loh-size", -EINVAL, "missing operator after \"loh-size\""},
    {"gc-pause", -EINVAL, "as in gc-pause > 200ms"},
    {"loh-size == 200MB", -EINVAL, "operator \"==\" is not supported: use >, >=, < or <= (or above, below)"},
    {"loh-size = 200MB", -EINVAL, "operator \"=\" is not supported"},
    {"loh-size != 200MB", -EINVAL, "operator \"!=\" is not supported"},
    {"loh-size >> 200MB", -EINVAL, "unexpected \">\" after the operator"},
    {"loh-size >", -EINVAL, "missing value after the operator: loh-size is measured in bytes, as in loh-size > 200MB"},
    {"loh-size > for 5s", -EINVAL, "missing value after the operator"},
    {"loh-size > 200", -EINVAL, "\"200\" needs a unit: a size such as 200MB or 1.5GiB (loh-size is measured in bytes)"},
    {"loh-size > 200ms", -EINVAL, "is a duration, but a size is needed here"},
    {"loh-alloc-rate > 50MB", -EINVAL,
     "\"50MB\" is a size, but a rate is needed here: add /s, /min or /h, as in 50MB/s (loh-alloc-rate is "
     "measured in bytes per second)"},
    {"gc-pause > 200", -EINVAL, "(gc-pause is measured in milliseconds)"},
    {"cpu-usage > 90", -EINVAL,
     "\"90\" needs a unit: a percentage such as 90% (System.Runtime/cpu-usage is a "
     "percentage)"},
    {"gc-count > 10/s", -EINVAL, "(gc-count is a count)"},
    {"gc-rate > 10", -EINVAL, "(gc-rate is measured in events per second)"},
    {"Foo.Bar/baz > 10MB", -EINVAL, "Foo.Bar/baz has no known unit"},
    {"loh-size > 200MB foo", -EINVAL, "unexpected \"foo\" at the end: a condition is METRIC OP VALUE [for DURATION]"},
    {"loh-size > 200MB for", -EINVAL, "\"for\" needs a duration, as in for 10s or for 500ms"},
    {"loh-size > 200MB for   ", -EINVAL, "\"for\" needs a duration"},
    {"loh-size > 200MB for 10", -EINVAL, "after \"for\": \"10\" needs a unit: a duration such as 10s or 500ms"},
    {"loh-size > 200MB for 5s now", -EINVAL, "unexpected \"now\" at the end"},
    {"loh-size > 200MB for 5s for 3s", -EINVAL, "unexpected \"for 3s\" at the end"},
    {"loh-size > 200MB for -5s", -EINVAL, "a duration cannot be negative"},
    {"loh-size > 200MB forever", -EINVAL, "unexpected \"forever\""},
    {"loh-size > -5MB", -EINVAL, "a size cannot be negative"},
    {"loh-size > 1e9B", -EINVAL, "exponents are not accepted"},
    {"loh-size > 1,5GB", -EINVAL, "use a dot for a fraction"},
    {"loh-size > 500M", -EINVAL, "is ambiguous: write 500MB"},
    {"loh-size > MB", -EINVAL, "\"MB\" does not start with a number"},
    {"loh-size > 200MB and heap-size > 1GB", -EINVAL, "unexpected \"and heap-size > 1GB\" at the end"},
    {"loh size > 200MB", -ENOENT, "unknown metric \"loh\""},
    {"exception Timeout* < 3 in 1m", -EINVAL, "an exception condition counts up to a number: use >= N or > N"},
    {"exception Timeout* >= 0", -EINVAL, "whole number from 1 to 1024, not \"0\""},
    {"exception Timeout* >= 1025", -EINVAL, "whole number from 1 to 1024"},
    {"exception Timeout* > 1024", -EINVAL, "whole number from 1 to 1024"},
    {"exception Timeout* >= 2.5", -EINVAL, "whole number"},
    {"exception Timeout* >= 3 for 1m", -EINVAL, "counts in a window: write \"in 1m\", not \"for\""},
    {"exception Timeout* >= 3 in 500ms", -EINVAL, "from 1s to 24h, not \"500ms\""},
    {"exception Timeout* >= 3 in 2d", -EINVAL, "from 1s to 24h"},
    {"exception Timeout* message pool", -EINVAL, "\"message\" takes a quoted pattern"},
    {"exception Timeout* message '*pool*", -EINVAL, "\"message\" takes a quoted pattern"},
    {"exception 'Timeout*", -EINVAL, "quote is not closed"},
    {"exception Timeout* >= 3 in 1m please", -EINVAL, "unexpected \"please\": an exception condition is"},
    {"exception Timeout* message '\x01'", -EINVAL, "holds a control character"},
    {"meter", -EINVAL, "write an instrument as Meter.Name/instrument.name[tag=value,...]"},
    {"meter > 5", -EINVAL, "write an instrument as Meter.Name/instrument.name"},
    {"meter Shop > 5", -EINVAL, "\"Shop\": write an instrument as Meter.Name/instrument.name"},
    {"meter Shop/ > 5", -EINVAL, "write an instrument as"},
    {"meter /orders > 5", -EINVAL, "write an instrument as"},
    {"meter Sh$op/orders > 5", -EINVAL, "write an instrument as"},
    {"meter Shop/orders p90 > 5", -EINVAL, "unknown statistic \"p90\" of a meter: use value, rate, p50, p95, p99"},
    {"meter Shop/orders rate", -EINVAL, "missing operator after \"meter Shop/orders rate\""},
    {"meter Shop/orders rate >", -EINVAL, "missing value after the operator"},
    {"meter Shop/orders == 5", -EINVAL, "operator \"==\" is not supported"},
    {"meter Shop/orders > 5 parsecs", -EINVAL, "a meter's threshold is a number in the instrument's own unit"},
    {"meter Shop/orders count > 2s", -EINVAL, "a plain number is needed here"},
    {"meter Shop/orders[route] > 5", -EINVAL, "a meter's tag filter is [key=value,...]"},
    {"meter Shop/orders[=x] > 5", -EINVAL, "a meter's tag filter is [key=value,...]"},
    {"meter Shop/orders[route=/a > 5", -EINVAL, "a meter's tag filter must end with ']'"},
    {"meter Shop/orders[route=/a]x > 5", -EINVAL, "nothing may follow the tag filter's ']'"},
    {"meter Shop/orders[route=\x01] > 5", -EINVAL, "must end with ']'"},
    {"meter Shop/orders > 5 for", -EINVAL, "\"for\" needs a duration"},
    {"meter Shop/orders > 5 in 1m", -EINVAL, "a meter's threshold is a number"},
    {"meter Shop/orders > 5s now", -EINVAL, "unexpected \"now\" at the end"},
};

static void test_good(void)
{
	struct rule_cond c;
	char err[256];

	for (size_t i = 0; i < sizeof(good_conds) / sizeof(good_conds[0]); i++) {
		const struct good_cond *g = &good_conds[i];
		err[0] = '\0';
		memset(&c, 0x5a, sizeof(c));
		int r = rule_cond_parse(g->text, &c, err, sizeof(err));
		CHECK_MSG(r == 0, "\"%s\": r=%d %s", g->text, r, err);
		if (r != 0)
			continue;
		CHECK_STR(c.metric.name, g->metric);
		CHECK_MSG(c.op == g->op, "\"%s\": op %d", g->text, (int)c.op);
		double d = c.threshold - g->threshold;
		CHECK_MSG(d < 1e-6 && d > -1e-6, "\"%s\": threshold %.17g want %.17g", g->text, c.threshold,
		          g->threshold);
		CHECK_MSG(c.for_ns == g->for_ns, "\"%s\": for_ns %lld", g->text, (long long)c.for_ns);
		CHECK_STR(c.text, g->kept ? g->kept : g->text);
	}
}

static void test_bad(void)
{
	struct rule_cond c, before;
	char err[512];

	for (size_t i = 0; i < sizeof(bad_conds) / sizeof(bad_conds[0]); i++) {
		const struct bad_cond *b = &bad_conds[i];
		err[0] = '\0';
		memset(&c, 0x5a, sizeof(c));
		before = c;
		int r = rule_cond_parse(b->text, &c, err, sizeof(err));
		CHECK_MSG(r == b->want_r, "\"%s\": r=%d want %d (%s)", b->text, r, b->want_r, err);
		CHECK_MSG(strstr(err, b->want) != NULL, "\"%s\": error \"%s\" lacks \"%s\"", b->text, err, b->want);
		CHECK_MSG(memcmp(&c, &before, sizeof(c)) == 0, "\"%s\": out written on error", b->text);
	}
	CHECK(rule_cond_parse(NULL, &c, err, sizeof(err)) == -EINVAL);

	/* Length: RULE_TEXT_MAX - 1 characters fit (after trimming), more do not. */
	char text[RULE_TEXT_MAX + 40];
	const char *head = "loh-size > 200MB for ";
	size_t hl = strlen(head);
	memcpy(text, head, hl);
	memset(text + hl, '0', RULE_TEXT_MAX - 1 - hl - 1);
	text[RULE_TEXT_MAX - 2] = 's';
	text[RULE_TEXT_MAX - 1] = '\0';
	/* 21 + 233 zeros + "s": the number is too long for units.c, which
	 * is the right answer, but not the length check's. */
	CHECK(rule_cond_parse(text, &c, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "too many digits") != NULL);
	memset(text, ' ', sizeof(text));
	memcpy(text + 100, "loh-size>1MB", 12);
	text[sizeof(text) - 1] = '\0';
	CHECK(rule_cond_parse(text, &c, err, sizeof(err)) == 0);
	CHECK_STR(c.text, "loh-size>1MB");
	memset(text, 'a', sizeof(text));
	text[sizeof(text) - 1] = '\0';
	CHECK(rule_cond_parse(text, &c, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "condition is too long (at most 255 characters)");
}

static void test_cond_test(void)
{
	struct rule_cond c;
	char err[256];

	CHECK(rule_cond_parse("gc-count > 10", &c, err, sizeof(err)) == 0);
	CHECK(rule_cond_test(&c, 11) && !rule_cond_test(&c, 10) && !rule_cond_test(&c, 9));
	c.op = COND_GE;
	CHECK(rule_cond_test(&c, 11) && rule_cond_test(&c, 10) && !rule_cond_test(&c, 9));
	c.op = COND_LT;
	CHECK(!rule_cond_test(&c, 11) && !rule_cond_test(&c, 10) && rule_cond_test(&c, 9));
	c.op = COND_LE;
	CHECK(!rule_cond_test(&c, 11) && rule_cond_test(&c, 10) && rule_cond_test(&c, 9));
	double nan = 0.0 / 0.0;
	for (int op = COND_GT; op <= COND_LE; op++) {
		c.op = (enum cond_op)op;
		CHECK(!rule_cond_test(&c, nan));
	}
}

static void test_dump_types(void)
{
	enum dump_type t = DUMP_FULL;

	CHECK(rule_dump_type_parse("normal", &t) == 0 && t == DUMP_NORMAL);
	CHECK(rule_dump_type_parse("withheap", &t) == 0 && t == DUMP_WITHHEAP);
	CHECK(rule_dump_type_parse("WithHeap", &t) == 0 && t == DUMP_WITHHEAP);
	CHECK(rule_dump_type_parse("triage", &t) == 0 && t == DUMP_TRIAGE);
	CHECK(rule_dump_type_parse("full", &t) == 0 && t == DUMP_FULL);
	t = DUMP_TRIAGE;
	CHECK(rule_dump_type_parse("mini", &t) == -EINVAL && t == DUMP_TRIAGE);
	CHECK(rule_dump_type_parse("", &t) == -EINVAL);
	CHECK(rule_dump_type_parse("fullx", &t) == -EINVAL);
	CHECK(rule_dump_type_parse("ful", &t) == -EINVAL);
	CHECK(rule_dump_type_parse(NULL, &t) == -EINVAL);
	CHECK_STR(rule_dump_type_name(DUMP_NORMAL), "normal");
	CHECK_STR(rule_dump_type_name(DUMP_WITHHEAP), "withheap");
	CHECK_STR(rule_dump_type_name(DUMP_TRIAGE), "triage");
	CHECK_STR(rule_dump_type_name(DUMP_FULL), "full");
	CHECK_STR(rule_dump_type_name((enum dump_type)0), "unknown");
	CHECK_STR(rule_dump_type_name((enum dump_type)9), "unknown");
}

static int name_safe(const char *s)
{
	if (!*s || *s == '.' || *s == '-')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
		      *s == '_' || *s == '-'))
			return 0;
	return 1;
}

static void test_names(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"loh-size>200MB", "loh-size-gt-200MB"},
	    {"loh-size > 200MB", "loh-size-gt-200MB"},
	    {"loh-size >= 200MB for 5s", "loh-size-ge-200MB-for-5s"},
	    {"heap-size<1GB", "heap-size-lt-1GB"},
	    {"heap-size <= 1GB", "heap-size-le-1GB"},
	    {"System.Runtime/cpu-usage > 90% for 10s", "System.Runtime-cpu-usage-gt-90pct-for-10s"},
	    {"loh-alloc-rate > 50MB/s", "loh-alloc-rate-gt-50MB-s"},
	    {"loh-size above 1.5GiB", "loh-size-above-1.5GiB"},
	    {"  ../../etc/passwd  ", "etc-passwd"},
	    {"a  --  b", "a-b"},
	    {"$$$", "rule"},
	    {"", "rule"},
	    {"x.", "x"},
	    {"héllo wörld", "h-llo-w-rld"},
	};
	char out[RULE_NAME_MAX + 16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rule_name_from_text(cases[i].text, out, sizeof(out));
		CHECK_STR(out, cases[i].want);
		CHECK(name_safe(out));
	}
	rule_name_from_text(NULL, out, sizeof(out));
	CHECK_STR(out, "rule");

	/* Bounded by RULE_NAME_MAX even when the buffer is larger. */
	char big[400];
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	memset(out, '#', sizeof(out));
	rule_name_from_text(big, out, sizeof(out));
	CHECK(strlen(out) == RULE_NAME_MAX - 1);
	CHECK(name_safe(out));
	/* and by outlen when that is smaller; no trailing separator after a cut. */
	char small[10];
	rule_name_from_text("loh-size > 200MB", small, sizeof(small));
	CHECK_STR(small, "loh-size");
	rule_name_from_text("loh-size > 200MB", small, 1);
	CHECK_STR(small, "");
	memset(small, '#', sizeof(small));
	rule_name_from_text("abc", small, 0);
	CHECK(small[0] == '#');
}

static void test_needs(void)
{
	struct rule r;
	char err[256];

	memset(&r, 0, sizeof(r));
	CHECK(rule_needs(&r) == 0);
	CHECK(rule_needs(NULL) == 0);
	CHECK(rule_cond_parse("gen2-size > 1GB", &r.conds[0], err, sizeof(err)) == 0);
	r.n_conds = 1;
	CHECK(rule_needs(&r) == (NEED_GC | NEED_RUNTIME_COUNTERS));
	CHECK(rule_cond_parse("cpu-usage > 90%", &r.conds[1], err, sizeof(err)) == 0);
	r.n_conds = 2;
	CHECK(rule_needs(&r) == (NEED_GC | NEED_RUNTIME_COUNTERS | NEED_COUNTERS));
	CHECK(rule_cond_parse("loh-alloc-rate > 1MB/s", &r.conds[2], err, sizeof(err)) == 0);
	r.n_conds = 3;
	CHECK(rule_needs(&r) == (NEED_GC | NEED_RUNTIME_COUNTERS | NEED_COUNTERS | NEED_ALLOC_TICKS));
	/* Conditions past n_conds do not count; a corrupt count is bounded. */
	r.n_conds = 1;
	CHECK(rule_needs(&r) == (NEED_GC | NEED_RUNTIME_COUNTERS));
	r.n_conds = 1000;
	CHECK(rule_needs(&r) == (NEED_GC | NEED_RUNTIME_COUNTERS | NEED_COUNTERS | NEED_ALLOC_TICKS));
}

/* The exception condition: defaults, globs, counts, windows, names. */
static void test_exceptions(void)
{
	struct rule_cond c;
	char err[256];

	CHECK(rule_cond_parse("exception", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.id == M_EXCEPTIONS && c.metric.is_event && c.metric.needs == NEED_EXCEPTIONS);
	CHECK_STR(c.metric.exc_type, "*");
	CHECK_STR(c.metric.exc_message, "");
	CHECK(c.metric.window_ns == 60 * S && c.op == COND_GE && c.threshold == 1 && c.for_ns == 0);
	CHECK_STR(c.metric.name, "exception * in 1m");

	CHECK(rule_cond_parse("exception TimeoutException* message '*pool*' >= 3 in 1m", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.exc_type, "TimeoutException*");
	CHECK_STR(c.metric.exc_message, "*pool*");
	CHECK(c.op == COND_GE && c.threshold == 3 && c.metric.window_ns == 60 * S);
	CHECK_STR(c.metric.name, "exception TimeoutException* message '*pool*' in 1m");
	CHECK_STR(c.text, "exception TimeoutException* message '*pool*' >= 3 in 1m");

	/* Quoted type, double-quoted message holding a single quote, "> N", no spaces around >. */
	CHECK(rule_cond_parse("EXCEPTION 'System.IO.*' MESSAGE \"can't *\">9 IN 10s", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.exc_type, "System.IO.*");
	CHECK_STR(c.metric.exc_message, "can't *");
	CHECK(c.op == COND_GT && c.threshold == 9 && c.metric.window_ns == 10 * S);
	/* Only a message. */
	CHECK(rule_cond_parse("exception message '*deadlock*'", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.exc_type, "*");
	CHECK_STR(c.metric.exc_message, "*deadlock*");
	/* exception-rate is a metric like any other. */
	CHECK(rule_cond_parse("exception-rate > 100/s for 10s", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.id == M_EXCEPTION_RATE && c.threshold == 100 && c.for_ns == 10 * S);

	/* Matching: the type by its full name or its name without the
	 * namespace, both globs without regard to case. */
	CHECK(rule_cond_parse("exception TimeoutException* message '*pool*'", &c, err, sizeof(err)) == 0);
	CHECK(catalog_exception_matches(&c.metric, "System.TimeoutException", "waiting for the pool"));
	CHECK(catalog_exception_matches(&c.metric, "System.TimeoutException", "POOL gone"));
	CHECK(catalog_exception_matches(&c.metric, "TimeoutExceptionX", "a pool"));
	CHECK(!catalog_exception_matches(&c.metric, "System.TimeoutException", "waiting"));
	CHECK(!catalog_exception_matches(&c.metric, "System.InvalidOperationException", "pool"));
	CHECK(!catalog_exception_matches(&c.metric, "System.TimeoutException.Inner.Other", "pool"));
	CHECK(rule_cond_parse("exception System.*", &c, err, sizeof(err)) == 0);
	CHECK(catalog_exception_matches(&c.metric, "System.IO.IOException", ""));
	CHECK(!catalog_exception_matches(&c.metric, "MyApp.Error", ""));

	/* A long pattern is kept whole; the name is cut to fit. */
	char text[RULE_TEXT_MAX];
	char type[121];
	memset(type, 'T', 120);
	type[120] = '\0';
	snprintf(text, sizeof(text), "exception %s message '%.100s' >= 2 in 2h", type, type);
	CHECK(rule_cond_parse(text, &c, err, sizeof(err)) == 0);
	CHECK(strlen(c.metric.exc_type) == 120 && strlen(c.metric.exc_message) == 100);
	CHECK(strlen(c.metric.name) < CATALOG_NAME_MAX);
	char name[RULE_NAME_MAX];
	rule_name_from_text("exception TimeoutException* message '*pool*' >= 3 in 1m", name, sizeof(name));
	CHECK_STR(name, "exception-TimeoutException-message-pool-ge-3-in-1m");
}

/* The meter condition: instrument, tags, statistic, the threshold's unit. */
static void test_meter_conds(void)
{
	struct rule_cond c;
	char err[256];

	CHECK(rule_cond_parse("meter Microsoft.AspNetCore.Hosting/http.server.request.duration[http.route=/api/orders] "
	                      "p99 > 2s for 30s",
	                      &c, err, sizeof(err)) == 0);
	CHECK(c.metric.id == M_METER && c.metric.needs == NEED_METERS && !c.metric.is_event);
	CHECK_STR(c.metric.provider, "Microsoft.AspNetCore.Hosting");
	CHECK_STR(c.metric.counter, "http.server.request.duration");
	CHECK_STR(c.metric.tags, "http.route=/api/orders");
	CHECK(c.metric.stat == MS_P99 && c.metric.unit == UNIT_MS && c.threshold == 2000 && c.for_ns == 30 * S);
	CHECK(c.op == COND_GT);
	CHECK_STR(c.metric.name,
	          "meter Microsoft.AspNetCore.Hosting/http.server.request.duration[http.route=/api/orders] p99");

	/* The statistic defaults to value; the threshold's unit is how it is written. */
	CHECK(rule_cond_parse("meter Shop/queue.depth >= 100", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.stat == MS_VALUE && c.metric.unit == UNIT_NONE && c.threshold == 100 && c.op == COND_GE);
	CHECK_STR(c.metric.tags, "");
	CHECK_STR(c.metric.name, "meter Shop/queue.depth value");
	CHECK(rule_cond_parse("meter Shop/heap value > 1.5GiB", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.unit == UNIT_BYTES && c.threshold == 1.5 * 1073741824.0);
	CHECK(rule_cond_parse("meter Shop/bytes.sent RATE > 5MB/s", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.stat == MS_RATE && c.metric.unit == UNIT_BYTES_PER_SEC && c.threshold == 5e6);
	CHECK(rule_cond_parse("meter Shop/orders rate > 600/min", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.unit == UNIT_PER_SEC && c.threshold == 10);
	CHECK(rule_cond_parse("meter Shop/cpu > 90%", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.unit == UNIT_PERCENT && c.threshold == 90);
	CHECK(rule_cond_parse("meter Shop/balance < -5", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.unit == UNIT_NONE && c.threshold == -5 && c.op == COND_LT);
	CHECK(rule_cond_parse("meter Shop/latency count>=10", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.stat == MS_COUNT && c.metric.unit == UNIT_COUNT && c.threshold == 10);
	CHECK(rule_cond_parse("meter Shop/latency sum below 1m", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.stat == MS_SUM && c.op == COND_LT && c.metric.unit == UNIT_MS && c.threshold == 60000);
	CHECK(rule_cond_parse("meter Shop/latency p50 above 100ms", &c, err, sizeof(err)) == 0);
	CHECK(c.metric.stat == MS_P50 && c.op == COND_GT && c.threshold == 100);
	/* Tag filters: spaces dropped, globs, several, a value with spaces and '='. */
	CHECK(rule_cond_parse("meter Shop/orders[ route = /api/* , method=GET ] rate > 1", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.tags, "route=/api/*,method=GET");
	CHECK(rule_cond_parse("meter Shop/orders[q=a b=c] > 1", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.tags, "q=a b=c");
	/* An instrument name may hold '/'. */
	CHECK(rule_cond_parse("meter Shop/orders/placed > 1", &c, err, sizeof(err)) == 0);
	CHECK_STR(c.metric.counter, "orders/placed");
	/* A long spec is kept whole in its fields; the name is cut. */
	char text[RULE_TEXT_MAX], inst[121];
	memset(inst, 'i', 120);
	inst[120] = '\0';
	snprintf(text, sizeof(text), "meter Shop/%s[k=%.90s] p95 > 1s", inst, inst);
	CHECK(rule_cond_parse(text, &c, err, sizeof(err)) == 0);
	CHECK(strlen(c.metric.counter) == 120 && strlen(c.metric.tags) == 92);
	CHECK(strlen(c.metric.name) == CATALOG_NAME_MAX - 1);
	char name[RULE_NAME_MAX];
	rule_name_from_text("meter Shop/latency[route=/api/orders] p99 > 2s", name, sizeof(name));
	CHECK_STR(name, "meter-Shop-latency-route-api-orders-p99-gt-2s");
	/* "meters" is not the keyword. */
	CHECK(rule_cond_parse("meters Shop/x > 1", &c, err, sizeof(err)) == -ENOENT);
}

int main(void)
{
	test_meter_conds();
	test_exceptions();
	test_good();
	test_bad();
	test_cond_test();
	test_dump_types();
	test_names();
	test_needs();
	return check_done();
}
