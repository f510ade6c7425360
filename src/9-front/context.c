/* Dump contexts read back: `dumpwatch show` (text) and `dumpwatch report`
 * (an HTML page); see context.h. The shape read is version 1 of the dump
 * context (docs/context.md).
 *
 * A context carries names, command lines and rule descriptions that another
 * user's process or rule file chose, and the file itself may have been edited
 * by anyone who could write the dump directory. So: the file is bounded
 * (file_max, a regular file, opened non-blocking), every field is
 * checked for its type before use (a missing or mistyped field shows as "?"
 * or is left out, never read as 0), every string is escaped for where it goes
 * (text_escape for the terminal, context_html_escape for the page), and links
 * on the page are relative and percent-encoded, built from names this code
 * found in the directory, never from paths inside the file.
 *
 * The report reads each context twice - once to learn when it fired, once to
 * write its card - so that only one parsed context is held at a time: 10000
 * contexts of a few hundred kB each would not fit in memory as json-c trees.
 * And it is bounded whatever the directory holds (struct context_limits):
 * the files are listed first, by name, size and modification time only; the
 * newest are read, as many bytes as read_max allows in each pass; the cards,
 * each built on its own, are kept while page_max holds them. What is left out
 * is named in one warning line. Everything goes through the directory's
 * descriptor, opened once: the directory's owner may swap it for a link. */
#include "dumpwatch/context.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/defaults.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/log.h"
#include "dumpwatch/plot.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

/* ---- typed access to the parsed context ---------------------------------- */

/* A wall-clock time in ms since the epoch: 1, or 0 when missing or beyond
 * what gmtime handles in any year a dump could have been taken. */
static int time_ms(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v = jv_member(o, key);

	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
	} else {
		double d;
		if (!jv_num_of(v, &d))
			return 0;
		if (d < -1e15 || d > 1e15)
			return 0;
		*out = (int64_t)d;
	}
	return *out > -1000000000000000LL && *out < 1000000000000000LL;
}

/* The unit a condition or series names (units_name), or -1 for one this
 * dumpwatch does not know. (DUMPCTX_KEY_SERIES_UNIT is the same key.) */
static int unit_of(struct json_object *o)
{
	size_t len;
	const char *u = jv_str(o, DUMPCTX_KEY_COND_UNIT, &len);

	if (!u)
		return -1;
	for (int k = UNIT_NONE; k <= UNIT_PER_SEC; k++)
		if (len == strlen(units_name((enum unit_kind)k)) && memcmp(u, units_name((enum unit_kind)k), len) == 0)
			return k;
	return -1;
}

/* v in the unit of o ("351.2MB"); a unit this dumpwatch does not know is
 * shown by its escaped name after the number. */
static const char *fmt_value(struct json_object *o, double v, char *buf, size_t buflen)
{
	int k = unit_of(o);
	char num_buf[24], unit_buf[32];
	size_t ulen;
	const char *u;

	if (k >= 0)
		return units_format(v, (enum unit_kind)k, buf, buflen);
	units_format(v, UNIT_NONE, num_buf, sizeof(num_buf));
	u = jv_str(o, DUMPCTX_KEY_COND_UNIT, &ulen);
	if (!u || ulen == 0) {
		snprintf(buf, buflen, "%s", num_buf);
		return buf;
	}
	text_escape(u, ulen, unit_buf, sizeof(unit_buf));
	/* Cut to the caller's buffer when it is shorter. */
	size_t n = strlen(num_buf);
	snprintf(buf, buflen, "%s", num_buf);
	if (n + 1 < buflen) {
		buf[n] = ' ';
		snprintf(buf + n + 1, buflen - n - 1, "%s", unit_buf);
	}
	return buf;
}

/* "2026-11-23T18:57:16.123Z", or "?" when ms is out of gmtime's range. */
static const char *fmt_utc(int64_t ms, char *buf, size_t buflen)
{
	time_t s = (time_t)(ms / 1000 - (ms % 1000 < 0));
	int frac = (int)(ms - (int64_t)s * 1000);
	struct tm tm;
	char day[48];

	if (!gmtime_r(&s, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, buflen, "?");
		return buf;
	}
	snprintf(buf, buflen, "%s.%03dZ", day, frac);
	return buf;
}

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

/* ---- loading ----------------------------------------------------------- */

