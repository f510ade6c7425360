/* Unit tests for launcher.c: which user the launcher runs as (as root only
 * the user who ran sudo, named by well-formed SUDO_UID/SUDO_GID, and never
 * root; as anyone else, that user); the lines on the pipe as the watch
 * writes them and the helper reads them, whole, cut anywhere, or hostile;
 * and the helper's environment, built from checked values only. Links no
 * GLib: the helper that does is dumpwatch-launcher. */
#include "dumpwatch/launcher.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int user_of(const char *su, const char *sg, uid_t *uid, gid_t *gid)
{
	char why[256] = "";

	if (su)
		setenv("SUDO_UID", su, 1);
	else
		unsetenv("SUDO_UID");
	if (sg)
		setenv("SUDO_GID", sg, 1);
	else
		unsetenv("SUDO_GID");
	int r = launcher_user(uid, gid, why, sizeof(why));
	CHECK_MSG(r == 0 || why[0], "a refusal says why");
	return r;
}

static void test_user(void)
{
	uid_t uid = 12345;
	gid_t gid = 12345;

	if (getuid() != 0) {
		/* Not root: its own user, whatever SUDO_UID says. */
		CHECK(user_of("0", "0", &uid, &gid) == 0 && uid == getuid() && gid == getgid());
		return;
	}
	CHECK(user_of(NULL, NULL, &uid, &gid) == -1);    /* root, not through sudo */
	CHECK(user_of("0", "0", &uid, &gid) == -1);      /* sudo run by root */
	CHECK(user_of("1000", NULL, &uid, &gid) == -1);  /* no group */
	CHECK(user_of("abc", "1000", &uid, &gid) == -1); /* not a number */
	CHECK(user_of("1000x", "1000", &uid, &gid) == -1);
	CHECK(user_of("-1", "1000", &uid, &gid) == -1);
	CHECK(user_of("", "1000", &uid, &gid) == -1);
	CHECK(user_of("99999999999", "1000", &uid, &gid) == -1);
	CHECK(user_of("1000", "1000 ", &uid, &gid) == -1);
	CHECK(uid == 12345 && gid == 12345); /* untouched by a refusal */
	CHECK(user_of("1000", "1001", &uid, &gid) == 0 && uid == 1000 && gid == 1001);
}

static void test_desktop_id(void)
{
	CHECK(launcher_desktop_id_ok("dumpwatch.desktop"));
	CHECK(launcher_desktop_id_ok("org.gnome.Terminal.desktop"));
	CHECK(launcher_desktop_id_ok("my_app-2.desktop"));
	CHECK(!launcher_desktop_id_ok(NULL));
	CHECK(!launcher_desktop_id_ok(""));
	CHECK(!launcher_desktop_id_ok(".desktop"));
	CHECK(!launcher_desktop_id_ok(".hidden.desktop"));
	CHECK(!launcher_desktop_id_ok("../x.desktop"));
	CHECK(!launcher_desktop_id_ok("a/b.desktop"));
	CHECK(!launcher_desktop_id_ok("dumpwatch.desktop.sh"));
	CHECK(!launcher_desktop_id_ok("dumpwatch"));
	CHECK(!launcher_desktop_id_ok("a b.desktop"));
	CHECK(!launcher_desktop_id_ok("-v.desktop")); /* never taken for an option */
	CHECK(!launcher_desktop_id_ok("a\n.desktop"));
	char id[300];
	memset(id, 'a', sizeof(id));
	strcpy(id + 247, ".desktop"); /* 255 bytes */
	CHECK(launcher_desktop_id_ok(id));
	memset(id, 'a', sizeof(id));
	strcpy(id + 248, ".desktop"); /* 256 */
	CHECK(!launcher_desktop_id_ok(id));
}

/* The line for op and value, as a string. */
static const char *line_of(enum launcher_op op, double value)
{
	static char buf[LAUNCHER_LINE_MAX];

	if (!launcher_line(buf, sizeof(buf), op, value))
		return "(none)";
	return buf;
}

