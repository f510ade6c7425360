/* Unit tests of the plot beside a dump: the SVG of hand-made dump contexts is
 * well-formed XML (a small checker here, and xmllint when it is installed),
 * has one line per condition with history, puts the threshold where the y
 * axis says it is, escapes what a hostile process chose, and survives
 * values no runtime sends. With DW_PLOT_SAMPLE=FILE in the environment it
 * also writes a realistic plot to FILE, to look at. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/plot.h"
#include "dumpwatch/text.h"

#define FIRED_MS 1795000000123.0 /* 2026-11-18T11:06:40.123Z */

/* ---- building contexts ---- */

static struct json_object *make_cond(const char *text, const char *metric, const char *op, double threshold,
                                     const char *unit, double for_ms, double value)
{
	struct json_object *c = json_object_new_object();
	json_object_object_add(c, "text", json_object_new_string(text));
	json_object_object_add(c, "metric", json_object_new_string(metric));
	json_object_object_add(c, "op", json_object_new_string(op));
	json_object_object_add(c, "threshold", json_object_new_double(threshold));
	json_object_object_add(c, "unit", json_object_new_string(unit));
	json_object_object_add(c, "for_ms", json_object_new_double(for_ms));
	json_object_object_add(c, "value", isnan(value) ? NULL : json_object_new_double(value));
	json_object_object_add(c, "at_least", json_object_new_boolean(0));
	return c;
}

static struct json_object *make_point(double t, double last, double lo, double hi)
{
	struct json_object *p = json_object_new_array();
	json_object_array_add(p, json_object_new_double(t));
	json_object_array_add(p, json_object_new_double(last));
	json_object_array_add(p, json_object_new_double(lo));
	json_object_array_add(p, json_object_new_double(hi));
	return p;
}

/* A series of 60 s at 250 ms slots ending 250 ms after the fire: from
 * base, rising by rise over the window, with a sawtooth of saw. */
static struct json_object *make_series(const char *metric, const char *unit, double base, double rise, double saw)
{
	struct json_object *s = json_object_new_object(), *pts = json_object_new_array();
	for (int i = 0; i <= 241; i++) {
		double t = -60000.0 + 250.0 * i, v = base + rise * (i / 241.0) + saw * ((i % 20) / 20.0);
		json_object_array_add(pts, make_point(t, v, v * 0.97, v * 1.02));
	}
	json_object_object_add(s, "metric", json_object_new_string(metric));
	json_object_object_add(s, "unit", json_object_new_string(unit));
	json_object_object_add(s, "points", pts);
	return s;
}

static struct json_object *make_gc(int index, int gen, double start_ms)
{
	struct json_object *g = json_object_new_object();
	json_object_object_add(g, "index", json_object_new_int(index));
	json_object_object_add(g, "generation", json_object_new_int(gen));
	json_object_object_add(g, "reason", json_object_new_string(gen == 2 ? "AllocLarge" : "AllocSmall"));
	json_object_object_add(g, "start_ms", json_object_new_double(start_ms));
	json_object_object_add(g, "end_ms", json_object_new_double(start_ms + 3.5));
	json_object_object_add(g, "pause_ms", json_object_new_double(3.5));
	json_object_object_add(g, "complete", json_object_new_boolean(1));
	return g;
}

/* The context of a loh-size rule (> 300 MB for 2 s) whose series crosses
 * 300 MB a few seconds before the fire; the dump ran from +120 to +1154 ms. */
static struct json_object *make_ctx(const char *rule_name, const char *proc_name)
{
	struct json_object *ctx = json_object_new_object(), *rule = json_object_new_object();
	struct json_object *conds = json_object_new_array(), *dump = json_object_new_object();
	struct json_object *proc = json_object_new_object(), *hist = json_object_new_object();
	struct json_object *series = json_object_new_array(), *gcs = json_object_new_array();

	json_object_object_add(ctx, "dumpwatch_context", json_object_new_int(1));
	json_object_object_add(ctx, "dumpwatch_version", json_object_new_string("0.1.0"));
	json_object_object_add(ctx, "outcome", json_object_new_string("dump"));
	json_object_object_add(ctx, "fired_unix_ms", json_object_new_int64((int64_t)FIRED_MS));
	json_object_object_add(rule, "name", json_object_new_string(rule_name));
	json_object_object_add(rule, "description", json_object_new_string("LOH grows past 300 MB"));
	json_object_object_add(rule, "file", json_object_new_string("/etc/dumpwatch/rules.d/a.json"));
	json_object_object_add(rule, "line", json_object_new_int(3));
	json_object_object_add(rule, "dump_type", json_object_new_string("withheap"));
	json_object_array_add(conds,
	                      make_cond("loh-size > 300MB for 2s", "loh-size", ">", 300e6, "bytes", 2000, 351234567));
	json_object_object_add(rule, "conditions", conds);
	json_object_object_add(ctx, "rule", rule);
	json_object_object_add(dump, "file", json_object_new_string("x.core"));
	json_object_object_add(dump, "path", json_object_new_string("/var/lib/dumpwatch/dumps/x.core"));
	json_object_object_add(dump, "bytes", json_object_new_int64(494000000));
	json_object_object_add(dump, "started_unix_ms", json_object_new_int64((int64_t)FIRED_MS + 120));
	json_object_object_add(dump, "ended_unix_ms", json_object_new_int64((int64_t)FIRED_MS + 1154));
	json_object_object_add(dump, "duration_ms", json_object_new_double(1034.2));
	json_object_object_add(dump, "via", json_object_new_string("runtime"));
	json_object_object_add(ctx, "dump", dump);
	json_object_object_add(proc, "pid", json_object_new_int(4807));
	json_object_object_add(proc, "name", json_object_new_string(proc_name));
	json_object_object_add(proc, "cmdline", json_object_new_string("/app/GcLab loh 350"));
	json_object_object_add(proc, "uid", json_object_new_int(1000));
	json_object_object_add(proc, "user", json_object_new_string("alice"));
	json_object_object_add(proc, "runtime_version", json_object_new_string("10.0.0"));
	json_object_object_add(ctx, "process", proc);
	json_object_object_add(hist, "window_ms", json_object_new_int(300000));
	json_object_object_add(hist, "slot_ms", json_object_new_int(250));
	json_object_array_add(series, make_series("loh-size", "bytes", 40e6, 300e6, 20e6));
	json_object_object_add(hist, "series", series);
	json_object_object_add(ctx, "history", hist);
	for (int i = 0; i < 30; i++)
		json_object_array_add(gcs, make_gc(100 + i,
		                                   i % 7 == 6   ? 2
		                                   : i % 3 == 2 ? 1
		                                                : 0,
		                                   -58000.0 + 2000.0 * i));
	json_object_object_add(ctx, "gcs", gcs);
	return ctx;
}

