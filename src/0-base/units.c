/* Quantities with units as operators write them in rules ("500MB", "1.5GiB",
 * "50MB/s", "10/min", "200ms", "90%"): parsing into base units and formatting
 * back for humans. Pure: no locale, no libm, no globals but constant tables.
 *
 * A quantity is NUMBER [spaces] [UNIT] [spaces "/" spaces TIME-UNIT]. The
 * number is parsed here rather than with strtod, which would accept exponents,
 * hex, "inf" and "nan", and follows the locale's decimal point. */
#include "dumpwatch/units.h"

#include "dumpwatch/text.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NUM_TEXT_MAX 32 /* a number longer than this is a typo, not a threshold */
#define UNIT_TEXT_MAX 16

/* A quantity split into its parts; the parts are checked against a kind later. */
struct qty {
	double num;
	int negative;
	char num_text[NUM_TEXT_MAX + 1]; /* the number as written, for messages */
	char unit[UNIT_TEXT_MAX + 1];    /* "" when none */
	char per[UNIT_TEXT_MAX + 1];     /* after '/', "" when none */
	int has_slash;
};

struct unit_def {
	const char *name;
	double factor;
};

/* Size units, matched case-insensitively: dumpwatch never measures bits, so
 * "mb" and "Mb" are megabytes too. */
static const struct unit_def size_units[] = {
    {"b", 1.0},
    {"byte", 1.0},
    {"bytes", 1.0},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
    {"kib", 1024.0},
    {"mib", 1048576.0},
    {"gib", 1073741824.0},
    {"tib", 1099511627776.0},
    {NULL, 0},
};