static void test_lines(void)
{
	char small[6];

	CHECK_STR(line_of(LAUNCHER_OP_COUNT, 0), "count 0\n");
	CHECK_STR(line_of(LAUNCHER_OP_COUNT, 3), "count 3\n");
	CHECK_STR(line_of(LAUNCHER_OP_COUNT, 4294967295.0), "count 4294967295\n");
	CHECK_STR(line_of(LAUNCHER_OP_COUNT, -2), "count 0\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, 0), "progress 0.000\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, 0.5), "progress 0.500\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, 0.9995), "progress 1.000\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, 0.12345), "progress 0.123\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, 7), "progress 1.000\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, -1), "progress -\n");
	CHECK_STR(line_of(LAUNCHER_OP_PROGRESS, NAN), "progress -\n");
	CHECK_STR(line_of(LAUNCHER_OP_URGENT, 1), "urgent 1\n");
	CHECK_STR(line_of(LAUNCHER_OP_URGENT, 0), "urgent 0\n");
	CHECK_STR(line_of(LAUNCHER_OP_CLEAR, 0), "clear\n");
	CHECK(launcher_line(small, sizeof(small), LAUNCHER_OP_COUNT, 12) == 0); /* does not fit */
	CHECK(launcher_line(small, sizeof(small), LAUNCHER_OP_URGENT, 1) == 0);
}

static void test_apply(void)
{
	struct launcher_state s = {0}, before;

	CHECK(launcher_apply_line(&s, "count 2") == 0 && s.count == 2);
	CHECK(launcher_apply_line(&s, "progress 0.25") == 0 && s.progress == 0.25 && s.progress_visible);
	CHECK(launcher_apply_line(&s, "progress 1") == 0 && s.progress == 1.0);
	CHECK(launcher_apply_line(&s, "progress 2.5") == 0 && s.progress == 1.0); /* clamped */
	CHECK(launcher_apply_line(&s, "progress -") == 0 && !s.progress_visible && s.count == 2);
	CHECK(launcher_apply_line(&s, "urgent 1") == 0 && s.urgent);
	CHECK(launcher_apply_line(&s, "urgent 0") == 0 && !s.urgent);
	CHECK(launcher_apply_line(&s, "clear") == 0);
	CHECK(s.count == 0 && !s.progress_visible && !s.urgent && s.progress == 1.0);

	/* Not lines of ours: refused, the state untouched. */
	s = (struct launcher_state){.count = 5, .progress = 0.5, .progress_visible = 1, .urgent = 1};
	before = s;
	static const char *const bad[] = {
	    "",
	    "count",
	    "count ",
	    "count -1",
	    "count 1x",
	    "count 0x10",
	    "count  1",
	    "count 1 ",
	    "count 9999999999999999",
	    "progress",
	    "progress ",
	    "progress nan",
	    "progress inf",
	    "progress -0.5",
	    "progress 0,5",
	    "progress .5",
	    "progress 1.",
	    "progress 0.5e3",
	    "progress 1000",
	    "urgent",
	    "urgent 2",
	    "urgent 1 ",
	    "urgent yes",
	    "clear ",
	    "Clear",
	    "quit",
	    "count\t1",
	    "progress 0.1234567890",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_MSG(launcher_apply_line(&s, bad[i]) == -EINVAL, "\"%s\" accepted", bad[i]);
		CHECK_MSG(launcher_state_equal(&s, &before), "\"%s\" changed the state", bad[i]);
	}
}

static int apply_to(void *ctx, const char *line)
{
	return launcher_apply_line(ctx, line);
}

static size_t feed(struct launcher_reader *r, struct launcher_state *s, const char *data, size_t n)
{
	return launcher_reader_feed(r, data, n, apply_to, s);
}

/* What the watch writes reaches the helper's state the same, whether the
 * pipe gives it at once, byte by byte, or cut anywhere. */
