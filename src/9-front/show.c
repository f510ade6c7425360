/* `dumpwatch show FILE`: a dump context as text for a terminal (context.h):
 * the outcome and why, when, the dump, the process, a sparkline per condition
 * over the history, the last GCs, the types that allocated most, the heap
 * summary (the largest types, what holds them, the target's pause). Every
 * string from the context is escaped
 * (text_escape); a field missing or of the wrong type shows as "?" or is left
 * out. */
#include "dumpwatch/context.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context_shared.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/heapdump.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

/* The same instant in the local time zone, "2026-11-23 19:57:16.123 +0100 CET". */
static const char *fmt_local(int64_t ms, char *buf, size_t buflen)
{
	time_t s = (time_t)(ms / 1000 - (ms % 1000 < 0));
	int frac = (int)(ms - (int64_t)s * 1000);
	struct tm tm;
	char day[32], zone[24];

	if (!localtime_r(&s, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm) ||
	    !strftime(zone, sizeof(zone), "%z %Z", &tm)) {
		snprintf(buf, buflen, "?");
		return buf;
	}
	snprintf(buf, buflen, "%s.%03d %s", day, frac, zone);
	return buf;
}

/* A time relative to the fire: "+12ms", "-1.5s", "0". */
static const char *fmt_rel(double ms, char *buf, size_t buflen)
{
	char mag[48];

	if (ms == 0) {
		snprintf(buf, buflen, "0");
		return buf;
	}
	units_format(fabs(ms), UNIT_MS, mag, sizeof(mag));
	snprintf(buf, buflen, "%c%s", ms < 0 ? '-' : '+', mag);
	return buf;
}

/* ---- the sparkline -------------------------------------------------------- */

/* "value OP threshold" for op ">" ">=" "<" "<="; -1 for another op. */
static int op_holds(const char *op, double v, double threshold)
{
	if (!op)
		return -1;
	if (strcmp(op, ">") == 0)
		return v > threshold;
	if (strcmp(op, ">=") == 0)
		return v >= threshold;
	if (strcmp(op, "<") == 0)
		return v < threshold;
	if (strcmp(op, "<=") == 0)
		return v <= threshold;
	return -1;
}

int context_sparkline(const double *t, const double *v, size_t n, size_t cols, const char *op, double threshold,
                      int utf8, char *bars, size_t barslen, char *marks, size_t markslen, double *ret_lo,
                      double *ret_hi)
{
	static const char ascii[] = " .:-=+*#";
	int low = op && op[0] == '<';
	size_t first = n, last = 0, bpos = 0;
	double t0, span, lo = 0, hi = 0, *col;
	unsigned char *has;

	if (cols == 0 || barslen < (utf8 ? 3 * cols : cols) + 1 || markslen < cols + 1)
		return -ENOBUFS;
	bars[0] = marks[0] = '\0';
	*ret_lo = *ret_hi = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(t[i]) && isfinite(v[i])) {
			if (first == n)
				first = i;
			last = i;
		}
	if (first == n)
		return 0;
	col = malloc(cols * sizeof(*col));
	has = calloc(cols, 1);
	if (!col || !has) {
		free(col);
		free(has);
		return -ENOMEM;
	}
	t0 = t[first];
	span = t[last] - t0;
	for (size_t i = first; i <= last; i++) {
		size_t c = 0;

		if (!isfinite(t[i]) || !isfinite(v[i]))
			continue;
		if (span > 0 && t[i] > t0)
			c = (size_t)((t[i] - t0) / span * (double)cols);
		if (c >= cols)
			c = cols - 1;
		if (!has[c] || (low ? v[i] < col[c] : v[i] > col[c]))
			col[c] = v[i];
		has[c] = 1;
	}
	/* A column with no point of its own holds the value before it; the first
	 * column always has one (the first point falls in it). */
	for (size_t c = 1; c < cols; c++)
		if (!has[c])
			col[c] = col[c - 1];
	lo = hi = col[0];
	for (size_t c = 1; c < cols; c++) {
		lo = col[c] < lo ? col[c] : lo;
		hi = col[c] > hi ? col[c] : hi;
	}
	for (size_t c = 0; c < cols; c++) {
		int level = 0;

		if (hi > lo) {
			level = (int)floor((col[c] - lo) / (hi - lo) * 7.0 + 0.5);
			level = level < 0 ? 0 : level > 7 ? 7 : level;
		}
		if (utf8) { /* U+2581 LOWER ONE EIGHTH BLOCK + level */
			bars[bpos++] = (char)0xE2;
			bars[bpos++] = (char)0x96;
			bars[bpos++] = (char)(0x81 + level);
		} else {
			bars[bpos++] = ascii[level];
		}
		marks[c] = op_holds(op, col[c], threshold) == 1 ? '^' : ' ';
	}
	bars[bpos] = '\0';
	marks[cols] = '\0';
	free(col);
	free(has);
	*ret_lo = lo;
	*ret_hi = hi;
	return (int)cols;
}