/* Duration units in nanoseconds, matched case-insensitively. */
static const struct unit_def duration_units[] = {
    {"ms", 1e6},   {"s", 1e9},     {"sec", 1e9},   {"m", 60e9}, {"min", 60e9},
    {"h", 3600e9}, {"hr", 3600e9}, {"d", 86400e9}, {NULL, 0},
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static double dabs(double v)
{
	return v < 0 ? -v : v;
}

static const struct unit_def *find_unit(const struct unit_def *table, const char *name)
{
	for (; table->name; table++)
		if (text_eq_nocase(table->name, name))
			return table;
	return NULL;
}

/* 10^n for small n, exact up to n = 22 (no libm). */
static double pow10_small(int n)
{
	double r = 1.0;
	while (n-- > 0)
		r *= 10.0;
	return r;
}

/* Reads [A-Za-z%]+ at *p into out (bounded); returns the length read, which
 * may exceed the buffer (then out is cut and the caller reports it unknown). */
static size_t read_word(const char **p, char *out, size_t outlen)
{
	size_t n = 0;

	while (is_alpha(**p) || **p == '%') {
		if (n + 1 < outlen)
			out[n] = **p;
		n++;
		(*p)++;
	}
	out[n < outlen ? n : outlen - 1] = '\0';
	return n;
}

/* Splits text into number and unit parts. Kind-independent errors only. */
static int qty_split(const char *text, struct qty *q, char *err, size_t errlen)
{
	char shown[48];
	const char *p = text, *num_start;
	uint64_t mant = 0;
	double big = 0.0;
	int digits = 0, frac_digits = 0, seen_dot = 0;
	size_t len;

	memset(q, 0, sizeof(*q));
	text_quote(shown, sizeof(shown), text, SIZE_MAX, 40);
	while (is_space(*p))
		p++;
	num_start = p;
	if (*p == '-' || *p == '+') {
		q->negative = *p == '-';
		p++;
	}
	for (;; p++) {
		if (is_digit(*p)) {
			unsigned d = (unsigned)(*p - '0');
			if (digits < 19)
				mant = mant * 10u + d;
			big = big * 10.0 + d;
			digits++;
			if (seen_dot)
				frac_digits++;
		} else if (*p == '.' && !seen_dot) {
			seen_dot = 1;
		} else {
			break;
		}
	}
	if (digits == 0) {
		snprintf(err, errlen, "\"%s\" does not start with a number", shown);
		return -EINVAL;
	}
	if (seen_dot && frac_digits == 0) {
		snprintf(err, errlen, "\"%s\": a dot must be followed by digits, as in 1.5", shown);
		return -EINVAL;
	}
	if (p - num_start > NUM_TEXT_MAX) {
		snprintf(err, errlen, "\"%s\": the number has too many digits", shown);
		return -EINVAL;
	}
	len = (size_t)(p - num_start);
	memcpy(q->num_text, num_start, len);
	q->num_text[len] = '\0';
	if ((*p == 'e' || *p == 'E') && (is_digit(p[1]) || p[1] == '-' || p[1] == '+')) {
		snprintf(err, errlen, "\"%s\": exponents are not accepted; write the number out, as in 1500000", shown);
		return -EINVAL;
	}
	if (*p == ',') {
		snprintf(err, errlen, "\"%s\": use a dot for a fraction and no thousands separators, as in 1.5", shown);
		return -EINVAL;
	}
	if (is_digit(*p) || *p == '.') {
		snprintf(err, errlen, "\"%s\" is not a valid number", shown);
		return -EINVAL;
	}
	/* 19 digits fit in uint64_t; below 2^53 the integer is exact and one
	 * division by an exact power of ten rounds correctly. */
	if (digits <= 19 && mant < (1ull << 53) && frac_digits <= 22)
		q->num = (double)mant / pow10_small(frac_digits);
	else
		q->num = big / pow10_small(frac_digits);
	if (q->negative)
		q->num = -q->num;
	if (!isfinite(q->num)) {
		snprintf(err, errlen, "\"%s\" is too large", shown);
		return -EINVAL;
	}

	while (is_space(*p))
		p++;
	if (read_word(&p, q->unit, sizeof(q->unit)) >= sizeof(q->unit)) {
		snprintf(err, errlen, "\"%s\": unknown unit", shown);
		return -EINVAL;
	}
	while (is_space(*p))
		p++;
	if (*p == '/') {
		q->has_slash = 1;
		p++;
		while (is_space(*p))
			p++;
		if (read_word(&p, q->per, sizeof(q->per)) == 0) {
			snprintf(err, errlen, "\"%s\": a rate needs a time unit after \"/\", as in /s, /min or /h",
			         shown);
			return -EINVAL;
		}
		while (is_space(*p))
			p++;
	}
	if (*p != '\0') {
		char rest[48];
		text_quote(rest, sizeof(rest), p, SIZE_MAX, 40);
		snprintf(err, errlen, "\"%s\": unexpected \"%s\" after the value", shown, rest);
		return -EINVAL;
	}
	return 0;
}

/* What a unit string looks like, for "is a X, but a Y is needed" messages. */
static const char *unit_class(const struct qty *q)
{
	if (q->has_slash)
		return q->unit[0] ? "a rate of bytes" : "a count per time";
	if (q->unit[0] == '\0')
		return "a plain number";
	if (strcmp(q->unit, "%") == 0)
		return "a percentage";
	if (find_unit(size_units, q->unit))
		return "a size";
	if (find_unit(duration_units, q->unit))
		return "a duration";
	return NULL;
}

/* "a size such as 200MB or 1.5GiB", with the user's number where it fits. */
static void kind_example(enum unit_kind kind, const char *num, char *out, size_t outlen)
{
	switch (kind) {
	case UNIT_BYTES:
		snprintf(out, outlen, "a size such as %sMB or 1.5GiB", num);
		break;
	case UNIT_BYTES_PER_SEC:
		snprintf(out, outlen, "a rate such as %sMB/s or 1GiB/min", num);
		break;
	case UNIT_MS:
		snprintf(out, outlen, "a duration such as %sms or 1.5s", num);
		break;
	case UNIT_PERCENT:
		snprintf(out, outlen, "a percentage such as %s%%", num);
		break;
	case UNIT_PER_SEC:
		snprintf(out, outlen, "a rate such as %s/s or %s/min", num, num);
		break;
	case UNIT_COUNT:
	case UNIT_NONE:
	default:
		snprintf(out, outlen, "a plain number such as %s", num);
		break;
	}
}

static const char *kind_noun(enum unit_kind kind)
{
	switch (kind) {
	case UNIT_BYTES:
		return "a size";
	case UNIT_BYTES_PER_SEC:
		return "a rate of bytes";
	case UNIT_MS:
		return "a duration";
	case UNIT_PERCENT:
		return "a percentage";
	case UNIT_PER_SEC:
		return "a count per time";
	case UNIT_COUNT:
	case UNIT_NONE:
	default:
		return "a plain number";
	}
}

/* The error for a unit that does not fit the kind. */
static int wrong_unit(const struct qty *q, const char *shown, enum unit_kind kind, char *err, size_t errlen)
{
	const char *cls = unit_class(q);
	char ex[96];

	kind_example(kind, q->num_text, ex, sizeof(ex));
	if (cls && (kind == UNIT_NONE) && q->unit[0]) {
		snprintf(err, errlen,
		         "\"%s\": this counter has no known unit; write a plain number in the counter's own display "
		         "units, such as %s",
		         shown, q->num_text);
	} else if (cls) {
		snprintf(err, errlen, "\"%s\" is %s, but %s is needed here: %s", shown, cls, kind_noun(kind), ex);
	} else {
		/* q->unit holds only letters and '%' (read_word). */
		snprintf(err, errlen, "unknown unit \"%s\" in \"%s\": write %s", q->unit, shown, ex);
	}
	return -EINVAL;
}

static int ambiguous_size(const struct qty *q)
{
	return strlen(q->unit) == 1 && strchr("kmgtKMGT", q->unit[0]) != NULL;
}

/* Sizes: a single K, M, G or T is refused because "500M" means 500 MB to some
 * tools and 500 MiB to others. */
static int size_factor(const struct qty *q, const char *shown, double *out, char *err, size_t errlen)
{
	const struct unit_def *u = find_unit(size_units, q->unit);

	if (u) {
		*out = u->factor;
		return 0;
	}
	if (ambiguous_size(q)) {
		char up = (char)(q->unit[0] & ~0x20);
		snprintf(err, errlen, "\"%s\" is ambiguous: write %s%cB (powers of 1000) or %s%ciB (powers of 1024)",
		         shown, q->num_text, up, q->num_text, up);
		return -EINVAL;
	}
	snprintf(err, errlen,
	         "unknown size unit in \"%s\": use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers "
	         "of 1024)",
	         shown);
	return -EINVAL;
}

/* Seconds per rate denominator ("/s", "/min", "/h"). */
static int per_seconds(const struct qty *q, const char *shown, double *out, char *err, size_t errlen)
{
	const struct unit_def *u = find_unit(duration_units, q->per);

	if (!u || u->factor < 1e9) {
		snprintf(err, errlen, "unknown time unit after \"/\" in \"%s\": use /s, /min or /h", shown);
		return -EINVAL;
	}
	*out = u->factor / 1e9;
	return 0;
}

int units_parse_value(const char *text, enum unit_kind kind, double *out, char *err, size_t errlen)
{
	struct qty q;
	char shown[48], ex[96];
	double f = 1.0, secs = 1.0, v;
	int r;

	if (!text)
		text = "";
	text_quote(shown, sizeof(shown), text, SIZE_MAX, 40);
	if (strspn(text, " \t\n\r\v\f") == strlen(text)) {
		kind_example(kind, kind == UNIT_PERCENT ? "90" : kind == UNIT_MS ? "200" : "10", ex, sizeof(ex));
		snprintf(err, errlen, "missing value: write %s", ex);
		return -EINVAL;
	}
	r = qty_split(text, &q, err, errlen);
	if (r < 0)
		return r;
	if (q.negative && kind != UNIT_NONE) {
		snprintf(err, errlen, "\"%s\": %s cannot be negative", shown, kind_noun(kind));
		return -EINVAL;
	}
	/* A bare zero needs no unit: 0 bytes and 0 ms are the same in any unit. */
	if (q.unit[0] == '\0' && !q.has_slash && q.num == 0.0) {
		*out = 0.0;
		return 0;
	}
	if (q.unit[0] == '\0' && !q.has_slash && kind != UNIT_NONE && kind != UNIT_COUNT) {
		kind_example(kind, q.num_text, ex, sizeof(ex));
		snprintf(err, errlen, "\"%s\" needs a unit: %s", q.num_text, ex);
		return -EINVAL;
	}

	switch (kind) {
	case UNIT_NONE:
	case UNIT_COUNT:
		if (q.unit[0] || q.has_slash)
			return wrong_unit(&q, shown, kind, err, errlen);
		v = q.num;
		break;
	case UNIT_BYTES:
		if (q.has_slash || (!find_unit(size_units, q.unit) && !ambiguous_size(&q) && unit_class(&q)))
			return wrong_unit(&q, shown, kind, err, errlen);
		if (size_factor(&q, shown, &f, err, errlen) < 0)
			return -EINVAL;
		v = q.num * f;
		break;
	case UNIT_BYTES_PER_SEC:
		if (!q.has_slash) {
			if (find_unit(size_units, q.unit)) {
				snprintf(err, errlen,
				         "\"%s\" is a size, but a rate is needed here: add /s, /min or /h, as in %s/s",
				         shown, shown);
				return -EINVAL;
			}
			return wrong_unit(&q, shown, kind, err, errlen);
		}
		if (q.unit[0] == '\0')
			return wrong_unit(&q, shown, kind, err, errlen);
		if (size_factor(&q, shown, &f, err, errlen) < 0 || per_seconds(&q, shown, &secs, err, errlen) < 0)
			return -EINVAL;
		v = q.num * f / secs;
		break;
	case UNIT_PER_SEC:
		if (!q.has_slash || q.unit[0])
			return wrong_unit(&q, shown, kind, err, errlen);
		if (per_seconds(&q, shown, &secs, err, errlen) < 0)
			return -EINVAL;
		v = q.num / secs;
		break;
	case UNIT_MS: {
		const struct unit_def *u = find_unit(duration_units, q.unit);
		if (q.has_slash || !u)
			return wrong_unit(&q, shown, kind, err, errlen);
		v = q.num * (u->factor / 1e6);
		break;
	}
	case UNIT_PERCENT:
		if (q.has_slash || strcmp(q.unit, "%") != 0)
			return wrong_unit(&q, shown, kind, err, errlen);
		v = q.num;
		if (v > 100.0) {
			snprintf(err, errlen, "\"%s\": a percentage is between 0%% and 100%%", shown);
			return -EINVAL;
		}
		break;
	default:
		snprintf(err, errlen, "unknown unit kind %d", (int)kind);
		return -EINVAL;
	}
	/* Nothing a process reports comes near 2^63 in its base unit; a value
	 * above that is a typo and would not convert to an integer safely. */
	if (!isfinite(v) || v >= 9223372036854775808.0 || v <= -9223372036854775808.0) {
		snprintf(err, errlen, "\"%s\" is too large", shown);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int units_parse_duration(const char *text, int64_t *out_ns, char *err, size_t errlen)
{
	struct qty q;
	const struct unit_def *u;
	char shown[48];
	double ns;
	int r;

	if (!text)
		text = "";
	text_quote(shown, sizeof(shown), text, SIZE_MAX, 40);
	if (strspn(text, " \t\n\r\v\f") == strlen(text)) {
		snprintf(err, errlen, "missing duration: write one such as 10s or 500ms");
		return -EINVAL;
	}
	r = qty_split(text, &q, err, errlen);
	if (r < 0)
		return r;
	if (q.negative) {
		snprintf(err, errlen, "\"%s\": a duration cannot be negative", shown);
		return -EINVAL;
	}
	if (q.unit[0] == '\0' && !q.has_slash) {
		if (q.num == 0.0) {
			*out_ns = 0;
			return 0;
		}
		snprintf(err, errlen, "\"%s\" needs a unit: a duration such as %ss or 500ms", q.num_text, q.num_text);
		return -EINVAL;
	}
	u = find_unit(duration_units, q.unit);
	if (q.has_slash || !u) {
		const char *cls = unit_class(&q);
		if (cls)
			snprintf(err, errlen, "\"%s\" is %s, but a duration is needed here, such as %ss or 500ms",
			         shown, cls, q.num_text);
		else
			snprintf(err, errlen, "unknown duration unit in \"%s\": use ms, s, m (or min), h or d", shown);
		return -EINVAL;
	}
	ns = q.num * u->factor;
	if (!(ns < 9223372036854775807.0)) {
		snprintf(err, errlen, "\"%s\" is too long", shown);
		return -EINVAL;
	}
	*out_ns = (int64_t)(ns + 0.5);
	return 0;
}

/* Writes v with at most maxdec decimals and no trailing zeros ("1.5", "12"). */
static void fmt_trim(char *buf, size_t buflen, double v, int maxdec, const char *suffix)
{
	char num[64];
	size_t n;

	snprintf(num, sizeof(num), "%.*f", maxdec, v);
	if (strchr(num, '.')) {
		n = strlen(num);
		while (n > 0 && num[n - 1] == '0')
			num[--n] = '\0';
		if (n > 0 && num[n - 1] == '.')
			num[--n] = '\0';
	}
	if (strcmp(num, "-0") == 0)
		strcpy(num, "0");
	snprintf(buf, buflen, "%s%s", num, suffix);
}

/* Bytes with a decimal prefix and one decimal: "512.0MB" (the runtime's own
 * counters use MB = 10^6). */
static void fmt_bytes(char *buf, size_t buflen, double v, const char *suffix)
{
	static const char *const pfx[] = {"KB", "MB", "GB", "TB", "PB"};
	double a = dabs(v);
	char unit[8];
	int i = -1;

	if (a < 1000.0) {
		snprintf(unit, sizeof(unit), "B%s", suffix);
		fmt_trim(buf, buflen, v, 1, unit);
		return;
	}
	/* Round first so that 999.96KB is shown as 1.0MB, not 1000.0KB. */
	while (i < 4 && (i < 0 || a >= 999.95)) {
		a /= 1000.0;
		v /= 1000.0;
		i++;
	}
	snprintf(buf, buflen, "%.1f%s%s", v, pfx[i], suffix);
}

const char *units_format(double value, enum unit_kind kind, char *buf, size_t buflen)
{
	if (!buf || buflen == 0)
		return "";
	if (!isfinite(value)) {
		snprintf(buf, buflen, "%s", isnan(value) ? "nan" : value > 0 ? "inf" : "-inf");
		return buf;
	}
	switch (kind) {
	case UNIT_BYTES:
		fmt_bytes(buf, buflen, value, "");
		break;
	case UNIT_BYTES_PER_SEC:
		fmt_bytes(buf, buflen, value, "/s");
		break;
	case UNIT_MS:
		if (dabs(value) < 1000.0)
			fmt_trim(buf, buflen, value, dabs(value) < 10.0 ? 2 : 0, "ms");
		else
			fmt_trim(buf, buflen, value / 1000.0, 2, "s");
		break;
	case UNIT_PERCENT:
		fmt_trim(buf, buflen, value, 1, "%");
		break;
	case UNIT_PER_SEC:
		/* Slow rates read better per minute or hour: 0.1667/s is "10/min". */
		if (value == 0.0 || dabs(value) >= 1.0)
			fmt_trim(buf, buflen, value, 2, "/s");
		else if (dabs(value) * 60.0 >= 1.0)
			fmt_trim(buf, buflen, value * 60.0, 2, "/min");
		else
			fmt_trim(buf, buflen, value * 3600.0, 2, "/h");
		break;
	case UNIT_COUNT:
		fmt_trim(buf, buflen, value, 2, "");
		break;
	case UNIT_NONE:
	default:
		fmt_trim(buf, buflen, value, 3, "");
		break;
	}
	return buf;
}

const char *units_format_duration(int64_t ns, char *buf, size_t buflen)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} units[] = {{86400000000000LL, "d"},
	             {3600000000000LL, "h"},
	             {60000000000LL, "m"},
	             {1000000000LL, "s"},
	             {1000000LL, "ms"}};

	if (!buf || buflen == 0)
		return "";
	if (ns == 0) {
		snprintf(buf, buflen, "0");
		return buf;
	}
	for (size_t i = 0; ns > 0 && i < sizeof(units) / sizeof(units[0]); i++)
		if (ns % units[i].ns == 0) {
			snprintf(buf, buflen, "%lld%s", (long long)(ns / units[i].ns), units[i].unit);
			return buf;
		}
	return units_format((double)ns / 1e6, UNIT_MS, buf, buflen);
}

const char *units_name(enum unit_kind kind)
{
	switch (kind) {
	case UNIT_NONE:
		return "number";
	case UNIT_BYTES:
		return "bytes";
	case UNIT_BYTES_PER_SEC:
		return "bytes/s";
	case UNIT_MS:
		return "ms";
	case UNIT_PERCENT:
		return "percent";
	case UNIT_COUNT:
		return "count";
	case UNIT_PER_SEC:
		return "1/s";
	}
	return "unknown";
}
