/* The plot beside a dump (NAME.svg); see plot.h and the dump context's shape
 * (spec of issue 15, "JSON shape" and "Plot").
 *
 * Design note: the context came from a file a hostile process may have
 * influenced (its name, its command line, the values of its counters), so
 * every number is checked before it is used (non-finite and non-number values
 * are skipped, magnitudes are clamped so no difference overflows) and every
 * string is escaped for XML, cut to a bounded length, with its control
 * characters and invalid UTF-8 replaced. The work is bounded too: at most
 * PLOT_MAX_PANELS panels, PLOT_MAX_POINTS points of a series and PLOT_MAX_GCS
 * GCs are read. Nothing is allocated: the JSON is walked once to find the
 * ranges and once more to draw.
 *
 * Layout: a header (rule, process, fire time, outcome, error, description),
 * then one panel per condition, all on the same time axis (seconds relative
 * to the fire), then a legend. Styles are presentation attributes, not CSS,
 * so that renderers without CSS draw the same picture; the class names are
 * there for tests and for readers that want to restyle. */
#include "dumpwatch/plot.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "dumpwatch/dumpctx.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

#define PLOT_WIDTH 900
#define PLOT_LEFT 84  /* room for the y tick labels */
#define PLOT_RIGHT 24 /* room for the last x tick label */
#define PLOT_AREA_WIDTH (PLOT_WIDTH - PLOT_LEFT - PLOT_RIGHT)
#define PANEL_TITLE 28 /* above the plot area: the condition */
#define PANEL_PLOT 180 /* the plot area */
#define PANEL_AXIS 30  /* below it: the x tick labels */
#define PANEL_GAP 10
#define PANEL_HEIGHT (PANEL_TITLE + PANEL_PLOT + PANEL_AXIS + PANEL_GAP)
#define LEGEND_ROW 20

#define PLOT_MAX_PANELS 8
#define PLOT_MAX_POINTS 20000
#define PLOT_MAX_SERIES 1000
#define PLOT_MAX_GCS 1000
/* Widths of strings from the context, in put_text's units (about one Latin
 * letter): 900 px hold about 130 of them at 12 px. */
#define PLOT_MAX_TEXT 110 /* a line of the header */
#define PLOT_MAX_TITLE 80 /* a condition's text */
#define PLOT_MAX_NAME 32  /* the process name inside a line */
#define PLOT_MAX_WORD 16  /* the outcome (at most 7 letters when valid) */
#define PLOT_HUGE 1e300   /* |values| beyond are drawn as this: differences stay finite */
#define PLOT_TINY_SPAN 1e-200

/* Colours: dark enough to print, told apart also in grey. */
#define COLOR_SERIES "#1f4e9c"
#define COLOR_BAND "#9ec3e6"
#define COLOR_THRESHOLD "#d35400"
#define COLOR_SUSTAIN "#fbe3c0"
#define COLOR_FIRE "#c0392b"
#define COLOR_DUMP "#1e7b45"
#define COLOR_GRID "#e2e2e2"
#define COLOR_AXIS "#333333"
#define COLOR_TEXT "#111111"
#define COLOR_MUTED "#555555"

static const struct {
	const char *cls;
	const char *color;
	int height;
} gc_style[3] = {{"gc gc0", "#8c96a0", 6}, {"gc gc1", "#d4a017", 10}, {"gc gc2", "#7d3c98", 16}};

/* A panel: one condition of the rule and its metric's series. */
struct panel {
	struct json_object *cond;
	struct json_object *points; /* the series' points; NULL: no history */
	size_t n_points;            /* entries of points to read (capped) */
	size_t n_valid;             /* of which have a finite t and last */
	enum unit_kind unit;
	int has_threshold, has_value, at_least;
	double threshold, for_ms, value;
	const char *op;
	double ymin, ymax; /* the axis, base unit */
	double scale;      /* display unit = scale base units */
	const char *suffix;
};

struct plot {
	FILE *out;
	double fired_ms;
	double slot_ms; /* the history's resolution; 0: unknown */
	int has_start, has_end;
	double start_ms, end_ms; /* relative to the fire */
	struct json_object *gcs; /* an array, or NULL */
	size_t n_gcs;
	double xmin, xmax; /* ms relative to the fire */
	struct panel panels[PLOT_MAX_PANELS];
	size_t n_panels, n_conds;
	unsigned drawn; /* LEGEND_* of what some panel draws */
};

/* What the legend explains, when some panel shows it. */
enum {
	LEGEND_SERIES = 1u << 0,
	LEGEND_BAND = 1u << 1,
	LEGEND_THRESHOLD = 1u << 2,
	LEGEND_SUSTAIN = 1u << 3,
	LEGEND_FIRE = 1u << 4,
	LEGEND_DUMP_START = 1u << 5,
	LEGEND_DUMP_END = 1u << 6,
	LEGEND_GC = 1u << 7,
};

struct point {
	double t, last, lo, hi;
};

static double clamp_huge(double v)
{
	return v > PLOT_HUGE ? PLOT_HUGE : v < -PLOT_HUGE ? -PLOT_HUGE : v;
}

