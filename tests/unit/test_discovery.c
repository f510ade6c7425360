/* Unit tests of process discovery: socket-name matching, /proc text parsing,
 * the socket directory scan (real AF_UNIX sockets in a temporary directory),
 * process naming, JSON and terminal escaping, and discovery_find on a child
 * process (`sleep`) given a fake diagnostics socket. No .NET needed. */
#include "dumpwatch/discovery.h"

#include "../../src/2-discover/discovery_shared.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[64];

static void test_socket_names(void)
{
	unsigned long long key = 0;

	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socket", 12, &key) == 1 && key == 345);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socket", 12, NULL) == 1);
	CHECK(dn_socket_name_match("dotnet-diagnostic-123-345-socket", 12, &key) == 0); /* pid 12 is not 123 */
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socket", 123, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socket", 1, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-012-345-socket", 12, &key) == 1); /* numerically 12 */
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-sock", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socket.bak", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345-socketx", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-345", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-abc-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-34a-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-+34-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12--socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12x345-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12_345-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-3-4-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic--12-345-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostics-12-345-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("xdotnet-diagnostic-12-345-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-12-99999999999999999999999-socket", 12, &key) == 0);
	CHECK(dn_socket_name_match("dotnet-diagnostic-0-1-socket", 0, &key) == 0);
	CHECK(dn_socket_name_match(NULL, 12, &key) == 0);
}

