/* The one-line condition grammar shared by --when and rule files, and the
 * small helpers around the rule model (dump types, rule names, needs):
 *
 *     METRIC OP VALUE [for DURATION]     OP: > >= < <= above below
 *
 * Whitespace is optional around the operator and allowed between a number and
 * its unit ("loh-size>200MB", "loh-size > 200 MB for 5 s"). Keywords ("for",
 * "above", "below") are matched without regard to case. Pure. */
#include "dumpwatch/rules.h"

#include "dumpwatch/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/units.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum(char c)
{
	return is_alpha(c) || (c >= '0' && c <= '9');
}

static const char *skip_space(const char *p)
{
	while (is_space(*p))
		p++;
	return p;
}

/* True when p starts with the keyword kw as a whole word. */
static int is_word(const char *p, const char *kw)
{
	size_t i;

	for (i = 0; kw[i]; i++)
		if (text_lower(p[i]) != kw[i])
			return 0;
	return !is_alnum(p[i]) && p[i] != '_';
}

/* The extent of a quantity at s: NUMBER [spaces] [UNIT] [spaces / spaces
 * TIME-UNIT]. The word "for" is never taken as a unit. Something that does not
 * start like a number extends to the next space, for units.c to reject. */
static size_t scan_quantity(const char *s)
{
	size_t i = 0, k, end;

	while (s[i] && strchr("0123456789.,+-", s[i]))
		i++;
	if (i == 0) {
		while (s[i] && !is_space(s[i]))
			i++;
		return i;
	}
	end = i;
	k = (size_t)(skip_space(s + i) - s);
	if ((is_alpha(s[k]) || s[k] == '%') && !is_word(s + k, "for")) {
		while (is_alnum(s[k]) || s[k] == '%')
			k++;
		end = k;
		k = (size_t)(skip_space(s + k) - s);
	}
	if (s[k] == '/') {
		k = (size_t)(skip_space(s + k + 1) - s);
		while (is_alpha(s[k]))
			k++;
		end = k;
	}
	return end;
}

/* How a metric's unit is described after a bad value. */
static const char *unit_phrase(enum unit_kind u)
{
	switch (u) {
	case UNIT_BYTES:
		return "is measured in bytes";
	case UNIT_BYTES_PER_SEC:
		return "is measured in bytes per second";
	case UNIT_MS:
		return "is measured in milliseconds";
	case UNIT_PERCENT:
		return "is a percentage";
	case UNIT_COUNT:
		return "is a count";
	case UNIT_PER_SEC:
		return "is measured in events per second";
	case UNIT_NONE:
	default:
		return "has no known unit";
	}
}

const char *rule_unit_example(enum unit_kind u)
{
	switch (u) {
	case UNIT_BYTES:
		return "200MB";
	case UNIT_BYTES_PER_SEC:
		return "50MB/s";
	case UNIT_MS:
		return "200ms";
	case UNIT_PERCENT:
		return "90%";
	case UNIT_COUNT:
		return "10";
	case UNIT_PER_SEC:
		return "10/s";
	case UNIT_NONE:
	default:
		return "100";
	}
}

/* Reads a pattern: quoted with ' or " (no escapes; the other quote may
 * appear inside), or, when bare is set, a run of characters up to a space or
 * an operator. Returns the bytes consumed, 0 when there is none, -1 when a
 * quote is not closed or the pattern is too long. */
static int read_pattern(const char *p, int bare, char *out, size_t outlen)
{
	size_t n;

	if (*p == '\'' || *p == '"') {
		const char *end = strchr(p + 1, *p);
		if (!end)
			return -1;
		n = (size_t)(end - p - 1);
		if (n >= outlen)
			return -1;
		memcpy(out, p + 1, n);
		out[n] = '\0';
		return (int)(n + 2);
	}
	if (!bare)
		return 0;
	n = 0;
	while (p[n] && !is_space(p[n]) && !strchr("<>=", p[n]))
		n++;
	if (n >= outlen)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return (int)n;
}