static struct json_object *ctx_conds(struct json_object *ctx)
{
	struct json_object *rule = NULL, *conds = NULL;
	json_object_object_get_ex(ctx, "rule", &rule);
	json_object_object_get_ex(rule, "conditions", &conds);
	return conds;
}

static struct json_object *ctx_series(struct json_object *ctx)
{
	struct json_object *hist = NULL, *series = NULL;
	json_object_object_get_ex(ctx, "history", &hist);
	json_object_object_get_ex(hist, "series", &series);
	return series;
}

/* plot_svg of ctx into a string the caller frees; *ret_r is its result. */
static char *render(struct json_object *ctx, int *ret_r, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	*ret_r = plot_svg(f, ctx, err, errlen);
	fclose(f);
	return buf;
}

/* ---- a small XML well-formedness checker ---- */

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       c == ':' || c == '.';
}

/* The length of the entity reference at s ("&amp;" ... "&#x1F;"), or 0. */
static size_t entity_len(const char *s)
{
	static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
	size_t i = 2;
	for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++)
		if (strncmp(s, named[k], strlen(named[k])) == 0)
			return strlen(named[k]);
	if (s[1] != '#')
		return 0;
	if (s[2] == 'x') {
		for (i = 3;
		     (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F');)
			i++;
		return i > 3 && s[i] == ';' ? i + 1 : 0;
	}
	while (s[i] >= '0' && s[i] <= '9')
		i++;
	return i > 2 && s[i] == ';' ? i + 1 : 0;
}

#define FAIL(...)                                                                                                      \
	do {                                                                                                           \
		snprintf(why, whylen, __VA_ARGS__);                                                                    \
		return 0;                                                                                              \
	} while (0)

/* Whether doc is one well-formed XML element (after an optional XML
 * declaration): valid UTF-8 without control characters but white space,
 * balanced tags, quoted attributes without a duplicate, no raw '<' or '&'
 * in text or attribute values. Says why not in why. */
static int xml_wellformed(const char *doc, char *why, size_t whylen)
{
	char stack[64][64];
	size_t depth = 0, roots = 0, len = strlen(doc), i = 0;

	for (size_t k = 0; k < len;) {
		uint32_t cp;
		size_t n = text_utf8_decode((const unsigned char *)doc + k, len - k, &cp);
		if (n == 0)
			FAIL("invalid UTF-8 at byte %zu", k);
		if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF)
			FAIL("control character U+%04X at byte %zu", (unsigned)cp, k);
		k += n;
	}
	if (strncmp(doc, "<?xml", 5) == 0) {
		const char *e = strstr(doc, "?>");
		if (!e)
			FAIL("unterminated XML declaration");
		i = (size_t)(e - doc) + 2;
	}
	while (i < len) {
		if (doc[i] == '<' && strncmp(doc + i, "<!--", 4) == 0) {
			const char *e = strstr(doc + i + 4, "-->");
			if (!e)
				FAIL("unterminated comment at %zu", i);
			i = (size_t)(e - doc) + 3;
		} else if (doc[i] == '<' && doc[i + 1] == '/') {
			size_t s = i + 2, n;
			for (n = 0; is_name_char(doc[s + n]); n++)
				;
			if (n == 0 || depth == 0 || n >= sizeof(stack[0]) ||
			    strncmp(stack[depth - 1], doc + s, n) != 0 || stack[depth - 1][n] != '\0')
				FAIL("unbalanced end tag at %zu", i);
			depth--;
			i = s + n;
			while (doc[i] == ' ' || doc[i] == '\n' || doc[i] == '\t')
				i++;
			if (doc[i] != '>')
				FAIL("bad end tag at %zu", i);
			i++;
		} else if (doc[i] == '<') {
			char attrs[64][32];
			size_t s = i + 1, n, n_attrs = 0;
			for (n = 0; is_name_char(doc[s + n]); n++)
				;
			if (n == 0 || n >= sizeof(stack[0]))
				FAIL("bad start tag at %zu", i);
			if (depth == 0 && ++roots > 1)
				FAIL("a second root element at %zu", i);
			i = s + n;
			for (;;) {
				size_t ws = 0, an;
				char q;
				while (doc[i] == ' ' || doc[i] == '\n' || doc[i] == '\t') {
					i++;
					ws++;
				}
				if (doc[i] == '/' && doc[i + 1] == '>') {
					i += 2;
					break;
				}
				if (doc[i] == '>') {
					if (depth == sizeof(stack) / sizeof(stack[0]))
						FAIL("nested too deep at %zu", i);
					memcpy(stack[depth], doc + s, n);
					stack[depth++][n] = '\0';
					i++;
					break;
				}
				if (ws == 0)
					FAIL("no space before an attribute at %zu", i);
				for (an = 0; is_name_char(doc[i + an]); an++)
					;
				if (an == 0 || an >= sizeof(attrs[0]) || doc[i + an] != '=')
					FAIL("bad attribute at %zu", i);
				for (size_t k = 0; k < n_attrs; k++)
					if (strncmp(attrs[k], doc + i, an) == 0 && attrs[k][an] == '\0')
						FAIL("duplicate attribute at %zu", i);
				if (n_attrs < sizeof(attrs) / sizeof(attrs[0])) {
					memcpy(attrs[n_attrs], doc + i, an);
					attrs[n_attrs++][an] = '\0';
				}
				i += an + 1;
				q = doc[i];
				if (q != '"' && q != '\'')
					FAIL("unquoted attribute value at %zu", i);
				for (i++; doc[i] != q; i++) {
					if (doc[i] == '\0' || doc[i] == '<')
						FAIL("raw '<' or end in an attribute value at %zu", i);
					if (doc[i] == '&') {
						size_t el = entity_len(doc + i);
						if (el == 0)
							FAIL("raw '&' in an attribute value at %zu", i);
						i += el - 1;
					}
				}
				i++;
			}
		} else if (doc[i] == '&') {
			size_t el = entity_len(doc + i);
			if (el == 0)
				FAIL("raw '&' in text at %zu", i);
			if (depth == 0)
				FAIL("text outside the root at %zu", i);
			i += el;
		} else {
			if (depth == 0 && doc[i] != ' ' && doc[i] != '\n' && doc[i] != '\t' && doc[i] != '\r')
				FAIL("text outside the root at %zu", i);
			i++;
		}
	}
	if (depth != 0)
		FAIL("%zu elements left open", depth);
	if (roots != 1)
		FAIL("no root element");
	return 1;
}