/* ---- show --------------------------------------------------------------- */

static void show_rule(FILE *out, struct json_object *ctx)
{
	struct json_object *rule = jv_typed(ctx, DUMPCTX_KEY_RULE, json_type_object);
	struct json_object *conds = jv_typed(rule, DUMPCTX_KEY_RULE_CONDITIONS, json_type_array);
	size_t len, n = conds ? json_object_array_length(conds) : 0;
	const char *desc = jv_str(rule, DUMPCTX_KEY_RULE_DESCRIPTION, &len);
	double line;

	fputs("rule:      ", out);
	jv_put_str(out, rule, DUMPCTX_KEY_RULE_NAME, "?");
	if (jv_typed(rule, DUMPCTX_KEY_RULE_FILE, json_type_string)) {
		fputs(" (", out);
		jv_put_str(out, rule, DUMPCTX_KEY_RULE_FILE, "?");
		if (jv_num(rule, DUMPCTX_KEY_RULE_LINE, &line))
			fprintf(out, ":%.0f", line);
		fputs(")", out);
	} else {
		fputs(" (command line)", out);
	}
	fputc('\n', out);
	if (desc && len) {
		fputs("           ", out);
		text_put_escaped(out, desc, len);
		fputc('\n', out);
	}
	fputs("dump type: ", out);
	jv_put_str(out, rule, DUMPCTX_KEY_RULE_DUMP_TYPE, "?");
	fputs("\nfired because:\n", out);
	if (n == 0)
		fputs("  (no conditions)\n", out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *cond = json_object_array_get_idx(conds, i);
		char v[96];

		fputs("  ", out);
		jv_put_str(out, cond, DUMPCTX_KEY_COND_TEXT, "?");
		fprintf(out, ": %s at the fire\n", cx_fmt_cond_value(cond, v, sizeof(v)));
		/* The exception that counted last, as the program wrote it. */
		struct json_object *x = jv_typed(cond, DUMPCTX_KEY_COND_EXCEPTION, json_type_object);
		double t_ms;
		if (x) {
			fputs("    last: ", out);
			jv_put_str(out, x, DUMPCTX_KEY_EXC_TYPE, "?");
			fputs(": \"", out);
			jv_put_str(out, x, DUMPCTX_KEY_EXC_MESSAGE, "");
			fputs("\"", out);
			if (jv_num(x, DUMPCTX_KEY_EXC_T_MS, &t_ms))
				fprintf(out, " (%.1f s before the fire)", -t_ms / 1e3);
			fputc('\n', out);
		}
	}
}

static void show_when(FILE *out, struct json_object *ctx)
{
	struct json_object *dump = jv_typed(ctx, DUMPCTX_KEY_DUMP, json_type_object);
	int64_t fired = 0, started, ended;
	char b1[96], b2[96], b3[64];
	double d;
	int has_start, has_end;

	cx_time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &fired);
	fprintf(out, "fired:     %s (local %s)\n", cx_fmt_utc(fired, b1, sizeof(b1)), fmt_local(fired, b2, sizeof(b2)));
	if (!dump)
		return;
	has_start = cx_time_ms(dump, DUMPCTX_KEY_DUMP_STARTED_UNIX_MS, &started);
	has_end = cx_time_ms(dump, DUMPCTX_KEY_DUMP_ENDED_UNIX_MS, &ended);
	fputs("dump:      ", out);
	if (!has_start) {
		fputs("never started", out);
	} else {
		fprintf(out, "started %s", fmt_rel((double)(started - fired), b1, sizeof(b1)));
		if (has_end)
			fprintf(out, ", ended %s", fmt_rel((double)(ended - fired), b2, sizeof(b2)));
		fputs(" from the fire", out);
	}
	if (jv_num(dump, DUMPCTX_KEY_DUMP_DURATION_MS, &d))
		fprintf(out, ", took %s", units_format(d, UNIT_MS, b3, sizeof(b3)));
	if (jv_typed(dump, DUMPCTX_KEY_DUMP_VIA, json_type_string)) {
		fputs(", via ", out);
		jv_put_str(out, dump, DUMPCTX_KEY_DUMP_VIA, "?");
	}
	fputc('\n', out);
	if (jv_num(dump, DUMPCTX_KEY_DUMP_BYTES, &d))
		fprintf(out, "size:      %s (%.0f bytes)\n", units_format(d, UNIT_BYTES, b1, sizeof(b1)), d);
	if (jv_typed(dump, DUMPCTX_KEY_DUMP_PATH, json_type_string) ||
	    jv_typed(dump, DUMPCTX_KEY_DUMP_FILE, json_type_string)) {
		fputs("file:      ", out);
		jv_put_str(out, dump,
		           jv_typed(dump, DUMPCTX_KEY_DUMP_PATH, json_type_string) ? DUMPCTX_KEY_DUMP_PATH
		                                                                   : DUMPCTX_KEY_DUMP_FILE,
		           "?");
		fputc('\n', out);
	}
}

