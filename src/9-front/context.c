/* Dump contexts read back (context.h): what `dumpwatch show` (show.c) and
 * `dumpwatch report` (report_page.c, report_card.c) have in common. The
 * shape read is version 1 of the dump context (docs/context.md); its keys
 * are dumpctx.h's.
 *
 * A context carries names, command lines and rule descriptions that another
 * user's process or rule file chose, and the file itself may have been edited
 * by anyone who could write the dump directory. So: the file is bounded
 * (file_max, a regular file, opened non-blocking), every field is
 * checked for its type before use (a missing or mistyped field shows as "?"
 * or is left out, never read as 0), every string is escaped for where it goes
 * (text_escape for the terminal, context_html_escape for the page), and links
 * on the page are relative and percent-encoded, built from names this code
 * found in the directory, never from paths inside the file. This file loads
 * a context so bounded and checked, and holds the typed reads and formats
 * the views share. */
#include "dumpwatch/context.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context_shared.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/heapdump.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

/* ---- typed access to the parsed context ---------------------------------- */

int cx_time_ms(struct json_object *o, const char *key, int64_t *out)
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

const char *cx_fmt_value(struct json_object *o, double v, char *buf, size_t buflen)
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

const char *cx_fmt_utc(int64_t ms, char *buf, size_t buflen)
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

const char *cx_fmt_cond_value(struct json_object *cond, char *buf, size_t buflen)
{
	char v[64];
	double d;
	int at_least;

	if (!jv_num(cond, DUMPCTX_KEY_COND_VALUE, &d)) {
		snprintf(buf, buflen, "no value");
		return buf;
	}
	cx_fmt_value(cond, d, v, sizeof(v));
	at_least = json_object_get_boolean(jv_typed(cond, DUMPCTX_KEY_COND_AT_LEAST, json_type_boolean));
	snprintf(buf, buflen, "%s%s", at_least ? "at least " : "", v);
	return buf;
}

int cx_outcome_of(struct json_object *ctx)
{
	size_t len;
	const char *o = jv_str(ctx, DUMPCTX_KEY_OUTCOME, &len);

	for (int k = DUMPCTX_DUMP; o && k <= DUMPCTX_FAILED; k++)
		if (strcmp(o, dumpctx_outcome_name((enum dumpctx_outcome)k)) == 0)
			return k;
	return -1;
}

/* ---- the heap summary ------------------------------------------------- */