int context_sidecar_name(const char *file, char *out, size_t outlen)
{
	size_t len = strlen(file);
	int n;

	if (len >= 5 && strcmp(file + len - 5, ".json") == 0)
		n = snprintf(out, outlen, "%s", file);
	else if (len >= 5 && strcmp(file + len - 5, ".core") == 0)
		n = snprintf(out, outlen, "%.*s.json", (int)(len - 5), file);
	else if (len >= 4 && strcmp(file + len - 4, ".svg") == 0)
		n = snprintf(out, outlen, "%.*s.json", (int)(len - 4), file);
	else
		n = snprintf(out, outlen, "%s.json", file);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

const struct context_limits context_limits_default = {
    .file_max = CONTEXT_FILE_MAX,
    .read_max = CONTEXT_READ_MAX,
    .page_max = CONTEXT_PAGE_MAX,
    .count_max = CONTEXT_REPORT_MAX,
};

/* Reads the whole regular file fd, at most max bytes, into a malloc'd
 * NUL-terminated buffer. 0 or -errno (-EFBIG: larger); *ret_len gets the
 * bytes read either way. */
static int read_bounded(int fd, size_t hint, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = (hint < max ? hint : max) + 1, len = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) { /* the file grew since fstat */
			char *nb;
			if (cap > max) {
				free(buf);
				*ret_len = len;
				return -EFBIG;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			*ret_len = len;
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_len = len;
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	return 0;
}

/* Parses text as one JSON value with nothing but white space after it.
 * Returns the value, or NULL with a sentence in err. */
static struct json_object *parse_json(const char *text, size_t len, char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	size_t end;

	if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "not JSON: it holds a NUL byte");
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		snprintf(err, errlen, "not JSON: %s",
		         e == json_tokener_continue ? "it ends in the middle of a value" : json_tokener_error_desc(e));
		json_tokener_free(tok);
		return NULL;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && strchr(" \t\r\n", text[end]))
		end++;
	if (end < len) {
		snprintf(err, errlen, "not JSON: text after the value at byte %zu", end);
		json_object_put(root);
		return NULL;
	}
	return root;
}

/* Whether root is a dump context of a version this code reads, with the keys
 * every view needs. 0 or -ENOMSG, -EPROTONOSUPPORT, -EBADMSG with a sentence. */
static int check_context(struct json_object *root, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		enum json_type type;
		const char *what;
	} need[] = {{DUMPCTX_KEY_OUTCOME, json_type_string, "string"},
	            {DUMPCTX_KEY_RULE, json_type_object, "object"},
	            {DUMPCTX_KEY_PROCESS, json_type_object, "object"}};
	struct json_object *v;
	int64_t ms;

	if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, DUMPCTX_KEY_CONTEXT, &v)) {
		snprintf(err, errlen, "not a dump context (no \"" DUMPCTX_KEY_CONTEXT "\" key)");
		return -ENOMSG;
	}
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1) {
		snprintf(err, errlen, "a broken dump context: \"" DUMPCTX_KEY_CONTEXT "\" is not a version number");
		return -EBADMSG;
	}
	if (json_object_get_int64(v) != 1) {
		snprintf(err, errlen, "a dump context of version %lld; this dumpwatch reads version 1",
		         (long long)json_object_get_int64(v));
		return -EPROTONOSUPPORT;
	}
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!jv_typed(root, need[i].key, need[i].type)) {
			snprintf(err, errlen, "a broken dump context: no \"%s\" %s", need[i].key, need[i].what);
			return -EBADMSG;
		}
	if (!time_ms(root, DUMPCTX_KEY_FIRED_UNIX_MS, &ms)) {
		snprintf(err, errlen, "a broken dump context: no \"" DUMPCTX_KEY_FIRED_UNIX_MS "\" time");
		return -EBADMSG;
	}
	return 0;
}

int context_load(int dirfd, const char *path, int nofollow, size_t max, struct json_object **ret_ctx, size_t *ret_bytes,
                 char *err, size_t errlen)
{
	struct json_object *root;
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int fd, r;

	*ret_ctx = NULL;
	if (ret_bytes)
		*ret_bytes = 0;
	fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s", e == ELOOP && nofollow ? "a symbolic link, not followed" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "%s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "not a regular file");
		return -EINVAL;
	}
	if ((uintmax_t)st.st_size > (uintmax_t)max) {
		close(fd);
		snprintf(err, errlen, "too large for a dump context (%lld bytes; at most %zu), not read",
		         (long long)st.st_size, max);
		return -EFBIG;
	}
	r = read_bounded(fd, (size_t)st.st_size, max, &text, &len);
	close(fd);
	if (ret_bytes)
		*ret_bytes = len;
	if (r < 0) {
		if (r == -EFBIG)
			snprintf(err, errlen, "too large for a dump context (it grew past %zu bytes while read)", max);
		else
			snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	root = parse_json(text, len, err, errlen);
	free(text);
	if (!root)
		return -EBADMSG;
	r = check_context(root, err, errlen);
	if (r < 0) {
		json_object_put(root);
		return r;
	}
	*ret_ctx = root;
	return 0;
}

