/* Unit tests for launcher.c: which user the launcher runs as (as root only
 * the user who ran sudo, named by well-formed SUDO_UID/SUDO_GID, and never
 * root; as anyone else, that user); the lines on the pipe as the watch
 * writes them and the helper reads them, whole, cut anywhere, or hostile;
 * the pace at which the helper tells libunity, against a model of how Plank
 * takes a sender's Updates (the count after a dump lost without it); and the
 * helper's environment, built from checked values only. Links no GLib: the
 * helper that does is dumpwatch-launcher. */
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

/* ---- the pace, against a model of a dock ----------------------------- */

/* libunity's LauncherEntry properties and which of them an Update carries
 * (it sends those that changed since its last one). */
struct unity_props {
	int64_t count;
	int count_visible;
	double progress;
	int progress_visible;
	int urgent;
};
enum { P_COUNT = 1, P_COUNT_VISIBLE = 2, P_PROGRESS = 4, P_PROGRESS_VISIBLE = 8, P_URGENT = 16 };

/* What the helper sets for a state: the count shown when above 0. */
static struct unity_props props_of(const struct launcher_state *s)
{
	return (struct unity_props){s->count, s->count > 0, s->progress, s->progress_visible, s->urgent};
}

static unsigned props_diff(const struct unity_props *a, const struct unity_props *b)
{
	return (a->count != b->count ? P_COUNT : 0) | (a->count_visible != b->count_visible ? P_COUNT_VISIBLE : 0) |
	       (a->progress != b->progress ? P_PROGRESS : 0) |
	       (a->progress_visible != b->progress_visible ? P_PROGRESS_VISIBLE : 0) |
	       (a->urgent != b->urgent ? P_URGENT : 0);
}

static void props_apply(struct unity_props *to, const struct unity_props *from, unsigned mask)
{
	if (mask & P_COUNT)
		to->count = from->count;
	if (mask & P_COUNT_VISIBLE)
		to->count_visible = from->count_visible;
	if (mask & P_PROGRESS)
		to->progress = from->progress;
	if (mask & P_PROGRESS_VISIBLE)
		to->progress_visible = from->progress_visible;
	if (mask & P_URGENT)
		to->urgent = from->urgent;
}

/* Plank 0.11.89, lib/Services/Unity.vala, handle_update_request: from a
 * sender's fifth Update on, one arriving less than 32 ms after the last one
 * applied is held for a 32 ms timer, and one arriving meanwhile replaces it. */
#define PLANK_HOLD_US 32000
#define PLANK_FAST_COUNT 3

struct plank {
	struct unity_props item; /* what the dock draws */
	unsigned fast_count;
	int64_t last_update;
	int held;
	int64_t held_until;
	struct unity_props held_props;
	unsigned held_mask;
	int badge_seen; /* a count above 0 was drawn */
	int zero_badge; /* a visible count of 0 was drawn */
};

static void plank_perform(struct plank *pl, const struct unity_props *p, unsigned mask)
{
	props_apply(&pl->item, p, mask);
	pl->badge_seen |= pl->item.count_visible && pl->item.count > 0;
	pl->zero_badge |= pl->item.count_visible && pl->item.count == 0;
}

/* Runs the hold timer if it is due by t. */
static void plank_run(struct plank *pl, int64_t t)
{
	if (pl->held && pl->held_until <= t) {
		pl->held = 0;
		pl->last_update = pl->held_until;
		plank_perform(pl, &pl->held_props, pl->held_mask);
	}
}

static void plank_update(struct plank *pl, int64_t t, const struct unity_props *p, unsigned mask)
{
	plank_run(pl, t);
	if (pl->fast_count > PLANK_FAST_COUNT && t - pl->last_update < PLANK_HOLD_US) {
		if (!pl->held) {
			pl->held = 1;
			pl->held_until = t + PLANK_HOLD_US;
		}
		pl->held_props = *p;
		pl->held_mask = mask;
		return;
	}
	pl->fast_count++;
	pl->last_update = t;
	plank_perform(pl, p, mask);
}