static void test_reader(void)
{
	char text[512];
	size_t len = 0;
	struct launcher_state want = {0};

	/* A dump's life as watch.c writes it: fired, written, published. */
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_URGENT, 1);
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_PROGRESS, 0);
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_PROGRESS, 0.42);
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_PROGRESS, 1);
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_COUNT, 1);
	len += launcher_line(text + len, sizeof(text) - len, LAUNCHER_OP_PROGRESS, -1);
	want = (struct launcher_state){.count = 1, .progress = 1.0, .progress_visible = 0, .urgent = 1};

	for (size_t cut = 0; cut <= len; cut++) {
		struct launcher_reader r = {0};
		struct launcher_state s = {0};
		CHECK(feed(&r, &s, text, cut) == 0);
		CHECK(feed(&r, &s, text + cut, len - cut) == 0);
		CHECK_MSG(launcher_state_equal(&s, &want), "cut at %zu", cut);
		CHECK(r.len == 0);
	}
	{
		struct launcher_reader r = {0};
		struct launcher_state s = {0};
		for (size_t i = 0; i < len; i++)
			CHECK(feed(&r, &s, text + i, 1) == 0);
		CHECK(launcher_state_equal(&s, &want));
	}
	/* A line without its newline is not applied yet. */
	{
		struct launcher_reader r = {0};
		struct launcher_state s = {0};
		CHECK(feed(&r, &s, "count 7", 7) == 0 && s.count == 0);
		CHECK(feed(&r, &s, "\n", 1) == 0 && s.count == 7);
	}
	/* Hostile bytes: a line too long is dropped whole (not its tail taken
	 * for a line), a NUL spoils its line, garbage is counted; the lines
	 * around them still count. */
	{
		struct launcher_reader r = {0};
		struct launcher_state s = {0};
		char big[3 * LAUNCHER_LINE_MAX + 16];
		memset(big, 'x', sizeof(big));
		memcpy(big + sizeof(big) - 8, "count 9\n", 8);
		CHECK(feed(&r, &s, "count 3\n", 8) == 0 && s.count == 3);
		CHECK(feed(&r, &s, big, sizeof(big)) == 1);
		CHECK(s.count == 3); /* "...count 9" was the end of the long line */
		CHECK(feed(&r, &s, "count 4\0\n", 9) == 1 && s.count == 3);
		CHECK(feed(&r, &s, "bogus\nurgent 1\n\n", 16) == 2 && s.urgent);
		CHECK(feed(&r, &s, "count 5\n", 8) == 0 && s.count == 5);
	}
}

static const char *env_get(const struct launcher_env *e, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; e->envp[i]; i++)
		if (strncmp(e->envp[i], name, n) == 0 && e->envp[i][n] == '=')
			return e->envp[i] + n + 1;
	return NULL;
}

static size_t env_count(const struct launcher_env *e)
{
	size_t n = 0;

	while (e->envp[n])
		n++;
	return n;
}