/* "exception [TYPE] [message 'GLOB'] [> | >= N] [in DURATION]" (rules.h),
 * p just past the word "exception". */
static int parse_exception(const char *p, struct rule_cond *c, char *err, size_t errlen)
{
	char type[CATALOG_NAME_MAX] = "", msg[CATALOG_NAME_MAX] = "", part[RULE_TEXT_MAX], uerr[256], q[80];
	int64_t window = RULE_EXC_WINDOW_NS;
	double count = 1;
	enum cond_op op = COND_GE;
	const char *start;
	size_t n;
	int r;

	p = skip_space(p);
	if (*p && !strchr("<>=", *p) && !is_word(p, "message") && !is_word(p, "in") && !is_word(p, "for")) {
		r = read_pattern(p, 1, type, sizeof(type));
		if (r < 0) {
			snprintf(err, errlen, "the exception's type pattern is too long or its quote is not closed");
			return -EINVAL;
		}
		p = skip_space(p + r);
	}
	if (is_word(p, "message")) {
		p = skip_space(p + 7);
		r = read_pattern(p, 0, msg, sizeof(msg));
		if (r <= 0) {
			snprintf(
			    err, errlen,
			    "\"message\" takes a quoted pattern, as in message '*timed out*' (at most %d characters)",
			    CATALOG_NAME_MAX - 1);
			return -EINVAL;
		}
		p = skip_space(p + r);
	}
	if (*p == '>' || *p == '<' || *p == '=' || *p == '!') {
		if (p[0] == '>' && p[1] == '=') {
			p += 2;
		} else if (p[0] == '>' && p[1] != '>') {
			op = COND_GT;
			p += 1;
		} else {
			snprintf(err, errlen,
			         "an exception condition counts up to a number: use >= N or > N, as in exception "
			         "TimeoutException >= 3 in 1m");
			return -EINVAL;
		}
		p = skip_space(p);
		start = p;
		n = 0;
		while (p[n] && !is_space(p[n]))
			n++;
		memcpy(part, start, n);
		part[n] = '\0';
		count = -1;
		if (n > 0 && n < 6 && strspn(part, "0123456789") == n)
			count = (double)atoi(part);
		if (count < (op == COND_GT ? 0 : 1) || count > CATALOG_EXC_COUNT_MAX - (op == COND_GT)) {
			text_quote(q, sizeof(q), part, n, 60);
			snprintf(err, errlen, "the count of exceptions must be a whole number from 1 to %d, not \"%s\"",
			         CATALOG_EXC_COUNT_MAX, q);
			return -EINVAL;
		}
		p = skip_space(start + n);
	}
	if (is_word(p, "in")) {
		p = skip_space(p + 2);
		start = p;
		n = scan_quantity(p);
		memcpy(part, start, n);
		part[n] = '\0';
		if (units_parse_duration(part, &window, uerr, sizeof(uerr)) < 0 || window < RULE_EXC_WINDOW_MIN_NS ||
		    window > RULE_EXC_WINDOW_MAX_NS) {
			text_quote(q, sizeof(q), part, n, 60);
			snprintf(err, errlen,
			         "\"in\" takes the window to count exceptions in, from 1s to 24h, not \"%s\"", q);
			return -EINVAL;
		}
		p = skip_space(start + n);
	}
	if (is_word(p, "for")) {
		snprintf(err, errlen, "an exception condition counts in a window: write \"in 1m\", not \"for\"");
		return -EINVAL;
	}
	if (*p) {
		text_quote(q, sizeof(q), p, strlen(p), 60);
		snprintf(err, errlen,
		         "unexpected \"%s\": an exception condition is exception [TYPE] [message 'PATTERN'] [>= N] "
		         "[in DURATION]",
		         q);
		return -EINVAL;
	}
	r = catalog_exception(type, msg, window, &c->metric, err, errlen);
	if (r < 0)
		return r;
	c->op = op;
	c->threshold = count;
	c->for_ns = 0;
	return 0;
}

/* A meter's threshold, whose unit says what the instrument's values are
 * converted to: a plain number (the instrument's own unit), a duration, a
 * size, a rate or a percentage. */
