/* The metric names rules refer to: the GC-derived metrics dumpwatch computes
 * from runtime events, the System.Runtime EventCounters with the units the
 * runtime reports them in, and any other EventCounter as "provider/name".
 * Resolving a name tells the session what to subscribe to and the rule parser
 * which unit a threshold is written in. Pure: constant tables only. */
#include "dumpwatch/catalog.h"

#include "dumpwatch/text.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define RUNTIME_PROVIDER "System.Runtime"

struct gc_metric {
	const char *name;
	enum unit_kind unit;
	unsigned needs;
	int is_event;
};

/* Indexed by enum metric_id. LOH, POH and heap sizes are exact at each GC end
 * and raised live by allocation ticks between GCs, hence both needs; every
 * size is known before the first GC from the System.Runtime counters. */
static const struct gc_metric gc_metrics[M_COUNTER] = {
    [M_LOH_SIZE] = {"loh-size", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    [M_POH_SIZE] = {"poh-size", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    [M_GEN0_SIZE] = {"gen0-size", UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    [M_GEN1_SIZE] = {"gen1-size", UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    [M_GEN2_SIZE] = {"gen2-size", UNIT_BYTES, NEED_GC | NEED_RUNTIME_COUNTERS, 0},
    [M_HEAP_SIZE] = {"heap-size", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    [M_GC_PAUSE] = {"gc-pause", UNIT_MS, NEED_GC, 1},
    [M_GC_COUNT] = {"gc-count", UNIT_COUNT, NEED_GC, 0},
    [M_GC_RATE] = {"gc-rate", UNIT_PER_SEC, NEED_GC, 0},
    [M_GEN0_GC_RATE] = {"gen0-gc-rate", UNIT_PER_SEC, NEED_GC, 0},
    [M_GEN1_GC_RATE] = {"gen1-gc-rate", UNIT_PER_SEC, NEED_GC, 0},
    [M_GEN2_GC_RATE] = {"gen2-gc-rate", UNIT_PER_SEC, NEED_GC, 0},
    [M_ALLOC_RATE] = {"alloc-rate", UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    [M_SOH_ALLOC_RATE] = {"soh-alloc-rate", UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    [M_LOH_ALLOC_RATE] = {"loh-alloc-rate", UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    [M_POH_ALLOC_RATE] = {"poh-alloc-rate", UNIT_BYTES_PER_SEC, NEED_ALLOC_TICKS, 0},
    [M_APPDOMAIN_ALLOCATED] = {"appdomain-allocated", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS, 0},
    [M_APPDOMAIN_SURVIVED] = {"appdomain-survived", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS | NEED_RUNTIME_COUNTERS, 0},
    [M_APPDOMAIN_FREED] = {"appdomain-freed", UNIT_BYTES, NEED_GC | NEED_ALLOC_TICKS, 0},
    [M_TIME_IN_GC] = {"time-in-gc", UNIT_PERCENT, NEED_GC, 0},
    /* Polled from /proc, so they hold while the stream is quiet or late;
     * the GC events come along for the heap beside them in a dump's
     * context, and a session that tells when the process goes. */
    [M_RSS] = {"rss", UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    [M_PRIVATE_MEMORY] = {"private-memory", UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    [M_SWAP] = {"swap", UNIT_BYTES, NEED_PROC | NEED_GC, 0},
    [M_THREADS] = {"threads", UNIT_COUNT, NEED_PROC | NEED_GC, 0},
    [M_FDS] = {"fds", UNIT_COUNT, NEED_PROC | NEED_PROC_FDS | NEED_GC, 0},
    [M_EXCEPTION_RATE] = {"exception-rate", UNIT_PER_SEC, NEED_EXCEPTIONS, 0},
    /* Not a name: rules.h's "exception ..." condition (catalog_exception). */
    [M_EXCEPTIONS] = {"exception", UNIT_COUNT, NEED_EXCEPTIONS, 1},
};

struct runtime_counter {
	const char *name;
	enum unit_kind unit;
	double scale; /* reported value -> base unit */
};

/* System.Runtime counters in the order .NET 10.0.12's RuntimeEventSource
 * registers them (read from System.Private.CoreLib). Counters of the "Sum"
 * type (gen-N-gc-count, alloc-rate, exception-count, ...) report the amount
 * per counter interval, so their thresholds are per interval too. */
static const struct runtime_counter runtime_counters[] = {
    {"cpu-usage", UNIT_PERCENT, 1.0},
    {"working-set", UNIT_BYTES, 1e6},  /* MB */
    {"gc-heap-size", UNIT_BYTES, 1e6}, /* MB */
    {"gen-0-gc-count", UNIT_COUNT, 1.0},
    {"gen-1-gc-count", UNIT_COUNT, 1.0},
    {"gen-2-gc-count", UNIT_COUNT, 1.0},
    {"gen-0-gc-budget", UNIT_BYTES, 1e6}, /* MB */
    {"threadpool-thread-count", UNIT_COUNT, 1.0},
    {"monitor-lock-contention-count", UNIT_COUNT, 1.0},
    {"threadpool-queue-length", UNIT_COUNT, 1.0},
    {"threadpool-completed-items-count", UNIT_COUNT, 1.0},
    {"alloc-rate", UNIT_BYTES, 1.0}, /* bytes per interval */
    {"active-timer-count", UNIT_COUNT, 1.0},
    {"gc-fragmentation", UNIT_PERCENT, 1.0},
    {"gc-committed", UNIT_BYTES, 1e6}, /* MB */
    {"exception-count", UNIT_COUNT, 1.0},
    {"time-in-gc", UNIT_PERCENT, 1.0},
    {"total-pause-time-by-gc", UNIT_MS, 1.0},
    {"gen-0-size", UNIT_BYTES, 1.0},
    {"gen-1-size", UNIT_BYTES, 1.0},
    {"gen-2-size", UNIT_BYTES, 1.0},
    {"loh-size", UNIT_BYTES, 1.0},
    {"poh-size", UNIT_BYTES, 1.0},
    {"assembly-count", UNIT_COUNT, 1.0},
    {"il-bytes-jitted", UNIT_BYTES, 1.0},
    {"methods-jitted-count", UNIT_COUNT, 1.0},
    {"time-in-jit", UNIT_MS, 1.0},
    {NULL, UNIT_NONE, 0},
};

const char *const catalog_runtime_counters[] = {
    "cpu-usage",
    "working-set",
    "gc-heap-size",
    "gen-0-gc-count",
    "gen-1-gc-count",
    "gen-2-gc-count",
    "gen-0-gc-budget",
    "threadpool-thread-count",
    "monitor-lock-contention-count",
    "threadpool-queue-length",
    "threadpool-completed-items-count",
    "alloc-rate",
    "active-timer-count",
    "gc-fragmentation",
    "gc-committed",
    "exception-count",
    "time-in-gc",
    "total-pause-time-by-gc",
    "gen-0-size",
    "gen-1-size",
    "gen-2-size",
    "loh-size",
    "poh-size",
    "assembly-count",
    "il-bytes-jitted",
    "methods-jitted-count",
    "time-in-jit",
    NULL,
};

const char *catalog_id_name(enum metric_id id)
{
	if ((unsigned)id < (unsigned)M_COUNTER)
		return gc_metrics[id].name;
	return id == M_METER ? "meter" : "counter";
}

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
	       c == '_';
}

/* How far a typo may be from a name and still be suggested. */
static size_t max_distance(const char *typed)
{
	size_t n = strlen(typed);
	return n <= 4 ? 1 : n <= 10 ? 2 : 3;
}

static void consider(const char *typed, const char *cand, size_t *best, const char **best_name)
{
	size_t d = text_edit_distance(typed, cand);
	if (d <= max_distance(typed) && d < *best) {
		*best = d;
		*best_name = cand;
	}
}

/* The nearest known System.Runtime counter to name, or NULL. */
static const char *nearest_counter(const char *name)
{
	const char *best_name = NULL;
	size_t best = SIZE_MAX;

	for (size_t i = 0; runtime_counters[i].name; i++)
		consider(name, runtime_counters[i].name, &best, &best_name);
	return best_name;
}

/* The nearest built-in metric or System.Runtime counter to name, or NULL;
 * GC-derived names first, so they win a tie. */
static const char *nearest_any(const char *name)
{
	const char *best_name = NULL;
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < (size_t)M_COUNTER; i++)
		if (i != M_EXCEPTIONS)
			consider(name, gc_metrics[i].name, &best, &best_name);
	for (size_t i = 0; runtime_counters[i].name; i++)
		consider(name, runtime_counters[i].name, &best, &best_name);
	return best_name;
}

static const struct runtime_counter *find_runtime_counter(const char *name)
{
	for (size_t i = 0; runtime_counters[i].name; i++)
		if (strcmp(runtime_counters[i].name, name) == 0)
			return &runtime_counters[i];
	return NULL;
}

static void fill_counter(struct metric_ref *out, const char *provider, const char *counter)
{
	const struct runtime_counter *rc = NULL;

	memset(out, 0, sizeof(*out));
	if (strcmp(provider, RUNTIME_PROVIDER) == 0)
		rc = find_runtime_counter(counter);
	out->id = M_COUNTER;
	snprintf(out->provider, sizeof(out->provider), "%s", provider);
	snprintf(out->counter, sizeof(out->counter), "%s", counter);
	snprintf(out->name, sizeof(out->name), "%s/%s", provider, counter);
	out->unit = rc ? rc->unit : UNIT_NONE;
	out->scale = rc ? rc->scale : 1.0;
	out->needs = NEED_COUNTERS;
	out->is_event = 0;
}

int catalog_resolve(const char *name, struct metric_ref *out, char *err, size_t errlen)
{
	char shown[80];
	const char *slash, *hint;
	size_t len;

	if (!name || !*name) {
		snprintf(err, errlen, "missing metric name: write one such as loh-size or System.Runtime/cpu-usage");
		return -EINVAL;
	}
	len = strnlen(name, CATALOG_NAME_MAX);
	text_quote(shown, sizeof(shown), name, SIZE_MAX, 60);
	if (len >= CATALOG_NAME_MAX) {
		snprintf(err, errlen, "metric name \"%s\" is too long (at most %d characters)", shown,
		         CATALOG_NAME_MAX - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (!name_char_ok(name[i]) && name[i] != '/') {
			snprintf(err, errlen,
			         "metric name \"%s\" may contain only letters, digits, '.', '-', '_' and one '/'",
			         shown);
			return -EINVAL;
		}
	}

	for (size_t i = 0; i < (size_t)M_COUNTER; i++) {
		if (i != M_EXCEPTIONS && strcmp(gc_metrics[i].name, name) == 0) {
			memset(out, 0, sizeof(*out));
			out->id = (enum metric_id)i;
			snprintf(out->name, sizeof(out->name), "%s", name);
			out->unit = gc_metrics[i].unit;
			out->scale = 1.0;
			out->needs = gc_metrics[i].needs;
			out->is_event = gc_metrics[i].is_event;
			return 0;
		}
	}

	slash = strrchr(name, '/');
	if (slash) {
		char provider[CATALOG_NAME_MAX];
		const char *counter = slash + 1;
		size_t plen = (size_t)(slash - name);

		/* Provider names may hold dots and dashes but no '/', so the
		 * last '/' splits; a second '/' is a typo. */
		if (plen == 0 || *counter == '\0' || memchr(name, '/', plen)) {
			snprintf(err, errlen,
			         "\"%s\": write an EventCounter as Provider.Name/counter-name, such as "
			         "System.Runtime/cpu-usage",
			         shown);
			return -EINVAL;
		}
		memcpy(provider, name, plen);
		provider[plen] = '\0';
		/* EventPipe matches provider names without regard to case; keep
		 * the runtime's spelling so that counters match its events. */
		if (text_eq_nocase(provider, RUNTIME_PROVIDER)) {
			snprintf(provider, sizeof(provider), "%s", RUNTIME_PROVIDER);
			if (!find_runtime_counter(counter) && (hint = nearest_counter(counter)) != NULL) {
				text_quote(shown, sizeof(shown), counter, SIZE_MAX, 60);
				snprintf(err, errlen, "unknown System.Runtime counter \"%s\"; did you mean \"%s/%s\"?",
				         shown, RUNTIME_PROVIDER, hint);
				return -ENOENT;
			}
		}
		fill_counter(out, provider, counter);
		return 0;
	}

	if (find_runtime_counter(name)) {
		fill_counter(out, RUNTIME_PROVIDER, name);
		return 0;
	}
	hint = nearest_any(name);
	if (hint)
		snprintf(err, errlen, "unknown metric \"%s\"; did you mean \"%s\"?", shown, hint);
	else
		snprintf(err, errlen,
		         "unknown metric \"%s\": use a GC metric such as loh-size, a System.Runtime counter such as "
		         "cpu-usage, or any EventCounter as Provider.Name/counter-name",
		         shown);
	return -ENOENT;
}

static int glob_ok(const char *what, const char *g, char *err, size_t errlen)
{
	if (strlen(g) >= CATALOG_NAME_MAX) {
		snprintf(err, errlen, "the exception's %s pattern is too long (at most %d characters)", what,
		         CATALOG_NAME_MAX - 1);
		return -EINVAL;
	}
	for (const unsigned char *p = (const unsigned char *)g; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "the exception's %s pattern holds a control character", what);
			return -EINVAL;
		}
	return 0;
}

int catalog_exception(const char *type_glob, const char *message_glob, int64_t window_ns, struct metric_ref *out,
                      char *err, size_t errlen)
{
	char win[16];

	if (!type_glob || !*type_glob)
		type_glob = "*";
	if (!message_glob)
		message_glob = "";
	if (glob_ok("type", type_glob, err, errlen) < 0 || glob_ok("message", message_glob, err, errlen) < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->id = M_EXCEPTIONS;
	out->unit = UNIT_COUNT;
	out->scale = 1.0;
	out->needs = gc_metrics[M_EXCEPTIONS].needs;
	out->is_event = gc_metrics[M_EXCEPTIONS].is_event;
	out->window_ns = window_ns;
	snprintf(out->exc_type, sizeof(out->exc_type), "%s", type_glob);
	snprintf(out->exc_message, sizeof(out->exc_message), "%s", message_glob);
	units_format_duration(window_ns, win, sizeof(win));
	/* Cut to fit: the name is for people; the fields above are what match. */
	if (*message_glob)
		snprintf(out->name, sizeof(out->name), "exception %.50s message '%.35s' in %s", type_glob, message_glob,
		         win);
	else
		snprintf(out->name, sizeof(out->name), "exception %.90s in %s", type_glob, win);
	return 0;
}

int catalog_exception_matches(const struct metric_ref *ref, const char *type, const char *message)
{
	const char *dot = strrchr(type, '.');

	if (fnmatch(ref->exc_type, type, FNM_CASEFOLD) != 0 &&
	    (!dot || fnmatch(ref->exc_type, dot + 1, FNM_CASEFOLD) != 0))
		return 0;
	return !ref->exc_message[0] || fnmatch(ref->exc_message, message, FNM_CASEFOLD) == 0;
}

static const char *const stat_names[MS__COUNT] = {
    [MS_VALUE] = "value", [MS_RATE] = "rate",   [MS_P50] = "p50", [MS_P95] = "p95",
    [MS_P99] = "p99",     [MS_COUNT] = "count", [MS_SUM] = "sum",
};

const char *catalog_meter_stat_name(enum meter_stat s)
{
	return (unsigned)s < (unsigned)MS__COUNT ? stat_names[s] : "?";
}

int catalog_meter_stat_parse(const char *word, size_t len)
{
	for (int i = 0; i < MS__COUNT; i++)
		if (strlen(stat_names[i]) == len && strncasecmp(stat_names[i], word, len) == 0)
			return i;
	return -1;
}

/* A tag filter's value: a glob of printable characters, none of ",]". */
static int tag_value_char_ok(unsigned char c)
{
	return c >= 0x20 && c != 0x7f && c != ',' && c != ']';
}

/* Reads "[k=v,k2=v2]" at p into out as "k=v,k2=v2" (spaces around the parts
 * dropped). Returns the bytes consumed, or -1 with err. */
static int read_tag_filter(const char *p, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *q = p + 1;
	size_t o = 0;

	out[0] = '\0';
	for (;;) {
		while (*q == ' ')
			q++;
		const char *k = q;
		while (name_char_ok(*q))
			q++;
		size_t kl = (size_t)(q - k);
		while (*q == ' ')
			q++;
		if (kl == 0 || *q != '=') {
			snprintf(err, errlen,
			         "a meter's tag filter is [key=value,...] with keys of letters, digits and ._-, as in "
			         "[http.route=/api/orders]");
			return -1;
		}
		q++;
		while (*q == ' ')
			q++;
		const char *v = q;
		while (*q && tag_value_char_ok((unsigned char)*q))
			q++;
		size_t vl = (size_t)(q - v);
		while (vl > 0 && v[vl - 1] == ' ')
			vl--;
		if (*q != ',' && *q != ']') {
			snprintf(err, errlen,
			         "a meter's tag filter must end with ']' (values hold no ',' ']' or control "
			         "character)");
			return -1;
		}
		if (o + kl + vl + 2 >= outlen) {
			snprintf(err, errlen, "a meter's tag filter is too long (at most %d characters)",
			         CATALOG_NAME_MAX - 1);
			return -1;
		}
		if (o)
			out[o++] = ',';
		memcpy(out + o, k, kl);
		o += kl;
		out[o++] = '=';
		memcpy(out + o, v, vl);
		o += vl;
		out[o] = '\0';
		if (*q++ == ']')
			return (int)(q - p);
	}
}

int catalog_meter(const char *spec, enum meter_stat stat, enum unit_kind unit, struct metric_ref *out, char *err,
                  size_t errlen)
{
	char shown[80];
	const char *p = spec, *slash;
	size_t ml, il;

	text_quote(shown, sizeof(shown), spec, SIZE_MAX, 60);
	while (name_char_ok(*p))
		p++;
	ml = (size_t)(p - spec);
	slash = p;
	if (*p == '/') {
		p++;
		while (name_char_ok(*p) || *p == '/')
			p++;
	}
	il = slash[0] == '/' ? (size_t)(p - slash - 1) : 0;
	if (ml == 0 || il == 0 || (*p && *p != '[')) {
		snprintf(err, errlen,
		         "\"%s\": write an instrument as Meter.Name/instrument.name[tag=value,...], as in "
		         "Microsoft.AspNetCore.Hosting/http.server.request.duration[http.route=/api/orders]",
		         shown);
		return -EINVAL;
	}
	if (ml >= CATALOG_NAME_MAX || il >= CATALOG_NAME_MAX) {
		snprintf(err, errlen, "\"%s\": a meter's or instrument's name is too long (at most %d characters)",
		         shown, CATALOG_NAME_MAX - 1);
		return -EINVAL;
	}
	if ((unsigned)stat >= (unsigned)MS__COUNT) {
		snprintf(err, errlen, "unknown meter statistic");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	if (*p == '[') {
		int r = read_tag_filter(p, out->tags, sizeof(out->tags), err, errlen);
		if (r < 0)
			return -EINVAL;
		p += r;
		if (*p) {
			snprintf(err, errlen, "\"%s\": nothing may follow the tag filter's ']'", shown);
			return -EINVAL;
		}
	}
	out->id = M_METER;
	memcpy(out->provider, spec, ml);
	memcpy(out->counter, slash + 1, il);
	out->stat = stat;
	out->unit = unit;
	out->scale = 1.0;
	out->needs = NEED_METERS;
	/* Cut to fit: the name is for people; the fields above are what match. */
	char name[3 * CATALOG_NAME_MAX + 16];
	snprintf(name, sizeof(name), "meter %s/%s%s%s%s %s", out->provider, out->counter, out->tags[0] ? "[" : "",
	         out->tags, out->tags[0] ? "]" : "", stat_names[stat]);
	size_t nl = strnlen(name, sizeof(out->name) - 1);
	memcpy(out->name, name, nl);
	out->name[nl] = '\0';
	return 0;
}

/* Where the pair holding key starts in tags, or NULL; *vlen set to its
 * value's length. A value ends where ",key=" begins: the runtime does not
 * escape the ',' a value may hold. */
static const char *find_tag(const char *tags, const char *key, size_t kl, size_t *vlen)
{
	const char *p = tags;

	while (*p) {
		const char *k = p, *eq = p;
		while (name_char_ok(*eq))
			eq++;
		const char *v = *eq == '=' ? eq + 1 : eq;
		const char *e = v;
		for (;;) {
			e = strchr(e, ',');
			if (!e) {
				e = v + strlen(v);
				break;
			}
			const char *n = e + 1;
			while (name_char_ok(*n))
				n++;
			if (n > e + 1 && *n == '=')
				break;
			e++;
		}
		if (*eq == '=' && (size_t)(eq - k) == kl && strncmp(k, key, kl) == 0) {
			*vlen = (size_t)(e - v);
			return v;
		}
		p = *e ? e + 1 : e;
	}
	return NULL;
}

int catalog_meter_tags_match(const char *filter, const char *tags)
{
	const char *f = filter;
	char val[256], glob[CATALOG_NAME_MAX];

	while (*f) {
		const char *eq = strchr(f, '=');
		if (!eq)
			return 0;
		const char *end = strchr(eq + 1, ',');
		if (!end)
			end = eq + 1 + strlen(eq + 1);
		size_t vl, gl = (size_t)(end - eq - 1);
		const char *v = find_tag(tags, f, (size_t)(eq - f), &vl);
		if (!v || gl >= sizeof(glob))
			return 0;
		if (vl >= sizeof(val))
			vl = sizeof(val) - 1;
		memcpy(val, v, vl);
		val[vl] = '\0';
		memcpy(glob, eq + 1, gl);
		glob[gl] = '\0';
		if (fnmatch(glob, val, 0) != 0)
			return 0;
		f = *end ? end + 1 : end;
	}
	return 1;
}