static void show_process(FILE *out, struct json_object *ctx)
{
	struct json_object *proc = jv_typed(ctx, DUMPCTX_KEY_PROCESS, json_type_object);
	size_t len;
	const char *rt = jv_str(proc, DUMPCTX_KEY_PROC_RUNTIME_VERSION, &len);
	double d;

	fputs("process:   ", out);
	if (jv_num(proc, DUMPCTX_KEY_PROC_PID, &d))
		fprintf(out, "%.0f ", d);
	jv_put_str(out, proc, DUMPCTX_KEY_PROC_NAME, "?");
	if (jv_typed(proc, DUMPCTX_KEY_PROC_USER, json_type_string)) {
		fputs(", user ", out);
		jv_put_str(out, proc, DUMPCTX_KEY_PROC_USER, "?");
		if (jv_num(proc, DUMPCTX_KEY_PROC_UID, &d))
			fprintf(out, " (uid %.0f)", d);
	} else if (jv_num(proc, DUMPCTX_KEY_PROC_UID, &d)) {
		fprintf(out, ", uid %.0f", d);
	}
	if (rt && len) {
		fputs(", .NET ", out);
		text_put_escaped(out, rt, len);
	}
	fputs("\ncmdline:   ", out);
	jv_put_str(out, proc, DUMPCTX_KEY_PROC_CMDLINE, "?");
	fputc('\n', out);
}

/* The history series of metric (a string of mlen bytes), or NULL. */
static struct json_object *find_series(struct json_object *ctx, const char *metric, size_t mlen)
{
	struct json_object *series =
	    jv_typed(jv_typed(ctx, DUMPCTX_KEY_HISTORY, json_type_object), DUMPCTX_KEY_HIST_SERIES, json_type_array);
	size_t n = series ? json_object_array_length(series) : 0;

	for (size_t i = 0; metric && i < n; i++) {
		struct json_object *s = json_object_array_get_idx(series, i);
		size_t len;
		const char *m = jv_str(s, DUMPCTX_KEY_SERIES_METRIC, &len);

		if (m && len == mlen && memcmp(m, metric, len) == 0)
			return s;
	}
	return NULL;
}

/* The points of series as times and values: for each [t, last, min, max]
 * the extreme toward the condition (max for > and >=, min for < and <=),
 * else last. Returns the count (0 when none) with malloc'd arrays. */
static size_t series_points(struct json_object *series, int low, double **ret_t, double **ret_v)
{
	struct json_object *pts = jv_typed(series, DUMPCTX_KEY_SERIES_POINTS, json_type_array);
	size_t n = pts ? json_object_array_length(pts) : 0, k = 0;
	double *t, *v;

	*ret_t = *ret_v = NULL;
	if (n == 0)
		return 0;
	t = malloc(n * sizeof(*t));
	v = malloc(n * sizeof(*v));
	if (!t || !v) {
		free(t);
		free(v);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(pts, i);
		size_t plen = json_object_is_type(p, json_type_array) ? json_object_array_length(p) : 0;
		double pt, pv;

		if (plen < 2 || !jv_num_of(json_object_array_get_idx(p, 0), &pt))
			continue;
		if (!(plen >= 4 && jv_num_of(json_object_array_get_idx(p, low ? 2 : 3), &pv)) &&
		    !jv_num_of(json_object_array_get_idx(p, 1), &pv))
			continue;
		if (k > 0 && pt < t[k - 1]) /* not ascending as the spec says: keep order */
			continue;
		t[k] = pt;
		v[k] = pv;
		k++;
	}
	*ret_t = t;
	*ret_v = v;
	return k;
}

