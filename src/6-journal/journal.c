/* Append-only JSON-lines journal; see journal.h for the guarantees. */
#include "dumpwatch/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/jsonl.h"

#define JOURNAL_MAX_PENDING 1024

struct journal {
	int fd; /* -1: records nothing */
	char *pending[JOURNAL_MAX_PENDING];
	size_t n_pending;
	size_t dropped; /* records lost because the pending queue was full */
};

void journal_format_time(long long unix_ns, char *buf, size_t len)
{
	time_t s = (time_t)(unix_ns / 1000000000LL);
	struct tm tm;
	char base[32];

	gmtime_r(&s, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03lldZ", base, (unix_ns / 1000000LL) % 1000);
}

int journal_open(const char *path, struct journal **ret, char *err, size_t errlen)
{
	struct journal *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->fd = -1;
	if (path) {
		j->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (j->fd < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot open journal %s: %s", path, strerror(e));
			free(j);
			return -e;
		}
	}
	*ret = j;
	return 0;
}

/* Writes one whole line or nothing visible to a reader that stops at '\n':
 * a short write (disk full mid-line) is rolled back by truncating to the old
 * size. */
static int write_line(struct journal *j, const char *line)
{
	size_t len = strlen(line);
	off_t before = lseek(j->fd, 0, SEEK_END);
	ssize_t n;

	do
		n = write(j->fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len) {
		fdatasync(j->fd);
		return 0;
	}
	int e = n < 0 ? errno : ENOSPC;
	if (n > 0 && before >= 0 && ftruncate(j->fd, before) < 0)
		e = errno;
	return -e;
}

static int flush_pending(struct journal *j)
{
	while (j->n_pending > 0) {
		int r = write_line(j, j->pending[0]);
		if (r < 0)
			return r;
		free(j->pending[0]);
		memmove(j->pending, j->pending + 1, (j->n_pending - 1) * sizeof(j->pending[0]));
		j->n_pending--;
	}
	return 0;
}

int journal_write(struct journal *j, const char *event, struct json_object *obj)
{
	struct json_object *rec;
	struct timespec ts;
	char tbuf[40];
	char *line;
	int r;

	if (!j || j->fd < 0) {
		json_object_put(obj);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	journal_format_time((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, tbuf, sizeof(tbuf));
	/* "time" and "event" first, for readers that grep. */
	rec = json_object_new_object();
	json_object_object_add(rec, "time", json_object_new_string(tbuf));
	json_object_object_add(rec, "event", json_object_new_string(event));
	json_object_object_foreach(obj, key, val) json_object_object_add(rec, key, json_object_get(val));
	json_object_put(obj);
	/* The one writer that gives a single line of valid UTF-8 JSON whatever
	 * the strings hold (names and command lines come from processes). */
	r = jsonl_format(rec, &line, NULL);
	json_object_put(rec);
	if (r < 0)
		return r;

	r = flush_pending(j);
	if (r == 0) {
		r = write_line(j, line);
		if (r == 0) {
			free(line);
			return 0;
		}
	}
	if (j->n_pending < JOURNAL_MAX_PENDING)
		j->pending[j->n_pending++] = line;
	else {
		j->dropped++;
		free(line);
	}
	return r;
}

size_t journal_pending(const struct journal *j)
{
	return j ? j->n_pending : 0;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	if (j->fd >= 0) {
		flush_pending(j);
		close(j->fd);
	}
	for (size_t i = 0; i < j->n_pending; i++)
		free(j->pending[i]);
	free(j);
}