/* Writes len bytes of s as XML character data, fit also for an attribute
 * value: & < > " ' become entities; tab, newline and carriage return a space;
 * other controls (text_is_control), code points XML 1.0 cannot hold and each
 * byte that begins no valid UTF-8 sequence U+FFFD. Once the text is
 * maxwidth wide (a character from U+1100 on counts as two, as East Asian
 * scripts are about twice as wide as Latin), the rest is cut and an ellipsis
 * shown: the line stays inside the picture. */
static void put_text(FILE *out, const char *s, size_t len, size_t maxwidth)
{
	const struct text_markup xml = {.apos = "&apos;", .control = "\xEF\xBF\xBD", .maxwidth = maxwidth};
	text_put_markup(out, s, len, &xml);
}

/* The string member key of o, escaped; fallback (trusted) when it has none. */
static void put_jstr(FILE *out, struct json_object *o, const char *key, const char *fallback, size_t maxwidth)
{
	size_t len = 0;
	const char *s = jv_str(o, key, &len);
	if (s)
		put_text(out, s, len, maxwidth);
	else
		fputs(fallback, out);
}

static enum unit_kind unit_from_name(const char *s)
{
	static const enum unit_kind kinds[] = {UNIT_NONE,    UNIT_BYTES, UNIT_BYTES_PER_SEC, UNIT_MS,
	                                       UNIT_PERCENT, UNIT_COUNT, UNIT_PER_SEC};
	for (size_t i = 0; s && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(s, units_name(kinds[i])) == 0)
			return kinds[i];
	return UNIT_NONE;
}

/* The display unit of an axis whose values reach maxabs (base unit): sizes
 * and rates of sizes with decimal prefixes as units_format writes them. */
static void unit_display(enum unit_kind u, double maxabs, double *ret_scale, const char **ret_suffix)
{
	static const char *const bytes[] = {" B", " KB", " MB", " GB", " TB", " PB"};
	static const char *const rates[] = {" B/s", " KB/s", " MB/s", " GB/s", " TB/s", " PB/s"};
	double scale = 1.0;
	size_t i = 0;

	switch (u) {
	case UNIT_BYTES:
	case UNIT_BYTES_PER_SEC:
		while (i + 1 < sizeof(bytes) / sizeof(bytes[0]) && maxabs >= scale * 1000.0) {
			scale *= 1000.0;
			i++;
		}
		*ret_scale = scale;
		*ret_suffix = u == UNIT_BYTES ? bytes[i] : rates[i];
		return;
	case UNIT_MS:
		*ret_suffix = " ms";
		break;
	case UNIT_PERCENT:
		*ret_suffix = "%";
		break;
	case UNIT_PER_SEC:
		*ret_suffix = "/s";
		break;
	case UNIT_COUNT:
	case UNIT_NONE:
	default:
		*ret_suffix = "";
		break;
	}
	*ret_scale = 1.0;
}

/* Writes v with decimals decimals ("-0" as "0"); a magnitude that would print
 * long in %f form in %g form. trim drops trailing zeros. */
static void fmt_number(char *buf, size_t buflen, double v, int decimals, int trim)
{
	size_t n;
	if (!isfinite(v)) {
		snprintf(buf, buflen, "?");
		return;
	}
	if (fabs(v) >= 1e15 || (v != 0.0 && fabs(v) < 1e-9)) {
		snprintf(buf, buflen, "%.3g", v);
		return;
	}
	snprintf(buf, buflen, "%.*f", decimals, v);
	if (trim && strchr(buf, '.')) {
		n = strlen(buf);
		while (n > 0 && buf[n - 1] == '0')
			buf[--n] = '\0';
		if (n > 0 && buf[n - 1] == '.')
			buf[--n] = '\0';
	}
	if (strcmp(buf, "-0") == 0)
		snprintf(buf, buflen, "0");
}

/* A value of the panel in its display unit, with up to 3 decimals ("300 MB"). */
static const char *fmt_value(char *buf, size_t buflen, const struct panel *pn, double v)
{
	char num[48];
	fmt_number(num, sizeof(num), v / pn->scale, 3, 1);
	snprintf(buf, buflen, "%s%s", num, pn->suffix);
	return buf;
}