static void show_spark(FILE *out, struct json_object *ctx, struct json_object *cond, int utf8)
{
	size_t mlen, n;
	const char *metric = jv_str(cond, DUMPCTX_KEY_COND_METRIC, &mlen);
	size_t oplen;
	const char *op = jv_str(cond, DUMPCTX_KEY_COND_OP, &oplen);
	struct json_object *series = find_series(ctx, metric, mlen);
	char bars[3 * CONTEXT_SPARK_COLS + 1], marks[CONTEXT_SPARK_COLS + 1], lo_s[64], hi_s[64], th_s[64], t0_s[48],
	    t1_s[48];
	double *t, *v, lo, hi, threshold = NAN;
	int has_thr = jv_num(cond, DUMPCTX_KEY_COND_THRESHOLD, &threshold), w, r;

	fputs("  ", out);
	jv_put_str(out, cond, DUMPCTX_KEY_COND_TEXT, "?");
	fputc('\n', out);
	n = series_points(series, op && op[0] == '<', &t, &v);
	r = n ? context_sparkline(t, v, n, CONTEXT_SPARK_COLS, has_thr ? op : NULL, threshold, utf8, bars, sizeof(bars),
	                          marks, sizeof(marks), &lo, &hi)
	      : 0;
	if (r <= 0) {
		fputs("    no history\n", out);
		free(t);
		free(v);
		return;
	}
	cx_fmt_value(series, hi, hi_s, sizeof(hi_s));
	cx_fmt_value(series, lo, lo_s, sizeof(lo_s));
	w = (int)(strlen(hi_s) > strlen(lo_s) ? strlen(hi_s) : strlen(lo_s));
	fprintf(out, "    %*s %s\n", w, hi_s, bars);
	fprintf(out, "    %*s %s", w, lo_s, marks);
	if (has_thr && op_holds(op, 0, 0) >= 0) {
		fputs("  ^: ", out);
		text_put_escaped(out, op, oplen);
		fprintf(out, " %s", cx_fmt_value(cond, threshold, th_s, sizeof(th_s)));
	}
	fputc('\n', out);
	fmt_rel(t[0], t0_s, sizeof(t0_s));
	fmt_rel(t[n - 1], t1_s, sizeof(t1_s));
	fprintf(out, "    %*s %-*s%s\n", w, "", CONTEXT_SPARK_COLS - (int)strlen(t1_s), t0_s, t1_s);
	free(t);
	free(v);
}

static void show_history(FILE *out, struct json_object *ctx, int utf8)
{
	struct json_object *hist = jv_typed(ctx, DUMPCTX_KEY_HISTORY, json_type_object);
	struct json_object *conds =
	    jv_typed(jv_typed(ctx, DUMPCTX_KEY_RULE, json_type_object), DUMPCTX_KEY_RULE_CONDITIONS, json_type_array);
	size_t n = conds ? json_object_array_length(conds) : 0;
	char b1[48], b2[48];
	double window, slot;
	int has_window = jv_num(hist, DUMPCTX_KEY_HIST_WINDOW_MS, &window),
	    has_slot = jv_num(hist, DUMPCTX_KEY_HIST_SLOT_MS, &slot);

	if (n == 0)
		return;
	fputs("\nhistory", out);
	if (has_window)
		fprintf(out, " (%s kept", units_format(window, UNIT_MS, b1, sizeof(b1)));
	if (has_slot)
		fprintf(out, "%s%s slots", has_window ? ", " : " (", units_format(slot, UNIT_MS, b2, sizeof(b2)));
	if (has_window || has_slot)
		fputc(')', out);
	fputs(", time from the fire:\n", out);
	for (size_t i = 0; i < n; i++)
		show_spark(out, ctx, json_object_array_get_idx(conds, i), utf8);
}

static void show_gcs(FILE *out, struct json_object *ctx)
{
	struct json_object *gcs = jv_typed(ctx, DUMPCTX_KEY_GCS, json_type_array);
	size_t n = gcs ? json_object_array_length(gcs) : 0;
	size_t from = n > CONTEXT_SHOW_GCS ? n - CONTEXT_SHOW_GCS : 0;

	if (n == 0) {
		fputs("\nno GC in the context\n", out);
		return;
	}
	fprintf(out, "\nlast GCs (%zu of %zu, oldest first):\n", n - from, n);
	fprintf(out, "  %7s %3s %9s %9s %9s  %s\n", "index", "gen", "at", "pause", "LOH", "reason / type");
	for (size_t i = from; i < n; i++) {
		struct json_object *gc = json_object_array_get_idx(gcs, i);
		char idx[24] = "?", gen[24] = "?", at[48] = "?", pause[48] = "?", loh[48] = "?";
		double d;

		if (jv_num(gc, DUMPCTX_KEY_GC_INDEX, &d))
			snprintf(idx, sizeof(idx), "%.0f", d);
		if (jv_num(gc, DUMPCTX_KEY_GC_GENERATION, &d))
			snprintf(gen, sizeof(gen), "%.0f", d);
		if (jv_num(gc, DUMPCTX_KEY_GC_START_MS, &d))
			fmt_rel(d, at, sizeof(at));
		if (jv_num(gc, DUMPCTX_KEY_GC_PAUSE_MS, &d))
			snprintf(pause, sizeof(pause), "%.1fms", d);
		if (jv_num(jv_typed(gc, DUMPCTX_KEY_GC_SIZES, json_type_object), DUMPCTX_KEY_SIZE_LOH, &d))
			units_format(d, UNIT_BYTES, loh, sizeof(loh));
		fprintf(out, "  %7s %3s %9s %9s %9s  ", idx, gen, at, pause, loh);
		jv_put_str(out, gc, DUMPCTX_KEY_GC_REASON, "?");
		fputs(" / ", out);
		jv_put_str(out, gc, DUMPCTX_KEY_GC_TYPE, "?");
		if (jv_typed(gc, DUMPCTX_KEY_GC_COMPLETE, json_type_boolean) &&
		    !json_object_get_boolean(jv_typed(gc, DUMPCTX_KEY_GC_COMPLETE, json_type_boolean)))
			fputs(" (incomplete)", out);
		fputc('\n', out);
	}
}

