/* Unit tests for units.c: parsing sizes, durations, rates, percentages and
 * plain numbers, the error sentences for bad ones, and formatting. */
#include "dumpwatch/units.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

static int near(double a, double b)
{
	double d = a - b, m = (a < 0 ? -a : a) + (b < 0 ? -b : b);
	if (d < 0)
		d = -d;
	return d <= 1e-9 * m || d < 1e-12;
}

struct good_value {
	const char *text;
	enum unit_kind kind;
	double want;
};

static const struct good_value good_values[] = {
    {"200MB", UNIT_BYTES, 200e6},
    {"200 MB", UNIT_BYTES, 200e6},
    {"  200MB  ", UNIT_BYTES, 200e6},
    {"200mb", UNIT_BYTES, 200e6},
    {"200Mb", UNIT_BYTES, 200e6},
    {"1.5GiB", UNIT_BYTES, 1.5 * 1073741824.0},
    {"1.5gib", UNIT_BYTES, 1.5 * 1073741824.0},
    {"4096B", UNIT_BYTES, 4096},
    {"4096b", UNIT_BYTES, 4096},
    {"4096 bytes", UNIT_BYTES, 4096},
    {"1KB", UNIT_BYTES, 1000},
    {"1kB", UNIT_BYTES, 1000},
    {"1KiB", UNIT_BYTES, 1024},
    {"2MiB", UNIT_BYTES, 2097152},
    {"3GB", UNIT_BYTES, 3e9},
    {"1TB", UNIT_BYTES, 1e12},
    {"1TiB", UNIT_BYTES, 1099511627776.0},
    {"0.5MB", UNIT_BYTES, 500000},
    {"0", UNIT_BYTES, 0},
    {"0.0", UNIT_BYTES, 0},
    {"+5MB", UNIT_BYTES, 5e6},
    {"0.1MB", UNIT_BYTES, 100000},
    {"50MB/s", UNIT_BYTES_PER_SEC, 50e6},
    {"50 MB / s", UNIT_BYTES_PER_SEC, 50e6},
    {"60MB/min", UNIT_BYTES_PER_SEC, 1e6},
    {"60MB/m", UNIT_BYTES_PER_SEC, 1e6},
    {"3600KB/h", UNIT_BYTES_PER_SEC, 1000},
    {"1GiB/sec", UNIT_BYTES_PER_SEC, 1073741824.0},
    {"10/s", UNIT_PER_SEC, 10},
    {"10/min", UNIT_PER_SEC, 10.0 / 60.0},
    {"10 / min", UNIT_PER_SEC, 10.0 / 60.0},
    {"36/h", UNIT_PER_SEC, 0.01},
    {"200ms", UNIT_MS, 200},
    {"1.5s", UNIT_MS, 1500},
    {"2m", UNIT_MS, 120000},
    {"1min", UNIT_MS, 60000},
    {"1h", UNIT_MS, 3600000},
    {"0.5ms", UNIT_MS, 0.5},
    {"90%", UNIT_PERCENT, 90},
    {"90 %", UNIT_PERCENT, 90},
    {"99.5%", UNIT_PERCENT, 99.5},
    {"100%", UNIT_PERCENT, 100},
    {"0%", UNIT_PERCENT, 0},
    {"10", UNIT_COUNT, 10},
    {"2.5", UNIT_COUNT, 2.5},
    {"100", UNIT_NONE, 100},
    {"-3.25", UNIT_NONE, -3.25},
    {"9000000000000000000", UNIT_NONE, 9e18},
    {"1000000000000000000.5", UNIT_NONE, 1e18},
    {".5MB", UNIT_BYTES, 500000},
    {"0.000001", UNIT_NONE, 1e-6},
};

struct bad_value {
	const char *text;
	enum unit_kind kind;
	const char *want; /* exact error text, or a substring when substr */
	int substr;
};