/* What reaches the helper's stdin, and when. */
struct arrival {
	int64_t t_us;
	const char *text; /* NULL: the pipe's end */
};

/* A watch with a cooldown: fired, the dump written, its count shown for 4 s,
 * then the end; the last three lines as watch.c writes them at a dump's
 * end, read one by one. */
static const struct arrival long_watch[] = {
    {1000000, "urgent 1\nprogress 0.000\n"},
    {1200000, "progress 0.300\n"},
    {1400000, "progress 0.600\n"},
    {1600000, "progress 0.900\n"},
    {1800000, "progress 1.000\n"},
    {1800004, "count 1\n"},
    {1800008, "progress -\n"},
    {5800000, "clear\n"},
    {5800001, NULL},
};

/* `dumpwatch PID MB`: it ends 50 ms after its dump. */
static const struct arrival short_watch[] = {
    {1000000, "urgent 1\nprogress 0.000\n"},
    {1200000, "progress 0.300\n"},
    {1400000, "progress 0.600\n"},
    {1600000, "progress 0.900\n"},
    {1800000, "progress 1.000\n"},
    {1800004, "count 1\n"},
    {1800008, "progress -\n"},
    {1850000, "clear\n"},
    {1850001, NULL},
};

/* Every read sent on at once, as the helper did before the pacer (libunity
 * then sends an Update per read): the count is lost on Plank. */
static void run_unpaced(const struct arrival *a, size_t n, struct plank *pl)
{
	struct launcher_reader r = {0};
	struct launcher_state s = {0};
	struct unity_props sent = {0};

	memset(pl, 0, sizeof(*pl));
	plank_update(pl, 0, &sent, P_COUNT | P_COUNT_VISIBLE | P_PROGRESS | P_PROGRESS_VISIBLE | P_URGENT);
	for (size_t i = 0; i < n; i++) {
		if (a[i].text)
			feed(&r, &s, a[i].text, strlen(a[i].text));
		else
			launcher_apply_line(&s, "clear");
		struct unity_props now = props_of(&s);
		unsigned mask = props_diff(&sent, &now);
		if (mask)
			plank_update(pl, a[i].t_us, &now, mask);
		sent = now;
	}
	plank_run(pl, INT64_MAX);
}

/* Through the pacer: returns the number of pushes; the least time between
 * two in *min_gap. */
static size_t run_paced(const struct arrival *a, size_t n, struct plank *pl, int64_t *min_gap)
{
	struct launcher_pacer p;
	struct unity_props sent = {0};
	size_t i = 0, pushes = 0;
	int64_t last = 0, now = 0;

	memset(pl, 0, sizeof(*pl));
	launcher_pacer_init(&p, 0);
	plank_update(pl, 0, &sent, P_COUNT | P_COUNT_VISIBLE | P_PROGRESS | P_PROGRESS_VISIBLE | P_URGENT);
	*min_gap = INT64_MAX;
	while (i < n || launcher_pacer_due(&p) != INT64_MAX) {
		int64_t due = launcher_pacer_due(&p);
		if (i < n && a[i].t_us < (due > now ? due : now)) {
			now = a[i].t_us;
			launcher_pacer_feed(&p, a[i].text ? a[i].text : "", a[i].text ? strlen(a[i].text) : 0);
			i++;
			continue;
		}
		if (due > now)
			now = due;
		struct launcher_state s;
		CHECK(launcher_pacer_take(&p, due - 1, &s) == 0); /* not before its time */
		CHECK(launcher_pacer_take(&p, now, &s) == 1);
		if (pushes++ && now - last < *min_gap)
			*min_gap = now - last;
		last = now;
		struct unity_props shown = props_of(&s);
		unsigned mask = props_diff(&sent, &shown);
		if (mask)
			plank_update(pl, now, &shown, mask);
		sent = shown;
	}
	CHECK(launcher_pacer_done(&p));
	plank_run(pl, INT64_MAX);
	return pushes;
}