int context_locale_utf8(void)
{
	const char *cs;

	if (!setlocale(LC_CTYPE, ""))
		return 0;
	cs = nl_langinfo(CODESET);
	return cs && (text_eq_nocase(cs, "UTF-8") || text_eq_nocase(cs, "utf8"));
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

/* A condition's value at the fire: "351.2MB", "at least 351.2MB", "no value". */
static const char *fmt_cond_value(struct json_object *cond, char *buf, size_t buflen)
{
	char v[64];
	double d;
	int at_least;

	if (!jv_num(cond, DUMPCTX_KEY_COND_VALUE, &d)) {
		snprintf(buf, buflen, "no value");
		return buf;
	}
	fmt_value(cond, d, v, sizeof(v));
	at_least = json_object_get_boolean(jv_typed(cond, DUMPCTX_KEY_COND_AT_LEAST, json_type_boolean));
	snprintf(buf, buflen, "%s%s", at_least ? "at least " : "", v);
	return buf;
}

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
		fprintf(out, ": %s at the fire\n", fmt_cond_value(cond, v, sizeof(v)));
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

	time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &fired);
	fprintf(out, "fired:     %s (local %s)\n", fmt_utc(fired, b1, sizeof(b1)), fmt_local(fired, b2, sizeof(b2)));
	if (!dump)
		return;
	has_start = time_ms(dump, DUMPCTX_KEY_DUMP_STARTED_UNIX_MS, &started);
	has_end = time_ms(dump, DUMPCTX_KEY_DUMP_ENDED_UNIX_MS, &ended);
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
	fmt_value(series, hi, hi_s, sizeof(hi_s));
	fmt_value(series, lo, lo_s, sizeof(lo_s));
	w = (int)(strlen(hi_s) > strlen(lo_s) ? strlen(hi_s) : strlen(lo_s));
	fprintf(out, "    %*s %s\n", w, hi_s, bars);
	fprintf(out, "    %*s %s", w, lo_s, marks);
	if (has_thr && op_holds(op, 0, 0) >= 0) {
		fputs("  ^: ", out);
		text_put_escaped(out, op, oplen);
		fprintf(out, " %s", fmt_value(cond, threshold, th_s, sizeof(th_s)));
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

/* ---- HTML -------------------------------------------------------------- */

void context_html_escape(FILE *out, const char *s, size_t len)
{
	static const struct text_markup html = {.apos = "&#39;", .control = "", .maxwidth = SIZE_MAX};
	text_put_markup(out, s, len, &html);
}

/* context_html_escape of a NUL-terminated string. */
static void h(FILE *out, const char *s)
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
		h(out, r < 0 ? (perr[0] ? perr : strerror(-r)) : "the plot is not SVG");
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
		h(out, name);
		return;
	}
	memcpy(url, prefix, pos + 1);
	if (url_put(url, sizeof(url), &pos, name) < 0) {
		h(out, name);
		return;
	}
	fputs("<a href=\"", out);
	h(out, url);
	fputs("\">", out);
	h(out, name);
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

/* The outcome of ctx (enum dumpctx_outcome), or -1 for one dumpwatch does
 * not write. */
static int outcome_of(struct json_object *ctx)
{
	size_t len;
	const char *o = jv_str(ctx, DUMPCTX_KEY_OUTCOME, &len);

	for (int k = DUMPCTX_DUMP; o && k <= DUMPCTX_FAILED; k++)
		if (strcmp(o, dumpctx_outcome_name((enum dumpctx_outcome)k)) == 0)
			return k;
	return -1;
}

/* The card's class: the outcome's name, or "other". */
static const char *outcome_class(struct json_object *ctx)
{
	int k = outcome_of(ctx);

	return k < 0 ? "other" : dumpctx_outcome_name((enum dumpctx_outcome)k);
}

