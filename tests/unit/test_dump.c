/* Unit tests of the dump module's pure parts and checks: file names, the
 * writable-by-target check, the createdump safety walk, and the opening of
 * the store. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/dump.h"

/* The store is opened by the path it is given, with no link on the way, and
 * the directories above it are those of that path normalized: it is not
 * resolved again. */
static void test_open_store(void)
{
	char base[] = "/tmp/dw-store.XXXXXX", store[512], path[600], err[512];
	int fd;

	CHECK(mkdtemp(base) != NULL);
	CHECK(chmod(base, 0700) == 0);
	snprintf(store, sizeof(store), "%s/store", base);
	CHECK(mkdir(store, 0700) == 0);

	fd = dump_open_store(store, err, sizeof(err));
	CHECK_MSG(fd >= 0, "%s", err);
	if (fd >= 0)
		close(fd);
	/* Spelled otherwise: the same directory, the same directories above. */
	snprintf(path, sizeof(path), "%s//./store/", base);
	fd = dump_open_store(path, err, sizeof(err));
	CHECK_MSG(fd >= 0, "%s", err);
	if (fd >= 0)
		close(fd);

	CHECK(dump_open_store("tmp/store", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "must be an absolute path") != NULL);
	snprintf(path, sizeof(path), "%s/store/../store", base);
	CHECK(dump_open_store(path, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "\"..\" component") != NULL);

	/* A link on the way is refused, not followed. */
	snprintf(path, sizeof(path), "%s/link", base);
	CHECK(symlink(store, path) == 0);
	CHECK(dump_open_store(path, err, sizeof(err)) == -ELOOP);
	CHECK(strstr(err, "a symbolic link is on the way") != NULL);

	/* Others can write it, or a directory above it. */
	CHECK(chmod(store, 0770) == 0);
	CHECK(dump_open_store(store, err, sizeof(err)) == -EPERM);
	CHECK(strstr(err, "no one else can write") != NULL);
	CHECK(chmod(store, 0700) == 0 && chmod(base, 0770) == 0);
	snprintf(path, sizeof(path), "%s//store/", base);
	CHECK(dump_open_store(path, err, sizeof(err)) == -EPERM);
	snprintf(path, sizeof(path), "is below %s, which", base);
	CHECK_MSG(strstr(err, path) != NULL, "%s", err);
	CHECK(chmod(base, 0700) == 0);

	/* The dump job takes the store and the name it is given, and nothing
	 * that is not a plain file name. */
	{
		struct dump_request req = {.pid = getpid(), .dir = store, .store_fd = -1, .name = "a.core"};
		struct dump_job *job = NULL;
		CHECK(dump_start(&req, &job, err, sizeof(err)) == -EINVAL && job == NULL);
		req.store_fd = dump_open_store(store, err, sizeof(err));
		req.name = "../a.core";
		CHECK(dump_start(&req, &job, err, sizeof(err)) == -EINVAL && job == NULL);
		if (req.store_fd >= 0)
			close(req.store_fd);
	}

	snprintf(path, sizeof(path), "rm -rf %s", base);
	CHECK(system(path) == 0);
}

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

	/* A process in a container: its short id in the default name, and
	 * {container} {pod} in a template; "" for a process without. */
	dump_file_name_ids(NULL, "MemSpike", 4807, "loh",
	                   "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899",
	                   "9a8b7c6d-1234-4f00-8e1a-0123456789ab", 0, name, sizeof(name));
	CHECK_STR(name, "MemSpike-3f4e5d6c7b8a-4807-loh-19700101T000000.000Z.core");
	dump_file_name_ids("{pod}.{container}.{pid}", "a", 7, "r",
	                   "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa0011223344556677"
	                   "8899",
	                   "9a8b7c6d-1234-4f00-8e1a-0123456789ab", 0, name, sizeof(name));
	CHECK_STR(name, "9a8b7c6d-1234-4f00-8e1a-0123456789ab.3f4e5d6c7b8a.7");
	dump_file_name_ids(NULL, "a", 1, "r", "", NULL, 0, name, sizeof(name));
	CHECK_STR(name, "a-1-r-19700101T000000.000Z.core");
	dump_file_name_template("{name}-{container}{pod}-{pid}", "a", 1, "r", 0, name, sizeof(name));
	CHECK_STR(name, "a--1");

	/* What a dump job accepts as a name: what the functions above make. */
	CHECK(dump_file_name_ok("MemSpike-4807-loh-19700101T000000.000Z.core"));
	CHECK(dump_file_name_ok("_hidden_7"));
	CHECK(!dump_file_name_ok(NULL));
	CHECK(!dump_file_name_ok(""));
	CHECK(!dump_file_name_ok(".a.core.partial"));
	CHECK(!dump_file_name_ok(".."));
	CHECK(!dump_file_name_ok("a/b.core"));
	CHECK(!dump_file_name_ok("/a.core"));
	{
		char longer[300];
		memset(longer, 'a', 256);
		longer[256] = '\0';
		CHECK(!dump_file_name_ok(longer)); /* NAME_MAX bytes fit, one more does not */
		longer[255] = '\0';
		CHECK(dump_file_name_ok(longer));
	}

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

	/* Runtime versions name a directory: nothing else gets through. */
	CHECK(dump_version_ok("10.0.12"));
	CHECK(dump_version_ok("9.0.0-rc.2.24473.5"));
	CHECK(dump_version_ok("10.0.0+abc"));
	CHECK(!dump_version_ok(""));
	CHECK(!dump_version_ok(NULL));
	CHECK(!dump_version_ok("../../../tmp/x"));
	CHECK(!dump_version_ok("10.0.12/../../x"));
	CHECK(!dump_version_ok("10..0"));
	CHECK(!dump_version_ok("v10"));
	CHECK(!dump_version_ok("10.0.1\n2"));
	CHECK(!dump_version_ok("1234567890123456789012345678901234567890123456789012345678901234567890"));

	/* The createdump of a version no host runtime has: refused, saying what
	 * to do. A hostile version string never becomes a path. */
	CHECK(dump_find_createdump("1.2.3", NULL, name, sizeof(name), err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "no createdump of .NET 1.2.3 on this host") != NULL);
	CHECK(strstr(err, "--createdump PATH") != NULL);
	/* Each place is looked in, and named, once, also when DOTNET_ROOT or
	 * the dotnet on PATH is one of the usual places. */
	{
		const char *saved = getenv("DOTNET_ROOT");
		char keep[512] = "";
		if (saved)
			snprintf(keep, sizeof(keep), "%s", saved);
		setenv("DOTNET_ROOT", "/opt/dotnet", 1);
		CHECK(dump_find_createdump("1.2.3", NULL, name, sizeof(name), err, sizeof(err)) == -ENOENT);
		const char *first = strstr(err, "/opt/dotnet");
		CHECK(first != NULL && strstr(first + 1, "/opt/dotnet") == NULL);
		if (saved)
			setenv("DOTNET_ROOT", keep, 1);
		else
			unsetenv("DOTNET_ROOT");
	}
	CHECK(dump_find_createdump("../../../../tmp/x", NULL, name, sizeof(name), err, sizeof(err)) == -EINVAL);
	CHECK(dump_find_createdump("", NULL, name, sizeof(name), err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "did not report its version") != NULL);

	/* --createdump: nothing below /proc, even when it resolves elsewhere;
	 * nothing another user could change. */
	CHECK(dump_find_createdump(NULL, "/proc/1/root/bin/true", name, sizeof(name), err, sizeof(err)) == -EPERM);
	CHECK(strstr(err, "it lies on /proc") != NULL);
	CHECK(dump_find_createdump(NULL, "/proc/self/exe", name, sizeof(name), err, sizeof(err)) == -EPERM);
	CHECK(dump_find_createdump(NULL, "/bin/true", name, sizeof(name), err, sizeof(err)) == 0);
	CHECK(strstr(name, "/true") != NULL);
	{
		char exe[512];
		snprintf(exe, sizeof(exe), "%s/createdump", dir);
		FILE *f = fopen(exe, "w");
		CHECK(f != NULL);
		if (f)
			fclose(f);
		CHECK(chmod(exe, 0755) == 0 && chmod(dir, 0755) == 0);
		CHECK(chown(dir, geteuid(), getegid()) == 0);
		CHECK(dump_find_createdump(NULL, exe, name, sizeof(name), err, sizeof(err)) == 0);
		CHECK(chmod(exe, 0775) == 0);
		CHECK(dump_find_createdump(NULL, exe, name, sizeof(name), err, sizeof(err)) == -EPERM);
		CHECK(strstr(err, "writable by group/others (mode 0775)") != NULL);
		CHECK(chmod(exe, 0755) == 0 && chmod(dir, 0777) == 0);
		CHECK(dump_find_createdump(NULL, exe, name, sizeof(name), err, sizeof(err)) == -EPERM);
		CHECK(chmod(dir, 0755) == 0);
		if (geteuid() == 0) {
			CHECK(chown(exe, 12345, 12345) == 0);
			CHECK(dump_find_createdump(NULL, exe, name, sizeof(name), err, sizeof(err)) == -EPERM);
			CHECK(strstr(err, "is owned by uid 12345") != NULL);
		}
	}

	snprintf(name, sizeof(name), "rm -rf %s", dir);
	CHECK(system(name) == 0);
	test_open_store();
	return check_done();
}
