/* The launcher entry; see launcher.h.
 *
 * Design note. The parent writes one short line per change on a
 * non-blocking pipe; a line is shorter than PIPE_BUF, so it goes whole or not
 * at all, and a full pipe drops it rather than holding up the watch. The
 * helper program is looked up and checked by root before the fork
 * (trust_helper_path: root's, in directories no one else can change), so
 * that what the child executes is what root judged. The child keeps only the
 * pipe (as its stdin) and stderr, drops to the user for good, finds that
 * user's session bus, and executes the helper with an environment built here
 * from checked values, nothing of root's passed on by name. GLib, GIO and
 * libunity are only ever loaded by the helper. The pipe's end (the parent
 * stopping, or dying) clears the entry and ends the helper.
 *
 * Numbers on the pipe are written and read without the C library's locale
 * (a decimal comma would make "0,500"). */
#include "dumpwatch/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/fds.h"
#include "dumpwatch/log.h"
#include "dumpwatch/trust.h"

/* How long the helper may take to send the cleared entry at the end. */
#define STOP_WAIT_MS 2000
/* The longest session bus address, home and runtime directory passed on. */
#define BUS_MAX 512
#define DIR_MAX 512
#define NAME_MAX_LEN 64

struct launcher {
	pid_t pid;
	int fd;
};

/* ---- who, and which helper ---------------------------------------------- */

static int parse_id(const char *text, unsigned long *out)
{
	char *end;

	if (!text || !*text || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	*out = strtoul(text, &end, 10);
	return errno || *end || *out > 0x7fffffffUL ? -1 : 0;
}

int launcher_user(uid_t *uid, gid_t *gid, char *why, size_t whylen)
{
	unsigned long u, g;

	if (getuid() != 0) {
		*uid = getuid();
		*gid = getgid();
		return 0;
	}
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	if (!su) {
		snprintf(why, whylen, "running as root, not through sudo: there is no desktop user to show it to");
		return -1;
	}
	if (parse_id(su, &u) < 0 || parse_id(sg, &g) < 0) {
		snprintf(why, whylen, "SUDO_UID/SUDO_GID are not user and group ids");
		return -1;
	}
	if (u == 0) {
		snprintf(why, whylen, "sudo was run by root: no desktop user to show it to");
		return -1;
	}
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int launcher_helper(char *path, size_t pathlen, char *why, size_t whylen)
{
	int r = trust_helper_path(LAUNCHER_HELPER, path, pathlen, why, whylen);

	if (r == -ENOENT)
		snprintf(why, whylen,
		         "the helper program %s is not installed (the package dumpwatch-desktop, or a build with "
		         "libunity-dev, has it)",
		         LAUNCHER_HELPER);
	return r;
}

int launcher_desktop_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n <= 8 || n > 255 || id[0] == '.' || id[0] == '-' || strcmp(id + n - 8, ".desktop") != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

/* ---- the protocol ------------------------------------------------------- */

size_t launcher_line(char *buf, size_t len, enum launcher_op op, double value)
{
	int n = -1;

	switch (op) {
	case LAUNCHER_OP_COUNT:
		n = snprintf(buf, len, "count %lld\n", value >= 1 && value < 1e15 ? (long long)value : 0LL);
		break;
	case LAUNCHER_OP_PROGRESS:
		if (!(value >= 0)) { /* NaN too */
			n = snprintf(buf, len, "progress -\n");
		} else {
			unsigned m = (unsigned)((value > 1 ? 1 : value) * 1000.0 + 0.5);
			n = snprintf(buf, len, "progress %u.%03u\n", m / 1000, m % 1000);
		}
		break;
	case LAUNCHER_OP_URGENT:
		n = snprintf(buf, len, "urgent %d\n", value != 0 ? 1 : 0);
		break;
	case LAUNCHER_OP_CLEAR:
		n = snprintf(buf, len, "clear\n");
		break;
	}
	return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}

/* "D[.DDD]", at most 3 digits before the point and 9 after: 0 with *out
 * clamped to 0..1, or -1. */
static int parse_fraction(const char *s, double *out)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	size_t digits = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 3)
			return -1;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (digits == 0)
		return -1;
	if (*s == '.') {
		digits = 0;
		for (s++; *s >= '0' && *s <= '9'; s++) {
			if (++digits > 9)
				return -1;
			frac = frac * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
		if (digits == 0)
			return -1;
	}
	if (*s)
		return -1;
	*out = whole >= 1 ? 1.0 : (double)frac / (double)scale;
	return 0;
}

/* At most 15 decimal digits: 0 with *out, or -1. */
static int parse_count(const char *s, int64_t *out)
{
	int64_t v = 0;
	size_t digits = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 15)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (digits == 0 || *s)
		return -1;
	*out = v;
	return 0;
}

