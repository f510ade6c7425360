/* dotnet-monitor collection rules to dumpwatch rule files (dmimport.h).
 *
 * Follows dotnet-monitor's documentation of its settings:
 * documentation/configuration/collection-rule-configuration.md (Filters,
 * Triggers, Actions, Limits, Collection Rule Defaults),
 * documentation/collectionrules/triggershortcuts.md (CPUUsage, GCHeapSize,
 * ThreadpoolQueueLength and their defaults) and
 * documentation/configuration/default-process-configuration.md (process
 * filters: Key/Value/MatchType and the shorthand form; Key defaults to
 * ProcessId, MatchType to Exact, both matched without regard to case).
 *
 * Design: each collection rule is converted on its own into a small struct
 * (the filter globs, the conditions in the --when grammar, dump type and
 * limits); anything that would make the dumpwatch rule guard other processes
 * or fire on other values than dotnet-monitor's (a filter or trigger that
 * cannot be expressed) refuses the whole rule, while what only loses a side
 * effect (an egress provider, another action, RuleDuration) is a note and the
 * rule is still written. The rule text is built with json-c and then parsed
 * with rulefile_parse, so a file handed out is one `dumpwatch check` accepts.
 * Pure: no I/O, no clock, no global state. */
#include "dumpwatch/dmimport.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/rulefile.h"
#include "dumpwatch/rules.h"
#include "dumpwatch/units.h"

#define NS_PER_S 1000000000LL
#define WINDOW_DEFAULT_NS (60 * NS_PER_S) /* SlidingWindowDuration's default */
#define WINDOW_MIN_NS NS_PER_S            /* its documented range: 1 s .. 1 day */
#define WINDOW_MAX_NS (86400 * NS_PER_S)
#define ACTION_COUNT_DEFAULT 5 /* Limits.ActionCount's documented default */
#define NOTES_PER_RULE 24      /* more are summed up in one note */
#define LIST_MAX 64            /* filters or actions of one rule */
#define FLAT_DEPTH_MAX 16      /* "__" segments of one ConfigMap key */

/* ---- small helpers ------------------------------------------------------ */

/* Copies src for a message: at most 60 characters, bytes that are not
 * printable ASCII as '?', "..." when cut. */