static int meter_value(const char *text, struct rule_cond *c, char *err, size_t errlen)
{
	static const enum unit_kind kinds[] = {UNIT_NONE,          UNIT_MS,      UNIT_BYTES,
	                                       UNIT_BYTES_PER_SEC, UNIT_PER_SEC, UNIT_PERCENT};
	char e[256];

	if (c->metric.stat == MS_COUNT) {
		c->metric.unit = UNIT_COUNT;
		return units_parse_value(text, UNIT_COUNT, &c->threshold, err, errlen);
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (units_parse_value(text, kinds[i], &c->threshold, e, sizeof(e)) == 0) {
			c->metric.unit = kinds[i];
			return 0;
		}
	snprintf(err, errlen,
	         "a meter's threshold is a number in the instrument's own unit, or a duration (2s), a size (100MB), "
	         "a rate (5MB/s, 100/s) or a percentage, which the instrument's unit is converted to");
	return -EINVAL;
}

/* OP VALUE [for DURATION] at p, into c (whose metric is set), to the end of
 * the text. */
static int parse_comparison(const char *p, struct rule_cond *cp, char *err, size_t errlen)
{
	struct rule_cond c = *cp;
	char part[RULE_TEXT_MAX], q1[80], q2[80], uerr[256];
	const char *start;
	size_t n;
	int r;

	/* OP */
	p = skip_space(p);
	text_quote(q1, sizeof(q1), c.metric.name, sizeof(c.metric.name), 60);
	if (p[0] == '>' && p[1] == '=') {
		c.op = COND_GE;
		p += 2;
	} else if (p[0] == '<' && p[1] == '=') {
		c.op = COND_LE;
		p += 2;
	} else if (p[0] == '>') {
		c.op = COND_GT;
		p += 1;
	} else if (p[0] == '<') {
		c.op = COND_LT;
		p += 1;
	} else if (is_word(p, "above")) {
		c.op = COND_GT;
		p += 5;
	} else if (is_word(p, "below")) {
		c.op = COND_LT;
		p += 5;
	} else if (p[0] == '=' || p[0] == '!') {
		n = strspn(p, "=!<>");
		text_quote(q2, sizeof(q2), p, n, 60);
		snprintf(err, errlen, "operator \"%s\" is not supported: use >, >=, < or <= (or above, below)", q2);
		return -EINVAL;
	} else {
		snprintf(err, errlen,
		         "missing operator after \"%s\": use >, >=, < or <= (or above, below), as in %s > %s", q1, q1,
		         rule_unit_example(c.metric.unit));
		return -EINVAL;
	}
	if (*p == '=' || *p == '<' || *p == '>') {
		start = p;
		while (*p && strchr("=!<>", *p))
			p++;
		text_quote(q2, sizeof(q2), start, (size_t)(p - start), 60);
		snprintf(err, errlen, "unexpected \"%s\" after the operator: use >, >=, < or <=", q2);
		return -EINVAL;
	}

	/* VALUE */
	p = skip_space(p);
	if (*p == '\0' || is_word(p, "for")) {
		snprintf(err, errlen, "missing value after the operator: %s %s, as in %s > %s", q1,
		         unit_phrase(c.metric.unit), q1, rule_unit_example(c.metric.unit));
		return -EINVAL;
	}
	start = p;
	n = scan_quantity(p);
	memcpy(part, start, n);
	part[n] = '\0';
	if (c.metric.id == M_METER)
		r = meter_value(part, &c, uerr, sizeof(uerr));
	else
		r = units_parse_value(part, c.metric.unit, &c.threshold, uerr, sizeof(uerr));
	if (r < 0) {
		if (c.metric.id == M_METER)
			snprintf(err, errlen, "%s", uerr);
		else
			snprintf(err, errlen, "%s (%s %s)", uerr, q1, unit_phrase(c.metric.unit));
		return r;
	}
	p = skip_space(start + n);

	/* [for DURATION] */
	if (is_word(p, "for")) {
		p = skip_space(p + 3);
		if (*p == '\0') {
			snprintf(err, errlen, "\"for\" needs a duration, as in for 10s or for 500ms");
			return -EINVAL;
		}
		start = p;
		n = scan_quantity(p);
		memcpy(part, start, n);
		part[n] = '\0';
		r = units_parse_duration(part, &c.for_ns, uerr, sizeof(uerr));
		if (r < 0) {
			snprintf(err, errlen, "after \"for\": %s", uerr);
			return r;
		}
		p = skip_space(start + n);
	}

	if (*p != '\0') {
		text_quote(q2, sizeof(q2), p, strlen(p), 60);
		snprintf(err, errlen, "unexpected \"%s\" at the end: a condition is METRIC OP VALUE [for DURATION]",
		         q2);
		return -EINVAL;
	}
	*cp = c;
	return 0;
}

/* "meter METER/INSTRUMENT[TAGS] [STAT] OP VALUE [for DURATION]" (rules.h),
 * p just past the word "meter". */
static int parse_meter(const char *p, struct rule_cond *c, char *err, size_t errlen)
{
	char spec[RULE_TEXT_MAX], q[80];
	const char *start;
	size_t n;
	int stat = MS_VALUE, r;

	p = skip_space(p);
	start = p;
	while (*p && !is_space(*p) && !strchr("<>=![", *p))
		p++;
	if (*p == '[') {
		const char *close = strchr(p, ']');
		p = close ? close + 1 : p + strlen(p);
		while (*p && !is_space(*p) && !strchr("<>=!", *p))
			p++; /* for catalog_meter to refuse */
	}
	n = (size_t)(p - start);
	memcpy(spec, start, n);
	spec[n] = '\0';
	p = skip_space(p);
	n = 0;
	while (is_alnum(p[n]))
		n++;
	if (n > 0 && (p[n] == '\0' || is_space(p[n]) || strchr("<>=!", p[n])) && !is_word(p, "above") &&
	    !is_word(p, "below")) {
		stat = catalog_meter_stat_parse(p, n);
		if (stat < 0) {
			text_quote(q, sizeof(q), p, n, 60);
			snprintf(err, errlen,
			         "unknown statistic \"%s\" of a meter: use value, rate, p50, p95, p99, count or sum",
			         q);
			return -EINVAL;
		}
		p += n;
	}
	r = catalog_meter(spec, (enum meter_stat)stat, UNIT_NONE, &c->metric, err, errlen);
	if (r < 0)
		return r;
	return parse_comparison(p, c, err, errlen);
}

int rule_cond_parse(const char *text, struct rule_cond *out, char *err, size_t errlen)
{
	struct rule_cond c;
	char buf[RULE_TEXT_MAX], part[RULE_TEXT_MAX];
	const char *p, *metric_end;
	size_t len, n;
	int r;

	if (!text)
		text = "";
	text = skip_space(text);
	len = strlen(text);
	while (len > 0 && is_space(text[len - 1]))
		len--;
	if (len >= RULE_TEXT_MAX) {
		snprintf(err, errlen, "condition is too long (at most %d characters)", RULE_TEXT_MAX - 1);
		return -EINVAL;
	}
	if (len == 0) {
		snprintf(err, errlen, "empty condition: write METRIC OP VALUE [for DURATION], as in loh-size > 200MB");
		return -EINVAL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	memset(&c, 0, sizeof(c));
	memcpy(c.text, buf, len + 1);

	/* "exception" alone or before a space: exception-rate is a metric. */
	if (is_word(buf, "exception") && (buf[9] == '\0' || is_space(buf[9]))) {
		r = parse_exception(buf + 9, &c, err, errlen);
		if (r < 0)
			return r;
		*out = c;
		return 0;
	}
	if (is_word(buf, "meter") && (buf[5] == '\0' || is_space(buf[5]))) {
		r = parse_meter(buf + 5, &c, err, errlen);
		if (r < 0)
			return r;
		*out = c;
		return 0;
	}

	/* METRIC: up to a space or an operator character. */
	p = buf;
	while (*p && !is_space(*p) && !strchr("<>=!", *p))
		p++;
	metric_end = p;
	n = (size_t)(metric_end - buf);
	if (n == 0) {
		snprintf(err, errlen,
		         "missing metric before the operator: write METRIC OP VALUE, as in loh-size > 200MB");
		return -EINVAL;
	}
	memcpy(part, buf, n);
	part[n] = '\0';
	r = catalog_resolve(part, &c.metric, err, errlen);
	if (r < 0)
		return r;

	r = parse_comparison(p, &c, err, errlen);
	if (r < 0)
		return r;
	*out = c;
	return 0;
}

int rule_cond_test(const struct rule_cond *c, double value)
{
	/* Comparisons with NaN are false, so a NaN sample never holds. */
	switch (c->op) {
	case COND_GT:
		return value > c->threshold;
	case COND_GE:
		return value >= c->threshold;
	case COND_LT:
		return value < c->threshold;
	case COND_LE:
		return value <= c->threshold;
	}
	return 0;
}

static const char *const dump_type_names[] = {
    [DUMP_NORMAL] = "normal",
    [DUMP_WITHHEAP] = "withheap",
    [DUMP_TRIAGE] = "triage",
    [DUMP_FULL] = "full",
    [DUMP_GCDUMP] = "gcdump",
};

int rule_dump_type_parse(const char *text, enum dump_type *out)
{
	if (!text)
		return -EINVAL;
	for (int t = DUMP_NORMAL; t <= DUMP_GCDUMP; t++) {
		const char *a = text, *b = dump_type_names[t];
		while (*a && *b && text_lower(*a) == *b) {
			a++;
			b++;
		}
		if (*a == '\0' && *b == '\0') {
			*out = (enum dump_type)t;
			return 0;
		}
	}
	return -EINVAL;
}

const char *rule_dump_type_name(enum dump_type t)
{
	if (t >= DUMP_NORMAL && t <= DUMP_GCDUMP)
		return dump_type_names[t];
	return "unknown";
}

/* Appends s to the name being built, collapsing separators: no '-' or '.'
 * at the start, never two '-' in a row. Stops at cap - 1 characters. */
static void name_append(char *out, size_t *len, size_t cap, const char *s)
{
	for (; *s && *len + 1 < cap; s++) {
		if ((*s == '-' || *s == '.') && *len == 0)
			continue;
		if (*s == '-' && out[*len - 1] == '-')
			continue;
		out[(*len)++] = *s;
	}
	out[*len] = '\0';
}

void rule_name_from_text(const char *text, char *out, size_t outlen)
{
	size_t cap = outlen < RULE_NAME_MAX ? outlen : RULE_NAME_MAX, len = 0;
	char one[2] = {0, 0};

	if (cap == 0)
		return;
	out[0] = '\0';
	for (const char *p = text ? text : ""; *p && len + 1 < cap; p++) {
		if (p[0] == '>' && p[1] == '=') {
			name_append(out, &len, cap, "-ge-");
			p++;
		} else if (p[0] == '<' && p[1] == '=') {
			name_append(out, &len, cap, "-le-");
			p++;
		} else if (p[0] == '>') {
			name_append(out, &len, cap, "-gt-");
		} else if (p[0] == '<') {
			name_append(out, &len, cap, "-lt-");
		} else if (p[0] == '%') {
			name_append(out, &len, cap, "pct");
		} else {
			one[0] = (is_alnum(*p) || *p == '.' || *p == '_' || *p == '-') ? *p : '-';
			name_append(out, &len, cap, one);
		}
	}
	while (len > 0 && (out[len - 1] == '-' || out[len - 1] == '.'))
		out[--len] = '\0';
	if (len == 0)
		snprintf(out, cap, "%s", "rule");
}

unsigned rule_needs(const struct rule *r)
{
	unsigned needs = 0;

	if (!r)
		return 0;
	for (uint32_t i = 0; i < r->n_conds && i < RULE_MAX_CONDS; i++)
		needs |= r->conds[i].metric.needs;
	return needs;
}