static const struct bad_value bad_values[] = {
    {"200", UNIT_BYTES, "\"200\" needs a unit: a size such as 200MB or 1.5GiB", 0},
    {"1.5", UNIT_BYTES, "\"1.5\" needs a unit: a size such as 1.5MB or 1.5GiB", 0},
    {"50", UNIT_BYTES_PER_SEC, "\"50\" needs a unit: a rate such as 50MB/s or 1GiB/min", 0},
    {"10", UNIT_PER_SEC, "\"10\" needs a unit: a rate such as 10/s or 10/min", 0},
    {"90", UNIT_PERCENT, "\"90\" needs a unit: a percentage such as 90%", 0},
    {"200", UNIT_MS, "\"200\" needs a unit: a duration such as 200ms or 1.5s", 0},
    {"500M", UNIT_BYTES, "\"500M\" is ambiguous: write 500MB (powers of 1000) or 500MiB (powers of 1024)", 0},
    {"2g", UNIT_BYTES, "write 2GB (powers of 1000) or 2GiB", 1},
    {"50M/s", UNIT_BYTES_PER_SEC, "ambiguous", 1},
    {"200ms", UNIT_BYTES, "\"200ms\" is a duration, but a size is needed here: a size such as 200MB or 1.5GiB", 0},
    {"90%", UNIT_BYTES, "is a percentage, but a size is needed", 1},
    {"50MB/s", UNIT_BYTES, "\"50MB/s\" is a rate of bytes, but a size is needed here", 1},
    {"50MB", UNIT_BYTES_PER_SEC, "\"50MB\" is a size, but a rate is needed here: add /s, /min or /h, as in 50MB/s", 0},
    {"10/s", UNIT_BYTES_PER_SEC, "is a count per time, but a rate of bytes is needed", 1},
    {"10MB/s", UNIT_PER_SEC, "is a rate of bytes, but a count per time is needed", 1},
    {"50MB/x", UNIT_BYTES_PER_SEC, "unknown time unit after \"/\" in \"50MB/x\": use /s, /min or /h", 0},
    {"50MB/ms", UNIT_BYTES_PER_SEC, "use /s, /min or /h", 1},
    {"50MB/", UNIT_BYTES_PER_SEC, "a rate needs a time unit after \"/\"", 1},
    {"5XB", UNIT_BYTES,
     "unknown size unit in \"5XB\": use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)", 0},
    {"5 parsecs", UNIT_BYTES, "unknown size unit", 1},
    {"5 parsecs", UNIT_PERCENT, "unknown unit \"parsecs\" in \"5 parsecs\": write a percentage such as 5%", 0},
    {"5ZB/s", UNIT_BYTES_PER_SEC, "unknown size unit in \"5ZB/s\": use B, KB, MB, GB, TB", 1},
    {"-5MB", UNIT_BYTES, "\"-5MB\": a size cannot be negative", 0},
    {"-1/s", UNIT_PER_SEC, "cannot be negative", 1},
    {"-1", UNIT_COUNT, "cannot be negative", 1},
    {"-90%", UNIT_PERCENT, "cannot be negative", 1},
    {"150%", UNIT_PERCENT, "\"150%\": a percentage is between 0% and 100%", 0},
    {"1e6", UNIT_NONE, "exponents are not accepted", 1},
    {"1E6B", UNIT_BYTES, "exponents are not accepted", 1},
    {"1,5GB", UNIT_BYTES, "use a dot for a fraction", 1},
    {"1.2.3MB", UNIT_BYTES, "\"1.2.3MB\" is not a valid number", 0},
    {"1.MB", UNIT_BYTES, "a dot must be followed by digits", 1},
    {"9300000000000000000", UNIT_NONE, "is too large", 1},
    {".MB", UNIT_BYTES, "does not start with a number", 1},
    {"MB", UNIT_BYTES, "\"MB\" does not start with a number", 0},
    {"nan", UNIT_NONE, "does not start with a number", 1},
    {"inf", UNIT_NONE, "does not start with a number", 1},
    {"", UNIT_BYTES, "missing value: write a size such as 10MB or 1.5GiB", 0},
    {"   ", UNIT_PERCENT, "missing value", 1},
    {"200MB foo", UNIT_BYTES, "unexpected \"foo\" after the value", 1},
    {"200MB/s/s", UNIT_BYTES_PER_SEC, "unexpected \"/s\"", 1},
    {"10MB", UNIT_COUNT, "\"10MB\" is a size, but a plain number is needed here", 1},
    {"10/s", UNIT_COUNT, "is a count per time, but a plain number", 1},
    {"90%", UNIT_NONE, "this counter has no known unit; write a plain number in the counter's own display units", 1},
    {"100000000000000000000TB", UNIT_BYTES, "is too large", 1},
    {"123456789012345678901234567890123", UNIT_NONE, "too many digits", 1},
    {"5abcdefghijklmnopqrstuvwxyz", UNIT_BYTES, "unknown unit", 1},
    {"5\x01MB", UNIT_BYTES, "\"5?MB\"", 1},
};

struct good_duration {
	const char *text;
	int64_t want;
};

static const struct good_duration good_durations[] = {
    {"0", 0},
    {"0s", 0},
    {"500ms", 500000000},
    {"10s", 10000000000},
    {"10 s", 10000000000},
    {"10S", 10000000000},
    {"1.5s", 1500000000},
    {"0.001ms", 1000},
    {"5m", 300000000000},
    {"5min", 300000000000},
    {"2h", 7200000000000},
    {"1d", 86400000000000},
    {"10sec", 10000000000},
    {"1hr", 3600000000000},
    {"100000d", 8640000000000000000},
};