static void html_card(FILE *out, struct json_object *ctx, const char *json_name, const char *prefix, int dirfd)
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

	time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &fired);
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
	fprintf(out, "%s</td></tr>\n", fmt_utc(fired, b, sizeof(b)));

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
		h(out, fmt_cond_value(cond, b, sizeof(b)));
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

	row(out, "Files");
	html_link(out, prefix, dirfd, json_name);
	s = jv_str(dump, DUMPCTX_KEY_DUMP_FILE, &len);
	if (outcome_of(ctx) == DUMPCTX_DUMP && s && plain_name(s, len)) {
		fputs(" \xC2\xB7 ", out);
		html_link(out, prefix, dirfd, s);
	}
	fputs("</td></tr>\n</table>\n", out);
	html_plot(out, ctx);
	fputs("</article>\n", out);
}

static const char page_style[] =
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
    ".left-out{color:#8b4500}\n"
    "a{color:#0645ad}\n"
    "@media print{body{margin:0;max-width:none}.card{break-inside:avoid;page-break-inside:avoid}a{color:#000}}\n";

/* ---- report ------------------------------------------------------------- */

/* Why files were left out of the page (bits: one line says every reason). */
enum { LEFT_COUNT = 1, LEFT_READ = 2, LEFT_PAGE = 4 };

/* The count of contexts with an outcome dumpwatch does not write, after those
 * of enum dumpctx_outcome. */
#define OUTCOME_OTHER (DUMPCTX_FAILED + 1)

/* What became of a *.json file found in the directory. */
enum entry_state {
	ENT_LISTED,  /* not read (yet) */
	ENT_CONTEXT, /* a dump context, for the page */
	ENT_SKIPPED, /* not a context, or a broken one (warned about) */
	ENT_LEFT,    /* left out of the page by a limit */
	ENT_SHOWN,   /* on the page */
};

struct entry {
	char *name;            /* the file's name in the directory */
	struct timespec mtime; /* as listed */
	size_t size;           /* as listed: what reading it costs (0: a file that will not be read) */
	size_t bytes;          /* read in the first pass */
	int64_t fired_ms;      /* from the first pass */
	enum entry_state state;
	int cls; /* index into counts: an enum dumpctx_outcome, or OUTCOME_OTHER */
};

/* One report: the files listed, what became of them, what was left out. */
struct report {
	int dirfd;
	const char *shown; /* the directory, escaped, for warnings */
	const struct context_limits *lim;
	struct entry *ents; /* newest first by modification time */
	size_t n;
	size_t unnamed; /* files beyond count_max not kept, not even by name */
	int left_why;   /* LEFT_* */
	size_t n_left;  /* files left out, the unnamed included */
	size_t counts[OUTCOME_OTHER + 1];
	size_t n_shown;
};

/* Newest first by modification time; among equal times by name. */
static int mtime_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Newest first by the fire; among equal times by name, so the order is stable. */
static int fired_cmp(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;

	if (x->fired_ms != y->fired_ms)
		return x->fired_ms < y->fired_ms ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Whether name is one the report reads: "*.json", not hidden. */
static int json_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") == 0;
}

/* The files left out that keep their names for the warning, at least. */
#define LEFT_NAMED 64

/* Lists the *.json files of the directory with their modification times and
 * sizes (fstatat; nothing is opened), keeping the count_max newest and the
 * LEFT_NAMED newest after them (to name them): the array never holds more
 * than twice that, whatever the directory holds. Those beyond count_max are
 * marked left out. 0 or -errno with a sentence. */
