/* Unit tests of the journal: one whole JSON line per record, "time" and
 * "event" first, appends across reopen, records kept when a write fails, and
 * a record with invalid UTF-8, control characters and NaN still one line of
 * valid JSON. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/journal.h"

static int count_lines(const char *path, char lines[][512], int max)
{
	FILE *f = fopen(path, "r");
	int n = 0;
	if (!f)
		return -1;
	while (n < max && fgets(lines[n], 512, f))
		n++;
	fclose(f);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/dw-journal.XXXXXX", path[256], err[256], lines[8][512];
	struct journal *j;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/j.jsonl", dir);
	CHECK(journal_open(path, &j, err, sizeof(err)) == 0);
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int(42));
	json_object_object_add(o, "path", json_object_new_string("/a/b \"c\"\n"));
	CHECK(journal_write(j, "dump", o) == 0);
	CHECK(journal_pending(j) == 0);
	journal_close(j);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

	/* Reopen appends. */
	CHECK(journal_open(path, &j, err, sizeof(err)) == 0);
	CHECK(journal_write(j, "fire", json_object_new_object()) == 0);
	journal_close(j);
	CHECK(count_lines(path, lines, 8) == 2);
	struct json_object *rec = json_tokener_parse(lines[0]);
	CHECK(rec != NULL);
	if (rec) {
		struct json_object *v;
		CHECK(json_object_object_get_ex(rec, "event", &v) && strcmp(json_object_get_string(v), "dump") == 0);
		CHECK(json_object_object_get_ex(rec, "path", &v) &&
		      strcmp(json_object_get_string(v), "/a/b \"c\"\n") == 0);
		CHECK(json_object_object_get_ex(rec, "time", &v) && strlen(json_object_get_string(v)) == 24);
		json_object_put(rec);
	}
	CHECK(strncmp(lines[1], "{\"time\":\"", 9) == 0);
	CHECK(strstr(lines[1], "\"event\":\"fire\"") != NULL);

	/* What a process chose: invalid UTF-8, a forged line, terminal escapes;
	 * and a number that is not one. */
	snprintf(path, sizeof(path), "%s/hostile.jsonl", dir);
	CHECK(journal_open(path, &j, err, sizeof(err)) == 0);
	o = json_object_new_object();
	json_object_object_add(o, "command_line", json_object_new_string("app \xc3\x28\xff\n<0>x\x1b[2J"));
	json_object_object_add(o, "value", json_object_new_double(NAN));
	json_object_object_add(o, "bad\xffkey", json_object_new_double(-INFINITY));
	CHECK(journal_write(j, "attach", o) == 0);
	journal_close(j);
	CHECK(count_lines(path, lines, 8) == 1);
	CHECK_MSG(strstr(lines[0], "\"command_line\":\"app \\ufffd(\\ufffd\\n<0>x\\u001b[2J\",\"value\":null,"
	                           "\"bad\\ufffdkey\":null}\n") != NULL,
	          "%s", lines[0]);
	struct json_tokener *tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	rec = json_tokener_parse_ex(tok, lines[0], (int)strlen(lines[0]) - 1);
	CHECK(rec != NULL && json_tokener_get_error(tok) == json_tokener_success);
	json_object_put(rec);
	json_tokener_free(tok);

	/* Unopenable path: an error sentence naming it. */
	snprintf(path, sizeof(path), "%s/missing/j.jsonl", dir);
	CHECK(journal_open(path, &j, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "missing/j.jsonl") != NULL);

	/* A journal that cannot be written keeps records pending: /dev/full. */
	CHECK(journal_open("/dev/full", &j, err, sizeof(err)) == 0);
	CHECK(journal_write(j, "fire", json_object_new_object()) == -ENOSPC);
	CHECK(journal_write(j, "dump", json_object_new_object()) == -ENOSPC);
	CHECK(journal_pending(j) == 2);
	journal_close(j);

	/* NULL path records nothing and succeeds. */
	CHECK(journal_open(NULL, &j, err, sizeof(err)) == 0);
	CHECK(journal_write(j, "fire", json_object_new_object()) == 0);
	journal_close(j);

	char tb[40];
	journal_format_time(1795345104519606000LL, tb, sizeof(tb));
	CHECK_STR(tb, "2026-11-22T10:58:24.519Z");

	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK(system(path) == 0);
	return check_done();
}