int launcher_apply_line(struct launcher_state *s, const char *line)
{
	int64_t n;
	double f;

	if (strncmp(line, "count ", 6) == 0) {
		if (parse_count(line + 6, &n) < 0)
			return -EINVAL;
		s->count = n;
	} else if (strcmp(line, "progress -") == 0) {
		s->progress_visible = 0;
	} else if (strncmp(line, "progress ", 9) == 0) {
		if (parse_fraction(line + 9, &f) < 0)
			return -EINVAL;
		s->progress = f;
		s->progress_visible = 1;
	} else if (strcmp(line, "urgent 0") == 0 || strcmp(line, "urgent 1") == 0) {
		s->urgent = line[7] == '1';
	} else if (strcmp(line, "clear") == 0) {
		/* The bar's value stays: hidden, it shows nothing. */
		s->count = 0;
		s->progress_visible = 0;
		s->urgent = 0;
	} else {
		return -EINVAL;
	}
	return 0;
}

int launcher_state_equal(const struct launcher_state *a, const struct launcher_state *b)
{
	return a->count == b->count && a->progress == b->progress && a->progress_visible == b->progress_visible &&
	       a->urgent == b->urgent;
}

size_t launcher_reader_feed(struct launcher_reader *r, const char *data, size_t n, launcher_line_fn fn, void *ctx)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		char c = data[i];
		if (c == '\n') {
			if (!r->skipping) {
				r->buf[r->len] = '\0';
				if (fn(ctx, r->buf) < 0)
					bad++;
			}
			r->skipping = 0;
			r->len = 0;
		} else if (r->skipping) {
			continue;
		} else if (c == '\0' || r->len + 1 >= sizeof(r->buf)) {
			/* Not a line of ours: dropped up to its newline. */
			r->skipping = 1;
			r->len = 0;
			bad++;
		} else {
			r->buf[r->len++] = c;
		}
	}
	return bad;
}

/* ---- the helper's pace -------------------------------------------------- */

void launcher_pacer_init(struct launcher_pacer *p, int64_t now_us)
{
	memset(p, 0, sizeof(*p));
	p->last_push_us = now_us;
}

static int pacer_line(void *ctx, const char *line)
{
	struct launcher_pacer *p = ctx;

	if (!p->cleared && strcmp(line, "clear") == 0 && !launcher_state_equal(&p->pending, &p->shown)) {
		p->cleared = 1;
		p->next = p->pending;
		return launcher_apply_line(&p->next, line);
	}
	return launcher_apply_line(p->cleared ? &p->next : &p->pending, line);
}

size_t launcher_pacer_feed(struct launcher_pacer *p, const char *data, size_t n)
{
	if (n > 0)
		return launcher_reader_feed(&p->reader, data, n, pacer_line, p);
	pacer_line(p, "clear");
	p->ended = 1;
	return 0;
}

int64_t launcher_pacer_due(const struct launcher_pacer *p)
{
	if (!p->cleared && launcher_state_equal(&p->pending, &p->shown))
		return INT64_MAX;
	return p->last_push_us + LAUNCHER_PUSH_GAP_US;
}