/* The types that allocated most (allocations: absent in older contexts,
 * null when no tick was subscribed or came). Names and kinds come from the
 * process or the file: escaped. */
static void show_allocs(FILE *out, struct json_object *ctx)
{
	struct json_object *al, *types;
	char b1[48], b2[48], b3[48];
	double window, since, bytes, ticks, until, other;

	if (!json_object_object_get_ex(ctx, DUMPCTX_KEY_ALLOCS, &al))
		return;
	if (!json_object_is_type(al, json_type_object)) {
		fputs("\nallocation by type: not recorded (no rule of the process subscribed to allocation ticks)\n",
		      out);
		return;
	}
	types = jv_typed(al, DUMPCTX_KEY_ALLOCS_TYPES, json_type_array);
	size_t n = types ? json_object_array_length(types) : 0;
	if (n > CONTEXT_SHOW_ALLOC_TYPES)
		n = CONTEXT_SHOW_ALLOC_TYPES;
	fputs("\nallocation by type (allocation ticks", out);
	/* From the window's start, or from the first tick when the ticks
	 * started later (near a threshold only, --alloc-ticks near). */
	if (jv_num(al, DUMPCTX_KEY_ALLOCS_SINCE_MS, &since))
		fprintf(out, " from %s", fmt_rel(since, b1, sizeof(b1)));
	else if (jv_num(al, DUMPCTX_KEY_ALLOCS_WINDOW_MS, &window))
		fprintf(out, ", the last %s", units_format(window, UNIT_MS, b1, sizeof(b1)));
	if (jv_num(al, DUMPCTX_KEY_ALLOCS_UNTIL_MS, &until))
		fprintf(out, " up to %s", fmt_rel(until, b1, sizeof(b1)));
	if (jv_num(al, DUMPCTX_KEY_ALLOCS_BYTES, &bytes) && jv_num(al, DUMPCTX_KEY_ALLOCS_TICKS, &ticks))
		fprintf(out, ": %s in %.0f ticks", units_format(bytes, UNIT_BYTES, b2, sizeof(b2)), ticks);
	fputs("):\n", out);
	if (n == 0) {
		fputs("  none in the window\n", out);
		return;
	}
	fprintf(out, "  %9s %6s %4s  %s\n", "bytes", "share", "kind", "type");
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		double v;
		snprintf(b1, sizeof(b1), "?");
		snprintf(b2, sizeof(b2), "?");
		if (jv_num(e, DUMPCTX_KEY_ATYPE_BYTES, &v))
			units_format(v, UNIT_BYTES, b1, sizeof(b1));
		if (jv_num(e, DUMPCTX_KEY_ATYPE_SHARE, &v))
			snprintf(b2, sizeof(b2), "%.1f%%", v * 100);
		fprintf(out, "  %9s %6s ", b1, b2);
		snprintf(b3, sizeof(b3), "%.4s",
		         jv_str(e, DUMPCTX_KEY_ATYPE_KIND, NULL) ? jv_str(e, DUMPCTX_KEY_ATYPE_KIND, NULL) : "?");
		fprintf(out, "%4s  ", text_escape_str(b3, b2, sizeof(b2)));
		size_t len;
		const char *type = jv_str(e, DUMPCTX_KEY_ATYPE_TYPE, &len);
		if (!type)
			fputs("?", out);
		else if (len == 0)
			fputs("(no type name)", out);
		else
			text_put_escaped(out, type, len);
		fputc('\n', out);
	}
	double listed = 0, v;
	for (size_t i = n; types && i < json_object_array_length(types); i++)
		if (jv_num(json_object_array_get_idx(types, i), DUMPCTX_KEY_ATYPE_BYTES, &v))
			listed += v;
	if (jv_num(al, DUMPCTX_KEY_ALLOCS_OTHER_BYTES, &other) && other + listed > 0)
		fprintf(out, "  %9s %6s %4s  the other types\n",
		        units_format(other + listed, UNIT_BYTES, b1, sizeof(b1)), "", "");
}

