/* One dump context as a card of `dumpwatch report`'s page (context.h): the
 * outcome, the process, the rule and its conditions, the dump, the types
 * that allocated most, the heap summary (the largest types, what holds
 * them and what they keep alive), links to the files beside it, and the plot
 * inline; the page's style sheet. Every string
 * from the context is HTML-escaped (context_html_escape); links are relative
 * and percent-encoded, built from names found in the directory, never from
 * paths inside the file. The page around the cards is report_page.c's. */
#include "dumpwatch/context.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "context_shared.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/heapdump.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/plot.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

void context_html_escape(FILE *out, const char *s, size_t len)
{
	static const struct text_markup html = {.apos = "&#39;", .control = "", .maxwidth = SIZE_MAX};
	text_put_markup(out, s, len, &html);
}

void cx_h(FILE *out, const char *s)
{
	context_html_escape(out, s, strlen(s));
}

/* o's string member key HTML-escaped, or dflt (trusted HTML). */
static void h_field(FILE *out, struct json_object *o, const char *key, const char *dflt)
{
	size_t len;
	const char *s = jv_str(o, key, &len);

	if (s)
		context_html_escape(out, s, len);
	else
		fputs(dflt, out);
}

/* Appends s percent-encoded (all but RFC 3986 unreserved characters). */
static int url_put(char *out, size_t outlen, size_t *pos, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		            *p == '-' || *p == '.' || *p == '_' || *p == '~';
		size_t need = plain ? 1 : 3;

		if (*pos + need >= outlen)
			return -ENAMETOOLONG;
		if (plain) {
			out[(*pos)++] = (char)*p;
		} else {
			out[(*pos)++] = '%';
			out[(*pos)++] = hex[*p >> 4];
			out[(*pos)++] = hex[*p & 15];
		}
	}
	out[*pos] = '\0';
	return 0;
}

/* The next component of an absolute path at *p ("" at the end), its length
 * in *ret_len; advances *p past it. */
static const char *next_component(const char **p, size_t *ret_len)
{
	const char *s = *p, *e;

	while (*s == '/')
		s++;
	e = s;
	while (*e && *e != '/')
		e++;
	*ret_len = (size_t)(e - s);
	*p = e;
	return s;
}