static const struct bad_value bad_durations[] = {
    {"10", 0, "\"10\" needs a unit: a duration such as 10s or 500ms", 0},
    {"1.5", 0, "\"1.5\" needs a unit: a duration such as 1.5s or 500ms", 0},
    {"", 0, "missing duration: write one such as 10s or 500ms", 0},
    {"-5s", 0, "\"-5s\": a duration cannot be negative", 0},
    {"5MB", 0, "\"5MB\" is a size, but a duration is needed here, such as 5s or 500ms", 0},
    {"5/s", 0, "is a count per time, but a duration is needed", 1},
    {"5ns", 0, "unknown duration unit in \"5ns\": use ms, s, m (or min), h or d", 0},
    {"5 fortnights", 0, "unknown duration unit", 1},
    {"200000d", 0, "\"200000d\" is too long", 0},
    {"1e3s", 0, "exponents are not accepted", 1},
    {"10s later", 0, "unexpected \"later\"", 1},
};

static void test_good_values(void)
{
	char err[256];

	for (size_t i = 0; i < sizeof(good_values) / sizeof(good_values[0]); i++) {
		const struct good_value *g = &good_values[i];
		double v = -1;
		err[0] = '\0';
		int r = units_parse_value(g->text, g->kind, &v, err, sizeof(err));
		CHECK_MSG(r == 0, "\"%s\": r=%d err=%s", g->text, r, err);
		CHECK_MSG(near(v, g->want), "\"%s\": got %.17g want %.17g", g->text, v, g->want);
	}
}

static void test_bad(const struct bad_value *b, int r, const char *err)
{
	CHECK_MSG(r == -EINVAL, "\"%s\": r=%d", b->text, r);
	if (b->substr)
		CHECK_MSG(strstr(err, b->want) != NULL, "\"%s\": error \"%s\" lacks \"%s\"", b->text, err, b->want);
	else
		CHECK_STR(err, b->want);
}

static void test_bad_values(void)
{
	char err[256];

	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		double v = 12345;
		err[0] = '\0';
		int r = units_parse_value(bad_values[i].text, bad_values[i].kind, &v, err, sizeof(err));
		test_bad(&bad_values[i], r, err);
		CHECK_MSG(v == 12345, "\"%s\": out written on error", bad_values[i].text);
	}
	/* NULL text is a missing value, not a crash. */
	double v;
	CHECK(units_parse_value(NULL, UNIT_BYTES, &v, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "missing value") != NULL);
	/* A short error buffer is cut, not overrun. */
	char small[8];
	memset(small, 'x', sizeof(small));
	CHECK(units_parse_value("200", UNIT_BYTES, &v, small, sizeof(small)) == -EINVAL);
	CHECK(small[7] == '\0');
	CHECK_STR(small, "\"200\" n");
}

static void test_durations(void)
{
	char err[256];

	for (size_t i = 0; i < sizeof(good_durations) / sizeof(good_durations[0]); i++) {
		int64_t ns = -1;
		err[0] = '\0';
		int r = units_parse_duration(good_durations[i].text, &ns, err, sizeof(err));
		CHECK_MSG(r == 0, "\"%s\": r=%d err=%s", good_durations[i].text, r, err);
		CHECK_MSG(ns == good_durations[i].want, "\"%s\": got %lld want %lld", good_durations[i].text,
		          (long long)ns, (long long)good_durations[i].want);
	}
	for (size_t i = 0; i < sizeof(bad_durations) / sizeof(bad_durations[0]); i++) {
		int64_t ns = 777;
		err[0] = '\0';
		int r = units_parse_duration(bad_durations[i].text, &ns, err, sizeof(err));
		test_bad(&bad_durations[i], r, err);
		CHECK(ns == 777);
	}
}

struct fmt_case {
	double value;
	enum unit_kind kind;
	const char *want;
};