/* A name from the target (a type's, a root's): escaped, cut at
 * CONTEXT_NAME_MAX bytes of escaped text with an ellipsis; "?" when it is
 * not a string, "(no name)" when empty. short_type: without its namespaces
 * (context_type_short). */
static void put_name(FILE *out, const char *s, size_t len, int short_type, int utf8)
{
	char esc[CONTEXT_NAME_MAX + 1], shorter[4 * CONTEXT_NAME_MAX + 1];
	size_t n;

	if (!s) {
		fputs("?", out);
		return;
	}
	if (len == 0) {
		fputs("(no name)", out);
		return;
	}
	if (short_type) {
		/* Escaped, a byte takes at most 4: the first 4 * CONTEXT_NAME_MAX
		 * bytes of the short name are all that can show. */
		size_t full = context_type_short(s, len, shorter, sizeof(shorter));
		n = text_escape(shorter, full < sizeof(shorter) ? full : sizeof(shorter) - 1, esc, sizeof(esc));
		if (full >= sizeof(shorter))
			n = sizeof(esc);
	} else {
		n = text_escape(s, len, esc, sizeof(esc));
	}
	fputs(esc, out);
	if (n >= sizeof(esc))
		fputs(utf8 ? "\u2026" : "...", out);
}

/* One retention path: "s_entries (static) -> List<Byte[]> -> Byte[]", the
 * types without their namespaces, "(nested)" after a step that is a run of
 * objects of its type, an ellipsis where steps were left out. */
static void show_path(FILE *out, struct json_object *path, int utf8)
{
	struct json_object *steps = jv_typed(path, HEAPDUMP_KEY_PATH_STEPS, json_type_array);
	size_t n = steps ? json_object_array_length(steps) : 0, len;
	const char *arrow = utf8 ? " \u2192 " : " -> ", *dots = utf8 ? "\u2026" : "...";
	struct json_object *cut = jv_typed(path, HEAPDUMP_KEY_PATH_CUT, json_type_boolean);
	const char *root = jv_str(path, HEAPDUMP_KEY_PATH_ROOT, &len);

	put_name(out, root, len, 0, utf8);
	for (size_t i = 0; i < n; i++) {
		struct json_object *st = json_object_array_get_idx(steps, i);
		const char *type = jv_str(st, HEAPDUMP_KEY_STEP_TYPE, &len);

		if (n > CONTEXT_PATH_STEPS && i == CONTEXT_PATH_STEPS / 2) {
			fprintf(out, "%s%s %zu more", arrow, dots, n - CONTEXT_PATH_STEPS);
			i = n - CONTEXT_PATH_STEPS / 2 - 1;
			continue;
		}
		if (cut && json_object_get_boolean(cut) && i + 1 == n)
			fprintf(out, "%s%s", arrow, dots);
		fputs(arrow, out);
		put_name(out, type, len, 1, utf8);
		if (json_object_get_boolean(jv_typed(st, HEAPDUMP_KEY_STEP_NESTED, json_type_boolean)))
			fputs(" (nested)", out);
	}
	fputc('\n', out);
}

/* The types that keep the most alive (the summary's "retained",
 * cx_heap_retained), or why their retained sizes are missing. */
static void show_retained(FILE *out, struct json_object *heap, int utf8)
{
	struct cx_retained r;

	cx_heap_retained(heap, CONTEXT_SHOW_HEAP_RETAINED, &r);
	if (r.state == CX_RETAINED_NOT_COMPUTED) {
		fputs("  retained sizes: not computed", out);
		if (r.why) {
			fputs(": ", out);
			text_put_escaped(out, r.why, r.why_len);
		}
		fputc('\n', out);
		return;
	}
	if (r.n)
		fprintf(out,
		        "  what they keep alive (retained: the objects only they hold, themselves included):\n"
		        "  %9s %9s  %s\n",
		        "retained", "bytes", "type");
	for (size_t i = 0; i < r.n; i++) {
		struct cx_retained_row row;

		cx_heap_retained_row(&r, i, &row);
		fprintf(out, "  %9s %9s  ", row.retained, row.bytes);
		put_name(out, row.type, row.type_len, 0, utf8);
		fputc('\n', out);
	}
}