int context_relative_url(const char *from_dir, const char *to_dir, char *out, size_t outlen)
{
	const char *f = from_dir, *t = to_dir, *fc, *tc;
	size_t flen, tlen, pos = 0;
	char comp[NAME_MAX + 1];

	if (outlen == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	/* Skip the common leading components. */
	for (;;) {
		const char *f_save = f, *t_save = t;

		fc = next_component(&f, &flen);
		tc = next_component(&t, &tlen);
		if (flen == 0 || flen != tlen || memcmp(fc, tc, flen) != 0) {
			f = f_save;
			t = t_save;
			break;
		}
	}
	while ((fc = next_component(&f, &flen)), flen > 0) {
		if (pos + 3 >= outlen)
			return -ENAMETOOLONG;
		memcpy(out + pos, "../", 4);
		pos += 3;
	}
	while ((tc = next_component(&t, &tlen)), tlen > 0) {
		if (tlen >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, tc, tlen);
		comp[tlen] = '\0';
		if (url_put(out, outlen, &pos, comp) < 0 || pos + 1 >= outlen)
			return -ENAMETOOLONG;
		out[pos++] = '/';
		out[pos] = '\0';
	}
	return 0;
}

/* Whether the len bytes at s contain needle, ignoring ASCII case. */
static int contains_nocase(const char *s, size_t len, const char *needle)
{
	size_t nlen = strlen(needle);

	for (size_t i = 0; i + nlen <= len; i++) {
		size_t k = 0;

		while (k < nlen && text_lower(s[i + k]) == text_lower(needle[k]))
			k++;
		if (k == nlen)
			return 1;
	}
	return 0;
}

/* The plot of ctx inline: the <svg> element plot_svg writes, without what
 * comes before it (an XML declaration or doctype has no place inside HTML).
 * The plot escapes every text it takes from the context; should it ever
 * carry a script or foreign content all the same, it is left out. */
static void html_plot(FILE *out, struct json_object *ctx)
{
	char *buf = NULL, perr[256] = "";
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	const char *svg;
	int r;

	if (!m) {
		fputs("<p class=\"noplot\">no plot: out of memory</p>\n", out);
		return;
	}
	r = plot_svg(m, ctx, perr, sizeof(perr));
	if (fclose(m) != 0 && r == 0)
		r = -ENOMEM;
	svg = r == 0 && buf ? memmem(buf, len, "<svg", 4) : NULL;
	if (r < 0 || !svg) {
		fputs("<p class=\"noplot\">no plot: ", out);
		cx_h(out, r < 0 ? (perr[0] ? perr : strerror(-r)) : "the plot is not SVG");
		fputs("</p>\n", out);
	} else if (contains_nocase(svg, len - (size_t)(svg - buf), "<script") ||
	           contains_nocase(svg, len - (size_t)(svg - buf), "<foreignobject")) {
		fputs("<p class=\"noplot\">no plot: it holds a script or foreign content</p>\n", out);
	} else {
		fputs("<div class=\"plot\">", out);
		fwrite(svg, 1, len - (size_t)(svg - buf), out);
		fputs("</div>\n", out);
	}
	free(buf);
}

/* One row of a card's table: <tr><th>label</th><td> ... the caller's cells. */
static void row(FILE *out, const char *label)
{
	fprintf(out, "<tr><th>%s</th><td>", label);
}

/* The link to file name (found in the directory) under the page's relative
 * prefix; "(missing)" after the name when it is not there any more. */
static void html_link(FILE *out, const char *prefix, int dirfd, const char *name)
{
	char url[PATH_MAX * 4];
	size_t pos = strlen(prefix);
	struct stat st;

	if (pos >= sizeof(url)) {
		cx_h(out, name);
		return;
	}
	memcpy(url, prefix, pos + 1);
	if (url_put(url, sizeof(url), &pos, name) < 0) {
		cx_h(out, name);
		return;
	}
	fputs("<a href=\"", out);
	cx_h(out, url);
	fputs("\">", out);
	cx_h(out, name);
	fputs("</a>", out);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		fputs(" (missing)", out);
}

/* Whether the dump file a context names is a plain name in its directory
 * (not a path, not "." or ".."): the only kind the page links to. */
static int plain_name(const char *s, size_t len)
{
	return len > 0 && len <= NAME_MAX && !memchr(s, '/', len) && !memchr(s, '\0', len) && strcmp(s, ".") != 0 &&
	       strcmp(s, "..") != 0;
}

/* The card's class: the outcome's name, or "other". */
static const char *outcome_class(struct json_object *ctx)
{
	int k = cx_outcome_of(ctx);

	return k < 0 ? "other" : dumpctx_outcome_name((enum dumpctx_outcome)k);
}

/* The row of the types that allocated most, when the context has them. */
static void html_allocs(FILE *out, struct json_object *ctx)
{
	struct json_object *al = jv_typed(ctx, DUMPCTX_KEY_ALLOCS, json_type_object);
	struct json_object *types = jv_typed(al, DUMPCTX_KEY_ALLOCS_TYPES, json_type_array);
	size_t n = types ? json_object_array_length(types) : 0;
	char b[48];
	double d;

	if (n == 0)
		return;
	if (n > CX_CARD_ALLOC_TYPES)
		n = CX_CARD_ALLOC_TYPES;
	row(out, "Allocating");
	fputs("<ul>", out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		fputs("<li><code>", out);
		h_field(out, e, DUMPCTX_KEY_ATYPE_TYPE, "?");
		fputs("</code> ", out);
		h_field(out, e, DUMPCTX_KEY_ATYPE_KIND, "?");
		fputs(" ", out);
		if (jv_num(e, DUMPCTX_KEY_ATYPE_BYTES, &d))
			fputs(units_format(d, UNIT_BYTES, b, sizeof(b)), out);
		if (jv_num(e, DUMPCTX_KEY_ATYPE_SHARE, &d))
			fprintf(out, " (%.1f %%)", d * 100);
		fputs("</li>", out);
	}
	fputs("</ul>", out);
	if (jv_num(al, DUMPCTX_KEY_ALLOCS_SINCE_MS, &d))
		fprintf(out, "<span class=\"src\">allocation ticks from %s %s the fire</span>",
		        units_format(d < 0 ? -d : d, UNIT_MS, b, sizeof(b)), d < 0 ? "before" : "after");
	else if (jv_num(al, DUMPCTX_KEY_ALLOCS_WINDOW_MS, &d))
		fprintf(out, "<span class=\"src\">allocation ticks, the last %s</span>",
		        units_format(d, UNIT_MS, b, sizeof(b)));
	fputs("</td></tr>\n", out);
}

/* A name from the target (a type's, a root's) HTML-escaped and cut at
 * CONTEXT_NAME_MAX characters with an ellipsis; "?" when it is not a string.
 * short_type: without its namespaces (context_type_short). */
static void h_name(FILE *out, const char *s, size_t len, int short_type)
{
	static const struct text_markup html = {.apos = "&#39;", .control = "", .maxwidth = CONTEXT_NAME_MAX};
	char shorter[4 * CONTEXT_NAME_MAX + 1];

	if (!s) {
		fputs("?", out);
		return;
	}
	if (short_type) {
		/* A character takes at most 4 bytes: no more of the name can show. */
		size_t full = context_type_short(s, len, shorter, sizeof(shorter));
		text_put_markup(out, shorter, full < sizeof(shorter) ? full : sizeof(shorter) - 1, &html);
		if (full >= sizeof(shorter))
			fputs("\xE2\x80\xA6", out);
		return;
	}
	text_put_markup(out, s, len, &html);
}

/* The retention path of a type: its bytes held, and the root and the types
 * (without their namespaces) from it, an ellipsis where steps were left out. */
static void html_path(FILE *out, struct json_object *type, struct json_object *path)
{
	struct json_object *steps = jv_typed(path, HEAPDUMP_KEY_PATH_STEPS, json_type_array);
	struct json_object *cut = jv_typed(path, HEAPDUMP_KEY_PATH_CUT, json_type_boolean);
	size_t n = steps ? json_object_array_length(steps) : 0, len;
	const char *s = jv_str(type, HEAPDUMP_KEY_TYPE_TYPE, &len);
	char b1[48], b2[48];
	double d, of;

	fputs("<p class=\"path\"><code>", out);
	h_name(out, s, len, 0);
	fputs("</code>", out);
	if (jv_num(path, HEAPDUMP_KEY_PATH_BYTES, &d)) {
		fprintf(out, " %s", units_format(d, UNIT_BYTES, b1, sizeof(b1)));
		if (jv_num(type, HEAPDUMP_KEY_TYPE_BYTES, &of))
			fprintf(out, " of %s", units_format(of, UNIT_BYTES, b2, sizeof(b2)));
	}
	fputs(" held by<br><code>", out);
	s = jv_str(path, HEAPDUMP_KEY_PATH_ROOT, &len);
	h_name(out, s, len, 0);
	for (size_t i = 0; i < n; i++) {
		struct json_object *st = json_object_array_get_idx(steps, i);

		if (n > CONTEXT_PATH_STEPS && i == CONTEXT_PATH_STEPS / 2) {
			fprintf(out, " \xE2\x86\x92 \xE2\x80\xA6 %zu more", n - CONTEXT_PATH_STEPS);
			i = n - CONTEXT_PATH_STEPS / 2 - 1;
			continue;
		}
		if (cut && json_object_get_boolean(cut) && i + 1 == n)
			fputs(" \xE2\x86\x92 \xE2\x80\xA6", out);
		fputs(" \xE2\x86\x92 ", out);
		s = jv_str(st, HEAPDUMP_KEY_STEP_TYPE, &len);
		h_name(out, s, len, 1);
		if (json_object_get_boolean(jv_typed(st, HEAPDUMP_KEY_STEP_NESTED, json_type_boolean)))
			fputs(" (nested)", out);
	}
	fputs("</code></p>", out);
}

/* The types that keep the most alive (the summary's "retained",
 * cx_heap_retained) in a table, or why their retained sizes are missing. */
static void html_retained(FILE *out, struct json_object *heap)
{
	struct cx_retained r;

	cx_heap_retained(heap, CONTEXT_CARD_HEAP_RETAINED, &r);
	if (r.state == CX_RETAINED_NOT_COMPUTED) {
		fputs("<p class=\"retained\">retained sizes: not computed", out);
		if (r.why) {
			fputs(": ", out);
			context_html_escape(out, r.why, r.why_len);
		}
		fputs("</p>", out);
		return;
	}
	if (r.n == 0)
		return;
	fputs("<p class=\"retained\">what they keep alive <span class=\"src\">(retained: the objects only they "
	      "hold, themselves included)</span></p>"
	      "<table class=\"heap\"><tr><th class=\"n\">retained</th><th class=\"n\">bytes</th><th>type</th></tr>\n",
	      out);
	for (size_t i = 0; i < r.n; i++) {
		struct cx_retained_row row;

		cx_heap_retained_row(&r, i, &row);
		fprintf(out, "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td><code>", row.retained, row.bytes);
		h_name(out, row.type, row.type_len, 0);
		fputs("</code></td></tr>\n", out);
	}
	fputs("</table>", out);
}

/* The row of the heap summary: the largest types in a table, the paths
 * that hold the first of them, the types that keep the most alive, the
 * target's pause; or why the summary is missing. Only the first
 * CONTEXT_CARD_HEAP_TYPES types are read. */
static void html_heap(FILE *out, struct json_object *ctx)
{
	struct json_object *heap = jv_typed(ctx, DUMPCTX_KEY_HEAP, json_type_object);
	struct json_object *types = jv_typed(heap, HEAPDUMP_KEY_TYPES, json_type_array);
	size_t len, n = types ? json_object_array_length(types) : 0, shown = n, paths = 0;
	const char *error = jv_str(ctx, DUMPCTX_KEY_HEAP_ERROR, &len);
	char b1[48], b2[48], b3[48], b4[48];
	double total = 0, d;
	int has_total;

	if (!heap && !error)
		return;
	row(out, "Heap");
	if (error) {
		fputs("<span class=\"error\">no summary: ", out);
		context_html_escape(out, error, len);
		fputs(heap ? "</span><br>" : "</span>", out);
	}
	if (!heap) {
		fputs("</td></tr>\n", out);
		return;
	}
	has_total = jv_num(heap, HEAPDUMP_KEY_BYTES, &total) && total > 0;
	fputs(has_total ? units_format(total, UNIT_BYTES, b1, sizeof(b1)) : "?", out);
	if (jv_num(heap, HEAPDUMP_KEY_OBJECTS, &d))
		fprintf(out, " in %s objects", cx_fmt_count(d, b2, sizeof(b2)));
	if (jv_num(heap, HEAPDUMP_KEY_PAUSE_MS, &d))
		fprintf(out, "; the target was paused %s for the snapshot", units_format(d, UNIT_MS, b3, sizeof(b3)));
	if (shown > CONTEXT_CARD_HEAP_TYPES)
		shown = CONTEXT_CARD_HEAP_TYPES;
	if (n > 0)
		fputs("<table class=\"heap\"><tr><th class=\"n\">bytes</th><th class=\"n\">objects</th><th "
		      "class=\"n\">share</th><th>where</th><th>type</th></tr>\n",
		      out);
	for (size_t i = 0; i < shown; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		const char *type = jv_str(e, HEAPDUMP_KEY_TYPE_TYPE, &len);

		snprintf(b1, sizeof(b1), "?");
		snprintf(b2, sizeof(b2), "?");
		snprintf(b3, sizeof(b3), "?");
		if (jv_num(e, HEAPDUMP_KEY_TYPE_BYTES, &d)) {
			units_format(d, UNIT_BYTES, b1, sizeof(b1));
			if (has_total && d >= 0)
				snprintf(b3, sizeof(b3), "%.1f %%", d / total * 100);
		}
		if (jv_num(e, HEAPDUMP_KEY_TYPE_OBJECTS, &d))
			cx_fmt_count(d, b2, sizeof(b2));
		cx_heap_where(jv_typed(e, HEAPDUMP_KEY_TYPE_GENERATIONS, json_type_object), b4, sizeof(b4));
		fprintf(
		    out,
		    "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td><td><code>",
		    b1, b2, b3, b4);
		h_name(out, type, len, 0);
		fputs("</code></td></tr>\n", out);
	}
	struct cx_heap_other rest;
	cx_heap_other(heap, shown, &rest);
	if (n > 0 && rest.count > 0)
		fprintf(out,
		        "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td></td><td></td><td>%s other "
		        "types</td></tr>\n",
		        units_format(rest.bytes, UNIT_BYTES, b1, sizeof(b1)),
		        cx_fmt_count(rest.objects, b2, sizeof(b2)), cx_fmt_count(rest.count, b3, sizeof(b3)));
	if (n > 0)
		fputs("</table>", out);
	for (size_t i = 0; i < shown && paths < CONTEXT_CARD_HEAP_PATHS; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		const char *type = jv_str(e, HEAPDUMP_KEY_TYPE_TYPE, &len);
		struct json_object *p = cx_heap_path_of(heap, type, len);

		if (p) {
			html_path(out, e, p);
			paths++;
		}
	}
	html_retained(out, heap);
	fputs("</td></tr>\n", out);
}

void cx_html_card(FILE *out, struct json_object *ctx, const char *json_name, const char *prefix, int dirfd)
{
	struct json_object *rule = jv_typed(ctx, DUMPCTX_KEY_RULE, json_type_object);
	struct json_object *proc = jv_typed(ctx, DUMPCTX_KEY_PROCESS, json_type_object);
	struct json_object *dump = jv_typed(ctx, DUMPCTX_KEY_DUMP, json_type_object);
	struct json_object *conds = jv_typed(rule, DUMPCTX_KEY_RULE_CONDITIONS, json_type_array);
	size_t n = conds ? json_object_array_length(conds) : 0, len;
	const char *cls = outcome_class(ctx), *s;
	int64_t fired = 0;
	char b[96];
	double d;

	cx_time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &fired);
	fprintf(out, "<article class=\"card %s\">\n<h2><span class=\"badge\">", cls);
	h_field(out, ctx, DUMPCTX_KEY_OUTCOME, "?");
	fputs("</span> ", out);
	h_field(out, rule, DUMPCTX_KEY_RULE_NAME, "?");
	fputs(" <span class=\"proc\">", out);
	h_field(out, proc, DUMPCTX_KEY_PROC_NAME, "?");
	if (jv_num(proc, DUMPCTX_KEY_PROC_PID, &d))
		fprintf(out, " (pid %.0f)", d);
	fputs("</span></h2>\n", out);
	s = jv_str(ctx, DUMPCTX_KEY_ERROR, &len);
	if (s) {
		fputs("<p class=\"error\">", out);
		context_html_escape(out, s, len);
		fputs("</p>\n", out);
	}
	fputs("<table>\n", out);
	row(out, "Fired");
	fprintf(out, "%s</td></tr>\n", cx_fmt_utc(fired, b, sizeof(b)));

	row(out, "Process");
	h_field(out, proc, DUMPCTX_KEY_PROC_NAME, "?");
	if (jv_num(proc, DUMPCTX_KEY_PROC_PID, &d))
		fprintf(out, ", pid %.0f", d);
	if (jv_typed(proc, DUMPCTX_KEY_PROC_USER, json_type_string)) {
		fputs(", user ", out);
		h_field(out, proc, DUMPCTX_KEY_PROC_USER, "?");
		if (jv_num(proc, DUMPCTX_KEY_PROC_UID, &d))
			fprintf(out, " (uid %.0f)", d);
	} else if (jv_num(proc, DUMPCTX_KEY_PROC_UID, &d)) {
		fprintf(out, ", uid %.0f", d);
	}
	s = jv_str(proc, DUMPCTX_KEY_PROC_RUNTIME_VERSION, &len);
	if (s && len) {
		fputs(", .NET ", out);
		context_html_escape(out, s, len);
	}
	fputs("</td></tr>\n", out);
	row(out, "Command line");
	fputs("<code>", out);
	h_field(out, proc, DUMPCTX_KEY_PROC_CMDLINE, "?");
	fputs("</code></td></tr>\n", out);

	row(out, "Rule");
	h_field(out, rule, DUMPCTX_KEY_RULE_NAME, "?");
	s = jv_str(rule, DUMPCTX_KEY_RULE_DESCRIPTION, &len);
	if (s && len) {
		fputs(" \xE2\x80\x94 ", out);
		context_html_escape(out, s, len);
	}
	fputs(" <span class=\"src\">(", out);
	if (jv_typed(rule, DUMPCTX_KEY_RULE_FILE, json_type_string)) {
		h_field(out, rule, DUMPCTX_KEY_RULE_FILE, "?");
		if (jv_num(rule, DUMPCTX_KEY_RULE_LINE, &d))
			fprintf(out, ":%.0f", d);
	} else {
		fputs("command line", out);
	}
	fputs(")</span>, dump type ", out);
	h_field(out, rule, DUMPCTX_KEY_RULE_DUMP_TYPE, "?");
	fputs("</td></tr>\n", out);

	row(out, "Conditions");
	fputs("<ul>", out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *cond = json_object_array_get_idx(conds, i);

		fputs("<li><code>", out);
		h_field(out, cond, DUMPCTX_KEY_COND_TEXT, "?");
		fputs("</code>: ", out);
		cx_h(out, cx_fmt_cond_value(cond, b, sizeof(b)));
		fputs(" at the fire</li>", out);
	}
	fputs("</ul></td></tr>\n", out);

	row(out, "Dump");
	fputs("size ", out);
	if (jv_num(dump, DUMPCTX_KEY_DUMP_BYTES, &d))
		fputs(units_format(d, UNIT_BYTES, b, sizeof(b)), out);
	else
		fputs("\xE2\x80\x94", out);
	fputs(", took ", out);
	if (jv_num(dump, DUMPCTX_KEY_DUMP_DURATION_MS, &d))
		fputs(units_format(d, UNIT_MS, b, sizeof(b)), out);
	else
		fputs("\xE2\x80\x94", out);
	if (jv_typed(dump, DUMPCTX_KEY_DUMP_VIA, json_type_string)) {
		fputs(", via ", out);
		h_field(out, dump, DUMPCTX_KEY_DUMP_VIA, "?");
	}
	fputs("</td></tr>\n", out);

	html_allocs(out, ctx);
	html_heap(out, ctx);

	row(out, "Files");
	html_link(out, prefix, dirfd, json_name);
	s = jv_str(dump, DUMPCTX_KEY_DUMP_FILE, &len);
	if (cx_outcome_of(ctx) == DUMPCTX_DUMP && s && plain_name(s, len)) {
		fputs(" \xC2\xB7 ", out);
		html_link(out, prefix, dirfd, s);
	}
	fputs("</td></tr>\n</table>\n", out);
	html_plot(out, ctx);
	fputs("</article>\n", out);
}