/* The decimals a tick step needs (0 for 1, 1 for 0.5, 2 for 0.02). */
static int step_decimals(double step)
{
	int d = 0;
	if (!(step > 0.0) || step >= 1.0)
		return 0;
	d = (int)ceil(-log10(step) - 1e-9);
	return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* A step of 1, 2 or 5 times a power of ten near span / target; 0 when the
 * span has no usable size. */
static double nice_step(double span, double target)
{
	double raw = span / target, mag, f;
	if (!isfinite(raw) || !(raw > PLOT_TINY_SPAN))
		return 0.0;
	mag = pow(10.0, floor(log10(raw)));
	if (!(mag > 0.0) || !isfinite(mag))
		return 0.0;
	f = raw / mag;
	return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
}

/* Entry i of a series' points: [t_ms, last, min, max], t and last finite;
 * min and max fall back to last. Returns 0 for an entry to skip. */
static int point_get(struct json_object *points, size_t i, struct point *p)
{
	struct json_object *e = json_object_array_get_idx(points, i);
	double lo, hi;
	size_t n;

	if (!e || !json_object_is_type(e, json_type_array))
		return 0;
	n = json_object_array_length(e);
	if (n < 2 || !jv_num_of(json_object_array_get_idx(e, 0), &p->t) ||
	    !jv_num_of(json_object_array_get_idx(e, 1), &p->last))
		return 0;
	p->t = clamp_huge(p->t);
	p->last = clamp_huge(p->last);
	p->lo = p->hi = p->last;
	if (n >= 4 && jv_num_of(json_object_array_get_idx(e, 2), &lo) &&
	    jv_num_of(json_object_array_get_idx(e, 3), &hi)) {
		lo = clamp_huge(lo);
		hi = clamp_huge(hi);
		p->lo = fmin(fmin(lo, hi), p->last);
		p->hi = fmax(fmax(lo, hi), p->last);
	}
	return 1;
}

/* The time of GC i relative to the fire (its start, else its end) and its
 * generation (0..2). Returns 0 for an entry to skip. */
static int gc_get(const struct plot *pl, size_t i, double *ret_t, int *ret_gen)
{
	struct json_object *g = json_object_array_get_idx(pl->gcs, i);
	double gen = 0.0;

	if (!jv_num(g, DUMPCTX_KEY_GC_START_MS, ret_t) && !jv_num(g, DUMPCTX_KEY_GC_END_MS, ret_t))
		return 0;
	*ret_t = clamp_huge(*ret_t);
	jv_num(g, DUMPCTX_KEY_GC_GENERATION, &gen);
	*ret_gen = gen >= 2.0 ? 2 : gen >= 1.0 ? 1 : 0;
	return 1;
}

static size_t capped_length(struct json_object *array, size_t cap)
{
	size_t n = array ? json_object_array_length(array) : 0;
	return n > cap ? cap : n;
}

/* The panel of condition cond: its series in history, its threshold and
 * the y axis over the series' values, the threshold and 0. */
static void panel_init(struct panel *pn, struct json_object *cond, struct json_object *series, double *xmin,
                       double *xmax)
{
	size_t len = 0, mlen = 0, n_series = capped_length(series, PLOT_MAX_SERIES);
	const char *metric = jv_str(cond, DUMPCTX_KEY_COND_METRIC, &mlen), *op = NULL,
	           *unit = jv_str(cond, DUMPCTX_KEY_COND_UNIT, &len);
	struct json_object *v;
	double lo = 0.0, hi = 0.0, span;

	memset(pn, 0, sizeof(*pn));
	pn->cond = cond;
	for (size_t i = 0; metric && i < n_series; i++) {
		struct json_object *s = json_object_array_get_idx(series, i);
		size_t slen = 0;
		const char *m = jv_str(s, DUMPCTX_KEY_SERIES_METRIC, &slen);
		if (m && slen == mlen && memcmp(m, metric, mlen) == 0) {
			pn->points = jv_typed(s, DUMPCTX_KEY_SERIES_POINTS, json_type_array);
			if (!unit) /* the rule's unit first: the threshold is in it */
				unit = jv_str(s, DUMPCTX_KEY_SERIES_UNIT, &len);
			break;
		}
	}
	pn->unit = unit_from_name(unit);
	pn->has_threshold = jv_num(cond, DUMPCTX_KEY_COND_THRESHOLD, &pn->threshold);
	pn->threshold = clamp_huge(pn->threshold);
	if (!jv_num(cond, DUMPCTX_KEY_COND_FOR_MS, &pn->for_ms) || pn->for_ms < 0.0)
		pn->for_ms = 0.0;
	pn->for_ms = clamp_huge(pn->for_ms);
	pn->has_value = jv_num(cond, DUMPCTX_KEY_COND_VALUE, &pn->value);
	v = jv_member(cond, DUMPCTX_KEY_COND_AT_LEAST);
	pn->at_least = v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	op = jv_str(cond, DUMPCTX_KEY_COND_OP, &len);
	if (op && (!strcmp(op, ">") || !strcmp(op, ">=") || !strcmp(op, "<") || !strcmp(op, "<=")))
		pn->op = op;

	pn->n_points = capped_length(pn->points, PLOT_MAX_POINTS);
	for (size_t i = 0; i < pn->n_points; i++) {
		struct point p;
		if (!point_get(pn->points, i, &p))
			continue;
		pn->n_valid++;
		lo = fmin(lo, p.lo);
		hi = fmax(hi, p.hi);
		*xmin = fmin(*xmin, p.t);
		*xmax = fmax(*xmax, p.t);
	}
	if (pn->for_ms > 0.0)
		*xmin = fmin(*xmin, -pn->for_ms);
	if (pn->has_threshold) {
		lo = fmin(lo, pn->threshold);
		hi = fmax(hi, pn->threshold);
	}
	unit_display(pn->unit, fmax(fabs(lo), fabs(hi)), &pn->scale, &pn->suffix);
	span = hi - lo;
	if (!(span > PLOT_TINY_SPAN)) {
		/* Nothing but zeros: an axis of one display unit. */
		hi = lo + pn->scale;
		span = hi - lo;
	}
	pn->ymax = hi + 0.05 * span;
	pn->ymin = lo < 0.0 ? lo - 0.05 * span : lo;
}

static double map_x(const struct plot *pl, double t)
{
	return PLOT_LEFT + PLOT_AREA_WIDTH * (clamp_huge(t) - pl->xmin) / (pl->xmax - pl->xmin);
}

static double map_y(const struct panel *pn, double top, double v)
{
	double y = top + PANEL_PLOT * (pn->ymax - clamp_huge(v)) / (pn->ymax - pn->ymin);
	/* Only a value outside the axis lands outside, and none is. */
	return y < top ? top : y > top + PANEL_PLOT ? top + PANEL_PLOT : y;
}

/* fired_unix_ms as UTC ISO 8601 with milliseconds, " UTC" after it for
 * readers who do not know the Z. */
static void fmt_iso(char *buf, size_t buflen, double ms)
{
	struct tm tm;
	time_t sec;
	int64_t whole, rem;
	char date[40];

	if (!(fabs(ms) < 1e15)) {
		snprintf(buf, buflen, "(unknown time)");
		return;
	}
	whole = (int64_t)llround(ms);
	rem = whole % 1000;
	whole /= 1000;
	if (rem < 0) {
		rem += 1000;
		whole--;
	}
	sec = (time_t)whole;
	if (!gmtime_r(&sec, &tm) || strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, buflen, "(unknown time)");
		return;
	}
	snprintf(buf, buflen, "%s.%03dZ UTC", date, (int)rem);
}

