/* Unit tests of the state module: round trip through the file format, records
 * of another boot dropped, malformed files refused, atomic save, and the
 * eval_state carried over. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/state.h"

int main(void)
{
	struct state_record in[2], *out = NULL;
	struct eval_state st, back;
	size_t n = 99;
	char err[256], *text;

	memset(in, 0, sizeof(in));
	snprintf(in[0].rule, sizeof(in[0].rule), "loh");
	in[0].hash = 0xfedcba9876543210ULL; /* above 2^63: must survive as text */
	in[0].pid = 4807;
	in[0].starttime = 123456789ULL;
	in[0].fires = 2;
	in[0].last_fire_ns = 90000000000LL;
	in[0].n_recent = 2;
	in[0].recent_ns[0] = 80000000000LL;
	in[0].recent_ns[1] = 90000000000LL;
	snprintf(in[1].rule, sizeof(in[1].rule), "pause");
	in[1].hash = 1;
	in[1].pid = 1;
	in[1].fires = 1;
	in[1].last_fire_ns = INT64_MIN + 1;

	text = state_format(in, 2, "boot-a");
	CHECK(text != NULL);
	CHECK(state_parse(text, strlen(text), "boot-a", &out, &n, err, sizeof(err)) == 0);
	CHECK(n == 2);
	if (n == 2) {
		CHECK(memcmp(&out[0], &in[0], sizeof(in[0])) == 0);
		CHECK(memcmp(&out[1], &in[1], sizeof(in[1])) == 0);
	}
	free(out);
	/* Another boot: its processes are gone, nothing is restored. */
	CHECK(state_parse(text, strlen(text), "boot-b", &out, &n, err, sizeof(err)) == 0);
	CHECK(n == 0 && out == NULL);
	free(text);

	/* Malformed files are refused with a sentence, never half-read. */
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"boot_id\":\"b\"}",
	    "{\"boot_id\":\"b\",\"records\":[{}]}",
	    "{\"boot_id\":\"b\",\"records\":[{\"rule\":\"x\",\"hash\":\"zz\",\"pid\":1,\"starttime\":1,\"fires\":1,"
	    "\"last_fire_ns\":1,\"recent_ns\":[]}]}",
	    "{\"boot_id\":\"b\",\"records\":[{\"rule\":\"x\",\"hash\":\"0000000000000001\",\"pid\":-1,\"starttime\":1,"
	    "\"fires\":1,\"last_fire_ns\":1,\"recent_ns\":[]}]}",
	    "{\"boot_id\":\"b\",\"records\":[{\"rule\":\"x\",\"hash\":\"0000000000000001\",\"pid\":1,\"starttime\":1,"
	    "\"fires\":1,\"last_fire_ns\":1,\"recent_ns\":[2,1]}]}",
	    "{\"boot_id\":\"b\",\"records\":[]} trailing",
	    /* Beyond int64_t: json-c would read it as INT64_MAX, a last fire
	     * so far ahead that the rule's cooldown would never end. */
	    "{\"boot_id\":\"b\",\"records\":[{\"rule\":\"x\",\"hash\":\"0000000000000001\",\"pid\":1,\"starttime\":1,"
	    "\"fires\":1,\"last_fire_ns\":9223372036854775808,\"recent_ns\":[]}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int r = state_parse(bad[i], strlen(bad[i]), "b", &out, &n, err, sizeof(err));
		CHECK_MSG(r == -EINVAL && err[0] && out == NULL, "bad[%zu] gave %d (%s)", i, r, err);
	}
	/* Every truncation of a good file is refused or parsed, never crashes. */
	text = state_format(in, 2, "b");
	for (size_t len = 0; len < strlen(text); len++) {
		int r = state_parse(text, len, "b", &out, &n, err, sizeof(err));
		CHECK(r == -EINVAL || r == 0);
		free(out);
		out = NULL;
	}
	free(text);

	/* eval_state round trip. */
	eval_init(&st);
	st.fires = 3;
	st.last_fire_ns = 42;
	st.n_recent = 1;
	st.recent_ns[0] = 42;
	st.holding[0] = 1;
	state_from_eval(&in[0], &st);
	state_to_eval(&in[0], &back);
	CHECK(back.fires == 3 && back.last_fire_ns == 42 && back.n_recent == 1 && back.recent_ns[0] == 42);
	CHECK(back.holding[0] == 0); /* conditions start afresh */

	/* Save and load through the file system, with this boot's id. */
	char dir[] = "/tmp/dw-state.XXXXXX", path[256], boot[64];
	struct stat sb;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	CHECK(state_boot_id(boot, sizeof(boot)) == 0 && strlen(boot) == 36);
	CHECK(state_load(path, &out, &n, err, sizeof(err)) == 0 && n == 0); /* missing: empty */
	CHECK(state_save(path, in, 2, err, sizeof(err)) == 0);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	DIR *d = opendir(dir);
	int entries = 0;
	for (struct dirent *de; d && (de = readdir(d)) != NULL;)
		entries += de->d_name[0] != '.' || strncmp(de->d_name, ".state.json.tmp", 15) == 0;
	if (d)
		closedir(d);
	CHECK(entries == 1); /* state.json alone: no temporary left */
	CHECK(state_load(path, &out, &n, err, sizeof(err)) == 0 && n == 2);
	if (n == 2)
		CHECK(out[0].fires == 3 && out[1].pid == 1);
	free(out);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("{not json", f);
		fclose(f);
	}
	CHECK(state_load(path, &out, &n, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, path) != NULL);
	unlink(path);
	rmdir(dir);
	return check_done();
}