/* The heap summary (heap: absent unless a snapshot was asked for;
 * heap_error: why it is missing). Names come from the process or the file:
 * escaped, cut. Only the first CONTEXT_SHOW_HEAP_TYPES types and the paths
 * of the first CONTEXT_SHOW_HEAP_PATHS are read, whatever the file holds. */
static void show_heap(FILE *out, struct json_object *ctx, int utf8)
{
	static const char *const keys[HG_N_GENS] = HEAPDUMP_GEN_NAMES;
	static const char *const labels[HG_N_GENS] = {"gen0", "gen1", "gen2", "LOH", "POH", "?"};
	struct json_object *heap = jv_typed(ctx, DUMPCTX_KEY_HEAP, json_type_object);
	struct json_object *types = jv_typed(heap, HEAPDUMP_KEY_TYPES, json_type_array);
	struct json_object *gens = jv_typed(heap, HEAPDUMP_KEY_GENERATIONS, json_type_object);
	struct json_object *cut = jv_typed(heap, HEAPDUMP_KEY_CUT, json_type_object);
	size_t len, n = types ? json_object_array_length(types) : 0, shown = n, paths = 0;
	const char *error = jv_str(ctx, DUMPCTX_KEY_HEAP_ERROR, &len);
	char b1[48], b2[48], b3[48], b4[48];
	double total = 0, d;
	int has_total;

	if (error) {
		fputs("\nheap summary: missing: ", out);
		text_put_escaped(out, error, len);
		fputc('\n', out);
	}
	if (!heap)
		return;
	has_total = jv_num(heap, HEAPDUMP_KEY_BYTES, &total) && total > 0;
	fputs("\nheap (a snapshot", out);
	if (jv_num(heap, HEAPDUMP_KEY_GC, &d) && d > 0)
		fprintf(out, " in GC #%s", cx_fmt_count(d, b1, sizeof(b1)));
	fputs(")", out);
	if (has_total)
		fprintf(out, ": %s", units_format(total, UNIT_BYTES, b1, sizeof(b1)));
	if (jv_num(heap, HEAPDUMP_KEY_OBJECTS, &d))
		fprintf(out, " in %s objects", cx_fmt_count(d, b2, sizeof(b2)));
	if (jv_num(heap, HEAPDUMP_KEY_PAUSE_MS, &d))
		fprintf(out, "; the target was paused %s for it", units_format(d, UNIT_MS, b3, sizeof(b3)));
	fputs(":\n", out);
	if (gens) {
		const char *sep = "  by generation: ";
		for (int k = 0; k < HG_N_GENS; k++) {
			if (!jv_num(jv_typed(gens, keys[k], json_type_object), HEAPDUMP_KEY_GEN_BYTES, &d))
				continue;
			fprintf(out, "%s%s %s", sep, labels[k], units_format(d, UNIT_BYTES, b1, sizeof(b1)));
			sep = ", ";
		}
		if (sep[0] == ',')
			fputc('\n', out);
	}
	if (shown > CONTEXT_SHOW_HEAP_TYPES)
		shown = CONTEXT_SHOW_HEAP_TYPES;
	if (n == 0) {
		fputs("  no types\n", out);
	} else {
		fprintf(out, "  %9s %11s %6s  %-18s  %s\n", "bytes", "objects", "share", "where", "type");
	}
	for (size_t i = 0; i < shown; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		const char *type = jv_str(e, HEAPDUMP_KEY_TYPE_TYPE, &len);

		snprintf(b1, sizeof(b1), "?");
		snprintf(b2, sizeof(b2), "?");
		snprintf(b3, sizeof(b3), "?");
		if (jv_num(e, HEAPDUMP_KEY_TYPE_BYTES, &d)) {
			units_format(d, UNIT_BYTES, b1, sizeof(b1));
			if (has_total && d >= 0)
				snprintf(b3, sizeof(b3), "%.1f%%", d / total * 100);
		}
		if (jv_num(e, HEAPDUMP_KEY_TYPE_OBJECTS, &d))
			cx_fmt_count(d, b2, sizeof(b2));
		cx_heap_where(jv_typed(e, HEAPDUMP_KEY_TYPE_GENERATIONS, json_type_object), b4, sizeof(b4));
		fprintf(out, "  %9s %11s %6s  %-18s  ", b1, b2, b3, b4);
		put_name(out, type, len, 0, utf8);
		fputc('\n', out);
	}
	/* The rest: the listed types not shown, and those the context counts
	 * as other. */
	struct cx_heap_other rest;
	cx_heap_other(heap, shown, &rest);
	if (rest.count > 0)
		fprintf(out, "  %9s %11s %6s  %-18s  (%s other types)\n",
		        units_format(rest.bytes, UNIT_BYTES, b1, sizeof(b1)),
		        cx_fmt_count(rest.objects, b2, sizeof(b2)), "", "", cx_fmt_count(rest.count, b3, sizeof(b3)));
	for (size_t i = 0; i < shown && i < CONTEXT_SHOW_HEAP_PATHS; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		const char *type = jv_str(e, HEAPDUMP_KEY_TYPE_TYPE, &len);
		struct json_object *p = cx_heap_path_of(heap, type, len);
		double pb, pc;

		if (!p)
			continue;
		if (paths++ == 0)
			fputs("  what holds them (from a root, the path that holds most of each type's bytes):\n", out);
		fputs("    ", out);
		put_name(out, type, len, 0, utf8);
		fputs(":", out);
		if (jv_num(p, HEAPDUMP_KEY_PATH_BYTES, &pb)) {
			fprintf(out, " %s", units_format(pb, UNIT_BYTES, b1, sizeof(b1)));
			if (jv_num(e, HEAPDUMP_KEY_TYPE_BYTES, &d))
				fprintf(out, " of %s", units_format(d, UNIT_BYTES, b2, sizeof(b2)));
		}
		if (jv_num(p, HEAPDUMP_KEY_PATH_OBJECTS, &pc)) {
			fprintf(out, " in %s", cx_fmt_count(pc, b1, sizeof(b1)));
			if (jv_num(e, HEAPDUMP_KEY_TYPE_OBJECTS, &d))
				fprintf(out, " of %s", cx_fmt_count(d, b2, sizeof(b2)));
			fputs(" objects", out);
		}
		fputs("\n      ", out);
		show_path(out, p, utf8);
	}
	show_retained(out, heap, utf8);
	if (cut) {
		static const struct {
			const char *key, *what;
		} cuts[] = {{HEAPDUMP_KEY_CUT_OBJECTS, "objects"},
		            {HEAPDUMP_KEY_CUT_REFERENCES, "references"},
		            {HEAPDUMP_KEY_CUT_TYPES, "types"},
		            {HEAPDUMP_KEY_CUT_ROOTS, "roots"},
		            {HEAPDUMP_KEY_CUT_NAMES, "type names"},
		            {HEAPDUMP_KEY_CUT_LOST_BATCHES, "event batches lost"},
		            {HEAPDUMP_KEY_CUT_UNRESOLVED_REFERENCES, "references to no object"},
		            {HEAPDUMP_KEY_CUT_UNRESOLVED_ROOTS, "roots of no object"}};
		const char *sep = "  cut (past dumpwatch's bounds, or lost): ";
		for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++)
			if (jv_num(cut, cuts[k].key, &d) && d > 0) {
				fprintf(out, "%s%s %s", sep, cx_fmt_count(d, b1, sizeof(b1)), cuts[k].what);
				sep = ", ";
			}
		if (sep[0] == ',')
			fputc('\n', out);
	}
}