/* The header: rule, process, fire time, outcome, then the error and the
 * rule's description when there are. Returns the height it took. */
static int draw_header(const struct plot *pl, struct json_object *ctx, int draw)
{
	FILE *out = pl->out;
	struct json_object *rule = jv_member(ctx, DUMPCTX_KEY_RULE), *proc = jv_member(ctx, DUMPCTX_KEY_PROCESS);
	size_t len = 0;
	const char *error = jv_str(ctx, DUMPCTX_KEY_ERROR, &len), *desc;
	size_t desc_len = 0;
	double pid = 0.0;
	char when[64];
	int y = 26;

	desc = jv_str(rule, DUMPCTX_KEY_RULE_DESCRIPTION, &desc_len);
	if (draw) {
		fprintf(out, "<text class=\"title\" x=\"16\" y=\"%d\" font-size=\"17\" font-weight=\"bold\">Rule ", y);
		put_jstr(out, rule, DUMPCTX_KEY_RULE_NAME, "(unnamed)", PLOT_MAX_TEXT);
		fputs("</text>\n", out);
	}
	y += 20;
	if (draw) {
		fmt_iso(when, sizeof(when), pl->fired_ms);
		fprintf(out, "<text class=\"subtitle\" x=\"16\" y=\"%d\" font-size=\"12.5\" fill=\"%s\">process ", y,
		        COLOR_TEXT);
		put_jstr(out, proc, DUMPCTX_KEY_PROC_NAME, "(unknown)", PLOT_MAX_NAME);
		if (jv_num(proc, DUMPCTX_KEY_PROC_PID, &pid) && pid >= 0.0 && pid < 1e15)
			fprintf(out, " (pid %.0f)", pid);
		fprintf(out, " \xC2\xB7 fired %s \xC2\xB7 outcome: ", when);
		put_jstr(out, ctx, DUMPCTX_KEY_OUTCOME, "(unknown)", PLOT_MAX_WORD);
		fputs("</text>\n", out);
	}
	if (error && len > 0) {
		y += 18;
		if (draw) {
			fprintf(out,
			        "<text class=\"error\" x=\"16\" y=\"%d\" font-size=\"12.5\" fill=\"%s\">error: ", y,
			        COLOR_FIRE);
			put_text(out, error, len, PLOT_MAX_TEXT);
			fputs("</text>\n", out);
		}
	}
	if (desc && desc_len > 0) {
		y += 18;
		if (draw) {
			fprintf(out,
			        "<text class=\"description\" x=\"16\" y=\"%d\" font-size=\"12\" font-style=\"italic\" "
			        "fill=\"%s\">",
			        y, COLOR_MUTED);
			put_text(out, desc, desc_len, PLOT_MAX_TEXT);
			fputs("</text>\n", out);
		}
	}
	return y + 16;
}

static void draw_vline(const struct plot *pl, double top, const char *cls, double t, const char *color,
                       const char *dash)
{
	double x = map_x(pl, t);
	fprintf(pl->out,
	        "<line class=\"%s\" data-t-ms=\"%.17g\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
	        "stroke-width=\"1.5\"%s%s%s/>\n",
	        cls, t, x, top, x, top + PANEL_PLOT, color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
	        dash ? "\"" : "");
}