int launcher_pacer_take(struct launcher_pacer *p, int64_t now_us, struct launcher_state *out)
{
	if (now_us < launcher_pacer_due(p))
		return 0;
	*out = p->shown = p->pending;
	p->last_push_us = now_us;
	if (p->cleared) {
		p->pending = p->next;
		p->cleared = 0;
	}
	return 1;
}

int launcher_pacer_done(const struct launcher_pacer *p)
{
	return p->ended && launcher_pacer_due(p) == INT64_MAX;
}

/* ---- the helper's environment ------------------------------------------- */

/* The D-Bus specification, "Server Addresses": transport:key=value,...;...
 * with values of [-0-9A-Za-z_/.\*] and %XX escapes. */
static int bus_address_ok(const char *a)
{
	size_t n = strlen(a);

	if (n == 0 || n > BUS_MAX || !strchr(a, ':'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = a[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-_/.*:=,;", c))
			continue;
		if (c == '%' && i + 2 < n && strchr("0123456789abcdefABCDEF", a[i + 1]) &&
		    strchr("0123456789abcdefABCDEF", a[i + 2])) {
			i += 2;
			continue;
		}
		return 0;
	}
	return 1;
}

/* An absolute path of printable characters (UTF-8 allowed), no longer than
 * DIR_MAX. */
static int dir_ok(const char *d)
{
	size_t n = d ? strlen(d) : 0;

	if (n == 0 || n > DIR_MAX || d[0] != '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)d[i] < 0x20 || d[i] == 0x7f)
			return 0;
	return 1;
}

/* Letters, digits and "._-@" (user names, locale names), not starting with
 * '-', at most NAME_MAX_LEN bytes. */
static int name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > NAME_MAX_LEN || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-' || c == '@'))
			return 0;
	}
	return 1;
}

static int env_add(struct launcher_env *e, size_t *used, size_t *nvars, const char *name, const char *value)
{
	size_t room = sizeof(e->buf) - *used;
	int n;

	if (*nvars >= LAUNCHER_ENV_VARS)
		return -ENOSPC;
	n = snprintf(e->buf + *used, room, "%s=%s", name, value);
	if (n < 0 || (size_t)n >= room)
		return -ENOSPC;
	e->envp[(*nvars)++] = e->buf + *used;
	e->envp[*nvars] = NULL;
	*used += (size_t)n + 1;
	return 0;
}

int launcher_env_build(const struct launcher_env_in *in, struct launcher_env *out, char *why, size_t whylen)
{
	size_t used = 0, nvars = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!in->bus || !bus_address_ok(in->bus)) {
		snprintf(why, whylen, "the session bus address is not a D-Bus address of at most %d characters",
		         BUS_MAX);
		return -EINVAL;
	}
	r |= env_add(out, &used, &nvars, "DBUS_SESSION_BUS_ADDRESS", in->bus);
	r |= env_add(out, &used, &nvars, "HOME", dir_ok(in->home) ? in->home : "/");
	if (name_ok(in->user)) {
		r |= env_add(out, &used, &nvars, "USER", in->user);
		r |= env_add(out, &used, &nvars, "LOGNAME", in->user);
	}
	if (dir_ok(in->runtime_dir))
		r |= env_add(out, &used, &nvars, "XDG_RUNTIME_DIR", in->runtime_dir);
	if (name_ok(in->lang))
		r |= env_add(out, &used, &nvars, "LANG", in->lang);
	/* Fixed values of ours: a PATH for anything GLib looks up, and GIO's
	 * local file system only, so that it does not reach for the user's
	 * gvfs daemons. */
	r |= env_add(out, &used, &nvars, "PATH", "/usr/bin:/bin");
	r |= env_add(out, &used, &nvars, "GIO_USE_VFS", "local");
	if (r < 0) { /* the bounds above keep it from happening */
		snprintf(why, whylen, "the helper's environment does not fit in %d bytes", LAUNCHER_ENV_BYTES);
		return -EINVAL;
	}
	return 0;
}