static const struct fmt_case fmt_cases[] = {
    {512e6, UNIT_BYTES, "512.0MB"}, {0, UNIT_BYTES, "0B"},
    {999, UNIT_BYTES, "999B"},      {1000, UNIT_BYTES, "1.0KB"},
    {1536, UNIT_BYTES, "1.5KB"},    {999960, UNIT_BYTES, "1.0MB"},
    {2.5e9, UNIT_BYTES, "2.5GB"},   {3e12, UNIT_BYTES, "3.0TB"},
    {-4e6, UNIT_BYTES, "-4.0MB"},   {3.5e6, UNIT_BYTES_PER_SEC, "3.5MB/s"},
    {12, UNIT_MS, "12ms"},          {0.5, UNIT_MS, "0.5ms"},
    {1500, UNIT_MS, "1.5s"},        {91, UNIT_PERCENT, "91%"},
    {91.26, UNIT_PERCENT, "91.3%"}, {10.0 / 60.0, UNIT_PER_SEC, "10/min"},
    {0.01, UNIT_PER_SEC, "36/h"},   {2.5, UNIT_PER_SEC, "2.5/s"},
    {0, UNIT_PER_SEC, "0/s"},       {42, UNIT_COUNT, "42"},
    {1.5, UNIT_NONE, "1.5"},        {1e6, UNIT_NONE, "1000000"},
};

static void test_format(void)
{
	char buf[64], err[256];

	for (size_t i = 0; i < sizeof(fmt_cases) / sizeof(fmt_cases[0]); i++) {
		const struct fmt_case *f = &fmt_cases[i];
		const char *s = units_format(f->value, f->kind, buf, sizeof(buf));
		CHECK(s == buf);
		CHECK_STR(buf, f->want);
		/* Round trip: the text parses back to the value within the
		 * formatting precision (one decimal of the prefix, or 0.05%). */
		double back = -1;
		if (f->value < 0 && f->kind != UNIT_NONE)
			continue; /* only UNIT_NONE takes a sign */
		int r = units_parse_value(buf, f->kind, &back, err, sizeof(err));
		CHECK_MSG(r == 0, "format \"%s\" does not parse back: %s", buf, err);
		double tol = f->kind == UNIT_BYTES || f->kind == UNIT_BYTES_PER_SEC ? 0.05 : 0.005;
		double rel = f->value == 0 ? back : (back - f->value) / f->value;
		if (rel < 0)
			rel = -rel;
		CHECK_MSG(rel <= tol, "\"%s\" -> %g, was %g", buf, back, f->value);
	}
	/* Exact round trips for values that the format holds exactly. */
	const double exact[] = {200e6, 1.5e9, 50e3, 7e12};
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		double back = 0;
		units_format(exact[i], UNIT_BYTES, buf, sizeof(buf));
		CHECK(units_parse_value(buf, UNIT_BYTES, &back, err, sizeof(err)) == 0 && back == exact[i]);
	}
	CHECK_STR(units_format(0.0 / 0.0, UNIT_BYTES, buf, sizeof(buf)), "nan");
	CHECK_STR(units_format(1.0 / 0.0, UNIT_MS, buf, sizeof(buf)), "inf");
	/* A short buffer is cut and terminated. */
	char tiny[4];
	units_format(512e6, UNIT_BYTES, tiny, sizeof(tiny));
	CHECK_STR(tiny, "512");
	CHECK_STR(units_format(1, UNIT_BYTES, NULL, 0), "");
}

/* Durations as help text shows defaults: the largest exact unit, read back
 * by units_parse_duration. */
static void test_format_duration(void)
{
	static const struct {
		int64_t ns;
		const char *want;
	} cases[] = {{0, "0"},
	             {1000000000LL, "1s"},
	             {10000000000LL, "10s"},
	             {600000000000LL, "10m"},
	             {90000000000LL, "90s"},
	             {7200000000000LL, "2h"},
	             {86400000000000LL, "1d"},
	             {250000000LL, "250ms"},
	             {1500000LL, "1.5ms"}};
	char buf[32], err[256] = "";

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t back = -1;
		CHECK_STR(units_format_duration(cases[i].ns, buf, sizeof(buf)), cases[i].want);
		CHECK_MSG(units_parse_duration(buf, &back, err, sizeof(err)) == 0 && back == cases[i].ns, "%s: %s", buf,
		          err);
	}
	CHECK_STR(units_format_duration(1, NULL, 0), "");
}

static void test_names(void)
{
	CHECK_STR(units_name(UNIT_BYTES), "bytes");
	CHECK_STR(units_name(UNIT_BYTES_PER_SEC), "bytes/s");
	CHECK_STR(units_name(UNIT_MS), "ms");
	CHECK_STR(units_name(UNIT_PERCENT), "percent");
	CHECK_STR(units_name(UNIT_COUNT), "count");
	CHECK_STR(units_name(UNIT_PER_SEC), "1/s");
	CHECK_STR(units_name(UNIT_NONE), "number");
	CHECK_STR(units_name((enum unit_kind)99), "unknown");
}

int main(void)
{
	test_good_values();
	test_bad_values();
	test_durations();
	test_format();
	test_format_duration();
	test_names();
	return check_done();
}