static int list_dir(struct report *rp, char *err, size_t errlen)
{
	size_t keep = rp->lim->count_max, named = keep + LEFT_NAMED, cap = 2 * named;
	int fd = dup(rp->dirfd), e = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d || !(rp->ents = calloc(cap, sizeof(*rp->ents)))) {
		e = errno ? errno : ENOMEM;
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: cannot list: %s", rp->shown, strerror(e));
		return -e;
	}
	for (;;) {
		struct dirent *de;
		struct entry *en;
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			e = errno;
			break;
		}
		if (!json_name(de->d_name))
			continue;
		if (rp->n == cap) {
			qsort(rp->ents, rp->n, sizeof(*rp->ents), mtime_cmp);
			for (size_t i = named; i < rp->n; i++)
				free(rp->ents[i].name);
			rp->unnamed += rp->n - named;
			rp->n = named;
		}
		en = &rp->ents[rp->n];
		memset(en, 0, sizeof(*en));
		/* A file that vanished, is not regular or is beyond file_max is
		 * not read: context_load says so, and it costs nothing. */
		if (fstatat(rp->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			en->mtime = st.st_mtim;
			if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size <= (uintmax_t)rp->lim->file_max)
				en->size = (size_t)st.st_size;
		}
		en->name = strdup(de->d_name);
		if (!en->name) {
			e = ENOMEM;
			break;
		}
		rp->n++;
	}
	closedir(d);
	if (e) {
		snprintf(err, errlen, "%s: cannot list: %s", rp->shown, strerror(e));
		return -e;
	}
	if (rp->n > 1)
		qsort(rp->ents, rp->n, sizeof(*rp->ents), mtime_cmp);
	for (size_t i = keep; i < rp->n; i++)
		rp->ents[i].state = ENT_LEFT;
	if (rp->n > keep || rp->unnamed) {
		rp->left_why |= LEFT_COUNT;
		rp->n_left += (rp->n > keep ? rp->n - keep : 0) + rp->unnamed;
	}
	return 0;
}

/* The first pass, newest file first: reads each, at most read_max bytes in
 * all, to learn whether it is a context, its outcome and when it fired; the
 * older files are left out. 0, or -ENOMEM with a sentence. */
static int first_pass(struct report *rp, char *err, size_t errlen)
{
	size_t total = 0;

	for (size_t i = 0; i < rp->n; i++) {
		struct entry *en = &rp->ents[i];
		struct json_object *ctx;
		char why[512], name[NAME_MAX * 4 + 1];
		int r, k;

		if (en->state != ENT_LISTED)
			continue;
		if (en->size > rp->lim->read_max - total) {
			for (; i < rp->n; i++)
				if (rp->ents[i].state == ENT_LISTED) {
					rp->ents[i].state = ENT_LEFT;
					rp->n_left++;
				}
			rp->left_why |= LEFT_READ;
			break;
		}
		r = context_load(rp->dirfd, en->name, 1, rp->lim->file_max, &ctx, &en->bytes, why, sizeof(why));
		/* What was read counts; a file that grew after it was listed
		 * takes the total past read_max by at most that file. */
		total = en->bytes > rp->lim->read_max - total ? rp->lim->read_max : total + en->bytes;
		if (r == -ENOMEM) {
			snprintf(err, errlen, "%s: out of memory", rp->shown);
			return r;
		}
		if (r < 0) {
			en->state = ENT_SKIPPED;
			if (r != -ENOMSG)
				log_warn("%s/%s: %s, skipped", rp->shown, text_escape_str(en->name, name, sizeof(name)),
				         why);
			continue;
		}
		en->state = ENT_CONTEXT;
		time_ms(ctx, DUMPCTX_KEY_FIRED_UNIX_MS, &en->fired_ms);
		k = outcome_of(ctx);
		en->cls = k < 0 ? OUTCOME_OTHER : k;
		json_object_put(ctx);
	}
	return 0;
}

/* The card of en, read again, to out; *ret_bytes gets what was read. */
static void put_card(FILE *out, const struct report *rp, const struct entry *en, const char *prefix, size_t *ret_bytes)
{
	struct json_object *ctx;
	char why[512];

	if (context_load(rp->dirfd, en->name, 1, rp->lim->file_max, &ctx, ret_bytes, why, sizeof(why)) < 0) {
		fputs("<article class=\"card other\"><h2>", out);
		h(out, en->name);
		fputs("</h2><p class=\"error\">could not be read again: ", out);
		h(out, why);
		fputs("</p></article>\n", out);
		return;
	}
	html_card(out, ctx, en->name, prefix, rp->dirfd);
	json_object_put(ctx);
}

/* The second pass, newest fire first: the cards, each built on its own and
 * kept while they take at most page_max bytes; the older ones are left out.
 * The files are read again, as many bytes as in the first pass (at most one
 * file more, should they have grown since). Returns 0 with the cards
 * (malloc'd) in *ret_buf, or -ENOMEM. */