/* ---- the process -------------------------------------------------------- */

/* The session bus of uid: the address dumpwatch was given (sudo keeps it
 * only when told to), else the user's own /run/user/UID/bus when it is that
 * user's socket. Run as that user. */
static int bus_address(uid_t uid, const char *given, char *out, size_t outlen, char *why, size_t whylen)
{
	char path[64];
	struct stat st;

	if (given && *given) {
		snprintf(out, outlen, "%s", given);
		return 0;
	}
	snprintf(path, sizeof(path), "/run/user/%u/bus", (unsigned)uid);
	if (lstat(path, &st) < 0) {
		snprintf(why, whylen, "no DBUS_SESSION_BUS_ADDRESS and no %s (%s)", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != uid) {
		snprintf(why, whylen, "%s is not a socket of uid %u", path, (unsigned)uid);
		return -1;
	}
	snprintf(out, outlen, "unix:path=%s", path);
	return 0;
}

struct child_args {
	uid_t uid;
	gid_t gid;
	const char *helper, *desktop_id;
	const char *bus, *home, *user, *lang; /* copied in the parent; may be empty */
	int verbose;
};

/* In the forked child, stdin the pipe: becomes the user for good and
 * executes the helper. Never returns. */
static void child_exec(const struct child_args *a)
{
	char addr[BUS_MAX + 2], why[BUS_MAX + 256], rundir[64]; /* an address cut is still too long */
	struct launcher_env env;
	struct stat st;

	/* For good: groups, then group, then user; and no way back. */
	if (geteuid() == 0 || getuid() != a->uid) {
		if (setgroups(0, NULL) < 0 || setresgid(a->gid, a->gid, a->gid) < 0 ||
		    setresuid(a->uid, a->uid, a->uid) < 0) {
			if (a->verbose)
				log_info("launcher: cannot become uid %u: %s; the dock shows nothing", (unsigned)a->uid,
				         strerror(errno));
			_exit(0);
		}
	}
	if (setresuid(0, 0, 0) == 0 || geteuid() == 0 || getegid() == 0)
		_exit(1);
	if (bus_address(a->uid, a->bus, addr, sizeof(addr), why, sizeof(why)) < 0) {
		if (a->verbose)
			log_info("launcher: no session bus for uid %u: %s; the dock shows nothing", (unsigned)a->uid,
			         why);
		_exit(0);
	}
	snprintf(rundir, sizeof(rundir), "/run/user/%u", (unsigned)a->uid);
	struct launcher_env_in in = {
	    .uid = a->uid,
	    .bus = addr,
	    .home = a->home,
	    .user = a->user,
	    .runtime_dir = lstat(rundir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == a->uid ? rundir : NULL,
	    .lang = a->lang,
	};
	if (launcher_env_build(&in, &env, why, sizeof(why)) < 0) {
		if (a->verbose)
			log_info("launcher: no session bus for uid %u: %s; the dock shows nothing", (unsigned)a->uid,
			         why);
		_exit(0);
	}
	char *argv[4] = {(char *)LAUNCHER_HELPER}, **arg = argv + 1;
	if (a->verbose)
		*arg++ = (char *)"-v";
	*arg = (char *)a->desktop_id;
	execve(a->helper, argv, env.envp);
	if (a->verbose)
		log_info("launcher: cannot run %s: %s; the dock shows nothing", a->helper, strerror(errno));
	_exit(0);
}

struct launcher *launcher_start(const char *desktop_id, int verbose)
{
	char helper[PATH_MAX], why[PATH_MAX + 256];
	char bus[BUS_MAX + 2] = "", home[DIR_MAX + 2] = "", user[NAME_MAX_LEN + 2] = "", lang[NAME_MAX_LEN + 2] = "";
	struct launcher *l;
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	int p[2];

	if (!desktop_id || strcmp(desktop_id, "off") == 0)
		return NULL;
	if (!launcher_desktop_id_ok(desktop_id)) {
		if (verbose)
			log_info("launcher: none: \"%s\" is not a desktop file id", desktop_id);
		return NULL;
	}
	if (launcher_user(&uid, &gid, why, sizeof(why)) < 0 ||
	    launcher_helper(helper, sizeof(helper), why, sizeof(why)) < 0) {
		if (verbose)
			log_info("launcher: none: %s", why);
		return NULL;
	}
	/* Copied whole, or cut one byte past the longest allowed: then refused
	 * or left out by launcher_env_build. */
	if (getenv("DBUS_SESSION_BUS_ADDRESS"))
		snprintf(bus, sizeof(bus), "%s", getenv("DBUS_SESSION_BUS_ADDRESS"));
	if (getenv("LANG"))
		snprintf(lang, sizeof(lang), "%s", getenv("LANG"));
	if ((pw = getpwuid(uid))) {
		snprintf(home, sizeof(home), "%s", pw->pw_dir ? pw->pw_dir : "");
		snprintf(user, sizeof(user), "%s", pw->pw_name ? pw->pw_name : "");
	}
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(l);
		return NULL;
	}
	fflush(NULL);
	l->pid = fork();
	if (l->pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		/* The pipe as stdin, kept across execve (dup2 onto itself, when
		 * stdin was closed, would keep its close-on-exec). */
		if ((p[0] == STDIN_FILENO ? fcntl(p[0], F_SETFD, 0) : dup2(p[0], STDIN_FILENO)) < 0 || devnull < 0 ||
		    dup2(devnull, STDOUT_FILENO) < 0)
			_exit(1);
		fds_close_from(3);
		/* ^C at the terminal, or a SIGTERM to the whole group, is for
		 * the parent: the helper ends when the pipe does, clearing the
		 * entry first. Ignored stays ignored across execve. */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		struct child_args a = {.uid = uid,
		                       .gid = gid,
		                       .helper = helper,
		                       .desktop_id = desktop_id,
		                       .bus = bus,
		                       .home = home,
		                       .user = user,
		                       .lang = lang,
		                       .verbose = verbose};
		child_exec(&a);
	}
	close(p[0]);
	if (l->pid < 0) {
		close(p[1]);
		free(l);
		return NULL;
	}
	l->fd = p[1];
	fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN); /* a helper gone (no bus) is EPIPE, not our end */
	return l;
}