/* ---- reading the SVG back ---- */

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The value of attribute name in the start tag at tag, or NULL (a static
 * buffer). */
static const char *attr(const char *tag, const char *name)
{
	static char value[256];
	const char *end = strchr(tag, '>'), *p = tag;
	char key[64];
	size_t n;

	snprintf(key, sizeof(key), " %s=\"", name);
	if (!end || !(p = strstr(tag, key)) || p > end)
		return NULL;
	p += strlen(key);
	for (n = 0; p[n] && p[n] != '"' && n + 1 < sizeof(value); n++)
		value[n] = p[n];
	value[n] = '\0';
	return value;
}

static double attr_num(const char *tag, const char *name)
{
	const char *v = attr(tag, name);
	char *end;
	double d;
	if (!v)
		return NAN;
	d = strtod(v, &end);
	return *end ? NAN : d;
}

/* The element text after the start tag at tag, up to the next '<'. */
static const char *elem_text(const char *tag, char *out, size_t outlen)
{
	const char *p = strchr(tag, '>');
	size_t n = 0;
	if (p)
		for (p++; *p && *p != '<' && n + 1 < outlen; p++)
			out[n++] = *p;
	out[n] = '\0';
	return out;
}

struct rect {
	double x, y, w, h;
};

static int inside(const struct rect *r, double x, double y)
{
	return x >= r->x - 0.01 && x <= r->x + r->w + 0.01 && y >= r->y - 0.01 && y <= r->y + r->h + 0.01;
}

/* Checks panel [p, end): its lines lie in its plot area, and the threshold
 * line (when there is one) sits where the y axis's ticks put its value.
 * Returns the number of ticks checked against the threshold. */