/* The x axis under a plot area whose top is at top: ticks and labels. */
static void draw_x_axis(const struct plot *pl, double top)
{
	FILE *out = pl->out;
	double bottom = top + PANEL_PLOT, step = nice_step(pl->xmax - pl->xmin, 8.0);
	int decimals = step_decimals(step / 1000.0);
	char num[48];

	fprintf(out, "<line class=\"x-axis\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\"/>\n", PLOT_LEFT,
	        bottom, PLOT_LEFT + PLOT_AREA_WIDTH, bottom, COLOR_AXIS);
	if (step <= 0.0)
		return;
	for (double k = ceil(pl->xmin / step), n = 0; k * step <= pl->xmax && n < 50; k++, n++) {
		double t = k * step, x = map_x(pl, t);
		fmt_number(num, sizeof(num), t / 1000.0, decimals, 1);
		fprintf(out,
		        "<line class=\"xtick\" data-t-ms=\"%.17g\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
		        "stroke=\"%s\"/>\n",
		        t, x, bottom, x, bottom + 4, COLOR_AXIS);
		fprintf(out,
		        "<text class=\"xtick-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"11\" text-anchor=\"middle\" "
		        "fill=\"%s\">%s s</text>\n",
		        x, bottom + 16, COLOR_TEXT, num);
	}
}

/* Grid lines and labels of the y axis of pn. */
static void draw_y_axis(const struct plot *pl, const struct panel *pn, double top)
{
	FILE *out = pl->out;
	double step = nice_step(pn->ymax - pn->ymin, 5.0);
	int decimals = step_decimals(step / pn->scale);
	char num[48];

	if (step <= 0.0)
		return;
	for (double k = ceil(pn->ymin / step), n = 0; k * step <= pn->ymax && n < 50; k++, n++) {
		double v = k * step, y = map_y(pn, top, v);
		fmt_number(num, sizeof(num), v / pn->scale, decimals, 1);
		fprintf(out,
		        "<line class=\"ytick\" data-value=\"%.17g\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
		        "stroke=\"%s\"/>\n",
		        v, PLOT_LEFT - 4, y, PLOT_LEFT + PLOT_AREA_WIDTH, y, COLOR_GRID);
		fprintf(out,
		        "<text class=\"ytick-label\" data-value=\"%.17g\" x=\"%d\" y=\"%.2f\" font-size=\"11\" "
		        "text-anchor=\"end\" fill=\"%s\">%s%s</text>\n",
		        v, PLOT_LEFT - 7, y + 4, COLOR_TEXT, num, pn->suffix);
	}
}

/* The series of pn: the min..max band of each slot, then the line of the
 * last values. A point holds its slot's values from the slot's start until
 * the next point (a run of one value is kept as its first and last point),
 * so the line is drawn in steps, and the last value holds until the fire. */
static void draw_series(const struct plot *pl, const struct panel *pn, double top)
{
	FILE *out = pl->out;
	struct point p;
	size_t i;
	int have_prev = 0;
	double prev_y = 0, last_t = 0, last_y = 0;

	if (pl->slot_ms > 0) {
		int open = 0;
		for (i = 0; i < pn->n_points; i++) {
			if (!point_get(pn->points, i, &p) || !(p.hi > p.lo))
				continue;
			if (!open)
				fputs("<path class=\"band\" fill=\"" COLOR_BAND
				      "\" fill-opacity=\"0.55\" stroke=\"none\" d=\"",
				      out);
			open = 1;
			double x0 = map_x(pl, p.t),
			       x1 = fmin(map_x(pl, p.t + pl->slot_ms), PLOT_LEFT + PLOT_AREA_WIDTH);
			fprintf(out, "M%.2f %.2fH%.2fV%.2fH%.2fZ", x0, map_y(pn, top, p.hi), fmax(x1, x0 + 1),
			        map_y(pn, top, p.lo), x0);
		}
		if (open)
			fputs("\"/>\n", out);
	}
	fprintf(out,
	        "<polyline class=\"series\" data-points=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" "
	        "stroke-linejoin=\"round\" points=\"",
	        pn->n_valid, COLOR_SERIES);
	for (i = 0; i < pn->n_points; i++) {
		if (!point_get(pn->points, i, &p))
			continue;
		double x = map_x(pl, p.t), y = map_y(pn, top, p.last);
		if (have_prev)
			fprintf(out, "%.2f,%.2f ", x, prev_y);
		fprintf(out, "%.2f,%.2f ", x, y);
		have_prev = 1;
		prev_y = y;
		last_t = p.t;
		last_y = y;
	}
	if (have_prev && last_t < 0)
		fprintf(out, "%.2f,%.2f ", map_x(pl, 0), last_y);
	fputs("\"/>\n", out);
	if (pn->n_valid == 1 && last_t >= 0) {
		/* A line of one point draws nothing. */
		for (i = 0; i < pn->n_points; i++)
			if (point_get(pn->points, i, &p))
				fprintf(
				    out,
				    "<circle class=\"series-point\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
				    map_x(pl, p.t), map_y(pn, top, p.last), COLOR_SERIES);
	}
}

