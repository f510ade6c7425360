/* Unit tests for rulecheck.c: `dumpwatch check` (rulefile_check_paths)
 * across files and directories, with a refused file, a name defined twice,
 * dump directories, and its exit statuses. */
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dumpwatch/rulecheck.h"
#include "dumpwatch/rulefile_io.h"

#define RULES_DIR DW_TEST_DATA "/rules"
#define EXAMPLES_DIR DW_TEST_DATA "/../../examples"

static char *slurp(const char *path, size_t *len)
{
	char err[512], *text = NULL;

	if (rulefile_read(path, &text, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	return text;
}

/* Runs rulefile_check_paths with its output in memory. */
static int run_check_dirs(char *const *paths, size_t n, const char *const *dirs, size_t n_dirs, char *out,
                          size_t outlen, char *err, size_t errlen)
{
	FILE *o = fmemopen(out, outlen, "w"), *e = fmemopen(err, errlen, "w");
	int rc;

	memset(out, 0, outlen);
	memset(err, 0, errlen);
	rc = rulefile_check_paths(paths, n, dirs, n_dirs, o, e);
	fclose(o);
	fclose(e);
	return rc;
}

static int run_check(char *const *paths, size_t n, char *out, size_t outlen, char *err, size_t errlen)
{
	return run_check_dirs(paths, n, NULL, 0, out, outlen, err, errlen);
}

/* `dumpwatch check` reads files as the daemon does, through the trust checks,
 * so it runs on a private copy (0644, in directories of ours under /tmp): the
 * source tree may belong to another user or be group-writable. */
static char copy_top[64], ex_dir[128], rules_dir[128];

static void copy_dir(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *de;

	CHECK(mkdir(to, 0755) == 0);
	CHECK(d != NULL);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char src[1024], dst[1024], *text;
		size_t len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(src, sizeof(src), "%s/%s", from, de->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", to, de->d_name);
		text = slurp(src, &len);
		if (!text)
			continue;
		f = fopen(dst, "w");
		CHECK(f != NULL);
		if (f) {
			CHECK(fwrite(text, 1, len, f) == len);
			CHECK(fchmod(fileno(f), 0644) == 0);
			fclose(f);
		}
		free(text);
	}
	closedir(d);
}

static void copy_setup(void)
{
	snprintf(copy_top, sizeof(copy_top), "/tmp/dw-rulefile-XXXXXX");
	CHECK(mkdtemp(copy_top) != NULL);
	CHECK(chmod(copy_top, 0755) == 0);
	snprintf(ex_dir, sizeof(ex_dir), "%s/examples", copy_top);
	snprintf(rules_dir, sizeof(rules_dir), "%s/rules", copy_top);
	copy_dir(EXAMPLES_DIR, ex_dir);
	copy_dir(RULES_DIR, rules_dir);
}

static void copy_cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", copy_top);
	CHECK(system(cmd) == 0);
}

/* p[i] = dir/name */
static char *in(const char *dir, const char *name)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static void test_check_paths(void)
{
	char out[4096], err[4096], want[1024];
	int rc;

	copy_setup();
	{
		char *p[] = {in(ex_dir, "")};
		rc = run_check(p, 1, out, sizeof(out), err, sizeof(err));
		CHECK_MSG(rc == 0, "rc=%d %s", rc, err);
		/* The only messages: fleet.json's hook programs are not on this
		 * machine, said as warnings that do not fail the file. */
		snprintf(want, sizeof(want),
		         "%s/fleet.json:4: warning: rule orders-loh: hooks.on-fire will not run: hook "
		         "/usr/local/bin/page-oncall: No such file or directory\n"
		         "%s/fleet.json:4: warning: rule orders-loh: hooks.on-dump will not run: hook "
		         "/usr/local/bin/post-incident: No such file or directory\n",
		         ex_dir, ex_dir);
		CHECK_STR(err, want);
		snprintf(want, sizeof(want), "%s/loh-balloon.json: 1 rule OK\n", ex_dir);
		CHECK(strstr(out, want) != NULL);
		snprintf(want, sizeof(want), "%s/gc-trouble.json: 2 rules OK\n", ex_dir);
		CHECK(strstr(out, want) != NULL);
		CHECK(strstr(out, "schema") == NULL);
		/* Sorted by name. */
		CHECK(strstr(out, "cpu-and-threads") < strstr(out, "gc-trouble"));
	}
	{
		char *p[] = {in(rules_dir, "dup-across-a.json"), in(rules_dir, "dup-across-b.json")};
		rc = run_check(p, 2, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 1);
		snprintf(want, sizeof(want), "%s/dup-across-a.json: 1 rule OK\n", rules_dir);
		CHECK_STR(out, want);
		snprintf(want, sizeof(want),
		         "%s/dup-across-b.json:1:11: rule name \"a\" is also defined at %s/dup-across-a.json:3:15\n",
		         rules_dir, rules_dir);
		CHECK_STR(err, want);
	}
	{
		char *p[] = {in(rules_dir, "bad-unknown-key.json"), in(rules_dir, "good-single.json")};
		rc = run_check(p, 2, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 1);
		snprintf(want, sizeof(want), "%s/good-single.json: 1 rule OK\n", rules_dir);
		CHECK_STR(out, want);
		snprintf(want, sizeof(want),
		         "%s/bad-unknown-key.json:4:3: unknown key \"limit\" in rule; did you mean \"limits\"?\n",
		         rules_dir);
		CHECK_STR(err, want);
	}
	{
		char *p[] = {in(rules_dir, "no-such-file.json"), in(rules_dir, "good-single.json")};
		rc = run_check(p, 2, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 2);
		snprintf(want, sizeof(want), "%s/no-such-file.json: No such file or directory\n", rules_dir);
		CHECK_STR(err, want);
		snprintf(want, sizeof(want), "%s/good-single.json: 1 rule OK\n", rules_dir);
		CHECK_STR(out, want);
	}
	{
		/* The data directory has good and bad files: exit 1, and every file is looked at. */
		char *p[] = {rules_dir};
		rc = run_check(p, 1, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 1);
		snprintf(want, sizeof(want), "%s/good-list.json: 3 rules OK\n", rules_dir);
		CHECK(strstr(out, want) != NULL);
		snprintf(want, sizeof(want), "%s/bad-syntax.json:4:1: invalid JSON: unexpected character\n", rules_dir);
		CHECK(strstr(err, want) != NULL);
		snprintf(want, sizeof(want), "%s/bad-types.json:6:13: \"process\" must be an object\n", rules_dir);
		CHECK(strstr(err, want) != NULL);
	}
	{
		/* A file others can write is refused, as the daemon refuses it. */
		char *p[] = {in(rules_dir, "good-list.json")};
		CHECK(chmod(p[0], 0666) == 0);
		rc = run_check(p, 1, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 1);
		CHECK_STR(out, "");
		snprintf(want, sizeof(want),
		         "%s: refused: file %s is writable by group or others (mode 0666): only files and directories "
		         "no one else can change may give dumpwatch orders ('chmod go-w %s')\n",
		         p[0], p[0], p[0]);
		CHECK_STR(err, want);
		CHECK(chmod(p[0], 0644) == 0);
	}
	{
		/* dump.dir inside the allowed directories, or not. */
		const char *ok[] = {"/var/lib"};
		const char *other[] = {"/srv/dumps", "/var/lib/dumpwatch/dumps2"};
		char *p[] = {in(rules_dir, "good-single.json")}; /* dump.dir /var/lib/dumpwatch/dumps at 6:36 */
		rc = run_check_dirs(p, 1, ok, 1, out, sizeof(out), err, sizeof(err));
		CHECK_MSG(rc == 0, "%s", err);
		rc = run_check_dirs(p, 1, other, 2, out, sizeof(out), err, sizeof(err));
		CHECK(rc == 1);
		CHECK_STR(out, "");
		snprintf(want, sizeof(want),
		         "%s:6:36: dump dir \"/var/lib/dumpwatch/dumps\" is not inside an allowed dump directory "
		         "(/srv/dumps, /var/lib/dumpwatch/dumps2): dumps go only below the daemon's --dump-dir and its "
		         "--allow-dump-dir directories\n",
		         p[0]);
		CHECK_STR(err, want);
	}
	copy_cleanup();
}

int main(void)
{
	test_check_paths();
	return check_done();
}