static int check_panel(const char *p, const char *end, const char *threshold_label)
{
	const char *q = strstr(p, "<rect class=\"plot-area\""), *th;
	struct rect area = {0, 0, 0, 0};
	double tv[32], ty[32];
	size_t n_ticks = 0;
	int checked = 0;
	char text[128];

	CHECK(q && q < end);
	if (!q || q > end)
		return 0;
	area.x = attr_num(q, "x");
	area.y = attr_num(q, "y");
	area.w = attr_num(q, "width");
	area.h = attr_num(q, "height");
	CHECK(area.w > 0 && area.h > 0);

	/* Every point of the series in the area. */
	q = strstr(p, "<polyline class=\"series\"");
	if (q && q < end) {
		const char *pts = strstr(q, " points=\"") + 9;
		size_t n = 0;
		while (*pts && *pts != '"') {
			char *e;
			double x = strtod(pts, &e), y;
			CHECK(*e == ',');
			y = strtod(e + 1, &e);
			CHECK_MSG(inside(&area, x, y), "point %.2f,%.2f outside", x, y);
			n++;
			while (*e == ' ')
				e++;
			pts = e;
		}
		/* In steps: each point after the first adds a corner, and
		 * the last value holds until the fire. */
		size_t pts_n = (size_t)attr_num(q, "data-points");
		CHECK_MSG(n >= 2 * pts_n - 1 && n <= 2 * pts_n, "%zu vertices for %zu points", n, pts_n);
	}
	/* Vertical lines (fire, dump, GCs, x ticks but their tick mark below). */
	for (q = p; (q = strstr(q, "<line class=\"")) && q < end; q++) {
		char cls[64];
		double x1 = attr_num(q, "x1"), y1 = attr_num(q, "y1"), x2 = attr_num(q, "x2"), y2 = attr_num(q, "y2");
		snprintf(cls, sizeof(cls), "%s", attr(q, "class"));
		if (strcmp(cls, "xtick") == 0 || strcmp(cls, "ytick") == 0)
			continue;
		CHECK_MSG(inside(&area, x1, y1) && inside(&area, x2, y2), "%s line outside its area", cls);
	}

	for (q = p; (q = strstr(q, "<line class=\"ytick\"")) && q < end && n_ticks < 32; q++) {
		tv[n_ticks] = attr_num(q, "data-value");
		ty[n_ticks] = attr_num(q, "y1");
		CHECK(isfinite(tv[n_ticks]) && isfinite(ty[n_ticks]));
		CHECK(ty[n_ticks] >= area.y - 0.01 && ty[n_ticks] <= area.y + area.h + 0.01);
		if (n_ticks > 0)
			CHECK_MSG(tv[n_ticks] > tv[n_ticks - 1] && ty[n_ticks] < ty[n_ticks - 1],
			          "ticks go up the axis as their values grow");
		n_ticks++;
	}
	th = strstr(p, "<line class=\"threshold\"");
	if (th && th < end) {
		double v = attr_num(th, "data-value"), y = attr_num(th, "y1");
		CHECK(attr_num(th, "y2") == y);
		CHECK(n_ticks >= 2);
		/* Between any two ticks, the axis is linear: where the threshold
		 * lies by interpolation is where its line is. */
		for (size_t a = 0; a + 1 < n_ticks; a++) {
			double want = ty[a] + (v - tv[a]) * (ty[a + 1] - ty[a]) / (tv[a + 1] - tv[a]);
			CHECK_MSG(fabs(want - y) < 0.05, "threshold at y=%.2f, the ticks put %.17g at %.2f", y, v,
			          want);
			checked++;
		}
		q = strstr(th, "<text class=\"threshold-label\"");
		CHECK(q && q < end);
		if (q && threshold_label)
			CHECK_STR(elem_text(q, text, sizeof(text)), threshold_label);
	}
	return checked;
}

/* Checks every panel of svg; returns how many there are. */
static size_t check_panels(const char *svg, const char *threshold_label, int *ret_checked)
{
	size_t n = 0;
	*ret_checked = 0;
	for (const char *p = svg; (p = strstr(p, "<g class=\"panel\"")); p++) {
		const char *end = strstr(p, "</g>");
		CHECK(end != NULL);
		if (!end)
			break;
		*ret_checked += check_panel(p, end, threshold_label);
		n++;
	}
	return n;
}

static int has_xmllint(void)
{
	return access("/usr/bin/xmllint", X_OK) == 0;
}

/* xmllint --noout accepts svg (1 when it is not installed). */
static int xmllint_ok(const char *svg)
{
	char path[] = "/tmp/test_plot_XXXXXX", cmd[128];
	int fd = mkstemp(path), r;
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "w")))
		return 0;
	fputs(svg, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/xmllint --noout %s", path);
	r = system(cmd);
	unlink(path);
	return r == 0;
}

/* Renders ctx and checks what every plot must be; returns the SVG. */
static char *render_ok(struct json_object *ctx)
{
	char err[256], why[256] = "";
	int r = -1;
	char *svg = render(ctx, &r, err, sizeof(err));

	CHECK_MSG(r == 0, "plot_svg: %d %s", r, err);
	CHECK(svg != NULL);
	if (!svg)
		return NULL;
	CHECK_MSG(xml_wellformed(svg, why, sizeof(why)), "%s", why);
	if (has_xmllint())
		CHECK(xmllint_ok(svg));
	/* Self-contained and printable. */
	CHECK(strstr(svg, "<script") == NULL && strstr(svg, "<image") == NULL && strstr(svg, "href") == NULL &&
	      strstr(svg, "@import") == NULL && strstr(svg, "<foreignObject") == NULL);
	CHECK(count(svg, "http") == 1); /* the SVG namespace, nothing else */
	CHECK(count(svg, "font-family=") == 1 && strstr(svg, "font-family=\"sans-serif\""));
	CHECK(strstr(svg, "viewBox=\"0 0 900 ") != NULL);
	CHECK(strstr(svg, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"900\"") != NULL);
	return svg;
}

/* ---- the tests ---- */