static void draw_threshold(const struct plot *pl, const struct panel *pn, double top)
{
	FILE *out = pl->out;
	double y = map_y(pn, top, pn->threshold);
	char label[80];

	fprintf(
	    out,
	    "<line class=\"threshold\" data-value=\"%.17g\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" "
	    "stroke-width=\"1.5\" stroke-dasharray=\"7 4\"/>\n",
	    pn->threshold, PLOT_LEFT, y, PLOT_LEFT + PLOT_AREA_WIDTH, y, COLOR_THRESHOLD);
	/* Above the line at the left, where a rising series is still low; below
	 * it when the line is at the top of the area. */
	fprintf(out,
	        "<text class=\"threshold-label\" x=\"%d\" y=\"%.2f\" font-size=\"11\" fill=\"%s\" stroke=\"#ffffff\" "
	        "stroke-width=\"3\" paint-order=\"stroke\">%s%s%s</text>\n",
	        PLOT_LEFT + 6, y - 5 < top + 12 ? y + 13 : y - 5, COLOR_THRESHOLD, pn->op ? pn->op : "threshold",
	        pn->op ? " " : ": ", fmt_value(label, sizeof(label), pn, pn->threshold));
}

static void draw_gcs(const struct plot *pl, double top)
{
	FILE *out = pl->out;
	double bottom = top + PANEL_PLOT;

	for (size_t i = 0; i < pl->n_gcs; i++) {
		double t, x;
		int gen;
		if (!gc_get(pl, i, &t, &gen))
			continue;
		x = map_x(pl, t);
		fprintf(out,
		        "<line class=\"%s\" data-t-ms=\"%.17g\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
		        "stroke=\"%s\" stroke-width=\"2\"/>\n",
		        gc_style[gen].cls, t, x, bottom, x, bottom - gc_style[gen].height, gc_style[gen].color);
	}
}

/* Panel index i with its top edge at y0. */
static void draw_panel(const struct plot *pl, size_t idx, double y0)
{
	FILE *out = pl->out;
	const struct panel *pn = &pl->panels[idx];
	double top = y0 + PANEL_TITLE;
	char vb[80];

	fputs("<g class=\"panel\" data-metric=\"", out);
	put_jstr(out, pn->cond, DUMPCTX_KEY_COND_METRIC, "", PLOT_MAX_TITLE);
	fprintf(out, "\" data-unit=\"%s\">\n", units_name(pn->unit));
	fprintf(out, "<text class=\"panel-title\" x=\"%d\" y=\"%.2f\" font-size=\"13\" font-weight=\"bold\">",
	        PLOT_LEFT, y0 + 18);
	put_jstr(out, pn->cond, DUMPCTX_KEY_COND_TEXT, "(condition without text)", PLOT_MAX_TITLE);
	if (pn->has_value)
		fprintf(out, "<tspan font-weight=\"normal\" fill=\"%s\">  \xE2\x80\x94 value at the fire %s%s</tspan>",
		        COLOR_MUTED, pn->at_least ? "\xE2\x89\xA5 " : "", fmt_value(vb, sizeof(vb), pn, pn->value));
	fputs("</text>\n", out);
	fprintf(out, "<rect class=\"plot-bg\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	        PLOT_LEFT, top, PLOT_AREA_WIDTH, PANEL_PLOT);

	if (!pn->points || pn->n_valid == 0) {
		fprintf(out,
		        "<text class=\"no-history\" x=\"%.2f\" y=\"%.2f\" font-size=\"13\" text-anchor=\"middle\" "
		        "fill=\"%s\">no history of this metric in the context</text>\n",
		        PLOT_LEFT + PLOT_AREA_WIDTH / 2.0, top + PANEL_PLOT / 2.0, COLOR_MUTED);
	} else {
		if (pn->for_ms > 0.0) {
			double x0 = map_x(pl, -pn->for_ms), x1 = map_x(pl, 0.0);
			fprintf(out,
			        "<rect class=\"sustain\" data-t-ms=\"%.17g\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
			        "height=\"%d\" fill=\"%s\"/>\n",
			        -pn->for_ms, x0, top, x1 - x0, PANEL_PLOT, COLOR_SUSTAIN);
		}
		draw_y_axis(pl, pn, top);
		draw_series(pl, pn, top);
		if (pn->has_threshold)
			draw_threshold(pl, pn, top);
	}
	draw_vline(pl, top, "fire", 0.0, COLOR_FIRE, NULL);
	if (pl->has_start)
		draw_vline(pl, top, "dump-start", pl->start_ms, COLOR_DUMP, "4 3");
	if (pl->has_end)
		draw_vline(pl, top, "dump-end", pl->end_ms, COLOR_DUMP, NULL);
	draw_gcs(pl, top);
	draw_x_axis(pl, top);
	fprintf(
	    out,
	    "<rect class=\"plot-area\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"%s\"/>\n",
	    PLOT_LEFT, top, PLOT_AREA_WIDTH, PANEL_PLOT, COLOR_AXIS);
	fputs("</g>\n", out);
}

/* The legend: one row, wrapped when it does not fit; returns its height
 * when draw is 0. */
static int draw_legend(const struct plot *pl, double y0, int draw)
{
	static const struct {
		unsigned what;
		const char *label, *shape, *color, *dash;
	} items[] = {
	    {LEGEND_SERIES, "last value", "line", COLOR_SERIES, NULL},
	    {LEGEND_BAND, "min..max in a slot", "rect", COLOR_BAND, NULL},
	    {LEGEND_THRESHOLD, "threshold", "line", COLOR_THRESHOLD, "7 4"},
	    {LEGEND_SUSTAIN, "sustain window", "rect", COLOR_SUSTAIN, NULL},
	    {LEGEND_FIRE, "fire", "vline", COLOR_FIRE, NULL},
	    {LEGEND_DUMP_START, "dump start", "vline", COLOR_DUMP, "4 3"},
	    {LEGEND_DUMP_END, "dump end", "vline", COLOR_DUMP, NULL},
	    {LEGEND_GC, "GC gen0", "gc0", NULL, NULL},
	    {LEGEND_GC, "gen1", "gc1", NULL, NULL},
	    {LEGEND_GC, "gen2", "gc2", NULL, NULL},
	};
	FILE *out = pl->out;
	double x = PLOT_LEFT, y = y0 + 14;
	int rows = 1;

	if (draw)
		fputs("<g class=\"legend\" font-size=\"11\">\n", out);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		/* 6.2 px per character of 11 px sans-serif, generously. */
		double w = 24 + 6.2 * (double)strlen(items[i].label) + 14;
		if (!(pl->drawn & items[i].what))
			continue;
		if (x + w > PLOT_LEFT + PLOT_AREA_WIDTH) {
			x = PLOT_LEFT;
			y += LEGEND_ROW;
			rows++;
		}
		if (draw) {
			const char *s = items[i].shape;
			if (!strcmp(s, "line"))
				fprintf(out,
				        "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
				        "stroke-width=\"2\"%s%s%s/>\n",
				        x, y - 4, x + 18, y - 4, items[i].color,
				        items[i].dash ? " stroke-dasharray=\"" : "", items[i].dash ? items[i].dash : "",
				        items[i].dash ? "\"" : "");
			else if (!strcmp(s, "rect"))
				fprintf(out,
				        "<rect x=\"%.2f\" y=\"%.2f\" width=\"18\" height=\"10\" fill=\"%s\" "
				        "stroke=\"#999999\" "
				        "stroke-width=\"0.5\"/>\n",
				        x, y - 9, items[i].color);
			else if (!strcmp(s, "vline"))
				fprintf(out,
				        "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
				        "stroke-width=\"2\"%s%s%s/>\n",
				        x + 9, y - 11, x + 9, y + 2, items[i].color,
				        items[i].dash ? " stroke-dasharray=\"" : "", items[i].dash ? items[i].dash : "",
				        items[i].dash ? "\"" : "");
			else {
				int g = s[2] - '0';
				fprintf(out,
				        "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
				        "stroke-width=\"2\"/>\n",
				        x + 9, y + 2, x + 9, y + 2 - gc_style[g].height * 0.8, gc_style[g].color);
			}
			fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" fill=\"%s\">%s</text>\n", x + 24, y, COLOR_TEXT,
			        items[i].label);
		}
		x += w;
	}
	if (draw)
		fputs("</g>\n", out);
	return rows * LEGEND_ROW + 8;
}

