/* The daemon's persistent limit state; see state.h.
 *
 * File format (one JSON object):
 *   {"version": 1, "boot_id": "...", "records": [
 *     {"rule": "loh", "hash": "0123456789abcdef", "pid": 4807, "starttime": 123456,
 *      "fires": 2, "last_fire_ns": 81234567890, "recent_ns": [80000000000, 81234567890]}]}
 * 64-bit values that JSON readers would round (hash) are hex strings. */
#include "dumpwatch/state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/fds.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/jsonl.h"

void state_from_eval(struct state_record *rec, const struct eval_state *st)
{
	rec->fires = st->fires;
	rec->last_fire_ns = st->last_fire_ns;
	rec->n_recent = st->n_recent > EVAL_MAX_WINDOW_FIRES ? EVAL_MAX_WINDOW_FIRES : st->n_recent;
	memcpy(rec->recent_ns, st->recent_ns, rec->n_recent * sizeof(rec->recent_ns[0]));
}

void state_to_eval(const struct state_record *rec, struct eval_state *st)
{
	eval_init(st);
	st->fires = rec->fires;
	st->last_fire_ns = rec->last_fire_ns;
	st->n_recent = rec->n_recent > EVAL_MAX_WINDOW_FIRES ? EVAL_MAX_WINDOW_FIRES : rec->n_recent;
	memcpy(st->recent_ns, rec->recent_ns, st->n_recent * sizeof(st->recent_ns[0]));
}

static int parse_record(struct json_object *o, struct state_record *rec)
{
	struct json_object *v;
	int64_t x;
	const char *s;
	char *end;

	memset(rec, 0, sizeof(*rec));
	if (!json_object_is_type(o, json_type_object))
		return -1;
	if (!(s = jv_str(o, "rule", NULL)))
		return -1;
	if (!s[0] || strlen(s) >= sizeof(rec->rule))
		return -1;
	memcpy(rec->rule, s, strlen(s) + 1);
	if (!(s = jv_str(o, "hash", NULL)))
		return -1;
	errno = 0;
	rec->hash = strtoull(s, &end, 16);
	if (errno || end == s || *end || strlen(s) != 16)
		return -1;
	if (!jv_int64(o, "pid", &x) || x <= 0 || x > INT32_MAX)
		return -1;
	rec->pid = (pid_t)x;
	if (!jv_int64(o, "starttime", &x) || x < 0)
		return -1;
	rec->starttime = (unsigned long long)x;
	if (!jv_int64(o, "fires", &x) || x < 0 || x > UINT32_MAX)
		return -1;
	rec->fires = (uint32_t)x;
	if (!jv_int64(o, "last_fire_ns", &x))
		return -1;
	rec->last_fire_ns = x;
	if (!(v = jv_typed(o, "recent_ns", json_type_array)))
		return -1;
	size_t n = json_object_array_length(v);
	if (n > EVAL_MAX_WINDOW_FIRES)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		if (!json_object_is_type(e, json_type_int))
			return -1;
		rec->recent_ns[i] = json_object_get_int64(e);
		if (i > 0 && rec->recent_ns[i] < rec->recent_ns[i - 1])
			return -1;
	}
	rec->n_recent = (uint32_t)n;
	return 0;
}