#define FEED(p, text) launcher_pacer_feed((p), (text), sizeof(text) - 1)

static void test_pace(void)
{
	struct plank pl;
	int64_t min_gap;
	size_t pushes;

	/* The bug as it was: the badge never drawn. */
	run_unpaced(long_watch, sizeof(long_watch) / sizeof(long_watch[0]), &pl);
	CHECK(!pl.badge_seen);

	pushes = run_paced(long_watch, sizeof(long_watch) / sizeof(long_watch[0]), &pl, &min_gap);
	CHECK(pl.badge_seen && !pl.zero_badge);
	CHECK(!pl.item.count_visible && !pl.item.progress_visible && !pl.item.urgent); /* cleared */
	CHECK(min_gap >= LAUNCHER_PUSH_GAP_US);
	CHECK_MSG(pushes == 7, "%zu pushes", pushes); /* fired, 3 progress, 1.0, count with the bar hidden, cleared */

	/* The end right after the dump: the count is pushed, then cleared. */
	pushes = run_paced(short_watch, sizeof(short_watch) / sizeof(short_watch[0]), &pl, &min_gap);
	CHECK(pl.badge_seen && !pl.zero_badge);
	CHECK(!pl.item.count_visible && !pl.item.progress_visible && !pl.item.urgent); /* cleared */
	CHECK(min_gap >= LAUNCHER_PUSH_GAP_US);

	/* Nothing to push: nothing due; the end alone is done at once. */
	struct launcher_pacer p;
	struct launcher_state s;
	launcher_pacer_init(&p, 1000);
	CHECK(launcher_pacer_due(&p) == INT64_MAX && !launcher_pacer_take(&p, 1 << 30, &s));
	CHECK(FEED(&p, "urgent 0\nprogress -\nclear\nnonsense\n") == 1);
	CHECK(launcher_pacer_due(&p) == INT64_MAX);
	launcher_pacer_feed(&p, NULL, 0);
	CHECK(launcher_pacer_done(&p));
	/* A burst is one push, a gap after the one before. */
	launcher_pacer_init(&p, 0);
	FEED(&p, "count 2\nurgent 1\nprogress 0.5\n");
	CHECK(launcher_pacer_due(&p) == LAUNCHER_PUSH_GAP_US);
	CHECK(launcher_pacer_take(&p, LAUNCHER_PUSH_GAP_US + 5, &s) == 1);
	CHECK(s.count == 2 && s.urgent && s.progress_visible && s.progress == 0.5);
	CHECK(launcher_pacer_due(&p) == INT64_MAX && !launcher_pacer_done(&p));
	FEED(&p, "progress -\n");
	CHECK(launcher_pacer_due(&p) == 2 * LAUNCHER_PUSH_GAP_US + 5);
	/* A clear before that push waits for it; lines after the clear
	 * gather behind it. */
	FEED(&p, "clear\ncount 3\n");
	CHECK(launcher_pacer_take(&p, 3 * LAUNCHER_PUSH_GAP_US, &s) == 1);
	CHECK(s.count == 2 && !s.progress_visible && s.urgent);
	CHECK(launcher_pacer_due(&p) == 4 * LAUNCHER_PUSH_GAP_US);
	launcher_pacer_feed(&p, NULL, 0); /* the end: "count 3" first, then cleared */
	CHECK(!launcher_pacer_done(&p));
	CHECK(launcher_pacer_take(&p, 4 * LAUNCHER_PUSH_GAP_US, &s) == 1);
	CHECK(s.count == 3 && !s.progress_visible && !s.urgent);
	CHECK(!launcher_pacer_done(&p) && launcher_pacer_due(&p) == 5 * LAUNCHER_PUSH_GAP_US);
	CHECK(launcher_pacer_take(&p, 5 * LAUNCHER_PUSH_GAP_US, &s) == 1);
	CHECK(s.count == 0 && !s.progress_visible && !s.urgent);
	CHECK(launcher_pacer_done(&p));
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
	test_pace();
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