/* Reads what the plot needs from ctx; returns -EINVAL with a sentence in err
 * when ctx lacks it. */
static int plot_load(struct plot *pl, struct json_object *ctx, char *err, size_t errlen)
{
	struct json_object *conds =
	    jv_typed(jv_member(ctx, DUMPCTX_KEY_RULE), DUMPCTX_KEY_RULE_CONDITIONS, json_type_array);
	struct json_object *series =
	                       jv_typed(jv_member(ctx, DUMPCTX_KEY_HISTORY), DUMPCTX_KEY_HIST_SERIES, json_type_array),
	                   *dump = jv_member(ctx, DUMPCTX_KEY_DUMP);
	double v;

	if (!ctx || !json_object_is_type(ctx, json_type_object)) {
		snprintf(err, errlen, "the dump context is not a JSON object");
		return -EINVAL;
	}
	if (!conds) {
		snprintf(err, errlen,
		         "the dump context has no " DUMPCTX_KEY_RULE "." DUMPCTX_KEY_RULE_CONDITIONS " array");
		return -EINVAL;
	}
	if (!series) {
		snprintf(err, errlen,
		         "the dump context has no " DUMPCTX_KEY_HISTORY "." DUMPCTX_KEY_HIST_SERIES " array");
		return -EINVAL;
	}
	if (!jv_num(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &pl->fired_ms)) {
		snprintf(err, errlen, "the dump context has no " DUMPCTX_KEY_FIRED_UNIX_MS " number");
		return -EINVAL;
	}
	/* Differences of clamped magnitudes stay finite. */
	pl->fired_ms = clamp_huge(pl->fired_ms);
	if (jv_num(dump, DUMPCTX_KEY_DUMP_STARTED_UNIX_MS, &v)) {
		pl->start_ms = clamp_huge(clamp_huge(v) - pl->fired_ms);
		pl->has_start = 1;
	}
	if (jv_num(dump, DUMPCTX_KEY_DUMP_ENDED_UNIX_MS, &v)) {
		pl->end_ms = clamp_huge(clamp_huge(v) - pl->fired_ms);
		pl->has_end = 1;
	}
	pl->gcs = jv_typed(ctx, DUMPCTX_KEY_GCS, json_type_array);
	pl->n_gcs = capped_length(pl->gcs, PLOT_MAX_GCS);
	if (jv_num(jv_member(ctx, DUMPCTX_KEY_HISTORY), DUMPCTX_KEY_HIST_SLOT_MS, &v) && v > 0 && v <= 3600e3)
		pl->slot_ms = v;

	pl->xmin = pl->xmax = 0.0;
	if (pl->has_start) {
		pl->xmin = fmin(pl->xmin, pl->start_ms);
		pl->xmax = fmax(pl->xmax, pl->start_ms);
	}
	if (pl->has_end) {
		pl->xmin = fmin(pl->xmin, pl->end_ms);
		pl->xmax = fmax(pl->xmax, pl->end_ms);
	}
	for (size_t i = 0; i < pl->n_gcs; i++) {
		double t;
		int gen;
		if (gc_get(pl, i, &t, &gen)) {
			pl->xmin = fmin(pl->xmin, t);
			pl->xmax = fmax(pl->xmax, t);
		}
	}
	pl->n_conds = json_object_array_length(conds);
	pl->n_panels = pl->n_conds > PLOT_MAX_PANELS ? PLOT_MAX_PANELS : pl->n_conds;
	for (size_t i = 0; i < pl->n_panels; i++)
		panel_init(&pl->panels[i], json_object_array_get_idx(conds, i), series, &pl->xmin, &pl->xmax);

	pl->drawn = LEGEND_FIRE | (pl->has_start ? LEGEND_DUMP_START : 0u) | (pl->has_end ? LEGEND_DUMP_END : 0u);
	for (size_t i = 0; i < pl->n_gcs; i++) {
		double t;
		int gen;
		if (gc_get(pl, i, &t, &gen)) {
			pl->drawn |= LEGEND_GC;
			break;
		}
	}
	for (size_t i = 0; i < pl->n_panels; i++) {
		const struct panel *pn = &pl->panels[i];
		if (pn->n_valid == 0)
			continue;
		pl->drawn |= LEGEND_SERIES | (pn->n_valid >= 2 ? LEGEND_BAND : 0u) |
		             (pn->has_threshold ? LEGEND_THRESHOLD : 0u) | (pn->for_ms > 0.0 ? LEGEND_SUSTAIN : 0u);
	}

	/* At least a second; a little room on both sides so that lines at the
	 * ends do not merge with the frame. */
	if (pl->xmax - pl->xmin < 1000.0)
		pl->xmin = pl->xmax - 1000.0;
	v = pl->xmax - pl->xmin;
	pl->xmin -= 0.015 * v;
	pl->xmax += 0.03 * v;
	return 0;
}