int context_show(FILE *out, struct json_object *ctx, int utf8)
{
	size_t len;
	const char *error = jv_str(ctx, DUMPCTX_KEY_ERROR, &len);

	fputs("outcome:   ", out);
	jv_put_str(out, ctx, DUMPCTX_KEY_OUTCOME, "?");
	if (error) {
		fputs(": ", out);
		text_put_escaped(out, error, len);
	}
	fputc('\n', out);
	show_rule(out, ctx);
	show_when(out, ctx);
	show_process(out, ctx);
	show_history(out, ctx, utf8);
	show_gcs(out, ctx);
	show_allocs(out, ctx);
	show_heap(out, ctx, utf8);
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

int context_show_file(const char *file, FILE *out, char *err, size_t errlen)
{
	struct json_object *ctx;
	char path[PATH_MAX], why[512], name[PATH_MAX];
	int r;

	text_escape_str(file, name, sizeof(name));
	if (context_sidecar_name(file, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "%s: the name is too long", name);
		return -ENAMETOOLONG;
	}
	r = context_load(AT_FDCWD, path, 0, CONTEXT_FILE_MAX, &ctx, NULL, why, sizeof(why));
	if (r < 0) {
		if (strcmp(path, file) != 0) {
			char pname[PATH_MAX];
			text_escape_str(path, pname, sizeof(pname));
			snprintf(err, errlen, "%s: %s: %s", name, pname, why);
		} else {
			snprintf(err, errlen, "%s: %s", name, why);
		}
		return r;
	}
	r = context_show(out, ctx, context_locale_utf8());
	json_object_put(ctx);
	if (r < 0)
		snprintf(err, errlen, "%s: cannot write the text: %s", name, strerror(-r));
	return r;
}