int state_parse(const char *text, size_t len, const char *boot_id, struct state_record **ret, size_t *ret_n, char *err,
                size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root, *recs;
	struct state_record *out = NULL;
	size_t n;

	*ret = NULL;
	*ret_n = 0;
	if (len > STATE_FILE_MAX || len > INT32_MAX) {
		snprintf(err, errlen, "state file larger than %d bytes", STATE_FILE_MAX);
		return -EINVAL;
	}
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success || json_tokener_get_parse_end(tok) < len) {
		/* Trailing whitespace is fine; anything else is not. */
		size_t end = json_tokener_get_parse_end(tok);
		int trailing_ok = root != NULL;
		for (size_t i = end; trailing_ok && i < len; i++)
			trailing_ok = text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r';
		if (!trailing_ok) {
			snprintf(err, errlen, "state file is not valid JSON (at byte %zu)", end);
			json_object_put(root);
			json_tokener_free(tok);
			return -EINVAL;
		}
	}
	json_tokener_free(tok);
	const char *file_boot_id = jv_str(root, "boot_id", NULL);
	recs = jv_typed(root, "records", json_type_array);
	if (!file_boot_id || !recs) {
		snprintf(err, errlen, "state file lacks \"boot_id\" or \"records\"");
		json_object_put(root);
		return -EINVAL;
	}
	if (!boot_id || strcmp(file_boot_id, boot_id) != 0) {
		json_object_put(root); /* another boot: its processes are gone */
		return 0;
	}
	n = json_object_array_length(recs);
	if (n > STATE_RECORDS_MAX) {
		snprintf(err, errlen, "state file has %zu records, more than %d", n, STATE_RECORDS_MAX);
		json_object_put(root);
		return -EINVAL;
	}
	if (n > 0) {
		out = calloc(n, sizeof(*out));
		if (!out) {
			json_object_put(root);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (parse_record(json_object_array_get_idx(recs, i), &out[i]) < 0) {
			snprintf(err, errlen, "state file record %zu is malformed", i);
			free(out);
			json_object_put(root);
			return -EINVAL;
		}
	}
	json_object_put(root);
	*ret = out;
	*ret_n = n;
	return 0;
}

char *state_format(const struct state_record *recs, size_t n, const char *boot_id)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char *text;

	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_add(root, "boot_id", json_object_new_string(boot_id ? boot_id : ""));
	for (size_t i = 0; i < n; i++) {
		const struct state_record *r = &recs[i];
		struct json_object *o = json_object_new_object(), *rec = json_object_new_array();
		char hash[17];

		snprintf(hash, sizeof(hash), "%016" PRIx64, r->hash);
		json_object_object_add(o, "rule", json_object_new_string(r->rule));
		json_object_object_add(o, "hash", json_object_new_string(hash));
		json_object_object_add(o, "pid", json_object_new_int(r->pid));
		json_object_object_add(o, "starttime", json_object_new_int64((int64_t)r->starttime));
		json_object_object_add(o, "fires", json_object_new_int64(r->fires));
		json_object_object_add(o, "last_fire_ns", json_object_new_int64(r->last_fire_ns));
		for (uint32_t k = 0; k < r->n_recent && k < EVAL_MAX_WINDOW_FIRES; k++)
			json_object_array_add(rec, json_object_new_int64(r->recent_ns[k]));
		json_object_object_add(o, "recent_ns", rec);
		json_object_array_add(arr, o);
	}
	json_object_object_add(root, "records", arr);
	if (jsonl_format(root, &text, NULL) < 0)
		text = NULL;
	json_object_put(root);
	return text;
}

int state_boot_id(char *out, size_t outlen)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, out, outlen - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		n--;
	out[n] = '\0';
	return 0;
}

int state_load(const char *path, struct state_record **ret, size_t *ret_n, char *err, size_t errlen)
{
	char boot[64], *buf;
	struct stat st;
	size_t got = 0;
	int fd, r;

	*ret = NULL;
	*ret_n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STATE_FILE_MAX) {
		snprintf(err, errlen, "state file %s is not a regular file of at most %d bytes", path, STATE_FILE_MAX);
		close(fd);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	if (state_boot_id(boot, sizeof(boot)) < 0)
		boot[0] = '\0';
	r = state_parse(buf, got, boot, ret, ret_n, err, errlen);
	free(buf);
	if (r < 0) {
		char inner[256];
		snprintf(inner, sizeof(inner), "%s", err);
		snprintf(err, errlen, "%s: %s", path, inner);
	}
	return r;
}

int state_save(const char *path, const struct state_record *recs, size_t n, char *err, size_t errlen)
{
	char boot[64];
	char *text;
	int r;

	if (state_boot_id(boot, sizeof(boot)) < 0)
		boot[0] = '\0';
	text = state_format(recs, n, boot);
	if (!text)
		return -ENOMEM;
	r = fds_write_path(path, text, strlen(text), 0600, 0);
	free(text);
	if (r == -ENAMETOOLONG) {
		snprintf(err, errlen, "state file path too long: %s", path);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot write state file %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
}