static void test_stat(void)
{
	/* 20 fields after ")": state (3) .. starttime (22). */
	static const char tail[] =
	    " S 1 5146 2597 0 -1 4194304 2881 35764 28 6 15 4 55 173 20 0 8 0 89134 53862 28977\n";
	char buf[512], comm[64];
	unsigned long long st = 0;

	snprintf(buf, sizeof(buf), "5152 (MemSpike)%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == 0);
	CHECK(st == 89134);
	CHECK_STR(comm, "MemSpike");

	/* A comm that imitates the end of the comm field. */
	snprintf(buf, sizeof(buf), "77 (a) (b c) S 1 2)%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == 0);
	CHECK(st == 89134);
	CHECK_STR(comm, "a) (b c) S 1 2");

	snprintf(buf, sizeof(buf), "77 ( x ) ) %s", tail + 1);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == 0 && st == 89134);
	CHECK_STR(comm, " x ) ");

	/* comm cut to the buffer. */
	snprintf(buf, sizeof(buf), "5152 (MemSpike)%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, 4, &st) == 0);
	CHECK_STR(comm, "Mem");

	/* Too few fields, no parentheses, a non-number. */
	snprintf(buf, sizeof(buf), "5152 (MemSpike) S 1 5146 2597 0 -1 4194304 2881 35764 28 6 15 4 55 173 20 0 8 0");
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == -EINVAL);
	snprintf(buf, sizeof(buf), "5152 MemSpike%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == -EINVAL);
	snprintf(buf, sizeof(buf), "5152 )MemSpike(%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == -EINVAL);
	snprintf(buf, sizeof(buf), "5152 (M) S 1 5146 2597 0 -1 4194304 2881 35764 28 6 15 4 55 173 20 0 8 0 x9 1\n");
	CHECK(dn_parse_stat(buf, strlen(buf), comm, sizeof(comm), &st) == -EINVAL);
	/* The length is honoured: the same text cut before starttime. */
	snprintf(buf, sizeof(buf), "5152 (MemSpike)%s", tail);
	CHECK(dn_parse_stat(buf, strlen(buf) - 20, comm, sizeof(comm), &st) == -EINVAL);
}

static void test_status(void)
{
	static const char host[] = "Name:\tMemSpike\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t6578\nNgid:\t0\n"
	                           "Pid:\t6578\nPPid:\t6573\nTracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\n"
	                           "Gid:\t100\t101\t102\t103\nFDSize:\t256\nGroups:\t\nNStgid:\t6578\t6\n"
	                           "NSpid:\t6578\t6\nNSpgid:\t6573\t1\n";
	static const char nested[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t100\t50\t3\n";
	static const char old[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
	static const char nouid[] = "Gid:\t0\t0\t0\t0\nNSpid:\t5\n";
	static const char bad[] = "Uid:\tx\nGid:\t0\n";
	uid_t uid = 0;
	gid_t gid = 0;
	pid_t ns = 0;

	CHECK(dn_parse_status(host, strlen(host), 6578, &uid, &gid, &ns) == 0);
	CHECK(uid == 1000 && gid == 100 && ns == 6);
	CHECK(dn_parse_status(nested, strlen(nested), 100, &uid, &gid, &ns) == 0 && ns == 3 && uid == 0);
	CHECK(dn_parse_status(old, strlen(old), 42, &uid, &gid, &ns) == 0 && ns == 42);
	CHECK(dn_parse_status(nouid, strlen(nouid), 5, &uid, &gid, &ns) == -EINVAL);
	CHECK(dn_parse_status(bad, strlen(bad), 5, &uid, &gid, &ns) == -EINVAL);
	/* "NStgid:" must not be taken for "NSpid:", nor "Tgid:" for "Gid:". */
	{
		static const char tricky[] =
		    "Tgid:\t9\nUid:\t1\t1\t1\t1\nGid:\t2\t2\t2\t2\nNStgid:\t9\t8\nNSpid:\t9\t7\n";

		CHECK(dn_parse_status(tricky, strlen(tricky), 9, &uid, &gid, &ns) == 0 && gid == 2 && ns == 7);
	}
}

static void test_environ(void)
{
	static const char env[] = "A=1\0TMPDIRX=no\0XTMPDIR=no\0TMPDIR=/var/tmp/x\0B=2";
	static const char last[] = "A=1\0TMPDIR=/last"; /* no final NUL */
	static const char empty[] = "TMPDIR=\0";
	char out[32];

	CHECK(dn_environ_get(env, sizeof(env) - 1, "TMPDIR", out, sizeof(out)) == 0);
	CHECK_STR(out, "/var/tmp/x");
	CHECK(dn_environ_get(last, sizeof(last) - 1, "TMPDIR", out, sizeof(out)) == 0);
	CHECK_STR(out, "/last");
	CHECK(dn_environ_get(empty, sizeof(empty) - 1, "TMPDIR", out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	CHECK(dn_environ_get(env, sizeof(env) - 1, "HOME", out, sizeof(out)) == -ENOENT);
	CHECK(dn_environ_get(env, sizeof(env) - 1, "TMPDIR", out, 5) == -ENAMETOOLONG);
	CHECK(dn_environ_get("", 0, "TMPDIR", out, sizeof(out)) == -ENOENT);
}

/* Creates a real unix socket file at dir/name with the given mtime. */
static void make_socket(const char *dir, const char *name, time_t mtime)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	CHECK(snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) < (int)sizeof(sa.sun_path));
	CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(s);
	CHECK(utimensat(AT_FDCWD, sa.sun_path, ts, AT_SYMLINK_NOFOLLOW) == 0);
}

static void make_file(const char *dir, const char *name, time_t mtime)
{
	char p[256];
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK(utimensat(AT_FDCWD, p, ts, 0) == 0);
}

static void remove_all(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

static void test_dir_scan(void)
{
	char dir[128], out[128], p[256];
	time_t t0 = 1700000000;

	snprintf(dir, sizeof(dir), "%s/scan", tmpdir);
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(dn_find_socket_in_dir(dir, 12, 0, getuid(), NULL, out, sizeof(out)) == -ENOENT);

	make_socket(dir, "dotnet-diagnostic-12-100-socket", t0);
	make_socket(dir, "dotnet-diagnostic-12-200-socket", t0 + 10);
	make_socket(dir, "dotnet-diagnostic-123-999-socket", t0 + 100); /* another pid */
	make_file(dir, "dotnet-diagnostic-12-300-socket", t0 + 100);    /* not a socket */
	snprintf(p, sizeof(p), "%s/dotnet-diagnostic-12-100-socket", dir);
	{
		char l[256];
		struct timespec ts[2] = {{t0 + 100, 0}, {t0 + 100, 0}};

		snprintf(l, sizeof(l), "%s/dotnet-diagnostic-12-400-socket", dir);
		CHECK(symlink(p, l) == 0); /* a symlink to a socket is not followed */
		CHECK(utimensat(AT_FDCWD, l, ts, AT_SYMLINK_NOFOLLOW) == 0);
	}
	make_socket(dir, "dotnet-diagnostic-12-500-socket.old", t0 + 100);

	/* Newest real socket of pid 12. */
	CHECK(dn_find_socket_in_dir(dir, 12, 0, getuid(), NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-12-200-socket");
	/* The socket whose key is the process's start time wins even when older. */
	CHECK(dn_find_socket_in_dir(dir, 12, 100, getuid(), NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-12-100-socket");
	/* A start time matching nothing: newest again, unless the sockets were
	 * made before the process started (t0 is 2023, before this boot):
	 * stale ones of an earlier process with the same pid. */
	CHECK(dn_find_socket_in_dir(dir, 12, 777, getuid(), NULL, out, sizeof(out)) == -ENOENT);
	{
		char fresh[256];
		snprintf(fresh, sizeof(fresh), "%s/dotnet-diagnostic-12-600-socket", dir);
		make_socket(dir, "dotnet-diagnostic-12-600-socket", time(NULL));
		CHECK(dn_find_socket_in_dir(dir, 12, 777, getuid(), NULL, out, sizeof(out)) == 0);
		CHECK_STR(out, "dotnet-diagnostic-12-600-socket");
		unlink(fresh);
	}
	CHECK(dn_find_socket_in_dir(dir, 123, 0, getuid(), NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-123-999-socket");
	CHECK(dn_find_socket_in_dir(dir, 1, 0, getuid(), NULL, out, sizeof(out)) == -ENOENT);
	CHECK(dn_find_socket_in_dir(dir, 12, 0, getuid(), NULL, out, 10) == -ENAMETOOLONG);

	/* Same mtime: the later start (larger key) wins. */
	make_socket(dir, "dotnet-diagnostic-7-5-socket", t0);
	make_socket(dir, "dotnet-diagnostic-7-6-socket", t0);
	make_socket(dir, "dotnet-diagnostic-7-4-socket", t0);
	CHECK(dn_find_socket_in_dir(dir, 7, 0, getuid(), NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-7-6-socket");

	snprintf(p, sizeof(p), "%s/missing", tmpdir);
	CHECK(dn_find_socket_in_dir(p, 12, 0, getuid(), NULL, out, sizeof(out)) == -ENOENT);
	make_file(tmpdir, "plainfile", t0);
	snprintf(p, sizeof(p), "%s/plainfile", tmpdir);
	CHECK(dn_find_socket_in_dir(p, 12, 0, getuid(), NULL, out, sizeof(out)) == -ENOTDIR);
	unlink(p);
	remove_all(dir);
}

/* Who owns a candidate, what was refused before, and what is looked at. */
static void test_dir_candidates(void)
{
	char dir[128], out[128], p[256];
	struct dn_find_opts o = {0};
	struct dn_stats before, after;
	struct stat st;
	time_t now = time(NULL);

	snprintf(dir, sizeof(dir), "%s/cand", tmpdir);
	CHECK(mkdir(dir, 0700) == 0);

	/* The runtime's own name is found without listing the directory. */
	make_socket(dir, "dotnet-diagnostic-40-900-socket", now);
	make_socket(dir, "dotnet-diagnostic-40-901-socket", now + 5);
	discovery_get_stats(&before);
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-40-900-socket");
	discovery_get_stats(&after);
	CHECK(after.listings == before.listings);
	CHECK(after.lookups == before.lookups + 1);

	/* A socket found served by someone else is skipped by its identity;
	 * the newest other one is taken, or none with exact_only. */
	snprintf(p, sizeof(p), "%s/dotnet-diagnostic-40-900-socket", dir);
	CHECK(lstat(p, &st) == 0);
	struct dn_sock_id bad = {st.st_dev, st.st_ino};
	o.skip = &bad;
	o.n_skip = 1;
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-40-901-socket");
	o.exact_only = 1;
	discovery_get_stats(&before);
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == -ENOENT);
	discovery_get_stats(&after);
	CHECK(after.listings == before.listings);
	/* ... but a hint (a name just seen created) is looked at. */
	const char *hint[2] = {"dotnet-diagnostic-40-901-socket", NULL};
	o.hints = hint;
	o.n_hints = 1;
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-40-901-socket");
	hint[0] = "dotnet-diagnostic-41-901-socket"; /* another pid's: ignored */
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == -ENOENT);
	hint[0] = "dotnet-diagnostic-40-0901-socket"; /* not as a runtime writes it */
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == -ENOENT);
	/* Of several hints, the newest socket. */
	make_socket(dir, "dotnet-diagnostic-40-902-socket", now + 9);
	hint[0] = "dotnet-diagnostic-40-901-socket";
	hint[1] = "dotnet-diagnostic-40-902-socket";
	o.n_hints = 2;
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-40-902-socket");
	hint[1] = "dotnet-diagnostic-40-903-socket"; /* gone */
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == 0);
	CHECK_STR(out, "dotnet-diagnostic-40-901-socket");
	snprintf(p, sizeof(p), "%s/dotnet-diagnostic-40-902-socket", dir);
	unlink(p);
	hint[0] = "dotnet-diagnostic-40-0901-socket";
	o.n_hints = 1;
	CHECK(dn_find_socket_in_dir(dir, 40, 900, getuid(), &o, out, sizeof(out)) == -ENOENT);
	memset(&o, 0, sizeof(o));

	/* Names with leading zeros are not a runtime's. */
	make_socket(dir, "dotnet-diagnostic-42-0077-socket", now);
	CHECK(dn_find_socket_in_dir(dir, 42, 0, getuid(), NULL, out, sizeof(out)) == -ENOENT);

	/* A socket of another uid is never a candidate, and is reported. */
	if (geteuid() == 0) {
		make_socket(dir, "dotnet-diagnostic-43-500-socket", now);
		make_socket(dir, "dotnet-diagnostic-43-501-socket", now + 10);
		snprintf(p, sizeof(p), "%s/dotnet-diagnostic-43-500-socket", dir);
		CHECK(lchown(p, 65534, 65534) == 0);
		snprintf(p, sizeof(p), "%s/dotnet-diagnostic-43-501-socket", dir);
		CHECK(lchown(p, 65534, 65534) == 0);
		CHECK(dn_find_socket_in_dir(dir, 43, 500, getuid(), &o, out, sizeof(out)) == -ENOENT);
		snprintf(p, sizeof(p), "%s/dotnet-diagnostic-43-500-socket", dir);
		CHECK_STR(o.foreign, p);
		CHECK(o.foreign_uid == 65534);
		/* The owner's own lookup takes it. */
		CHECK(dn_find_socket_in_dir(dir, 43, 500, 65534, NULL, out, sizeof(out)) == 0);
		CHECK_STR(out, "dotnet-diagnostic-43-500-socket");
		/* A good socket beside a planted newer one wins. */
		make_socket(dir, "dotnet-diagnostic-43-400-socket", now);
		CHECK(dn_find_socket_in_dir(dir, 43, 500, getuid(), &o, out, sizeof(out)) == 0);
		CHECK_STR(out, "dotnet-diagnostic-43-400-socket");

		struct dn_target t = {.pid = 43, .uid = 0};
		char line[512];
		discovery_describe_foreign(&t, p, 65534, line, sizeof(line));
		CHECK_MSG(strstr(line, "ignoring ") == line && strstr(line, "belongs to uid 65534, not to uid 0 of "
		                                                            "process 43 (planted by another user?)"),
		          "%s", line);
	}

	/* Many names in the directory: a lookup of the runtime's own name
	 * costs one stat whatever is there. */
	for (int i = 0; i < 2000; i++) {
		char n[64];
		snprintf(n, sizeof(n), "dotnet-diagnostic-%d-%d-socket", 1000 + i, i);
		make_socket(dir, n, now);
	}
	discovery_get_stats(&before);
	CHECK(dn_find_socket_in_dir(dir, 40, 901, getuid(), NULL, out, sizeof(out)) == 0);
	discovery_get_stats(&after);
	CHECK(after.lookups == before.lookups + 1 && after.listings == before.listings);
	/* A pid with no socket of its own: one listing, and only that pid's
	 * names are stat'ed. */
	CHECK(dn_find_socket_in_dir(dir, 44, 9, getuid(), NULL, out, sizeof(out)) == -ENOENT);
	discovery_get_stats(&before);
	CHECK(before.listings == after.listings + 1);
	CHECK(before.lookups == after.lookups + 1);
	CHECK(before.listed_names - after.listed_names >= 2000);
	remove_all(dir);
}

static void test_names(void)
{
	static const char dotnet_cmd[] = "dotnet\0exec\0--runtimeconfig\0x.json\0/srv/web/Web.App.dll\0other.dll";
	static const char no_dll[] = "dotnet\0--info";
	char out[64];

	dn_process_name("MemSpike", "MemSpike", NULL, 0, "MemSpike", out, sizeof(out));
	CHECK_STR(out, "MemSpike");
	dn_process_name("/app/Foo.dll", "dotnet", dotnet_cmd, sizeof(dotnet_cmd) - 1, "dotnet", out, sizeof(out));
	CHECK_STR(out, "Foo");
	dn_process_name("Bar.EXE", "x", NULL, 0, "x", out, sizeof(out));
	CHECK_STR(out, "Bar");
	dn_process_name("", "dotnet", dotnet_cmd, sizeof(dotnet_cmd) - 1, "dotnet", out, sizeof(out));
	CHECK_STR(out, "Web.App");
	dn_process_name(NULL, "dotnet", dotnet_cmd, sizeof(dotnet_cmd), "dotnet", out, sizeof(out));
	CHECK_STR(out, "Web.App");
	dn_process_name(NULL, "dotnet", no_dll, sizeof(no_dll), "dotnet", out, sizeof(out));
	CHECK_STR(out, "dotnet");
	/* argv[0] itself is not taken for the app even when it ends in .dll. */
	{
		static const char odd[] = "/x/dotnet.dll\0app.dll";

		dn_process_name(NULL, "dotnet", odd, sizeof(odd), "dotnet", out, sizeof(out));
		CHECK_STR(out, "app");
	}
	dn_process_name(NULL, "myservice", NULL, 0, "myserv", out, sizeof(out));
	CHECK_STR(out, "myservice");
	dn_process_name(NULL, "", NULL, 0, "worker", out, sizeof(out));
	CHECK_STR(out, "worker");
	dn_process_name(NULL, NULL, NULL, 0, NULL, out, sizeof(out));
	CHECK_STR(out, "?");
	dn_process_name(".dll", "x", NULL, 0, "x", out, sizeof(out));
	CHECK_STR(out, ".dll");
	dn_process_name("AVeryLongAssemblyName", "x", NULL, 0, "x", out, 6);
	CHECK_STR(out, "AVery");
}

static void test_truncate(void)
{
	char s[64];

	strcpy(s, "hello world");
	dn_truncate(s, 8);
	CHECK_STR(s, "hello...");
	strcpy(s, "hello");
	dn_truncate(s, 5);
	CHECK_STR(s, "hello");
	strcpy(s, "hello");
	dn_truncate(s, 4);
	CHECK_STR(s, "h...");
	strcpy(s, "hello");
	dn_truncate(s, 3);
	CHECK_STR(s, "hel");
	strcpy(s, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"); /* 5 characters, 10 bytes */
	dn_truncate(s, 5);
	CHECK(strlen(s) == 10);
	dn_truncate(s, 4);
	CHECK_STR(s, "\xC3\xA9...");
}

/* `ps` of a process whose command line holds a newline, terminal escapes
 * and invalid UTF-8 (argv[0] is the process's to choose): the table row is
 * one line with the bytes escaped, the JSON line valid with them as \u
 * escapes and U+FFFD. */
static void test_ps_escapes(void)
{
	char dir[128], name[128], stat_path[64], buf[1024], want[256];
	unsigned long long start = 0;
	ssize_t len;
	int fd;
	pid_t child;

	snprintf(dir, sizeof(dir), "%s/tmp-esc", tmpdir);
	CHECK(mkdir(dir, 0700) == 0);
	child = fork();
	if (child == 0) {
		char env[200];
		char *envp[] = {env, NULL};

		snprintf(env, sizeof(env), "TMPDIR=%s", dir);
		execle("/bin/sleep", "x\n<0>dumpwatch: forged\x1b[31m\x1b]0;t\x07\xc3\x28\xff", "30", (char *)NULL,
		       envp);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		char p[64], e[512];
		int efd;

		snprintf(p, sizeof(p), "/proc/%d/environ", (int)child);
		efd = open(p, O_RDONLY);
		len = efd >= 0 ? read(efd, e, sizeof(e) - 1) : -1;
		if (efd >= 0)
			close(efd);
		if (len > 7 && memcmp(e, "TMPDIR=", 7) == 0)
			break;
		usleep(5000);
	}
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)child);
	fd = open(stat_path, O_RDONLY);
	len = read(fd, buf, sizeof(buf));
	close(fd);
	CHECK(len > 0 && dn_parse_stat(buf, (size_t)len, NULL, 0, &start) == 0);
	snprintf(name, sizeof(name), "dotnet-diagnostic-%d-%llu-socket", (int)child, start);
	make_socket(dir, name, time(NULL));

	char *m = NULL;
	size_t mlen = 0;
	FILE *f = open_memstream(&m, &mlen);
	CHECK(discovery_print_ps(f, 0) >= 1);
	fclose(f);
	/* discovery_cmdline makes the newline a space. */
	snprintf(want, sizeof(want), "\n%-7d %-20s %-10s %-20s %s\n", (int)child, "sleep", "-", "-",
	         "x <0>dumpwatch: forged\\x1b[31m\\x1b]0;t\\x07\\xc3(\\xff 30");
	CHECK_MSG(strstr(m, want) != NULL, "%s", m);
	for (size_t i = 0; i < mlen; i++)
		CHECK_MSG((unsigned char)m[i] >= 0x20 || m[i] == '\n', "byte 0x%02x at %zu", (unsigned char)m[i], i);
	free(m);

	f = open_memstream(&m, &mlen);
	CHECK(discovery_print_ps(f, 1) >= 1);
	fclose(f);
	CHECK_MSG(
	    strstr(m, "\"command_line\":\"x <0>dumpwatch: forged\\u001b[31m\\u001b]0;t\\u0007\\ufffd(\\ufffd 30\"") !=
	        NULL,
	    "%s", m);
	free(m);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	remove_all(dir);
}

struct foreign_seen {
	pid_t pid;
	int calls;
	char path[256];
};

static void on_foreign(void *ctx, const struct dn_target *t, const char *path, uid_t owner)
{
	struct foreign_seen *s = ctx;

	if (t->pid != s->pid)
		return;
	s->calls++;
	snprintf(s->path, sizeof(s->path), "%s", path);
	CHECK(owner == 65534);
}

/* discovery_find / discovery_list on a real child process, with a fake
 * socket in the TMPDIR it was started with. */
static void test_find_child(void)
{
	char dir[128], name[128], stat_path[64], buf[1024], err[512];
	unsigned long long start = 0;
	struct dn_target t, *all = NULL;
	size_t n = 0;
	ssize_t len;
	int fd, found = 0;
	pid_t child;

	snprintf(dir, sizeof(dir), "%s/tmp", tmpdir);
	CHECK(mkdir(dir, 0700) == 0);
	child = fork();
	if (child == 0) {
		char env[200];
		char *envp[] = {env, NULL};

		snprintf(env, sizeof(env), "TMPDIR=%s/", dir); /* a trailing slash is fine */
		execle("/bin/sleep", "sleep", "30", (char *)NULL, envp);
		_exit(127);
	}
	/* Wait for the exec to show in /proc/{pid}/environ. */
	for (int i = 0; i < 200; i++) {
		char p[64], e[512];
		int efd;

		snprintf(p, sizeof(p), "/proc/%d/environ", (int)child);
		efd = open(p, O_RDONLY);
		len = efd >= 0 ? read(efd, e, sizeof(e) - 1) : -1;
		if (efd >= 0)
			close(efd);
		if (len > 7 && memcmp(e, "TMPDIR=", 7) == 0)
			break;
		usleep(5000);
	}

	/* No socket yet: -ENOENT naming the directory as the process sees it. */
	CHECK(discovery_find(child, &t, err, sizeof(err)) == -ENOENT);
	CHECK_MSG(strstr(err, "(sleep) has no .NET diagnostics socket in ") != NULL, "%s", err);
	CHECK(strstr(err, dir) != NULL);
	CHECK(strstr(err, "DOTNET_EnableDiagnostics=0") != NULL);

	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)child);
	fd = open(stat_path, O_RDONLY);
	len = read(fd, buf, sizeof(buf));
	close(fd);
	CHECK(len > 0 && dn_parse_stat(buf, (size_t)len, NULL, 0, &start) == 0);

	/* A socket under its exact name, planted by another uid: skipped, and
	 * the sentence says so; the listing reports it. */
	if (geteuid() == 0) {
		char planted[256];
		struct foreign_seen seen = {.pid = child};

		snprintf(name, sizeof(name), "dotnet-diagnostic-%d-%llu-socket", (int)child, start);
		make_socket(dir, name, time(NULL));
		snprintf(planted, sizeof(planted), "%s/%s", dir, name);
		CHECK(lchown(planted, 65534, 65534) == 0);
		CHECK(discovery_find(child, &t, err, sizeof(err)) == -ENOENT);
		CHECK_MSG(strstr(err, "ignoring ") && strstr(err, planted) && strstr(err, "belongs to uid 65534"), "%s",
		          err);
		CHECK(discovery_list_ex(on_foreign, &seen, &all, &n) == 0);
		for (size_t i = 0; i < n; i++)
			CHECK(all[i].pid != child);
		free(all);
		all = NULL;
		CHECK(seen.calls == 1);
		CHECK_STR(seen.path, planted);
		CHECK(unlink(planted) == 0);
	}

	/* The live socket (key = start time) and a newer stale one. */
	snprintf(name, sizeof(name), "dotnet-diagnostic-%d-%llu-socket", (int)child, start);
	make_socket(dir, name, time(NULL) - 60);
	{
		char stale[128];

		snprintf(stale, sizeof(stale), "dotnet-diagnostic-%d-%llu-socket", (int)child, start + 1);
		make_socket(dir, stale, time(NULL));
	}
	CHECK(discovery_find(child, &t, err, sizeof(err)) == 0);
	CHECK(t.pid == child && t.nspid == child && t.uid == getuid() && t.gid == getgid());
	CHECK(t.other_mount_ns == 0);
	CHECK_STR(t.comm, "sleep");
	CHECK_STR(t.exe_name, "sleep");
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	CHECK_STR(t.socket_path, buf);

	discovery_process_name(&t, NULL, name, sizeof(name));
	CHECK_STR(name, "sleep");
	discovery_process_name(&t, "Worker.dll", name, sizeof(name));
	CHECK_STR(name, "Worker");
	CHECK(discovery_cmdline(child, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "sleep 30");
	CHECK(discovery_cmdline(child, buf, 8) == 0);
	CHECK_STR(buf, "sleep 3");

	CHECK(discovery_list(&all, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (all[i].pid == child) {
			found++;
			CHECK_STR(all[i].socket_path, t.socket_path);
		}
	for (size_t i = 1; i < n; i++)
		CHECK(all[i - 1].pid < all[i].pid);
	CHECK(found == 1);
	free(all);

	/* ps lists it; nothing answers on the fake socket, so "-". */
	{
		char *m = NULL;
		size_t mlen = 0;
		FILE *f = open_memstream(&m, &mlen);
		char want[128];

		CHECK(discovery_print_ps(f, 0) >= 1);
		fclose(f);
		CHECK(strncmp(m, "PID     NAME", 12) == 0);
		snprintf(want, sizeof(want), "\n%-7d %-20s %-10s %-20s sleep 30\n", (int)child, "sleep", "-", "-");
		CHECK_MSG(strstr(m, want) != NULL, "%s", m);
		free(m);

		f = open_memstream(&m, &mlen);
		CHECK(discovery_print_ps(f, 1) >= 1);
		fclose(f);
		snprintf(want, sizeof(want),
		         "{\"pid\":%d,\"nspid\":%d,\"uid\":%u,\"name\":\"sleep\",\"entry_assembly\":null,", (int)child,
		         (int)child, (unsigned)getuid());
		CHECK_MSG(strstr(m, want) != NULL, "%s", m);
		CHECK(strstr(m, "\"command_line\":\"sleep 30\"") != NULL);
		free(m);
	}

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(discovery_find(child, &t, err, sizeof(err)) == -ESRCH);
	snprintf(buf, sizeof(buf), "no process with pid %d", (int)child);
	CHECK_STR(err, buf);
	CHECK(discovery_cmdline(child, buf, sizeof(buf)) == -ESRCH);
	remove_all(dir);
}

/* Exited means gone, a zombie, or the pid now someone else's. */
static void test_exited(void)
{
	char buf[1024];
	unsigned long long self_start = 0;
	int fd = open("/proc/self/stat", O_RDONLY);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	close(fd);
	CHECK(n > 0);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(dn_parse_stat(buf, (size_t)(n > 0 ? n : 0), NULL, 0, &self_start) == 0);
	CHECK(discovery_exited(getpid(), self_start) == 0);
	CHECK(discovery_exited(getpid(), 0) == 0);
	CHECK(discovery_exited(getpid(), self_start + 1) == 1);

	pid_t child = fork();
	if (child == 0)
		_exit(0);
	/* Not reaped yet: a zombie, which has exited all the same. */
	CHECK(discovery_wait_exited(child, 0, 2000) == 1);
	CHECK(discovery_exited(child, 0) == 1);
	waitpid(child, NULL, 0);
	CHECK(discovery_exited(child, 0) == 1);

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(discovery_wait_exited(child, 0, 50) == 0);
	kill(child, SIGKILL);
	CHECK(discovery_wait_exited(child, 0, 2000) == 1);
	waitpid(child, NULL, 0);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/dw-test-discovery-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_socket_names();
	test_stat();
	test_status();
	test_environ();
	test_dir_scan();
	test_dir_candidates();
	test_names();
	test_truncate();
	test_find_child();
	test_ps_escapes();
	test_exited();
	remove_all(tmpdir);
	return check_done();
}
