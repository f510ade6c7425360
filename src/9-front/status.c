/* `dumpwatch status`, the client side; see status.h.
 *
 * The answer comes from a process we did not start, and carries names that
 * other users' processes chose. So: the server must be root or ourselves
 * (SO_PEERCRED), everything is bounded (time, size), every field is checked
 * for its type before use (a missing or mistyped field is left out, never
 * read as 0), and every string is escaped (text_escape) before it reaches the
 * terminal. The JSON view is re-serialized by json-c and then filtered so it
 * too carries no terminal control character (see put_json_safe). */
#include "dumpwatch/status.h"

#include "dumpwatch/ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/fds.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

#define READ_CHUNK (64 * 1024)

/* Connects to path (ipc_connect: a full backlog is retried for a bounded
 * time; a path longer than sun_path is reached through its directory).
 * Returns the socket in non-blocking mode, or -errno. Who serves it is
 * checked by the caller. */
static int connect_path(const char *path)
{
	const struct ipc_endpoint ep = {.path = path};
	int fd = ipc_connect(&ep);

	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Reads until EOF, at most STATUS_ANSWER_MAX bytes, before the deadline. */
static int read_all(int fd, int64_t deadline, char **ret_text, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;
		int r;

		if (cap - len < READ_CHUNK) {
			size_t ncap = cap ? cap * 2 : 4 * READ_CHUNK;
			char *nb;
			if (ncap > (size_t)STATUS_ANSWER_MAX + READ_CHUNK + 1)
				ncap = (size_t)STATUS_ANSWER_MAX + READ_CHUNK + 1;
			nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		n = recv(fd, buf + len, cap - len - 1, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			if (len > STATUS_ANSWER_MAX) {
				free(buf);
				return -EFBIG;
			}
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			int e = errno;
			free(buf);
			return -e;
		}
		if ((r = fds_wait(fd, POLLIN, deadline)) < 0) {
			free(buf);
			return r;
		}
	}
	buf[len] = '\0';
	*ret_text = buf;
	*ret_len = len;
	return 0;
}

static void fmt_timeout(int timeout_ms, char *buf, size_t buflen)
{
	units_format((double)timeout_ms, UNIT_MS, buf, buflen);
}

int status_query(const char *socket_path, int timeout_ms, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	/* No deadline: for a caller that waits for the answer, not for time. */
	int64_t deadline = timeout_ms < 0 ? -1 : fds_now_ms() + timeout_ms;
	const char *p = socket_path;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	char tbuf[32];
	int fd, r;

	*ret_text = NULL;
	*ret_len = 0;
	if (!p || !*p) {
		snprintf(err, errlen, "no status socket path given");
		return -EINVAL;
	}
	fd = connect_path(p);
	if (fd < 0) {
		switch (-fd) {
		case ENOENT:
		case ENOTDIR:
			snprintf(err, errlen, "no guard is running (%s does not exist)", p);
			break;
		case EACCES:
		case EPERM:
			if (geteuid() != 0)
				snprintf(err, errlen, "permission denied: run as root (cannot connect to %s)", p);
			else
				snprintf(err, errlen, "permission denied on %s: %s", p, strerror(-fd));
			break;
		case ECONNREFUSED:
			snprintf(err, errlen,
			         "no guard answered on %s: connection refused (the guard is not running; the socket is "
			         "left from an earlier run)",
			         p);
			break;
		case ETIMEDOUT:
			fmt_timeout(timeout_ms, tbuf, sizeof(tbuf));
			snprintf(err, errlen, "no guard answered on %s: no connection within %s", p, tbuf);
			break;
		default:
			snprintf(err, errlen, "no guard answered on %s: %s", p, strerror(-fd));
			break;
		}
		return fd;
	}
	/* A socket in a directory another user could write to might not be the
	 * guard's: believe only root or ourselves. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
		r = -errno;
		snprintf(err, errlen, "no guard answered on %s: cannot tell who serves it: %s", p, strerror(-r));
		close(fd);
		return r;
	}
	if (cr.uid != 0 && cr.uid != geteuid()) {
		snprintf(err, errlen, "%s is served by uid %u, neither root nor us: not trusting its answer", p,
		         (unsigned)cr.uid);
		close(fd);
		return -EPERM;
	}
	r = read_all(fd, deadline, ret_text, ret_len);
	close(fd);
	if (r == 0 && *ret_len == 0) {
		free(*ret_text);
		*ret_text = NULL;
		snprintf(err, errlen,
		         "no guard answered on %s: it closed the connection without an answer (only root and the "
		         "guard's own user may ask)",
		         p);
		return -ENODATA;
	}
	if (r == -ETIMEDOUT) {
		fmt_timeout(timeout_ms, tbuf, sizeof(tbuf));
		snprintf(err, errlen, "no guard answered on %s: no complete answer within %s", p, tbuf);
	} else if (r == -EFBIG) {
		snprintf(err, errlen, "the guard's answer on %s is larger than %u MiB: not reading it", p,
		         STATUS_ANSWER_MAX >> 20);
	} else if (r < 0) {
		snprintf(err, errlen, "reading the guard's answer on %s: %s", p, strerror(-r));
	}
	return r;
}

/* --- reading fields: a field of the wrong type is as good as absent --- */

/* An integer, also when sent as 3.0; never a string json-c would convert. */
static int get_int(struct json_object *o, const char *key, long long *out)
{
	struct json_object *v = jv_typed(o, key, json_type_int);
	double d;

	if (v) {
		*out = (long long)json_object_get_int64(v);
		return 1;
	}
	if (!jv_num(o, key, &d) || d != floor(d) || d < -9e15 || d > 9e15)
		return 0;
	*out = (long long)d;
	return 1;
}

static int get_bool(struct json_object *o, const char *key, int *out)
{
	struct json_object *v = jv_typed(o, key, json_type_boolean);

	if (!v)
		return 0;
	*out = json_object_get_boolean(v);
	return 1;
}

static struct json_object *get_array(struct json_object *o, const char *key)
{
	struct json_object *v = jv_member(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

static int str_is(struct json_object *o, const char *key, const char *want)
{
	size_t len;
	const char *s = jv_str(o, key, &len);

	return s && len == strlen(want) && memcmp(s, want, len) == 0;
}

/* --- writing --- */

/* A duration of s seconds: under a minute as the project prints durations
 * (units_format: "500ms", "2.1s"), longer ones in the two largest whole units
 * ("4m10s", "1h", "2d3h") - "3600s" would have to be worked out. */
static const char *fmt_dur(double s, char *buf, size_t buflen)
{
	static const struct {
		long long secs;
		char unit;
	} parts[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
	long long t;
	size_t pos = 0;
	int shown = 0;

	if (s < 60.0)
		return units_format(s * 1000.0, UNIT_MS, buf, buflen);
	t = s > 9e15 ? 9000000000000000LL : (long long)(s + 0.5);
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && shown < 2; i++) {
		long long n = t / parts[i].secs;
		t %= parts[i].secs;
		if (n == 0 && shown == 0)
			continue;
		if (shown == 0 || n > 0) {
			int w = snprintf(buf + pos, buflen - pos, "%lld%c", n, parts[i].unit);
			if (w < 0 || (size_t)w >= buflen - pos)
				break;
			pos += (size_t)w;
		}
		shown++;
	}
	return buf;
}

/* Bytes with binary prefixes ("117.7MiB"), for rules written in them;
 * units_format gives the decimal ones. */
static void fmt_binary(double v, const char *suffix, char *buf, size_t buflen)
{
	static const char *const pfx[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double a = fabs(v);
	int i = -1;

	if (a < 1024.0) {
		snprintf(buf, buflen, v == floor(v) ? "%.0fB%s" : "%.1fB%s", v, suffix);
		return;
	}
	/* Round first so that 1023.96KiB is shown as 1.0MiB. */
	while (i < 4 && (i < 0 || a >= 1023.95)) {
		a /= 1024.0;
		v /= 1024.0;
		i++;
	}
	snprintf(buf, buflen, "%.1f%s%s", v, pfx[i], suffix);
}

/* Whether the condition's text writes a size with a binary prefix: a number,
 * an optional space, then KiB, MiB, GiB, TiB or PiB ("300MiB", "1.5 gib"). */
static int uses_binary(const char *text, size_t len)
{
	for (size_t i = 1; i + 2 < len; i++) {
		char before = text[i - 1];
		if (before == ' ' && i >= 2)
			before = text[i - 2];
		if (before >= '0' && before <= '9' && strchr("kmgtpKMGTP", text[i]) && text_lower(text[i + 1]) == 'i' &&
		    text_lower(text[i + 2]) == 'b')
			return 1;
	}
	return 0;
}

/* Prints value v in the condition's unit, as the rule would write it. */
static void put_value(FILE *out, double v, struct json_object *cond)
{
	size_t ulen = 0, tlen = 0;
	const char *unit = jv_str(cond, "unit", &ulen);
	const char *text = jv_str(cond, "text", &tlen);
	char buf[64];
	int kind = -1;

	if (!unit || ulen == 0)
		kind = UNIT_NONE;
	else if (ulen == 1 && unit[0] == '%')
		kind = UNIT_PERCENT;
	for (int k = UNIT_NONE; kind < 0 && k <= UNIT_PER_SEC; k++)
		if (ulen == strlen(units_name((enum unit_kind)k)) &&
		    memcmp(unit, units_name((enum unit_kind)k), ulen) == 0)
			kind = k;
	if ((kind == UNIT_BYTES || kind == UNIT_BYTES_PER_SEC) && text && uses_binary(text, tlen)) {
		fmt_binary(v, kind == UNIT_BYTES ? "" : "/s", buf, sizeof(buf));
		fputs(buf, out);
		return;
	}
	fputs(units_format(v, kind < 0 ? UNIT_NONE : (enum unit_kind)kind, buf, sizeof(buf)), out);
	if (kind < 0) { /* a unit this client does not know: shown as sent */
		fputc(' ', out);
		text_put_escaped(out, unit, ulen);
	}
}

static void put_condition(FILE *out, struct json_object *cond)
{
	double v, held, for_s = 0;
	int holding;
	char b1[32], b2[32];

	fputs("    ", out);
	jv_put_str(out, cond, "text", "?");
	fputs(": ", out);
	if (jv_num(cond, "value", &v)) {
		fputs("now ", out);
		put_value(out, v, cond);
	} else {
		fputs("no value yet", out);
	}
	if (get_bool(cond, "holding", &holding)) {
		if (!holding)
			fputs(", not holding", out);
		else if (jv_num(cond, "held_s", &held) && jv_num(cond, "for_s", &for_s) && for_s > 0)
			fprintf(out, ", holding %s of %s", fmt_dur(held, b1, sizeof(b1)),
			        fmt_dur(for_s, b2, sizeof(b2)));
		else
			fputs(", holding", out);
	}
	fputc('\n', out);
}

static void put_rule(FILE *out, struct json_object *rule)
{
	struct json_object *conds = get_array(rule, "conditions");
	long long fires, in_window, max;
	double window = 0, cooldown;
	int has_fires, has_window;
	char b[32];

	fputs("  rule ", out);
	jv_put_str(out, rule, "name", "?");
	if (jv_member(rule, "file") && json_object_is_type(jv_member(rule, "file"), json_type_string)) {
		fputs(" (", out);
		jv_put_str(out, rule, "file", "");
		fputc(')', out);
	}
	if (jv_member(rule, "state") && json_object_is_type(jv_member(rule, "state"), json_type_string)) {
		fputs(": ", out);
		jv_put_str(out, rule, "state", "");
	}
	has_fires = get_int(rule, "fires", &fires);
	has_window = get_int(rule, "fires_in_window", &in_window);
	if (has_fires || has_window) {
		long long shown = has_window ? in_window : fires;
		fprintf(out, "  fires %lld", shown);
		if (get_int(rule, "max_dumps", &max) && max > 0)
			fprintf(out, "/%lld", max);
		if (jv_num(rule, "window_s", &window) && window > 0)
			fprintf(out, " in %s", fmt_dur(window, b, sizeof(b)));
		if (has_fires && has_window && fires != in_window)
			fprintf(out, " (%lld in all)", fires);
	}
	if (jv_num(rule, "cooldown_left_s", &cooldown) && cooldown > 0)
		fprintf(out, "  cooldown %s left", fmt_dur(cooldown, b, sizeof(b)));
	fputc('\n', out);
	for (size_t i = 0; conds && i < json_object_array_length(conds); i++)
		put_condition(out, json_object_array_get_idx(conds, i));
}

static void put_process(FILE *out, struct json_object *p)
{
	struct json_object *rules = get_array(p, "rules");
	long long n;
	double attached, retry;
	char b[32];

	if (get_int(p, "pid", &n))
		fprintf(out, "%lld", n);
	else
		fputc('?', out);
	fputs("  ", out);
	jv_put_str(out, p, "process", "?");
	if (jv_member(p, "state") && json_object_is_type(jv_member(p, "state"), json_type_string)) {
		int is_attached = str_is(p, "state", "attached"), is_retrying = str_is(p, "state", "retrying");
		fputs("  ", out);
		jv_put_str(out, p, "state", "");
		if (jv_num(p, "attached_s", &attached))
			fprintf(out, is_attached ? " %s" : " (attached %s)", fmt_dur(attached, b, sizeof(b)));
		if (jv_num(p, "retry_in_s", &retry))
			fprintf(out, is_retrying ? " in %s" : " (retry in %s)", fmt_dur(retry, b, sizeof(b)));
		if (str_is(p, "state", "idle"))
			fputs(" (no rule matches)", out);
	}
	if (jv_member(p, "runtime_version") && json_object_is_type(jv_member(p, "runtime_version"), json_type_string)) {
		fputs("  .NET ", out);
		jv_put_str(out, p, "runtime_version", "");
	}
	if (jv_member(p, "user") && json_object_is_type(jv_member(p, "user"), json_type_string)) {
		fputs("  user ", out);
		jv_put_str(out, p, "user", "");
	}
	if (get_int(p, "dumps", &n))
		fprintf(out, "  dumps %lld", n);
	/* Where its rules' allocation ticks come from (--alloc-ticks). */
	if (str_is(p, "alloc_ticks", "on"))
		fputs("  allocation ticks on (a rule is near)", out);
	else if (str_is(p, "alloc_ticks", "off"))
		fputs("  allocation ticks off (no rule near)", out);
	fputc('\n', out);
	if (jv_member(p, "error") && json_object_is_type(jv_member(p, "error"), json_type_string)) {
		fputs("  error: ", out);
		jv_put_str(out, p, "error", "");
		fputc('\n', out);
	}
	for (size_t i = 0; rules && i < json_object_array_length(rules); i++)
		put_rule(out, json_object_array_get_idx(rules, i));
}

static void put_header(FILE *out, struct json_object *doc)
{
	static const char *const counts[][2] = {
	    {"dumps_taken", "taken"}, {"dumps_failed", "failed"}, {"dumps_skipped", "skipped"}};
	long long n;
	double up;
	int any = 0;
	char b[32];

	fputs("guard", out);
	if (get_int(doc, "pid", &n))
		fprintf(out, " pid %lld", n);
	if (jv_num(doc, "uptime_s", &up))
		fprintf(out, "  up %s", fmt_dur(up, b, sizeof(b)));
	if (jv_member(doc, "rules_dir") && json_object_is_type(jv_member(doc, "rules_dir"), json_type_string)) {
		fputs("  rules ", out);
		jv_put_str(out, doc, "rules_dir", "");
		if (get_int(doc, "rules_in_force", &n))
			fprintf(out, " (%lld in force)", n);
	} else if (get_int(doc, "rules_in_force", &n)) {
		fprintf(out, "  %lld rules in force", n);
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		if (!get_int(doc, counts[i][0], &n))
			continue;
		fprintf(out, "%s%lld %s", any ? ", " : "  dumps ", n, counts[i][1]);
		any = 1;
	}
	if (jv_member(doc, "dump_dir") && json_object_is_type(jv_member(doc, "dump_dir"), json_type_string)) {
		fputs(any ? " in " : "  dumps in ", out);
		jv_put_str(out, doc, "dump_dir", "");
	}
	fputc('\n', out);
}

static void put_text(FILE *out, struct json_object *doc)
{
	struct json_object *procs = get_array(doc, "processes");

	put_header(out, doc);
	if (procs && json_object_array_length(procs) == 0)
		fputs("no .NET processes\n", out);
	for (size_t i = 0; procs && i < json_object_array_length(procs); i++)
		put_process(out, json_object_array_get_idx(procs, i));
}

/* Writes json-c's serialization s so that it, too, is safe on a terminal:
 * json-c escapes the C0 controls but passes DEL, the C1 controls, the
 * bidirectional formatting characters and bytes that are not UTF-8 through
 * as they are. Outside strings JSON is plain ASCII, so each of these is in a
 * string, where \uNNNN means the same character; an invalid byte has no JSON
 * spelling and becomes U+FFFD. */
static void put_json_safe(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n;

		if (p[i] < 0x80 && p[i] != 0x7f) {
			fputc(p[i], out);
			i++;
			continue;
		}
		n = text_utf8_decode(p + i, len - i, &cp);
		if (n == 0) {
			fputs("\\ufffd", out);
			i++;
		} else if (text_is_control(cp)) {
			fprintf(out, "\\u%04x", (unsigned)cp);
			i += n;
		} else {
			fwrite(p + i, 1, n, out);
			i += n;
		}
	}
}

int status_print(const char *text, size_t len, int json, FILE *out, char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *doc;
	size_t end;

	if (len > STATUS_ANSWER_MAX) {
		snprintf(err, errlen, "the guard's answer is larger than %u MiB", STATUS_ANSWER_MAX >> 20);
		return -EBADMSG;
	}
	tok = json_tokener_new();
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	doc = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (doc && json_tokener_get_error(tok) == json_tokener_success) {
		while (end < len && (text[end] == ' ' || text[end] == '\n' || text[end] == '\t' || text[end] == '\r'))
			end++;
	}
	if (!doc || json_tokener_get_error(tok) != json_tokener_success || end < len) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		snprintf(err, errlen, "the guard's answer is not valid JSON (at byte %zu of %zu: %s)", end, len,
		         e == json_tokener_success    ? "unexpected text after the document"
		         : e == json_tokener_continue ? "it ends too early"
		                                      : json_tokener_error_desc(e));
		json_object_put(doc);
		json_tokener_free(tok);
		return -EBADMSG;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(doc, json_type_object)) {
		snprintf(err, errlen, "the guard's answer is not a JSON object");
		json_object_put(doc);
		return -EBADMSG;
	}
	if (json) {
		put_json_safe(out,
		              json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
		fputc('\n', out);
	} else {
		put_text(out, doc);
	}
	json_object_put(doc);
	if (fflush(out) != 0 || ferror(out)) {
		snprintf(err, errlen, "cannot write the status: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

int status_run(const char *socket_path, int json, FILE *out, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int r = status_query(socket_path, STATUS_TIMEOUT_MS, &text, &len, err, errlen);

	if (r == 0)
		r = status_print(text, len, json, out, err, errlen);
	free(text);
	return r;
}
