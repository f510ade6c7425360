/* Unit tests of the dump module's pure parts and checks: file names, the
 * writable-by-target check, and the createdump safety walk. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/dump.h"

int main(void)
{
	char name[256], err[512], dir[] = "/tmp/dw-dump.XXXXXX";

	dump_file_name("MemSpike", 4807, "loh-size-gt-200MB", 1795345104519606000LL, name, sizeof(name));
	CHECK_STR(name, "MemSpike-4807-loh-size-gt-200MB-20261122T105824.519Z.core");
	/* Hostile process names cannot escape the directory or hide the file. */
	dump_file_name("../../etc/x y", 1, ".rule/", 0, name, sizeof(name));
	CHECK_STR(name, "_._.._etc_x_y-1-_rule_-19700101T000000.000Z.core");
	dump_file_name("", 2, "", 0, name, sizeof(name));
	CHECK_STR(name, "_-2-_-19700101T000000.000Z.core");

	/* Rule file templates. */
	dump_file_name_template("{rule}.{pid}.{name}.{time}.dmp", "web api", 12, "loh", 0, name, sizeof(name));
	CHECK_STR(name, "loh.12.web_api.19700101T000000.000Z.dmp");
	dump_file_name_template("", "a", 1, "r", 0, name, sizeof(name));
	CHECK_STR(name, "a-1-r-19700101T000000.000Z.core");
	dump_file_name_template(".hidden/{pid}", "a", 7, "r", 0, name, sizeof(name));
	CHECK_STR(name, "_hidden_7");
	dump_file_name_template("{name}{name}{name}", "abcdefgh", 1, "r", 0, name, 10);
	CHECK_STR(name, "abcdefgha");

	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0700) == 0);
	CHECK(dump_dir_writable_by(dir, getpid(), 0, 0, err, sizeof(err)) == 0);
	/* Owned by root, 0700: not writable by uid 12345. */
	if (geteuid() == 0) {
		CHECK(dump_dir_writable_by(dir, getpid(), 12345, 12345, err, sizeof(err)) == -EACCES);
		CHECK(strstr(err, "not writable by uid 12345") != NULL);
		CHECK(chmod(dir, 0777) == 0);
		CHECK(dump_dir_writable_by(dir, getpid(), 12345, 12345, err, sizeof(err)) == 0);
		CHECK(chown(dir, 12345, 12345) == 0 && chmod(dir, 0700) == 0);
		CHECK(dump_dir_writable_by(dir, getpid(), 12345, 12345, err, sizeof(err)) == 0);
	}
	CHECK(dump_dir_writable_by("/nonexistent/dir", getpid(), 0, 0, err, sizeof(err)) == -ENOENT);
	CHECK(dump_dir_writable_by("/etc/hostname", getpid(), 0, 0, err, sizeof(err)) == -ENOTDIR);

	/* This process is not .NET: no createdump to find. */
	CHECK(dump_find_createdump(getpid(), 0, name, sizeof(name), err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "libcoreclr.so") != NULL);

	snprintf(name, sizeof(name), "rm -rf %s", dir);
	CHECK(system(name) == 0);
	return check_done();
}