static void test_basic(void)
{
	struct json_object *ctx = make_ctx("loh-balloon", "GcLab");
	char *svg = render_ok(ctx);
	int checked = 0;

	if (svg) {
		CHECK(check_panels(svg, "> 300 MB", &checked) == 1);
		CHECK(checked >= 2);
		CHECK(count(svg, "<polyline") == 1 && count(svg, "<polyline class=\"series\"") == 1);
		CHECK(count(svg, "<path class=\"band\"") == 1);
		CHECK(count(svg, "<line class=\"threshold\" data-value=\"300000000\"") == 1);
		CHECK(count(svg, "<rect class=\"sustain\" data-t-ms=\"-2000\"") == 1);
		CHECK(count(svg, "<line class=\"fire\" data-t-ms=\"0\"") == 1);
		CHECK(count(svg, "<line class=\"dump-start\" data-t-ms=\"120\"") == 1);
		CHECK(count(svg, "<line class=\"dump-end\" data-t-ms=\"1154\"") == 1);
		CHECK(count(svg, "<line class=\"gc gc0\"") == 17);
		CHECK(count(svg, "<line class=\"gc gc1\"") == 9);
		CHECK(count(svg, "<line class=\"gc gc2\"") == 4);
		CHECK(strstr(svg, ">0 s</text>") && strstr(svg, ">-60 s</text>"));
		CHECK(strstr(svg, ">100 MB</text>") && strstr(svg, ">300 MB</text>"));
		CHECK(strstr(svg, "Rule loh-balloon</text>") != NULL);
		CHECK(strstr(svg, "process GcLab (pid 4807)") != NULL);
		CHECK(strstr(svg, "fired 2026-11-18T11:06:40.123Z UTC") != NULL);
		CHECK(strstr(svg, "outcome: dump") != NULL);
		CHECK(strstr(svg, "loh-size &gt; 300MB for 2s") != NULL);
		CHECK(strstr(svg, "value at the fire 351.235 MB") != NULL);
		CHECK(strstr(svg, "class=\"error\"") == NULL);
		/* The x axis: its ticks from the earliest point (-60 s) to the
		 * dump's end (+1.154 s) lie in the area. */
		const char *t = strstr(svg, "<line class=\"xtick\"");
		CHECK(t && attr_num(t, "data-t-ms") == -60000.0);
	}
	free(svg);

	/* Without a dump, GCs, for_ms and with another unit: no sustain, no
	 * dump lines, no GC ticks; a skipped outcome with its error. */
	json_object_object_del(ctx, "dump");
	json_object_object_del(ctx, "gcs");
	json_object_object_add(ctx, "outcome", json_object_new_string("skipped"));
	json_object_object_add(ctx, "error", json_object_new_string("the disk has 1.2GB free, under the 5GB guard"));
	struct json_object *cond = json_object_array_get_idx(ctx_conds(ctx), 0);
	json_object_object_add(cond, "for_ms", json_object_new_int(0));
	svg = render_ok(ctx);
	if (svg) {
		CHECK(check_panels(svg, "> 300 MB", &checked) == 1 && checked >= 2);
		CHECK(strstr(svg, "class=\"sustain\"") == NULL && strstr(svg, "class=\"dump-") == NULL);
		CHECK(strstr(svg, "class=\"gc ") == NULL);
		/* The legend explains only what is drawn. */
		CHECK(strstr(svg, ">last value</text>") && strstr(svg, ">threshold</text>") &&
		      strstr(svg, ">fire</text>"));
		CHECK(!strstr(svg, ">dump start</text>") && !strstr(svg, ">GC gen0</text>") &&
		      !strstr(svg, ">sustain window</text>"));
		CHECK(strstr(svg, "outcome: skipped") != NULL);
		CHECK(strstr(svg, "error: the disk has 1.2GB free, under the 5GB guard</text>") != NULL);
	}
	free(svg);
	json_object_put(ctx);
}