static int second_pass(struct report *rp, const char *prefix, char **ret_buf, size_t *ret_len)
{
	struct entry **order = malloc((rp->n ? rp->n : 1) * sizeof(*order));
	size_t k = 0, total = 0, budget = 0, len = 0;
	char *body = NULL;
	FILE *out = open_memstream(&body, &len);
	int r = 0;

	if (!out || !order) {
		if (out)
			fclose(out);
		free(body);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rp->n; i++)
		if (rp->ents[i].state == ENT_CONTEXT) {
			order[k++] = &rp->ents[i];
			budget += rp->ents[i].bytes;
		}
	if (budget < rp->lim->read_max)
		budget = rp->lim->read_max;
	if (k > 1)
		qsort(order, k, sizeof(*order), fired_cmp);
	for (size_t i = 0; i < k; i++) {
		struct entry *en = order[i];
		char *one = NULL;
		size_t one_len = 0, bytes = 0, used = (size_t)ftello(out);
		int why = 0;
		FILE *c;

		if (en->bytes > budget - total) {
			why = LEFT_READ;
		} else {
			c = open_memstream(&one, &one_len);
			if (!c) {
				r = -ENOMEM;
				break;
			}
			put_card(c, rp, en, prefix, &bytes);
			total = bytes > budget - total ? budget : total + bytes;
			if (fclose(c) != 0) {
				free(one);
				r = -ENOMEM;
				break;
			}
			if (one_len > rp->lim->page_max - used)
				why = LEFT_PAGE;
			else
				fwrite(one, 1, one_len, out);
			free(one);
		}
		if (why) {
			for (; i < k; i++) {
				order[i]->state = ENT_LEFT;
				rp->n_left++;
			}
			rp->left_why |= why;
			break;
		}
		en->state = ENT_SHOWN;
		rp->counts[en->cls]++;
		rp->n_shown++;
	}
	free(order);
	if (fclose(out) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(body);
		return r;
	}
	*ret_buf = body;
	*ret_len = len;
	return 0;
}

/* "64 MiB", or "1000 bytes" when it is not whole MiB. */
static const char *fmt_limit(size_t bytes, char *buf, size_t buflen)
{
	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, buflen, "%zu MiB", bytes >> 20);
	else
		snprintf(buf, buflen, "%zu bytes", bytes);
	return buf;
}

/* The limits rp->left_why names: "3 files; 64 MiB of contexts read". */
static const char *fmt_left_why(const struct report *rp, char *buf, size_t buflen)
{
	char b[48];
	size_t pos = 0;

	buf[0] = '\0';
	if (rp->left_why & LEFT_COUNT)
		pos += (size_t)snprintf(buf + pos, buflen - pos, "%zu files", rp->lim->count_max);
	if ((rp->left_why & LEFT_READ) && pos < buflen)
		pos += (size_t)snprintf(buf + pos, buflen - pos, "%s%s of contexts read", pos ? "; " : "",
		                        fmt_limit(rp->lim->read_max, b, sizeof(b)));
	if ((rp->left_why & LEFT_PAGE) && pos < buflen)
		snprintf(buf + pos, buflen - pos, "%s%s of page", pos ? "; " : "",
		         fmt_limit(rp->lim->page_max, b, sizeof(b)));
	return buf;
}

/* One warning line: how many files were left out, by which limits, and the
 * names that fit in a line, newest first by modification time. */
static void warn_left_out(const struct report *rp)
{
	char line[1600], why[160];
	size_t pos, named = 0;

	pos = (size_t)snprintf(line, sizeof(line),
	                       "%s: %zu file%s left out of the page, the oldest, beyond the "
	                       "report's limits (%s):",
	                       rp->shown, rp->n_left, rp->n_left == 1 ? "" : "s", fmt_left_why(rp, why, sizeof(why)));
	for (size_t i = 0; i < rp->n && pos < sizeof(line); i++) {
		const struct entry *en = &rp->ents[i];
		size_t nlen = strlen(en->name);

		if (en->state != ENT_LEFT)
			continue;
		/* Room for this name and a closing " and 12345 more". */
		if (pos + 2 + nlen + 32 >= sizeof(line))
			break;
		pos += (size_t)snprintf(line + pos, sizeof(line) - pos, "%s %s", named ? "," : "", en->name);
		named++;
	}
	if (named < rp->n_left && pos < sizeof(line))
		snprintf(line + pos, sizeof(line) - pos, "%s and %zu more", named ? "," : "", rp->n_left - named);
	log_warn("%s", line);
}

/* The path of the directory open at dirfd as the kernel has it now
 * (/proc/self/fd), which is where a file written through dirfd lands whatever
 * became of the name it was opened by; fallback when /proc cannot say. */
