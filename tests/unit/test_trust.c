/* Unit tests for trust.c: the decision for one component (owners, modes,
 * sticky directories, read-only mounts, links) with its exact sentences; path
 * normalization and containment on component boundaries; and the walk over a
 * real tree under /tmp: plain files, group- or world-writable ones and
 * directories, a sticky directory, relative, absolute, chained and ".." links,
 * a Kubernetes ConfigMap layout, dangling links, loops, special files, and
 * (as root) files and links of another user. */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/trust.h"

#define OTHER_UID 65534 /* nobody */

static void test_judge(void)
{
	char why[512];

	CHECK(trust_judge("/r/a.json", S_IFREG | 0644, 0, 0, 0, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r/a.json", S_IFREG | 0600, 1000, 1000, 0, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r/a.json", S_IFREG | 0664, 0, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK_STR(why, "file /r/a.json is writable by group or others (mode 0664): only files and directories no "
	               "one else can change may give dumpwatch orders ('chmod go-w /r/a.json')");
	CHECK(trust_judge("/r/a.json", S_IFREG | 0644, 1000, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK_STR(why, "file /r/a.json is owned by uid 1000, not by root, whose files, links and directories alone "
	               "may give dumpwatch orders ('chown root /r/a.json')");
	CHECK(trust_judge("/r/a.json", S_IFREG | 0644, 1000, 999, 0, why, sizeof(why)) == -EPERM);
	CHECK(strstr(why, "not by root or uid 999 (dumpwatch's user)") != NULL);
	/* The owner counts even on a read-only mount; the mode does not. */
	CHECK(trust_judge("/r/a.json", S_IFREG | 0666, 0, 0, 1, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r/a.json", S_IFREG | 0644, 1000, 0, 1, why, sizeof(why)) == -EPERM);

	CHECK(trust_judge("/tmp", S_IFDIR | 01777, 0, 0, 0, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r", S_IFDIR | 0777, 0, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK_STR(why, "directory /r is writable by group or others (mode 0777): only files and directories no one "
	               "else can change may give dumpwatch orders ('chmod go-w /r')");
	CHECK(trust_judge("/r", S_IFDIR | 0775, 0, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK(trust_judge("/r", S_IFDIR | 0777, 0, 0, 1, why, sizeof(why)) == 0); /* a ConfigMap volume */
	CHECK(trust_judge("/r", S_IFDIR | 01777, 1000, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK(strstr(why, "directory /r is owned by uid 1000") != NULL);

	CHECK(trust_judge("/r/l", S_IFLNK | 0777, 0, 0, 0, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r/l", S_IFLNK | 0777, 1000, 0, 0, why, sizeof(why)) == -EPERM);
	CHECK_STR(why, "symbolic link /r/l is owned by uid 1000, not by root, whose files, links and directories "
	               "alone may give dumpwatch orders ('chown -h root /r/l')");
	CHECK(trust_judge("/r/p", S_IFIFO | 0666, 0, 0, 0, why, sizeof(why)) == 0);
	CHECK(trust_judge("/r/p", S_IFIFO | 0600, 1000, 0, 0, why, sizeof(why)) == -EPERM);
}

static void test_paths(void)
{
	static const struct {
		const char *in, *out;
		int r;
	} norm[] = {
	    {"/", "/", 0},
	    {"//", "/", 0},
	    {"/var/lib/dumps", "/var/lib/dumps", 0},
	    {"//var//lib/./dumps/", "/var/lib/dumps", 0},
	    {"/var/lib/dumps/.", "/var/lib/dumps", 0},
	    {"/a/...", "/a/...", 0},
	    {"/a/..b/c..", "/a/..b/c..", 0},
	    {"/a/../etc/cron.d", NULL, -EINVAL},
	    {"/a/..", NULL, -EINVAL},
	    {"/..", NULL, -EINVAL},
	    {"dumps", NULL, -EINVAL},
	    {"", NULL, -EINVAL},
	};
	char out[64];

	for (size_t i = 0; i < sizeof(norm) / sizeof(norm[0]); i++) {
		int r = trust_path_normalize(norm[i].in, out, sizeof(out));
		CHECK_MSG(r == norm[i].r, "\"%s\": %d", norm[i].in, r);
		if (r == 0 && norm[i].out)
			CHECK_STR(out, norm[i].out);
	}
	CHECK(trust_path_normalize("/0123456789/0123456789/0123456789/0123456789/0123456789/0123456789", out,
	                           sizeof(out)) == -ENAMETOOLONG);
	CHECK(trust_path_normalize("/ab", out, 4) == 0 && strcmp(out, "/ab") == 0);
	CHECK(trust_path_normalize("/abc", out, 4) == -ENAMETOOLONG);

	CHECK(trust_path_within("/var/dumps", "/var/dumps"));
	CHECK(trust_path_within("/var/dumps/x", "/var/dumps"));
	CHECK(trust_path_within("/var/dumps/x/y", "/var/dumps"));
	CHECK(!trust_path_within("/var/dumps2", "/var/dumps"));
	CHECK(!trust_path_within("/var/dump", "/var/dumps"));
	CHECK(!trust_path_within("/var", "/var/dumps"));
	CHECK(!trust_path_within("/etc/cron.d", "/var/dumps"));
	CHECK(trust_path_within("/etc/cron.d", "/"));
	CHECK(trust_path_within("/", "/"));
}

/* ---- the walk over a real tree --------------------------------------- */

static char top[64];

static void at(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", top, rel);
}

static void mkdir_at(const char *rel, mode_t mode)
{
	char p[256];

	at(rel, p, sizeof(p));
	CHECK_MSG(mkdir(p, mode) == 0 && chmod(p, mode) == 0, "%s: %s", p, strerror(errno));
}

static void file_at(const char *rel, mode_t mode, const char *text)
{
	char p[256];
	int fd;

	at(rel, p, sizeof(p));
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK_MSG(fd >= 0, "%s: %s", p, strerror(errno));
	if (fd < 0)
		return;
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
}

static void link_at(const char *rel, const char *target)
{
	char p[256];

	at(rel, p, sizeof(p));
	CHECK_MSG(symlink(target, p) == 0, "%s: %s", p, strerror(errno));
}

/* trust_open on rel (below top): the error, or 0 after reading "ok" from it. */
static int open_at(const char *rel, uid_t self, char *why, size_t whylen)
{
	char p[256], buf[8] = "";
	int fd;

	at(rel, p, sizeof(p));
	why[0] = '\0';
	fd = trust_open(p, self, why, whylen);
	if (fd < 0)
		return fd;
	CHECK(read(fd, buf, sizeof(buf) - 1) == 2 && strcmp(buf, "ok") == 0);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
	return 0;
}

static void rm_top(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	CHECK(system(cmd) == 0);
}

static void test_walk(void)
{
	uid_t me = geteuid();
	char why[1024], p[256], want[512];

	snprintf(top, sizeof(top), "/tmp/dw-trust-XXXXXX");
	CHECK(mkdtemp(top) != NULL);
	CHECK(chmod(top, 0755) == 0);

	file_at("f.json", 0644, "ok");
	file_at("gw.json", 0664, "ok");
	mkdir_at("open", 0777);
	file_at("open/f.json", 0644, "ok");
	mkdir_at("sticky", 01777);
	file_at("sticky/f.json", 0644, "ok");
	mkdir_at("sub", 0755);
	link_at("rel.json", "f.json");
	at("f.json", p, sizeof(p));
	link_at("abs.json", p);
	link_at("chain.json", "rel.json");
	link_at("sub/up.json", "../f.json");
	link_at("sub/dotdot.json", "../open/../f.json");
	link_at("via-open.json", "open/f.json");
	link_at("via-gw.json", "gw.json");
	link_at("dangling.json", "nope.json");
	link_at("loop1.json", "loop2.json");
	link_at("loop2.json", "loop1.json");
	link_at("empty-dir.json", "sub");
	mkdir_at("dir.json", 0755);
	at("fifo.json", p, sizeof(p));
	CHECK(mkfifo(p, 0644) == 0);
	/* A Kubernetes ConfigMap volume: the user-visible name is a link into
	 * ..data, itself a link to the timestamped directory of the version. */
	mkdir_at("cm", 0755);
	mkdir_at("cm/..2026_11_23_10_00_00.123", 0755);
	file_at("cm/..2026_11_23_10_00_00.123/x.json", 0644, "ok");
	link_at("cm/..data", "..2026_11_23_10_00_00.123");
	link_at("cm/x.json", "..data/x.json");

	CHECK(open_at("f.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("rel.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("abs.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("chain.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("sub/up.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("sticky/f.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("cm/x.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("sub/../f.json", me, why, sizeof(why)) == 0);
	CHECK(open_at("./sub//./up.json", me, why, sizeof(why)) == 0);

	CHECK(open_at("gw.json", me, why, sizeof(why)) == -EPERM);
	at("gw.json", p, sizeof(p));
	snprintf(want, sizeof(want), "file %s is writable by group or others (mode 0664)", p);
	CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s", why);
	CHECK(open_at("via-gw.json", me, why, sizeof(why)) == -EPERM);
	CHECK(open_at("open/f.json", me, why, sizeof(why)) == -EPERM);
	at("open", p, sizeof(p));
	snprintf(want, sizeof(want), "directory %s is writable by group or others (mode 0777)", p);
	CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s", why);
	CHECK(open_at("via-open.json", me, why, sizeof(why)) == -EPERM);
	CHECK(strncmp(why, want, strlen(want)) == 0);
	/* ".." in a link's target passes through the directory it names. */
	CHECK(open_at("sub/dotdot.json", me, why, sizeof(why)) == -EPERM);
	CHECK(strncmp(why, want, strlen(want)) == 0);

	CHECK(open_at("dangling.json", me, why, sizeof(why)) == -ENOENT);
	at("nope.json", p, sizeof(p));
	snprintf(want, sizeof(want), "%s does not exist", p);
	CHECK_STR(why, want);
	CHECK(open_at("missing.json", me, why, sizeof(why)) == -ENOENT);
	CHECK(open_at("loop1.json", me, why, sizeof(why)) == -ELOOP);
	CHECK_STR(why, "more than 40 symbolic links on the way");
	CHECK(open_at("dir.json", me, why, sizeof(why)) == -EISDIR);
	CHECK_STR(why, "not a regular file");
	CHECK(open_at("empty-dir.json", me, why, sizeof(why)) == -EISDIR);
	CHECK(open_at("fifo.json", me, why, sizeof(why)) == -EINVAL);
	CHECK_STR(why, "not a regular file");
	CHECK(open_at("f.json/x", me, why, sizeof(why)) == -ENOTDIR);
	CHECK(trust_open("relative/f.json", me, why, sizeof(why)) == -EINVAL);

	/* The ConfigMap updated: a new version, ..data swapped by rename. */
	mkdir_at("cm/..2026_11_23_11_00_00.456", 0755);
	file_at("cm/..2026_11_23_11_00_00.456/x.json", 0644, "ok");
	link_at("cm/..data_tmp", "..2026_11_23_11_00_00.456");
	{
		char from[256], to[256];
		at("cm/..data_tmp", from, sizeof(from));
		at("cm/..data", to, sizeof(to));
		CHECK(rename(from, to) == 0);
	}
	CHECK(open_at("cm/x.json", me, why, sizeof(why)) == 0);

	if (me == 0) {
		/* Another user's file, link, and directory above a file. */
		file_at("theirs.json", 0644, "ok");
		at("theirs.json", p, sizeof(p));
		CHECK(chown(p, OTHER_UID, OTHER_UID) == 0);
		CHECK(open_at("theirs.json", 0, why, sizeof(why)) == -EPERM);
		snprintf(want, sizeof(want), "file %s is owned by uid %d, not by root", p, OTHER_UID);
		CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s", why);
		/* ... trusted when it is the daemon's own user. */
		CHECK(open_at("theirs.json", OTHER_UID, why, sizeof(why)) == 0);

		link_at("their-link.json", "f.json");
		at("their-link.json", p, sizeof(p));
		CHECK(lchown(p, OTHER_UID, OTHER_UID) == 0);
		CHECK(open_at("their-link.json", 0, why, sizeof(why)) == -EPERM);
		snprintf(want, sizeof(want), "symbolic link %s is owned by uid %d", p, OTHER_UID);
		CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s", why);

		mkdir_at("their-dir", 0755);
		file_at("their-dir/f.json", 0644, "ok");
		at("their-dir", p, sizeof(p));
		CHECK(chown(p, OTHER_UID, OTHER_UID) == 0);
		CHECK(open_at("their-dir/f.json", 0, why, sizeof(why)) == -EPERM);
		snprintf(want, sizeof(want), "directory %s is owned by uid %d", p, OTHER_UID);
		CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s", why);
		/* Their file in root's sticky directory is still theirs. */
		file_at("sticky/theirs.json", 0644, "ok");
		at("sticky/theirs.json", p, sizeof(p));
		CHECK(chown(p, OTHER_UID, OTHER_UID) == 0);
		CHECK(open_at("sticky/theirs.json", 0, why, sizeof(why)) == -EPERM);
	} else {
		printf("(not root: another user's files are not tested)\n");
	}
	rm_top();
}

/* Helper programs: found by name, never by a path or the environment. */
static void test_helper(void)
{
	char out[PATH_MAX], err[PATH_MAX * 2];

	CHECK(trust_helper_path("../bin/sh", out, sizeof(out), err, sizeof(err)) == -EINVAL);
	CHECK(trust_helper_path("dumpwatch-no-such-helper", out, sizeof(out), err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "dumpwatch-no-such-helper not found in ") != NULL);
}

int main(void)
{
	test_helper();
	test_judge();
	test_paths();
	test_walk();
	return check_done();
}