static void printable(char *dst, size_t dstlen, const char *src)
{
	size_t n = strnlen(src, 60);

	snprintf(dst, dstlen, "%.*s%s", (int)n, src, src[n] ? "..." : "");
	for (char *p = dst; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
}

/* The member of obj named key without regard to case (.NET configuration
 * keys are case-insensitive), or NULL. */
static json_object *ci_get(json_object *obj, const char *key)
{
	if (!obj || !json_object_is_type(obj, json_type_object))
		return NULL;
	json_object_object_foreach(obj, k, v)
	{
		if (strcasecmp(k, key) == 0)
			return v;
	}
	return NULL;
}

static const char *str_of(json_object *v)
{
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* A number as dotnet-monitor's binder reads one: a JSON number or a string
 * holding one ("70", as ConfigMaps write every value). 0 or -EINVAL. */
static int num_of(json_object *v, double *out)
{
	const char *s;
	char *end;
	double d;

	if (!v)
		return -EINVAL;
	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		d = json_object_get_double(v);
	} else if ((s = str_of(v)) != NULL) {
		while (*s == ' ')
			s++;
		if (*s == '\0' || strlen(s) > 64)
			return -EINVAL;
		errno = 0;
		d = strtod(s, &end);
		while (*end == ' ')
			end++;
		if (errno || *end != '\0')
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (!isfinite(d))
		return -EINVAL;
	*out = d;
	return 0;
}

/* The items of a list: a JSON array, or an object with keys "0", "1", ... as
 * the flattened ConfigMap form gives. At most max; returns the count or
 * -EINVAL (not a list, a key that is not an index, too many). */
static int list_of(json_object *v, json_object **items, int max)
{
	int n = 0;

	if (json_object_is_type(v, json_type_array)) {
		size_t len = json_object_array_length(v);
		if (len > (size_t)max)
			return -EINVAL;
		for (size_t i = 0; i < len; i++)
			items[n++] = json_object_array_get_idx(v, i);
		return n;
	}
	if (!json_object_is_type(v, json_type_object))
		return -EINVAL;
	for (int i = 0; i < max; i++) {
		char key[16];
		json_object *it;

		snprintf(key, sizeof(key), "%d", i);
		if (!json_object_object_get_ex(v, key, &it))
			break;
		items[n++] = it;
	}
	if ((size_t)n != (size_t)json_object_object_length(v))
		return -EINVAL;
	return n;
}

/* A number as dumpwatch's units.c reads it: plain decimal, no exponent. */
static int format_number(double v, char *buf, size_t len)
{
	char *p;

	if (!isfinite(v) || fabs(v) >= 1e15)
		return -ERANGE;
	snprintf(buf, len, "%.9f", v);
	p = buf + strlen(buf) - 1;
	while (*p == '0')
		*p-- = '\0';
	if (*p == '.')
		*p = '\0';
	if (v != 0 && (strcmp(buf, "0") == 0 || strcmp(buf, "-0") == 0))
		return -ERANGE;
	if (strcmp(buf, "-0") == 0)
		snprintf(buf, len, "0");
	return 0;
}

int dmimport_parse_timespan(const char *text, long long *out_ns)
{
	long long days = 0, h, m, s = 0, frac = 0, scale = NS_PER_S;
	const char *p = text;
	char *end;

	if (!text || !isdigit((unsigned char)*p) || strlen(text) > 32)
		return -EINVAL;
	h = strtoll(p, &end, 10);
	if (*end == '\0') { /* a whole number of days */
		if (h > 36500)
			return -EINVAL;
		*out_ns = h * 86400 * NS_PER_S;
		return 0;
	}
	if (*end == '.') { /* "d.hh:mm..." */
		days = h;
		p = end + 1;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		h = strtoll(p, &end, 10);
	}
	if (*end != ':' || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	m = strtoll(end + 1, &end, 10);
	if (*end == ':') {
		if (!isdigit((unsigned char)end[1]))
			return -EINVAL;
		s = strtoll(end + 1, &end, 10);
		if (*end == '.') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			for (; isdigit((unsigned char)*p); p++) {
				if (scale >= 10) { /* digits past 100 ns are dropped */
					scale /= 10;
					frac += (*p - '0') * scale;
				}
			}
			end = (char *)p;
		}
	}
	if (*end != '\0' || days > 36500 || h > 23 || m > 59 || s > 59)
		return -EINVAL;
	*out_ns = ((days * 24 + h) * 60 + m) * 60 * NS_PER_S + s * NS_PER_S + frac;
	return 0;
}

/* ---- notes --------------------------------------------------------------- */

struct conv_ctx {
	struct dmimport_result *res;
	json_object *defaults; /* CollectionRuleDefaults, or NULL */
	const char *source;
	char rule[72]; /* the rule being converted, printable */
	int rule_notes;
	int last;   /* the note saying a rule is not imported: never capped */
	int failed; /* -ENOMEM */
};

__attribute__((format(printf, 2, 3))) static void note(struct conv_ctx *c, const char *fmt, ...)
{
	struct dmimport_result *r = c->res;
	struct dmimport_note *n, *grown;
	va_list ap;

	int capped = 0;

	/* A rule's notes are bounded; whether it was written is always said. */
	if (c->rule[0] && !c->last && ++c->rule_notes > NOTES_PER_RULE) {
		if (c->rule_notes > NOTES_PER_RULE + 1)
			return;
		capped = 1;
	}
	if ((r->n_notes & 63) == 0) {
		grown = realloc(r->notes, (r->n_notes + 64) * sizeof(*grown));
		if (!grown) {
			c->failed = -ENOMEM;
			return;
		}
		r->notes = grown;
	}
	n = &r->notes[r->n_notes++];
	snprintf(n->rule, sizeof(n->rule), "%s", c->rule);
	if (capped) {
		snprintf(n->text, sizeof(n->text), "more not carried over: only the first %d notes of a rule are shown",
		         NOTES_PER_RULE);
	} else {
		va_start(ap, fmt);
		vsnprintf(n->text, sizeof(n->text), fmt, ap);
		va_end(ap);
	}
	for (char *p = n->text; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
}

/* ---- one rule ------------------------------------------------------------ */

enum name_src { NAME_NONE, NAME_PROCESS, NAME_ENTRY };

struct conv {
	char name_glob[RULEFILE_GLOB_MAX];
	enum name_src name_src;
	int name_is_host; /* ProcessName "dotnet", Exact */
	char cmdline[RULEFILE_GLOB_MAX];
	int has_pid;
	long pid;
	char when[RULE_MAX_CONDS][RULE_TEXT_MAX];
	int n_when;
	long long trigger_window_ns;
	const char *dump_type;
	long max_dumps;
	long long window_ns;
	char why[400]; /* why the rule is not written */
};

__attribute__((format(printf, 2, 3))) static int refuse(struct conv *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* value as a glob that matches it exactly (Exact) or anywhere (Contains). */
static int make_glob(const char *value, int contains, char *out, size_t len)
{
	size_t o = 0;

	if (contains)
		out[o++] = '*';
	for (const char *p = value; *p; p++) {
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		if (strchr("*?[]\\", *p))
			out[o++] = '\\';
		out[o++] = *p;
	}
	if (contains)
		out[o++] = '*';
	out[o] = '\0';
	return 0;
}

static int set_name(struct conv *v, struct conv_ctx *c, const char *glob, enum name_src src, int is_host,
                    const char *what)
{
	char q1[80], q2[80];

	if (v->name_src == NAME_NONE || strcmp(v->name_glob, glob) == 0) {
		snprintf(v->name_glob, sizeof(v->name_glob), "%s", glob);
		v->name_src = src;
		v->name_is_host = is_host;
		return 0;
	}
	/* "dotnet app.dll": dotnet-monitor's ProcessName is the host, dumpwatch's
	 * process.name the entry assembly; the assembly filter says more. */
	if (src == NAME_ENTRY && v->name_src == NAME_PROCESS && v->name_is_host) {
		note(c,
		     "filter ProcessName \"dotnet\" dropped: dumpwatch names a process started as \"dotnet app.dll\" "
		     "by its entry assembly, which the ManagedEntryPointAssemblyName filter gives");
		snprintf(v->name_glob, sizeof(v->name_glob), "%s", glob);
		v->name_src = src;
		v->name_is_host = 0;
		return 0;
	}
	if (src == NAME_PROCESS && is_host && v->name_src == NAME_ENTRY) {
		note(c,
		     "filter ProcessName \"dotnet\" dropped: dumpwatch names a process started as \"dotnet app.dll\" "
		     "by its entry assembly, which the ManagedEntryPointAssemblyName filter gives");
		return 0;
	}
	printable(q1, sizeof(q1), v->name_glob);
	printable(q2, sizeof(q2), glob);
	return refuse(v, "filters give process.name both \"%s\" and \"%s\" (%s): one glob cannot say both", q1, q2,
	              what);
}

static int conv_filter(struct conv *v, struct conv_ctx *c, json_object *f, int idx)
{
	static const char *const keys[] = {"ProcessId", "ProcessName", "CommandLine", "ManagedEntryPointAssemblyName",
	                                   NULL};
	const char *key = NULL, *value = NULL, *mt;
	char glob[RULEFILE_GLOB_MAX], q[80], buf[64];
	json_object *kv = ci_get(f, "Key"), *vv = ci_get(f, "Value"), *mv = ci_get(f, "MatchType");
	int contains = 0, ki = -1;

	if (!json_object_is_type(f, json_type_object))
		return refuse(v, "filter %d is not an object", idx);
	if (kv || vv) {
		key = kv ? str_of(kv) : "ProcessId"; /* the documented default Key */
		if (!key)
			return refuse(v, "filter %d: \"Key\" is not a string", idx);
		if (json_object_is_type(vv, json_type_int)) {
			snprintf(buf, sizeof(buf), "%lld", (long long)json_object_get_int64(vv));
			value = buf;
		} else {
			value = str_of(vv);
		}
	} else {
		json_object_object_foreach(f, k, val)
		{
			if (strcasecmp(k, "MatchType") == 0)
				continue;
			if (key)
				return refuse(v, "filter %d names more than one of ProcessId, ProcessName, CommandLine",
				              idx);
			key = k;
			if (json_object_is_type(val, json_type_int)) {
				snprintf(buf, sizeof(buf), "%lld", (long long)json_object_get_int64(val));
				value = buf;
			} else {
				value = str_of(val);
			}
		}
		if (!key)
			return refuse(v, "filter %d names no process property", idx);
	}
	for (int i = 0; keys[i]; i++)
		if (strcasecmp(key, keys[i]) == 0)
			ki = i;
	printable(q, sizeof(q), key);
	if (ki < 0)
		return refuse(v,
		              "filter %d: unknown key \"%s\" (ProcessId, ProcessName, CommandLine or "
		              "ManagedEntryPointAssemblyName)",
		              idx, q);
	if (!value)
		return refuse(v, "filter %d (%s): the value is missing or not a string", idx, keys[ki]);
	if (mv) {
		if (!(mt = str_of(mv)) || (strcasecmp(mt, "Exact") != 0 && strcasecmp(mt, "Contains") != 0))
			return refuse(v, "filter %d (%s): MatchType must be Exact or Contains", idx, keys[ki]);
		contains = strcasecmp(mt, "Contains") == 0;
	}
	if (ki == 0) { /* ProcessId */
		if (contains)
			return refuse(
			    v,
			    "filter %d: ProcessId with MatchType Contains has no equivalent (process.pid is one "
			    "process id)",
			    idx);
		char *end;
		long pid;

		errno = 0;
		pid = strtol(value, &end, 10);
		if (errno || end == value || *end != '\0' || pid < 1 || pid > 4194304)
			return refuse(v, "filter %d: ProcessId is not a process id", idx);
		if (v->has_pid && v->pid != pid)
			return refuse(v, "filters give two different process ids");
		v->has_pid = 1;
		v->pid = pid;
		note(c,
		     "filter ProcessId %ld: a process id is reused after the process exits; the rule then guards "
		     "whichever process has it",
		     v->pid);
		return 0;
	}
	if (make_glob(value, contains, glob, sizeof(glob)) < 0)
		return refuse(v, "filter %d (%s): the value is too long (at most %d characters)", idx, keys[ki],
		              RULEFILE_GLOB_MAX / 2 - 2);
	if (value[0] == '\0')
		return refuse(v, "filter %d (%s): the value is empty", idx, keys[ki]);
	for (const char *p = value; *p; p++) {
		if (isalpha((unsigned char)*p)) {
			printable(q, sizeof(q), value);
			note(c,
			     "filter %s \"%s\": dotnet-monitor ignores case, dumpwatch's globs do not: the name must "
			     "be written as the process has it",
			     keys[ki], q);
			break;
		}
	}
	if (ki == 2) { /* CommandLine */
		if (v->cmdline[0] && strcmp(v->cmdline, glob) != 0)
			return refuse(v, "two CommandLine filters: process.cmdline is one glob");
		snprintf(v->cmdline, sizeof(v->cmdline), "%s", glob);
		return 0;
	}
	if (ki == 3)
		return set_name(v, c, glob, NAME_ENTRY, 0, "ManagedEntryPointAssemblyName");
	return set_name(v, c, glob, NAME_PROCESS, !contains && strcasecmp(value, "dotnet") == 0, "ProcessName");
}

static int add_when(struct conv *v, const char *text)
{
	struct rule_cond rc;
	char err[256];

	if (v->n_when >= RULE_MAX_CONDS)
		return refuse(v, "more than %d conditions", RULE_MAX_CONDS);
	if (rule_cond_parse(text, &rc, err, sizeof(err)) < 0)
		return refuse(v, "the condition \"%s\" is not one dumpwatch accepts: %s", text, err);
	snprintf(v->when[v->n_when++], RULE_TEXT_MAX, "%s", text);
	return 0;
}

/* GreaterThan / LessThan of a trigger's settings into one or two conditions
 * "LEFT > VALUE[UNIT] for WINDOW"; dflt_gt is the shortcut's default
 * GreaterThan (NAN: none), which a LessThan alone drops. */
static int add_thresholds(struct conv *v, json_object *st, const char *left, const char *unit, double dflt_gt,
                          const char *what)
{
	json_object *gv = ci_get(st, "GreaterThan"), *lv = ci_get(st, "LessThan");
	double gt = NAN, lt = NAN;
	char num[64], dur[32], text[RULE_TEXT_MAX];

	if (gv && json_object_get_type(gv) != json_type_null && num_of(gv, &gt) < 0)
		return refuse(v, "%s: GreaterThan is not a number", what);
	if (lv && json_object_get_type(lv) != json_type_null && num_of(lv, &lt) < 0)
		return refuse(v, "%s: LessThan is not a number", what);
	if (isnan(gt) && isnan(lt))
		gt = dflt_gt;
	if (isnan(gt) && isnan(lt))
		return refuse(v, "%s: neither GreaterThan nor LessThan is given", what);
	if (!isnan(gt) && !isnan(lt) && gt >= lt)
		return refuse(v, "%s: GreaterThan %g is not below LessThan %g, so the value can never be between them",
		              what, gt, lt);
	units_format_duration(v->trigger_window_ns, dur, sizeof(dur));
	for (int i = 0; i < 2; i++) {
		double t = i == 0 ? gt : lt;
		if (isnan(t))
			continue;
		if (format_number(t, num, sizeof(num)) < 0)
			return refuse(v, "%s: the threshold %g is out of range", what, t);
		if ((size_t)snprintf(text, sizeof(text), "%s %s %s%s for %s", left, i == 0 ? ">" : "<", num, unit,
		                     dur) >= sizeof(text))
			return refuse(v, "%s: the condition is longer than %d characters", what, RULE_TEXT_MAX - 1);
		if (add_when(v, text) < 0)
			return -EINVAL;
	}
	return 0;
}

static int trigger_window(struct conv *v, struct conv_ctx *c, json_object *st, const char *what)
{
	json_object *w = ci_get(st, "SlidingWindowDuration");
	const char *s;

	if (!w || json_object_get_type(w) == json_type_null)
		w = ci_get(ci_get(c->defaults, "Triggers"), "SlidingWindowDuration");
	v->trigger_window_ns = WINDOW_DEFAULT_NS;
	if (!w || json_object_get_type(w) == json_type_null)
		return 0;
	if (!(s = str_of(w)) || dmimport_parse_timespan(s, &v->trigger_window_ns) < 0)
		return refuse(v, "%s: SlidingWindowDuration is not a TimeSpan such as \"00:00:10\"", what);
	if (v->trigger_window_ns < WINDOW_MIN_NS || v->trigger_window_ns > WINDOW_MAX_NS)
		return refuse(v, "%s: SlidingWindowDuration must be from 00:00:01 to 1.00:00:00", what);
	return 0;
}

/* The threshold's unit for an EventCounter, so that it means what the number
 * means in dotnet-monitor: the counter's display unit (catalog.c converts
 * System.Runtime's MB counters to bytes, so 500 becomes 500MB). */
static int counter_unit(struct conv *v, const char *name, const char **ret_unit)
{
	struct metric_ref ref;
	char err[256];

	if (catalog_resolve(name, &ref, err, sizeof(err)) < 0)
		return refuse(v, "EventCounter %s: %s", name, err);
	switch (ref.unit) {
	case UNIT_NONE:
	case UNIT_COUNT:
		*ret_unit = "";
		return 0;
	case UNIT_PERCENT:
		*ret_unit = "%";
		return 0;
	case UNIT_MS:
		*ret_unit = "ms";
		return 0;
	case UNIT_BYTES:
		if (ref.scale == 1e6) {
			*ret_unit = "MB";
			return 0;
		}
		if (ref.scale == 1.0) {
			*ret_unit = "B";
			return 0;
		}
		break;
	default:
		break;
	}
	return refuse(v, "EventCounter %s: its unit has no equivalent threshold", name);
}

static void unknown_keys(struct conv_ctx *c, json_object *obj, const char *const *known, const char *where)
{
	char q[80];
	int found;

	if (!json_object_is_type(obj, json_type_object))
		return;
	json_object_object_foreach(obj, k, val)
	{
		(void)val;
		found = 0;
		for (int i = 0; known[i]; i++)
			found |= strcasecmp(k, known[i]) == 0;
		if (!found) {
			printable(q, sizeof(q), k);
			note(c, "%s \"%s\" is not a setting dotnet-monitor documents: ignored", where, q);
		}
	}
}

static int conv_trigger(struct conv *v, struct conv_ctx *c, json_object *t)
{
	static const char *const counter_keys[] = {"ProviderName", "CounterName",           "GreaterThan",
	                                           "LessThan",     "SlidingWindowDuration", NULL};
	static const char *const meter_keys[] = {"MeterName", "InstrumentName",        "GreaterThan",
	                                         "LessThan",  "SlidingWindowDuration", "HistogramPercentile",
	                                         NULL};
	static const char *const shortcut_keys[] = {"GreaterThan", "LessThan", "SlidingWindowDuration", NULL};
	json_object *st = ci_get(t, "Settings");
	const char *type = str_of(ci_get(t, "Type")), *unit = "", *a, *b;
	char left[RULE_TEXT_MAX], q[80];

	if (!t)
		return refuse(v, "it has no Trigger");
	if (!type)
		return refuse(v, "its Trigger has no Type");
	if (st && !json_object_is_type(st, json_type_object) && json_object_get_type(st) != json_type_null)
		return refuse(v, "the Settings of its %s trigger are not an object", type);

	if (strcasecmp(type, "EventCounter") == 0) {
		unknown_keys(c, st, counter_keys, "EventCounter setting");
		a = str_of(ci_get(st, "ProviderName"));
		b = str_of(ci_get(st, "CounterName"));
		if (!a || !b || !*a || !*b)
			return refuse(v, "its EventCounter trigger needs ProviderName and CounterName");
		if ((size_t)snprintf(left, sizeof(left), "%s/%s", a, b) >= CATALOG_NAME_MAX)
			return refuse(v, "its EventCounter's provider and counter names are too long");
		if (trigger_window(v, c, st, "EventCounter") < 0 || counter_unit(v, left, &unit) < 0)
			return -EINVAL;
		return add_thresholds(v, st, left, unit, NAN, "EventCounter");
	}
	if (strcasecmp(type, "EventMeter") == 0) {
		json_object *pv = ci_get(st, "HistogramPercentile");
		const char *stat = "";
		double pct;

		unknown_keys(c, st, meter_keys, "EventMeter setting");
		a = str_of(ci_get(st, "MeterName"));
		b = str_of(ci_get(st, "InstrumentName"));
		if (!a || !b || !*a || !*b)
			return refuse(v, "its EventMeter trigger needs MeterName and InstrumentName");
		if (pv && json_object_get_type(pv) != json_type_null) {
			if (num_of(pv, &pct) < 0)
				return refuse(v, "EventMeter: HistogramPercentile is not a number");
			if (pct == 50)
				stat = " p50";
			else if (pct == 95)
				stat = " p95";
			else if (pct == 99)
				stat = " p99";
			else
				return refuse(v,
				              "EventMeter: HistogramPercentile %g: dumpwatch reads only the runtime's "
				              "published percentiles 50, 95 and 99",
				              pct);
		}
		if ((size_t)snprintf(left, sizeof(left), "meter %s/%s%s", a, b, stat) >= CATALOG_NAME_MAX)
			return refuse(v, "its EventMeter's meter and instrument names are too long");
		if (trigger_window(v, c, st, "EventMeter") < 0)
			return -EINVAL;
		return add_thresholds(v, st, left, "", NAN, "EventMeter");
	}
	if (strcasecmp(type, "CPUUsage") == 0 || strcasecmp(type, "GCHeapSize") == 0 ||
	    strcasecmp(type, "ThreadpoolQueueLength") == 0) {
		int cpu = strcasecmp(type, "CPUUsage") == 0, gc = strcasecmp(type, "GCHeapSize") == 0;

		unknown_keys(c, st, shortcut_keys, "trigger setting");
		if (trigger_window(v, c, st, type) < 0)
			return -EINVAL;
		/* triggershortcuts.md: CPUUsage > 50 (percent), GCHeapSize > 10 (MB),
		 * ThreadpoolQueueLength > 200, each over one minute. */
		return add_thresholds(v, st,
		                      cpu  ? "System.Runtime/cpu-usage"
		                      : gc ? "System.Runtime/gc-heap-size"
		                           : "System.Runtime/threadpool-queue-length",
		                      cpu  ? "%"
		                      : gc ? "MB"
		                           : "",
		                      cpu  ? 50
		                      : gc ? 10
		                           : 200,
		                      type);
	}
	if (strcasecmp(type, "AspNetRequestDuration") == 0)
		return refuse(v, "trigger AspNetRequestDuration (a count of slow requests in a window) has no "
		                 "equivalent; the nearest is a percentile, e.g. \"meter "
		                 "Microsoft.AspNetCore.Hosting/http.server.request.duration p99 > 5s for 1m\"");
	if (strcasecmp(type, "AspNetRequestCount") == 0)
		return refuse(v, "trigger AspNetRequestCount (requests counted in a window) has no equivalent; the "
		                 "nearest is a rate, e.g. \"Microsoft.AspNetCore.Hosting/requests-per-second > 100 for "
		                 "1m\"");
	if (strcasecmp(type, "AspNetResponseStatus") == 0)
		return refuse(v,
		              "trigger AspNetResponseStatus (responses counted in a window) has no equivalent; the "
		              "nearest counts them per collection interval, e.g. \"meter "
		              "Microsoft.AspNetCore.Hosting/http.server.request.duration[http.response.status_code=5*] "
		              "count > 10 for 1m\"");
	printable(q, sizeof(q), type);
	return refuse(v, "trigger type \"%s\" is not one dotnet-monitor documents", q);
}

/* Mini, Triage, WithHeap, Full; and how much each holds, to keep the largest
 * when a rule asks for several. */
static const struct {
	const char *dm, *dw;
	int size;
} dump_types[] = {{"Triage", "triage", 0}, {"Mini", "normal", 1}, {"WithHeap", "withheap", 2}, {"Full", "full", 3}};

static int conv_actions(struct conv *v, struct conv_ctx *c, json_object *acts)
{
	json_object *items[LIST_MAX];
	int n, n_dumps = 0, best = -1;
	char q[80], q2[80];

	if (!acts)
		return refuse(v, "it has no Actions, so no CollectDump");
	if ((n = list_of(acts, items, LIST_MAX)) < 0)
		return refuse(v, "its Actions are not a list (at most %d)", LIST_MAX);
	for (int i = 0; i < n; i++) {
		json_object *st = ci_get(items[i], "Settings");
		const char *type = str_of(ci_get(items[i], "Type")), *dt, *egress;
		int k = 2; /* WithHeap, the documented default */

		if (!type) {
			note(c, "action %d has no Type: ignored", i);
			continue;
		}
		printable(q, sizeof(q), type);
		if (strcasecmp(type, "CollectDump") != 0) {
			if (strcasecmp(type, "Execute") == 0)
				note(c,
				     "action %d (Execute) not carried over: run a program with the rule's \"hooks\" "
				     "(on-fire, on-dump) instead",
				     i);
			else
				note(c, "action %d (%s) not carried over: dumpwatch takes core dumps only", i, q);
			continue;
		}
		n_dumps++;
		if ((dt = str_of(ci_get(st, "Type"))) != NULL) {
			k = -1;
			for (int j = 0; j < 4; j++)
				if (strcasecmp(dt, dump_types[j].dm) == 0)
					k = j;
			if (k < 0) {
				printable(q2, sizeof(q2), dt);
				return refuse(
				    v, "action %d: CollectDump Type \"%s\" is not Mini, Triage, WithHeap or Full", i,
				    q2);
			}
		}
		if (best < 0 || dump_types[k].size > dump_types[best].size)
			best = k;
		egress = str_of(ci_get(st, "Egress"));
		if (!egress)
			egress = str_of(ci_get(ci_get(c->defaults, "Actions"), "Egress"));
		if (egress) {
			printable(q2, sizeof(q2), egress);
			note(c,
			     "action %d: egress provider \"%s\" not carried over: dumps go to the guard's --dump-dir "
			     "(or the rule's dump.dir), and off the node with its --upload",
			     i, q2);
		}
	}
	if (n_dumps == 0)
		return refuse(v, "its Actions hold no CollectDump");
	if (n_dumps > 1)
		note(c, "%d CollectDump actions: dumpwatch takes one dump per fire, of the largest type asked for (%s)",
		     n_dumps, dump_types[best].dm);
	v->dump_type = dump_types[best].dw;
	return 0;
}

static json_object *limit_of(struct conv_ctx *c, json_object *lim, const char *key)
{
	json_object *x = ci_get(lim, key);

	if (!x || json_object_get_type(x) == json_type_null)
		x = ci_get(ci_get(c->defaults, "Limits"), key);
	return x && json_object_get_type(x) != json_type_null ? x : NULL;
}

static int conv_limits(struct conv *v, struct conv_ctx *c, json_object *lim)
{
	static const char *const keys[] = {"ActionCount", "ActionCountSlidingWindowDuration", "RuleDuration", NULL};
	json_object *x;
	const char *s;
	double d;

	if (lim && !json_object_is_type(lim, json_type_object) && json_object_get_type(lim) != json_type_null)
		return refuse(v, "its Limits are not an object");
	unknown_keys(c, lim, keys, "limit");
	v->max_dumps = ACTION_COUNT_DEFAULT;
	if ((x = limit_of(c, lim, "ActionCount")) != NULL) {
		if (num_of(x, &d) < 0 || d != floor(d) || d < 1 || d > 1000000)
			return refuse(v, "Limits.ActionCount must be a whole number from 1 to 1000000");
		v->max_dumps = (long)d;
	}
	v->window_ns = 0;
	if ((x = limit_of(c, lim, "ActionCountSlidingWindowDuration")) != NULL) {
		if (!(s = str_of(x)) || dmimport_parse_timespan(s, &v->window_ns) < 0 || v->window_ns < WINDOW_MIN_NS ||
		    v->window_ns > WINDOW_MAX_NS)
			return refuse(v, "Limits.ActionCountSlidingWindowDuration must be a TimeSpan from 00:00:01 to "
			                 "1.00:00:00");
	}
	if ((x = limit_of(c, lim, "RuleDuration")) != NULL)
		note(c, "Limits.RuleDuration not carried over: a dumpwatch rule guards a process for its whole life "
		        "(set \"enabled\": false, or remove the file, to stop it)");
	return 0;
}

/* The file name: [A-Za-z0-9._-], 1-63 characters, not hidden, not
 * "*.schema" (check and the guard skip "*.schema.json"), unique in res. */
static void rule_file_name(const struct dmimport_result *res, const char *src, char *out, size_t len)
{
	char base[DMIMPORT_RULE_NAME_MAX];
	size_t n = 0;
	int taken;

	for (const char *p = src; *p && n < 55; p++)
		base[n++] = (isalnum((unsigned char)*p) && !(*p & 0x80)) || strchr("._-", *p) ? *p : '_';
	base[n] = '\0';
	if (n == 0)
		snprintf(base, sizeof(base), "rule");
	if (base[0] == '.')
		base[0] = '_';
	if (n >= 7 && strcasecmp(base + n - 7, ".schema") == 0)
		base[n - 7] = '_';
	snprintf(out, len, "%s", base);
	for (int i = 2;; i++) {
		taken = 0;
		for (size_t j = 0; j < res->n_rules; j++)
			taken |= strcmp(res->rules[j].name, out) == 0;
		if (!taken)
			return;
		snprintf(out, len, "%s-%d", base, i);
	}
}

static char *rule_text(const struct conv *v, const char *name, const char *desc)
{
	json_object *root = json_object_new_object(), *proc, *when, *dump, *lim;
	char dur[32];
	char *text = NULL;
	const char *s;

	if (!root)
		return NULL;
	json_object_object_add(root, "name", json_object_new_string(name));
	json_object_object_add(root, "description", json_object_new_string(desc));
	if (v->name_src != NAME_NONE || v->cmdline[0] || v->has_pid) {
		proc = json_object_new_object();
		if (v->name_src != NAME_NONE)
			json_object_object_add(proc, "name", json_object_new_string(v->name_glob));
		if (v->cmdline[0])
			json_object_object_add(proc, "cmdline", json_object_new_string(v->cmdline));
		if (v->has_pid)
			json_object_object_add(proc, "pid", json_object_new_int64(v->pid));
		json_object_object_add(root, "process", proc);
	}
	when = json_object_new_array();
	for (int i = 0; i < v->n_when; i++)
		json_object_array_add(when, json_object_new_string(v->when[i]));
	json_object_object_add(root, "when", when);
	dump = json_object_new_object();
	json_object_object_add(dump, "type", json_object_new_string(v->dump_type));
	json_object_object_add(root, "dump", dump);
	lim = json_object_new_object();
	json_object_object_add(lim, "max-dumps", json_object_new_int64(v->max_dumps));
	units_format_duration(v->window_ns, dur, sizeof(dur));
	json_object_object_add(lim, "window", json_object_new_string(dur));
	units_format_duration(v->trigger_window_ns, dur, sizeof(dur));
	json_object_object_add(lim, "cooldown", json_object_new_string(dur));
	json_object_object_add(root, "limits", lim);
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                             JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s && asprintf(&text, "%s\n", s) < 0)
		text = NULL;
	json_object_put(root);
	return text;
}

static void conv_rule(struct conv_ctx *c, const char *src_name, json_object *r)
{
	static const char *const rule_keys[] = {"Filters", "Trigger", "Actions", "Limits", NULL};
	struct conv v;
	json_object *filters = ci_get(r, "Filters"), *items[LIST_MAX];
	struct dmimport_rule *grown, *out;
	struct file_rule *parsed = NULL;
	struct rule_diag diag;
	size_t nd = 0;
	char name[DMIMPORT_RULE_NAME_MAX], desc[RULEFILE_DESC_MAX], src[160], *text;
	int n;

	memset(&v, 0, sizeof(v));
	printable(c->rule, sizeof(c->rule), src_name);
	c->rule_notes = 0;
	if (!json_object_is_type(r, json_type_object)) {
		note(c, "not imported: the rule is not an object");
		return;
	}
	unknown_keys(c, r, rule_keys, "rule key");
	if (filters && json_object_get_type(filters) != json_type_null) {
		if ((n = list_of(filters, items, LIST_MAX)) < 0) {
			note(c, "not imported: its Filters are not a list (at most %d)", LIST_MAX);
			return;
		}
		for (int i = 0; i < n; i++)
			if (conv_filter(&v, c, items[i], i) < 0)
				goto refused;
	}
	if (conv_trigger(&v, c, ci_get(r, "Trigger")) < 0 || conv_actions(&v, c, ci_get(r, "Actions")) < 0 ||
	    conv_limits(&v, c, ci_get(r, "Limits")) < 0)
		goto refused;

	rule_file_name(c->res, src_name, name, sizeof(name));
	if (strcmp(name, src_name) != 0)
		note(c,
		     "written as rule \"%s\": a dumpwatch rule name is 1-63 characters of [A-Za-z0-9._-], unique "
		     "among those imported",
		     name);
	printable(src, sizeof(src), c->source);
	snprintf(desc, sizeof(desc), "imported from dotnet-monitor rule \"%s\" of %s", c->rule, src);
	if (!(text = rule_text(&v, name, desc))) {
		c->failed = -ENOMEM;
		return;
	}
	/* What is handed out is what `dumpwatch check` accepts. */
	if (rulefile_parse(text, strlen(text), &parsed, &diag, 1, &nd) < 0) {
		c->last = 1;
		note(c, "not imported: the rule dumpwatch would get is refused (%d:%d: %s)", diag.line, diag.column,
		     nd ? diag.message : "?");
		c->last = 0;
		free(text);
		return;
	}
	free(parsed);
	if ((c->res->n_rules & 15) == 0) {
		grown = realloc(c->res->rules, (c->res->n_rules + 16) * sizeof(*grown));
		if (!grown) {
			free(text);
			c->failed = -ENOMEM;
			return;
		}
		c->res->rules = grown;
	}
	out = &c->res->rules[c->res->n_rules++];
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->text = text;
	return;
refused:
	c->last = 1;
	note(c, "not imported: %s", v.why);
	c->last = 0;
}

/* ---- the settings --------------------------------------------------------- */

/* The ConfigMap or environment form ("CollectionRules__R__Trigger__Type":
 * "EventCounter", values all strings) made into the nested form; lists become
 * objects keyed "0", "1", ... (list_of reads both). Other keys are left out. */
static json_object *unflatten(json_object *flat)
{
	json_object *root = json_object_new_object();

	if (!root)
		return NULL;
	json_object_object_foreach(flat, key, val)
	{
		char buf[1024], *seg[FLAT_DEPTH_MAX], *p;
		const char *k = key;
		int n = 0;
		json_object *node = root, *next;

		if (strncasecmp(k, "DotnetMonitor_", 14) == 0)
			k += 14;
		if (strncasecmp(k, "CollectionRules__", 17) != 0 && strncasecmp(k, "CollectionRuleDefaults__", 24) != 0)
			continue;
		if (strlen(k) >= sizeof(buf))
			continue;
		snprintf(buf, sizeof(buf), "%s", k);
		for (p = buf; n < FLAT_DEPTH_MAX;) {
			char *sep = strstr(p, "__");
			seg[n++] = p;
			if (!sep)
				break;
			*sep = '\0';
			p = sep + 2;
		}
		for (int i = 0; i < n; i++) {
			if (i == n - 1) {
				if (json_object_is_type(node, json_type_object))
					json_object_object_add(node, seg[i], json_object_get(val));
				break;
			}
			next = ci_get(node, seg[i]);
			if (!next) {
				next = json_object_new_object();
				json_object_object_add(node, seg[i], next);
			}
			if (!json_object_is_type(next, json_type_object))
				break;
			node = next;
		}
	}
	return root;
}

static void line_col(const char *text, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

int dmimport_convert(const char *text, size_t len, const char *source, struct dmimport_result *out, char *err,
                     size_t errlen)
{
	struct json_tokener *tok;
	json_object *doc, *settings, *flat = NULL, *rules;
	struct conv_ctx c;
	int line, col, r = 0;

	memset(out, 0, sizeof(*out));
	if (len > DMIMPORT_SIZE_MAX) {
		snprintf(err, errlen, "larger than %d bytes: not a settings file this command reads",
		         DMIMPORT_SIZE_MAX);
		return -EFBIG;
	}
	if (!(tok = json_tokener_new_ex(DMIMPORT_DEPTH_MAX)))
		return -ENOMEM;
	doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) { /* trailing text after the value, or a truncated one */
		enum json_tokener_error je = json_tokener_get_error(tok);
		size_t off = json_tokener_get_parse_end(tok);

		if (doc) { /* a complete value followed by something */
			while (off < len && strchr(" \t\r\n", text[off]))
				off++;
		}
		if (!doc || off < len) {
			line_col(text, off > len ? len : off, &line, &col);
			snprintf(err, errlen, "line %d, column %d: not JSON: %s", line, col,
			         je == json_tokener_continue  ? "the text ends inside a value"
			         : je == json_tokener_success ? "text after the settings object"
			                                      : json_tokener_error_desc(je));
			json_object_put(doc);
			json_tokener_free(tok);
			return -EBADMSG;
		}
	}
	json_tokener_free(tok);

	settings = doc;
	if (!json_object_is_type(doc, json_type_object)) {
		snprintf(err, errlen, "not dotnet-monitor settings: the top level is not an object");
		json_object_put(doc);
		return -EINVAL;
	}
	if (!ci_get(settings, "CollectionRules") && json_object_is_type(ci_get(settings, "data"), json_type_object))
		settings = ci_get(settings, "data"); /* a ConfigMap as kubectl -o json shows it */
	if (!ci_get(settings, "CollectionRules")) {
		flat = unflatten(settings);
		if (!flat) {
			json_object_put(doc);
			return -ENOMEM;
		}
		settings = flat;
	}
	rules = ci_get(settings, "CollectionRules");
	if (!json_object_is_type(rules, json_type_object)) {
		snprintf(err, errlen,
		         "not dotnet-monitor settings with collection rules: no \"CollectionRules\" object (nor "
		         "CollectionRules__NAME__... keys)");
		r = -EINVAL;
		goto done;
	}
	if (json_object_object_length(rules) > DMIMPORT_RULES_MAX) {
		snprintf(err, errlen, "%d collection rules: at most %d are imported from one file",
		         json_object_object_length(rules), DMIMPORT_RULES_MAX);
		r = -EINVAL;
		goto done;
	}
	memset(&c, 0, sizeof(c));
	c.res = out;
	c.source = source ? source : "";
	c.defaults = ci_get(settings, "CollectionRuleDefaults");
	if (c.defaults && !json_object_is_type(c.defaults, json_type_object)) {
		note(&c, "CollectionRuleDefaults is not an object: ignored");
		c.defaults = NULL;
	}
	if (ci_get(settings, "Egress"))
		note(&c, "the Egress providers are not imported: dumpwatch keeps dumps in its --dump-dir and uploads "
		         "them with --upload s3://BUCKET");
	json_object_object_foreach(rules, name, rule)
	{
		out->n_source_rules++;
		conv_rule(&c, name, rule);
		if (c.failed)
			break;
	}
	if (c.failed) {
		snprintf(err, errlen, "out of memory");
		dmimport_result_free(out);
		r = c.failed;
	}
done:
	json_object_put(flat);
	json_object_put(doc);
	return r;
}

void dmimport_result_free(struct dmimport_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_rules; i++)
		free(r->rules[i].text);
	free(r->rules);
	free(r->notes);
	memset(r, 0, sizeof(*r));
}