const char cx_page_style[] =
    "body{font-family:sans-serif;background:#fff;color:#111;margin:1.5em auto;max-width:1100px;padding:0 1em}\n"
    "h1{font-size:1.4em;margin:0 0 .3em}\n"
    "header{margin-bottom:1.2em}\n"
    "header p{margin:.2em 0;color:#333}\n"
    ".card{border:1px solid #bbb;border-left:6px solid #888;border-radius:4px;padding:.6em 1em;margin:0 0 "
    "1.2em;background:#fff;break-inside:avoid;page-break-inside:avoid}\n"
    ".card.dump{border-left-color:#2a7d3a}\n"
    ".card.skipped{border-left-color:#b8860b}\n"
    ".card.failed{border-left-color:#b22222}\n"
    ".card h2{font-size:1.1em;margin:.2em 0 .5em;overflow-wrap:anywhere}\n"
    ".badge{display:inline-block;font-size:.85em;padding:0 .5em;border-radius:3px;background:#eee;border:1px "
    "solid #999}\n"
    ".dump .badge{background:#e3f3e6}\n"
    ".skipped .badge{background:#fbf1d6}\n"
    ".failed .badge{background:#f8dcdc}\n"
    ".proc{font-weight:normal;color:#333}\n"
    ".error{color:#8b0000;margin:.3em 0;overflow-wrap:anywhere}\n"
    "table{border-collapse:collapse;width:100%;font-size:.92em}\n"
    "th{text-align:left;vertical-align:top;width:9em;padding:.15em .6em .15em 0;color:#444;font-weight:600}\n"
    "td{padding:.15em 0;overflow-wrap:anywhere}\n"
    "td ul{margin:0;padding-left:1.2em}\n"
    "code{font-family:monospace;font-size:.95em}\n"
    ".src{color:#555}\n"
    ".plot{margin-top:.5em}\n"
    ".plot svg{max-width:100%;height:auto}\n"
    ".noplot{color:#555;font-style:italic}\n"
    "table.heap{width:auto;margin:.3em 0}\n"
    ".heap th{width:auto;padding:.1em .9em .1em 0;font-weight:600}\n"
    ".heap td{padding:.1em .9em .1em 0}\n"
    ".heap .n{text-align:right;white-space:nowrap}\n"
    ".path{margin:.3em 0;overflow-wrap:anywhere}\n"
    ".retained{margin:.5em 0 0}\n"
    ".left-out{color:#8b4500}\n"
    "a{color:#0645ad}\n"
    "@media print{body{margin:0;max-width:none}.card{break-inside:avoid;page-break-inside:avoid}a{color:#000}}\n";