/* Every unit has its display form, on the ticks and the threshold. */
static void test_units(void)
{
	static const struct {
		const char *unit;
		double threshold, base;
		const char *label, *tick;
	} cases[] = {
	    {"bytes/s", 50e6, 10e6, "> 50 MB/s", ">20 MB/s</text>"},
	    {"bytes", 2.5e9, 1e9, "> 2.5 GB", ">1 GB</text>"},
	    {"bytes", 900, 100, "> 900 B", ">200 B</text>"},
	    {"ms", 200, 50, "> 200 ms", ">100 ms</text>"},
	    {"percent", 90, 10, "> 90%", ">20%</text>"},
	    {"count", 1000, 100, "> 1000", ">400</text>"},
	    {"1/s", 10, 1, "> 10/s", ">4/s</text>"},
	    {"number", 0.5, 0.1, "> 0.5", ">0.2</text>"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *ctx = make_ctx("u", "p"), *conds = json_object_new_array();
		struct json_object *series = json_object_new_array();
		char *svg;
		int checked = 0;

		json_object_array_add(conds, make_cond("m > x", "m", ">", cases[i].threshold, cases[i].unit, 0, NAN));
		json_object_object_add(json_object_object_get(ctx, "rule"), "conditions", conds);
		json_object_array_add(series,
		                      make_series("m", cases[i].unit, cases[i].base, cases[i].threshold * 0.9, 0));
		json_object_object_add(json_object_object_get(ctx, "history"), "series", series);
		svg = render_ok(ctx);
		if (svg) {
			CHECK(check_panels(svg, cases[i].label, &checked) == 1 && checked >= 2);
			CHECK_MSG(strstr(svg, cases[i].tick) != NULL, "no tick %s for %s", cases[i].tick,
			          cases[i].unit);
		}
		free(svg);
		json_object_put(ctx);
	}
}

static void test_escaping(void)
{
	static const char evil[] = "<script>alert(1)</script>\"'&amp;";
	struct json_object *ctx = make_ctx(evil, evil), *cond = json_object_array_get_idx(ctx_conds(ctx), 0);
	struct json_object *rule = json_object_object_get(ctx, "rule");
	char *svg;

	json_object_object_add(cond, "text", json_object_new_string(evil));
	json_object_object_add(rule, "description", json_object_new_string(evil));
	json_object_object_add(ctx, "error", json_object_new_string(evil));
	json_object_object_add(ctx, "outcome", json_object_new_string(evil));
	svg = render_ok(ctx);
	if (svg) {
		CHECK(strstr(svg, "<script") == NULL && strstr(svg, "</script") == NULL);
		/* Title, rule name, process name, error, description and the
		 * condition's text; the outcome is cut short. */
		CHECK(count(svg, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&apos;&amp;amp;") == 6);
		CHECK(strstr(svg, "outcome: &lt;script&gt;alert(1)\xE2\x80\xA6</text>") != NULL);
	}
	free(svg);

	/* A metric name with quotes lands in an attribute, escaped. */
	json_object_object_add(cond, "metric", json_object_new_string("a\"b<c"));
	json_object_array_add(ctx_series(ctx), make_series("a\"b<c", "bytes", 1, 2, 0));
	svg = render_ok(ctx);
	if (svg) {
		CHECK(strstr(svg, "data-metric=\"a&quot;b&lt;c\"") != NULL);
		CHECK(count(svg, "<polyline class=\"series\"") == 1);
	}
	free(svg);
	json_object_put(ctx);
}

static void test_bad_text(void)
{
	/* Invalid UTF-8 (a lone lead byte, 0xFF, an overlong '/', a surrogate),
	 * terminal escapes, a NUL, a newline, U+FFFF and a bidi override. */
	static const char bad[] = "a\xC3(\xFF\xC0\xAF\xED\xA0\x80 \x1b[31mred\x07\x00x\ny\xEF\xBF\xBF\xE2\x80\xAE|";
	struct json_object *ctx = make_ctx("r", "p"), *cond = json_object_array_get_idx(ctx_conds(ctx), 0);
	struct json_object *proc = json_object_object_get(ctx, "process");
	char *svg;

	json_object_object_add(proc, "name", json_object_new_string_len(bad, (int)sizeof(bad) - 1));
	json_object_object_add(cond, "text", json_object_new_string_len(bad, (int)sizeof(bad) - 1));
	json_object_object_add(json_object_object_get(ctx, "rule"), "name",
	                       json_object_new_string_len(bad, (int)sizeof(bad) - 1));
	svg = render_ok(ctx); /* valid UTF-8, no control character */
	if (svg) {
		CHECK(strstr(svg, "\x1b") == NULL && strstr(svg, "\xE2\x80\xAE") == NULL);
		/* Each replaced piece is U+FFFD; the text around it stays. */
		CHECK(strstr(svg, "a\xEF\xBF\xBD(\xEF\xBF\xBD") != NULL);
		CHECK(strstr(svg, "\xEF\xBF\xBD[31mred\xEF\xBF\xBD\xEF\xBF\xBDx y\xEF\xBF\xBD\xEF\xBF\xBD|") != NULL);
	}
	free(svg);

	/* A string of 100000 characters is cut. */
	char *longs = malloc(100001);
	if (longs) {
		memset(longs, 'x', 100000);
		longs[100000] = '\0';
		json_object_object_add(proc, "name", json_object_new_string(longs));
		json_object_object_add(json_object_object_get(ctx, "rule"), "description",
		                       json_object_new_string(longs));
		svg = render_ok(ctx);
		CHECK(svg && strlen(svg) < 100000);
		CHECK(svg && strstr(svg, "xxx\xE2\x80\xA6") != NULL);
		free(svg);
		/* Wide characters count twice: 60 of them (180 bytes) make a
		 * line as wide as 120 letters, more than a header line holds. */
		for (int i = 0; i < 60; i++)
			memcpy(longs + 3 * i, "\xE6\xBC\xA2", 3);
		longs[180] = '\0';
		json_object_object_add(json_object_object_get(ctx, "rule"), "description",
		                       json_object_new_string(longs));
		svg = render_ok(ctx);
		CHECK(svg && strstr(svg, "\xE6\xBC\xA2\xE2\x80\xA6</text>") != NULL);
		free(svg);
		free(longs);
	}
	json_object_put(ctx);
}

static void test_no_history(void)
{
	struct json_object *ctx = make_ctx("r", "p");
	char *svg;
	int checked = 0;

	json_object_array_add(ctx_conds(ctx), make_cond("System.Runtime/alloc-rate > 50MB/s",
	                                                "System.Runtime/alloc-rate", ">", 50e6, "bytes/s", 0, NAN));
	svg = render_ok(ctx);
	if (svg) {
		CHECK(check_panels(svg, NULL, &checked) == 2);
		CHECK(count(svg, "<polyline class=\"series\"") == 1);
		CHECK(count(svg, "no history") == 1);
		CHECK(count(svg, "<line class=\"threshold\"") == 1);
	}
	free(svg);

	/* A series whose points are all unusable is no history either. */
	struct json_object *s = json_object_array_get_idx(ctx_series(ctx), 0), *pts = json_object_new_array();
	json_object_array_add(pts, json_object_new_string("x"));
	json_object_object_add(s, "points", pts);
	svg = render_ok(ctx);
	if (svg) {
		CHECK(count(svg, "<polyline") == 0);
		CHECK(count(svg, "no history") == 2);
		CHECK(check_panels(svg, NULL, &checked) == 2);
	}
	free(svg);

	/* No conditions at all, and an empty history. */
	json_object_object_add(json_object_object_get(ctx, "rule"), "conditions", json_object_new_array());
	json_object_object_add(json_object_object_get(ctx, "history"), "series", json_object_new_array());
	svg = render_ok(ctx);
	CHECK(svg && strstr(svg, "no conditions") != NULL);
	free(svg);
	json_object_put(ctx);
}

static void check_einval(struct json_object *ctx, const char *names)
{
	char err[256] = "";
	int r = 0;
	char *svg = render(ctx, &r, err, sizeof(err));
	CHECK_MSG(r == -EINVAL, "%d", r);
	CHECK_MSG(strstr(err, names) != NULL, "\"%s\" does not name %s", err, names);
	CHECK(svg && svg[0] == '\0'); /* nothing written */
	free(svg);
}

static void test_einval(void)
{
	struct json_object *ctx = make_ctx("r", "p"), *s;

	check_einval(NULL, "not a JSON object");
	s = json_object_new_string("{}");
	check_einval(s, "not a JSON object");
	json_object_put(s);

	json_object_object_add(ctx, "fired_unix_ms", json_object_new_string("1795000000123"));
	check_einval(ctx, "fired_unix_ms");
	json_object_object_add(ctx, "fired_unix_ms", json_object_new_double(NAN));
	check_einval(ctx, "fired_unix_ms");
	json_object_object_del(ctx, "fired_unix_ms");
	check_einval(ctx, "fired_unix_ms");
	json_object_object_add(ctx, "fired_unix_ms", json_object_new_int64((int64_t)FIRED_MS));

	json_object_object_add(json_object_object_get(ctx, "history"), "series", json_object_new_object());
	check_einval(ctx, "history.series");
	json_object_object_add(ctx, "history", json_object_new_array());
	check_einval(ctx, "history.series");
	json_object_object_del(ctx, "history");
	check_einval(ctx, "history.series");

	json_object_object_add(json_object_object_get(ctx, "rule"), "conditions", json_object_new_string("x > 1"));
	check_einval(ctx, "rule.conditions");
	json_object_object_add(ctx, "rule", json_object_new_int(1));
	check_einval(ctx, "rule.conditions");
	json_object_object_del(ctx, "rule");
	check_einval(ctx, "rule.conditions");
	json_object_put(ctx);
}

/* Values no runtime sends: NaN, infinities, 1e308, strings, nulls, short
 * entries, wrong types everywhere; too many points, conditions and GCs. */
static void test_hostile_values(void)
{
	struct json_object *ctx = make_ctx("r", "p"), *s = json_object_array_get_idx(ctx_series(ctx), 0);
	struct json_object *pts = json_object_object_get(s, "points"),
	                   *cond = json_object_array_get_idx(ctx_conds(ctx), 0);
	struct json_object *gcs = json_object_object_get(ctx, "gcs"), *e;
	char *svg;
	int checked = 0;

	json_object_array_add(pts, make_point(NAN, 1, 1, 1));
	json_object_array_add(pts, make_point(1, NAN, 1, 1));
	json_object_array_add(pts, make_point(INFINITY, 1, 1, 1));
	json_object_array_add(pts, make_point(2, -INFINITY, 1, 1));
	json_object_array_add(pts, make_point(3, 1e308, -1e308, INFINITY));
	json_object_array_add(pts, make_point(4, -1e308, NAN, 1e308));
	json_object_array_add(pts, json_object_new_string("[1,2]"));
	json_object_array_add(pts, NULL);
	json_object_array_add(pts, json_object_new_array());
	e = json_object_new_array();
	json_object_array_add(e, json_object_new_int(5));
	json_object_array_add(pts, e); /* no value */
	e = json_object_new_array();
	json_object_array_add(e, json_object_new_string("6"));
	json_object_array_add(e, json_object_new_string("7"));
	json_object_array_add(pts, e);
	e = json_object_new_array();
	json_object_array_add(e, json_object_new_int(7));
	json_object_array_add(e, json_object_new_int64(INT64_MAX));
	json_object_array_add(pts, e); /* [t, last] without min and max: drawn */
	json_object_object_add(cond, "threshold", json_object_new_double(-1e308));
	json_object_object_add(cond, "for_ms", json_object_new_double(1e308));
	json_object_object_add(cond, "value", json_object_new_string("lots"));
	json_object_object_add(cond, "unit", json_object_new_array());
	json_object_object_add(cond, "op", json_object_new_string("<script>"));
	json_object_object_add(json_object_object_get(ctx, "dump"), "started_unix_ms", json_object_new_double(-1e308));
	json_object_object_add(json_object_object_get(ctx, "dump"), "ended_unix_ms", json_object_new_string("soon"));
	json_object_object_add(json_object_object_get(ctx, "process"), "pid", json_object_new_double(-1));
	json_object_array_add(gcs, json_object_new_int(3));
	e = make_gc(1, 99, NAN);
	json_object_object_add(e, "end_ms", json_object_new_double(-5));
	json_object_array_add(gcs, e);
	json_object_array_add(gcs, make_gc(1, -4, 1e300));
	svg = render_ok(ctx);
	if (svg) {
		const char *p = strstr(svg, "<polyline class=\"series\"");
		CHECK(p && attr_num(p, "data-points") == 245);
		CHECK(count(svg, "nan") == 0 && count(svg, "inf") == 0);
		CHECK(check_panels(svg, NULL, &checked) == 1);
		CHECK(count(svg, "<line class=\"gc gc2\"") == 5);
		CHECK(count(svg, "<line class=\"gc gc0\"") == 18);
		CHECK(strstr(svg, "class=\"dump-end\"") == NULL);
		CHECK(strstr(svg, "pid") == NULL);
	}
	free(svg);

	/* A wholly garbage context with the three pieces present: still a
	 * picture; and a huge fired_unix_ms. */
	struct json_object *junk = json_object_new_object(), *rule = json_object_new_object(),
	                   *hist = json_object_new_object(), *conds = json_object_new_array();
	json_object_array_add(conds, json_object_new_int(1));
	json_object_array_add(conds, NULL);
	json_object_array_add(conds, json_object_new_object());
	json_object_object_add(rule, "conditions", conds);
	json_object_object_add(rule, "name", json_object_new_int(5));
	json_object_object_add(junk, "rule", rule);
	json_object_object_add(hist, "series", json_object_new_array());
	json_object_array_add(json_object_object_get(hist, "series"), json_object_new_string("s"));
	json_object_object_add(junk, "history", hist);
	json_object_object_add(junk, "fired_unix_ms", json_object_new_double(1e300));
	json_object_object_add(junk, "gcs", json_object_new_string("many"));
	json_object_object_add(junk, "dump", json_object_new_array());
	svg = render_ok(junk);
	if (svg) {
		CHECK(count(svg, "no history") == 3);
		CHECK(strstr(svg, "(unknown time)") != NULL);
	}
	free(svg);
	json_object_put(junk);
	json_object_put(ctx);

	/* 30000 points, 20 conditions, 3000 GCs: bounded. */
	ctx = make_ctx("r", "p");
	pts = json_object_new_array();
	for (int i = 0; i < 30000; i++)
		json_object_array_add(pts, make_point(-30000.0 + i, i, i, i));
	json_object_object_add(json_object_array_get_idx(ctx_series(ctx), 0), "points", pts);
	for (int i = 0; i < 19; i++)
		json_object_array_add(ctx_conds(ctx),
		                      make_cond("loh-size > 1MB", "loh-size", ">", 1e6, "bytes", 0, NAN));
	gcs = json_object_object_get(ctx, "gcs");
	for (int i = 0; i < 3000; i++)
		json_object_array_add(gcs, make_gc(i, 0, -1000.0 - i));
	svg = render_ok(ctx);
	if (svg) {
		const char *p = strstr(svg, "<polyline class=\"series\"");
		CHECK(p && attr_num(p, "data-points") == 20000);
		CHECK(count(svg, "<g class=\"panel\"") == 8);
		CHECK(strstr(svg, "and 12 more conditions") != NULL);
		CHECK(count(svg, "class=\"gc ") == 8 * 1000);
		CHECK(strlen(svg) < 8 * 1024 * 1024);
	}
	free(svg);
	json_object_put(ctx);
}

/* One point: still one polyline, and a dot that shows. */
static void test_one_point(void)
{
	struct json_object *ctx = make_ctx("r", "p"), *pts = json_object_new_array();
	char *svg;
	int checked = 0;

	json_object_array_add(pts, make_point(-100, 350e6, 350e6, 350e6));
	json_object_object_add(json_object_array_get_idx(ctx_series(ctx), 0), "points", pts);
	json_object_object_del(ctx, "gcs");
	json_object_object_del(ctx, "dump");
	svg = render_ok(ctx);
	if (svg) {
		CHECK(count(svg, "<polyline class=\"series\"") == 1);
		/* One point before the fire: its value holds until the fire. */
		CHECK(count(svg, "<circle class=\"series-point\"") == 0);
		CHECK(check_panels(svg, "> 300 MB", &checked) == 1 && checked >= 2);
		/* The x range is at least a second: -2 s of the sustain .. 0. */
		CHECK(strstr(svg, ">-2 s</text>") != NULL);
	}
	free(svg);
	json_object_put(ctx);
}

/* A realistic plot: three conditions, one without history. */
static void write_sample(const char *path)
{
	struct json_object *ctx = make_ctx("loh-balloon", "GcLab");
	FILE *f = fopen(path, "w");
	char err[256];

	json_object_array_add(ctx_conds(ctx),
	                      make_cond("gc-heap-size > 1GB", "gc-heap-size", ">", 1e9, "bytes", 0, 1.02e9));
	json_object_array_add(ctx_series(ctx), make_series("gc-heap-size", "bytes", 300e6, 650e6, 80e6));
	json_object_array_add(ctx_conds(ctx), make_cond("System.Runtime/alloc-rate > 50MB/s",
	                                                "System.Runtime/alloc-rate", ">", 50e6, "bytes/s", 1000, NAN));
	json_object_object_add(json_object_object_get(ctx, "rule"), "description",
	                       json_object_new_string("Large object heap balloons past 300 MB (issue #15 demo)"));
	CHECK(f != NULL);
	if (f) {
		CHECK(plot_svg(f, ctx, err, sizeof(err)) == 0);
		CHECK(fclose(f) == 0);
	}
	json_object_put(ctx);
}

int main(void)
{
	const char *sample = getenv("DW_PLOT_SAMPLE");
	char why[128];

	/* The checker itself. */
	CHECK(xml_wellformed("<a x=\"1\"><b/>t &amp; &#60;</a>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a><b></a></b>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a x=1/>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a x=\"<\"/>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a>&</a>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a>x < y</a>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a x=\"1\" x=\"2\"/>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a>\xFF</a>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a>\x1b</a>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a/><b/>", why, sizeof(why)));
	CHECK(!xml_wellformed("<a>", why, sizeof(why)));

	test_basic();
	test_units();
	test_escaping();
	test_bad_text();
	test_no_history();
	test_einval();
	test_hostile_values();
	test_one_point();
	if (sample)
		write_sample(sample);
	return check_done();
}