static void fd_path(int dirfd, const char *fallback, char *out, size_t outlen)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	n = readlink(link, out, outlen - 1);
	if (n <= 0 || (size_t)n >= outlen - 1 || out[0] != '/') {
		snprintf(out, outlen, "%s", fallback);
		return;
	}
	out[n] = '\0';
}

/* Opens the directory path for the report, once: every context is read and
 * the page written through this descriptor, so a directory swapped for a link
 * while the report runs is never followed. The last component must not be a
 * symbolic link (trailing slashes do not count, or "DIR/" would follow it): a
 * link there is what an owner of DIR would put in its place to send root's
 * page elsewhere. Returns the descriptor, or -errno (-ELOOP: a link) with a
 * sentence naming shown. */
static int open_dir(const char *path, const char *shown, char *err, size_t errlen)
{
	char p[PATH_MAX];
	size_t len;
	struct stat st;
	int fd, e;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
		snprintf(err, errlen, "%s: the name is too long", shown);
		return -ENAMETOOLONG;
	}
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	/* O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR. */
	if ((e == ENOTDIR || e == ELOOP) && lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "%s: a symbolic link, not followed (name the directory it leads to)", shown);
		return -ELOOP;
	}
	snprintf(err, errlen, "%s: %s", shown, strerror(e));
	return -e;
}

/* The page's relative prefix from the page's directory (real path from) to
 * the contexts' (to); "" when they are one directory. */