static void test_env(void)
{
	struct launcher_env e;
	char why[256] = "", longer[1200];
	struct launcher_env_in in = {.uid = 1000,
	                             .bus = "unix:path=/run/user/1000/bus",
	                             .home = "/home/alice",
	                             .user = "alice",
	                             .runtime_dir = "/run/user/1000",
	                             .lang = "de_DE.UTF-8"};

	/* Root's own environment never reaches the helper, whatever it holds. */
	setenv("LD_PRELOAD", "/tmp/evil.so", 1);
	setenv("GIO_MODULE_DIR", "/tmp/evil", 1);
	setenv("GTK_MODULES", "evil", 1);
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	CHECK_STR(env_get(&e, "DBUS_SESSION_BUS_ADDRESS"), "unix:path=/run/user/1000/bus");
	CHECK_STR(env_get(&e, "HOME"), "/home/alice");
	CHECK_STR(env_get(&e, "USER"), "alice");
	CHECK_STR(env_get(&e, "LOGNAME"), "alice");
	CHECK_STR(env_get(&e, "XDG_RUNTIME_DIR"), "/run/user/1000");
	CHECK_STR(env_get(&e, "LANG"), "de_DE.UTF-8");
	CHECK_STR(env_get(&e, "PATH"), "/usr/bin:/bin");
	CHECK_STR(env_get(&e, "GIO_USE_VFS"), "local");
	CHECK(env_count(&e) == 8);
	CHECK(!env_get(&e, "LD_PRELOAD") && !env_get(&e, "GIO_MODULE_DIR") && !env_get(&e, "GTK_MODULES"));
	CHECK(!env_get(&e, "DISPLAY"));

	/* Addresses as dbus-daemon and systemd write them pass, escapes too. */
	in.bus = "unix:abstract=/tmp/dbus-XyZ,guid=0123456789abcdef0123456789abcdef";
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	in.bus = "unix:path=/tmp/a%20b;tcp:host=localhost,port=1234";
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	/* Anything else is refused, and says why. */
	static const char *const bad_bus[] = {
	    "",
	    "nocolon",
	    "unix:path=/tmp/a b",
	    "unix:path=/tmp/a\nLD_PRELOAD=/x",
	    "unix:path=/tmp/%zz",
	    "unix:path=/tmp/%2",
	    "unix:path=/tmp/\"x\"",
	    "unix:path=$HOME/bus",
	    "unix:path=/tmp/\\x",
	};
	for (size_t i = 0; i < sizeof(bad_bus) / sizeof(bad_bus[0]); i++) {
		in.bus = bad_bus[i];
		why[0] = '\0';
		CHECK_MSG(launcher_env_build(&in, &e, why, sizeof(why)) == -EINVAL, "bus \"%s\" accepted", bad_bus[i]);
		CHECK(why[0] != '\0');
	}
	in.bus = NULL;
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == -EINVAL);
	memset(longer, 'a', sizeof(longer));
	memcpy(longer, "unix:path=/", 11);
	longer[sizeof(longer) - 1] = '\0';
	in.bus = longer;
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == -EINVAL);

	/* The rest: a bad value is replaced or left out, never passed on. */
	in.bus = "unix:path=/run/user/1000/bus";
	in.home = "relative/home";
	in.user = "al ice";
	in.runtime_dir = "/run/user/1000\nX=1";
	in.lang = "../../tmp/evil";
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	CHECK_STR(env_get(&e, "HOME"), "/");
	CHECK(!env_get(&e, "USER") && !env_get(&e, "LOGNAME") && !env_get(&e, "XDG_RUNTIME_DIR") &&
	      !env_get(&e, "LANG"));
	in.home = NULL;
	in.user = "-rf";
	in.runtime_dir = NULL;
	in.lang = "C.UTF-8";
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	CHECK_STR(env_get(&e, "HOME"), "/");
	CHECK(!env_get(&e, "USER"));
	CHECK_STR(env_get(&e, "LANG"), "C.UTF-8");
	in.home = longer + 10; /* "/aaaa...": too long */
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	CHECK_STR(env_get(&e, "HOME"), "/");
	in.lang = "en_US.UTF-8\x7f";
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0 && !env_get(&e, "LANG"));
	/* The longest values allowed all fit. */
	static char bus[513], home[513], rundir[513];
	memset(bus, 'b', 512);
	memcpy(bus, "unix:path=/", 11);
	memset(home, 'h', 512);
	home[0] = '/';
	memset(rundir, 'r', 512);
	rundir[0] = '/';
	in = (struct launcher_env_in){.uid = 1,
	                              .bus = bus,
	                              .home = home,
	                              .user = "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu",
	                              .runtime_dir = rundir,
	                              .lang = "llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll"};
	CHECK(launcher_env_build(&in, &e, why, sizeof(why)) == 0);
	CHECK(env_count(&e) == 8 && strlen(env_get(&e, "HOME")) == 512 && strlen(env_get(&e, "LANG")) == 64);
}

int main(void)
{
	test_user();
	test_desktop_id();
	test_lines();
	test_apply();
	test_reader();
	test_env();
	CHECK(launcher_start("off", 0) == NULL);
	CHECK(launcher_start(NULL, 0) == NULL);
	CHECK(launcher_start("../etc/passwd", 0) == NULL);
	launcher_stop(NULL);
	launcher_count(NULL, 1);
	launcher_progress(NULL, 0.5);
	launcher_urgent(NULL, 1);
	return check_done();
}