static void send_line(struct launcher *l, enum launcher_op op, double value)
{
	char line[LAUNCHER_LINE_MAX];
	size_t n;

	if (!l || l->fd < 0 || !(n = launcher_line(line, sizeof(line), op, value)))
		return;
	if (write(l->fd, line, n) < 0 && errno == EPIPE) {
		close(l->fd); /* the helper is gone (no bus): stop writing */
		l->fd = -1;
	}
}

void launcher_count(struct launcher *l, unsigned n)
{
	send_line(l, LAUNCHER_OP_COUNT, n);
}

void launcher_progress(struct launcher *l, double fraction)
{
	send_line(l, LAUNCHER_OP_PROGRESS, fraction);
}

void launcher_urgent(struct launcher *l, int on)
{
	send_line(l, LAUNCHER_OP_URGENT, on);
}

void launcher_stop(struct launcher *l)
{
	if (!l)
		return;
	send_line(l, LAUNCHER_OP_CLEAR, 0);
	if (l->fd >= 0)
		close(l->fd);
	for (int i = 0; i < STOP_WAIT_MS / 10; i++) {
		if (waitpid(l->pid, NULL, WNOHANG) != 0)
			goto done;
		nanosleep(&(struct timespec){0, 10000000L}, NULL);
	}
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
done:
	free(l);
}