int plot_svg(FILE *out, struct json_object *ctx, char *err, size_t errlen)
{
	static struct plot zero;
	struct plot pl = zero;
	int r, header_h, legend_h, height;
	double y;

	if (errlen)
		err[0] = '\0';
	r = plot_load(&pl, ctx, err, errlen);
	if (r < 0)
		return r;
	pl.out = out;

	header_h = draw_header(&pl, ctx, 0);
	legend_h = draw_legend(&pl, 0, 0);
	/* A line of text when there is no panel, or more conditions than panels. */
	height = header_h + (int)pl.n_panels * PANEL_HEIGHT + (pl.n_conds > pl.n_panels || !pl.n_panels ? 24 : 0) +
	         legend_h + 10;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "font-family=\"sans-serif\" font-size=\"12\" fill=\"%s\">\n",
	        PLOT_WIDTH, height, PLOT_WIDTH, height, COLOR_TEXT);
	fputs("<title>dumpwatch: rule ", out);
	put_jstr(out, jv_member(ctx, DUMPCTX_KEY_RULE), DUMPCTX_KEY_RULE_NAME, "(unnamed)", PLOT_MAX_TEXT);
	fputs("</title>\n", out);
	fprintf(out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	        PLOT_WIDTH, height);
	draw_header(&pl, ctx, 1);

	y = header_h;
	for (size_t i = 0; i < pl.n_panels; i++, y += PANEL_HEIGHT)
		draw_panel(&pl, i, y);
	if (pl.n_panels == 0) {
		fprintf(
		    out,
		    "<text class=\"no-conditions\" x=\"%d\" y=\"%.2f\" font-size=\"13\" fill=\"%s\">the rule has no "
		    "conditions to plot</text>\n",
		    PLOT_LEFT, y + 14, COLOR_MUTED);
		y += 24;
	} else if (pl.n_conds > pl.n_panels) {
		fprintf(out,
		        "<text class=\"more-conditions\" x=\"%d\" y=\"%.2f\" font-size=\"12\" fill=\"%s\">and %zu more "
		        "conditions, not drawn</text>\n",
		        PLOT_LEFT, y + 14, COLOR_MUTED, pl.n_conds - pl.n_panels);
		y += 24;
	}
	draw_legend(&pl, y, 1);
	fputs("</svg>\n", out);
	return 0;
}