const char *cx_fmt_count(double v, char *buf, size_t buflen)
{
	char raw[24];
	size_t o = 0;
	int n;

	if (!(v >= 0 && v <= 9007199254740992.0)) {
		snprintf(buf, buflen, "?");
		return buf;
	}
	n = snprintf(raw, sizeof(raw), "%.0f", v);
	for (int i = 0; i < n && o + 2 < buflen; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	if (buflen)
		buf[o < buflen ? o : buflen - 1] = '\0';
	return buf;
}

const char *cx_heap_where(struct json_object *gens, char *buf, size_t buflen)
{
	static const char *const keys[HG_N_GENS] = HEAPDUMP_GEN_NAMES;
	static const char *const labels[HG_N_GENS] = {"gen0", "gen1", "gen2", "LOH", "POH", "?"};
	double bytes[HG_N_GENS], total = 0;
	int first = -1, second = -1;

	for (int k = 0; k < HG_N_GENS; k++) {
		if (!jv_num(gens, keys[k], &bytes[k]) || bytes[k] < 0)
			bytes[k] = 0;
		total += bytes[k];
		if (bytes[k] > 0 && (first < 0 || bytes[k] > bytes[first])) {
			second = first;
			first = k;
		} else if (bytes[k] > 0 && (second < 0 || bytes[k] > bytes[second])) {
			second = k;
		}
	}
	if (first < 0 || !(total > 0) || !isfinite(total)) {
		snprintf(buf, buflen, "?");
		return buf;
	}
	if (bytes[first] >= total * 0.995 || second < 0) {
		snprintf(buf, buflen, "%s", labels[first]);
		return buf;
	}
	double rest = total - bytes[first] - bytes[second];
	snprintf(buf, buflen, "%s %.0f%% %s %.0f%%%s", labels[first], bytes[first] / total * 100, labels[second],
	         bytes[second] / total * 100, rest >= total * 0.005 ? "+" : "");
	return buf;
}

void cx_heap_other(struct json_object *heap, size_t shown, struct cx_heap_other *out)
{
	struct json_object *types = jv_typed(heap, HEAPDUMP_KEY_TYPES, json_type_array);
	struct json_object *other = jv_typed(heap, HEAPDUMP_KEY_OTHER, json_type_object);
	size_t n = types ? json_object_array_length(types) : 0;
	double d;

	memset(out, 0, sizeof(*out));
	for (size_t i = shown; i < n && i < shown + CX_HEAP_OTHER_SCAN; i++) {
		struct json_object *e = json_object_array_get_idx(types, i);
		if (jv_num(e, HEAPDUMP_KEY_TYPE_BYTES, &d))
			out->bytes += d;
		if (jv_num(e, HEAPDUMP_KEY_TYPE_OBJECTS, &d))
			out->objects += d;
	}
	out->count = n > shown ? (double)(n - shown) : 0;
	if (jv_num(other, HEAPDUMP_KEY_OTHER_TYPES, &d))
		out->count += d;
	if (jv_num(other, HEAPDUMP_KEY_OTHER_BYTES, &d))
		out->bytes += d;
	if (jv_num(other, HEAPDUMP_KEY_OTHER_OBJECTS, &d))
		out->objects += d;
}

struct json_object *cx_heap_path_of(struct json_object *heap, const char *type, size_t len)
{
	struct json_object *paths = jv_typed(heap, HEAPDUMP_KEY_PATHS, json_type_array);
	size_t n = paths ? json_object_array_length(paths) : 0;

	if (n > CX_HEAP_PATHS_SCAN)
		n = CX_HEAP_PATHS_SCAN;
	for (size_t i = 0; type && i < n; i++) {
		struct json_object *p = json_object_array_get_idx(paths, i);
		size_t plen;
		const char *t = jv_str(p, HEAPDUMP_KEY_PATH_TYPE, &plen);

		if (t && plen == len && memcmp(t, type, len) == 0)
			return p;
	}
	return NULL;
}

void cx_heap_retained(struct json_object *heap, size_t max, struct cx_retained *out)
{
	struct json_object *ret = jv_typed(heap, HEAPDUMP_KEY_RETAINED, json_type_object);
	struct json_object *computed = jv_typed(ret, HEAPDUMP_KEY_RETAINED_COMPUTED, json_type_boolean);

	memset(out, 0, sizeof(*out));
	if (!ret) {
		out->state = CX_RETAINED_ABSENT;
		return;
	}
	if (!computed || !json_object_get_boolean(computed)) {
		out->state = CX_RETAINED_NOT_COMPUTED;
		out->why = jv_str(ret, HEAPDUMP_KEY_RETAINED_WHY, &out->why_len);
		return;
	}
	out->state = CX_RETAINED_COMPUTED;
	out->types = jv_typed(ret, HEAPDUMP_KEY_RETAINED_TYPES, json_type_array);
	out->n = out->types ? json_object_array_length(out->types) : 0;
	if (out->n > max)
		out->n = max;
}

void cx_heap_retained_row(const struct cx_retained *r, size_t i, struct cx_retained_row *out)
{
	struct json_object *e = i < r->n ? json_object_array_get_idx(r->types, i) : NULL;
	double d;

	out->type = jv_str(e, HEAPDUMP_KEY_TYPE_TYPE, &out->type_len);
	snprintf(out->retained, sizeof(out->retained), "?");
	snprintf(out->bytes, sizeof(out->bytes), "?");
	if (jv_num(e, HEAPDUMP_KEY_TYPE_RETAINED_BYTES, &d))
		units_format(d, UNIT_BYTES, out->retained, sizeof(out->retained));
	if (jv_num(e, HEAPDUMP_KEY_TYPE_BYTES, &d))
		units_format(d, UNIT_BYTES, out->bytes, sizeof(out->bytes));
}

/* A byte that may be part of a .NET identifier as the runtime names types:
 * letters, digits, '_', '`' (List`1), and any byte of a multibyte character. */
static int ident_byte(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '`' ||
	       c >= 0x80;
}

size_t context_type_short(const char *s, size_t len, char *out, size_t outlen)
{
	size_t i = 0, o = 0;

	while (i < len) {
		size_t j = i;

		if (!ident_byte((unsigned char)s[i])) {
			if (o + 1 < outlen)
				out[o] = s[i];
			o++;
			i++;
			continue;
		}
		while (j < len && ident_byte((unsigned char)s[j]))
			j++;
		if (j + 1 < len && s[j] == '.' && ident_byte((unsigned char)s[j + 1])) {
			i = j + 1; /* a namespace (or a declaring type): left out */
			continue;
		}
		for (; i < j; i++, o++)
			if (o + 1 < outlen)
				out[o] = s[i];
	}
	if (outlen)
		out[o < outlen ? o : outlen - 1] = '\0';
	return o;
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
	else if (len >= 7 && strcmp(file + len - 7, ".gcdump") == 0)
		n = snprintf(out, outlen, "%.*s.json", (int)(len - 7), file);
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
	if (!cx_time_ms(root, DUMPCTX_KEY_FIRED_UNIX_MS, &ms)) {
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