static void link_prefix(int dirfd, int outfd, const char *from, const char *to, char *out, size_t outlen)
{
	struct stat a, b;

	out[0] = '\0';
	if (fstat(dirfd, &a) == 0 && fstat(outfd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return;
	if (from[0] != '/' || to[0] != '/' || context_relative_url(from, to, out, outlen) < 0)
		out[0] = '\0';
}

/* The page's head and header, up to <main>; dir is the directory's real
 * path, as the reader of a printed page can find it again. */
static void html_head(FILE *out, const char *dir, const struct report *rp)
{
	char now[64], why[160];
	size_t n = rp->n_shown;

	/* Also well-formed XML (void elements closed with "/>"), so XML tools
	 * can check the page. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n"
	      "<title>dumpwatch: dumps in ",
	      out);
	h(out, dir);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>Dumps in <code>", page_style);
	h(out, dir);
	fprintf(out, "</code></h1>\n<p>%zu dump context%s: %zu dump%s, %zu skipped, %zu failed", n, n == 1 ? "" : "s",
	        rp->counts[DUMPCTX_DUMP], rp->counts[DUMPCTX_DUMP] == 1 ? "" : "s", rp->counts[DUMPCTX_SKIPPED],
	        rp->counts[DUMPCTX_FAILED]);
	if (rp->counts[OUTCOME_OTHER])
		fprintf(out, ", %zu other", rp->counts[OUTCOME_OTHER]);
	fputs(". Newest first.</p>\n", out);
	if (rp->n_left)
		fprintf(out,
		        "<p class=\"left-out\">%zu more file%s left out (the oldest), beyond the report's limits "
		        "(%s).</p>\n",
		        rp->n_left, rp->n_left == 1 ? "" : "s", fmt_left_why(rp, why, sizeof(why)));
	fprintf(out, "<p>Written %s by dumpwatch %s.</p>\n</header>\n<main>\n",
	        fmt_utc((int64_t)time(NULL) * 1000, now, sizeof(now)), DW_VERSION);
	if (n == 0)
		fputs("<p>No dump context in this directory.</p>\n", out);
}

/* The whole page: the head, then the cards (body, len bytes), then the end,
 * in the cards' own buffer, moved up in place rather than copied: the page
 * is in memory once. Returns the page (body is taken over, or freed), or
 * NULL. */
static char *html_page(char *body, size_t len, const char *dir, const struct report *rp, size_t *ret_len)
{
	static const char tail[] = "</main>\n</body>\n</html>\n";
	char *head = NULL, *page;
	size_t head_len = 0;
	FILE *f = open_memstream(&head, &head_len);

	if (!f) {
		free(body);
		return NULL;
	}
	html_head(f, dir, rp);
	if (fclose(f) != 0) {
		free(head);
		free(body);
		return NULL;
	}
	page = realloc(body, head_len + len + sizeof(tail));
	if (!page) {
		free(head);
		free(body);
		return NULL;
	}
	memmove(page + head_len, page, len);
	memcpy(page, head, head_len);
	memcpy(page + head_len + len, tail, sizeof(tail));
	free(head);
	*ret_len = head_len + len + sizeof(tail) - 1;
	return page;
}

int context_report(const char *dir, const char *out_path, const struct context_limits *lim, FILE *summary, char *err,
                   size_t errlen)
{
	char dir_shown[PATH_MAX], out_dir[PATH_MAX], page_shown[PATH_MAX * 2], prefix[PATH_MAX * 3];
	char real_dir[PATH_MAX], real_out[PATH_MAX], real_shown[PATH_MAX * 2];
	struct report rp = {.shown = dir_shown, .lim = lim ? lim : &context_limits_default};
	const char *page_name = "index.html";
	size_t body_len = 0, page_len = 0;
	char *body = NULL, *page = NULL;
	int outfd, e = 0, r;

	text_escape_str(dir, dir_shown, sizeof(dir_shown));
	rp.dirfd = open_dir(dir, dir_shown, err, errlen);
	if (rp.dirfd < 0)
		return rp.dirfd;
	/* Warnings name the directory opened, whatever its name becomes. */
	fd_path(rp.dirfd, dir, real_dir, sizeof(real_dir));
	text_escape_str(real_dir, dir_shown, sizeof(dir_shown));
	outfd = rp.dirfd;
	if (out_path) {
		const char *slash = strrchr(out_path, '/');
		char out_shown[PATH_MAX];

		text_escape_str(out_path, out_shown, sizeof(out_shown));
		page_name = slash ? slash + 1 : out_path;
		if (!*page_name || strcmp(page_name, ".") == 0 || strcmp(page_name, "..") == 0) {
			snprintf(err, errlen, "%s: not a file name", out_shown);
			close(rp.dirfd);
			return -EISDIR;
		}
		if (!slash)
			snprintf(out_dir, sizeof(out_dir), ".");
		else if (slash == out_path)
			snprintf(out_dir, sizeof(out_dir), "/");
		else if ((size_t)(slash - out_path) >= sizeof(out_dir)) {
			snprintf(err, errlen, "%s: the name is too long", out_shown);
			close(rp.dirfd);
			return -ENAMETOOLONG;
		} else
			snprintf(out_dir, sizeof(out_dir), "%.*s", (int)(slash - out_path), out_path);
		text_escape_str(out_dir, real_shown, sizeof(real_shown));
		outfd = open_dir(out_dir, real_shown, err, errlen);
		if (outfd < 0) {
			close(rp.dirfd);
			return outfd;
		}
	}
	r = list_dir(&rp, err, errlen);
	if (r == 0)
		r = first_pass(&rp, err, errlen);
	if (r < 0) {
		e = -r;
		goto out;
	}
	fd_path(outfd, out_path ? out_dir : dir, real_out, sizeof(real_out));
	link_prefix(rp.dirfd, outfd, real_out, real_dir, prefix, sizeof(prefix));
	/* Built in memory, then written whole beside where it goes: a reader
	 * of the page never sees half of it. */
	r = second_pass(&rp, prefix, &body, &body_len);
	page = r == 0 ? html_page(body, body_len, real_dir, &rp, &page_len) : NULL;
	e = page ? -fds_write_file(outfd, page_name, page, page_len, 0644, 0) : ENOMEM;
	free(page);
	if (rp.n_left)
		warn_left_out(&rp);
	/* Named as the directory written is called now, not as it was given. */
	fd_path(outfd, out_path ? out_dir : dir, real_out, sizeof(real_out));
	snprintf(page_shown, sizeof(page_shown), "%s%s%s", real_out, strcmp(real_out, "/") ? "/" : "", page_name);
	text_escape_str(page_shown, real_shown, sizeof(real_shown));
	if (e) {
		snprintf(err, errlen, "%s: cannot write: %s", real_shown, strerror(e));
		goto out;
	}
	fprintf(summary, "wrote %s: %zu dump%s (%zu skipped, %zu failed)", real_shown, rp.n_shown,
	        rp.n_shown == 1 ? "" : "s", rp.counts[DUMPCTX_SKIPPED], rp.counts[DUMPCTX_FAILED]);
	if (rp.n_left)
		fprintf(summary, ", %zu file%s left out", rp.n_left, rp.n_left == 1 ? "" : "s");
	fputc('\n', summary);
out:
	for (size_t i = 0; i < rp.n; i++)
		free(rp.ents[i].name);
	free(rp.ents);
	if (outfd != rp.dirfd)
		close(outfd);
	close(rp.dirfd);
	return -e;
}
