/* The launcher entry; see launcher.h.
 *
 * Design note. The parent writes one short line per change on a
 * non-blocking pipe ("count N", "progress F", "progress -", "urgent 0|1",
 * "clear"); a line is shorter than PIPE_BUF, so it goes whole or not at all,
 * and a full pipe drops it rather than holding up the watch. The child is
 * forked before anything else runs in the watch (no threads, no GLib in the
 * parent), keeps only the pipe, drops to the user for good, clears its
 * environment but for what GLib needs to find that user's session bus, and
 * only then touches GLib. The pipe's end (the parent stopping, or dying)
 * clears the entry and ends the child. */
#include "dumpwatch/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/fds.h"
#include "dumpwatch/log.h"

#ifdef DW_HAVE_LIBUNITY
#include <gio/gio.h>
#include <glib-unix.h>
#include <unity.h>
#endif

/* How long the child may take to send the cleared entry at the end. */
#define STOP_WAIT_MS 2000

struct launcher {
	pid_t pid;
	int fd;
};

int launcher_built_in(void)
{
#ifdef DW_HAVE_LIBUNITY
	return 1;
#else
	return 0;
#endif
}

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

#ifdef DW_HAVE_LIBUNITY
static UnityLauncherEntry *entry;
static GMainLoop *main_loop;
static char inbuf[512];
static size_t inlen;

static void apply(const char *line)
{
	if (strncmp(line, "count ", 6) == 0) {
		long n = strtol(line + 6, NULL, 10);
		unity_launcher_entry_set_count(entry, n);
		unity_launcher_entry_set_count_visible(entry, n > 0);
	} else if (strcmp(line, "progress -") == 0) {
		unity_launcher_entry_set_progress_visible(entry, FALSE);
	} else if (strncmp(line, "progress ", 9) == 0) {
		double f = strtod(line + 9, NULL);
		unity_launcher_entry_set_progress(entry, f < 0 ? 0 : f > 1 ? 1 : f);
		unity_launcher_entry_set_progress_visible(entry, TRUE);
	} else if (strncmp(line, "urgent ", 7) == 0) {
		unity_launcher_entry_set_urgent(entry, line[7] == '1');
	} else if (strcmp(line, "clear") == 0) {
		unity_launcher_entry_set_count_visible(entry, FALSE);
		unity_launcher_entry_set_progress_visible(entry, FALSE);
		unity_launcher_entry_set_urgent(entry, FALSE);
	}
}

static gboolean on_input(gint fd, GIOCondition cond, gpointer data)
{
	(void)cond;
	(void)data;
	ssize_t n = read(fd, inbuf + inlen, sizeof(inbuf) - 1 - inlen);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return G_SOURCE_CONTINUE;
	if (n <= 0) {
		apply("clear");
		g_main_loop_quit(main_loop);
		return G_SOURCE_REMOVE;
	}
	inlen += (size_t)n;
	inbuf[inlen] = '\0';
	char *start = inbuf, *nl;
	while ((nl = strchr(start, '\n'))) {
		*nl = '\0';
		apply(start);
		start = nl + 1;
	}
	inlen = strlen(start);
	memmove(inbuf, start, inlen + 1);
	if (inlen == sizeof(inbuf) - 1) /* no line ends in it: not ours */
		inlen = 0;
	return G_SOURCE_CONTINUE;
}

static gboolean on_quiet(gpointer data)
{
	(void)data;
	g_main_loop_quit(main_loop);
	return G_SOURCE_REMOVE;
}

/* The session bus of uid: the address dumpwatch was given (sudo keeps it
 * only when told to), else the user's own /run/user/UID/bus when it is that
 * user's socket. */
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

static void child_main(int fd, uid_t uid, gid_t gid, const char *desktop_id, const char *given_bus, int verbose)
{
	char addr[512], why[512], home[512] = "/";
	struct passwd *pw;

	/* For good: groups, then group, then user; and no way back. */
	if (geteuid() == 0 || getuid() != uid) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
			if (verbose)
				log_info("launcher: cannot become uid %u: %s; the dock shows nothing", (unsigned)uid,
				         strerror(errno));
			_exit(0);
		}
	}
	if (setresuid(0, 0, 0) == 0 || geteuid() == 0 || getegid() == 0)
		_exit(1);
	if (bus_address(uid, given_bus, addr, sizeof(addr), why, sizeof(why)) < 0) {
		if (verbose)
			log_info("launcher: no session bus for uid %u: %s; the dock shows nothing", (unsigned)uid, why);
		_exit(0);
	}
	if ((pw = getpwuid(uid)) && pw->pw_dir)
		snprintf(home, sizeof(home), "%s", pw->pw_dir);
	/* Only what GLib needs to reach this user's bus and nothing else. */
	clearenv();
	setenv("DBUS_SESSION_BUS_ADDRESS", addr, 1);
	setenv("HOME", home, 1);
	setenv("PATH", "/usr/bin:/bin", 1);
	setenv("GIO_USE_VFS", "local", 1);

	GError *err = NULL;
	GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &err);
	if (!bus) {
		if (verbose)
			log_info("launcher: no session bus for uid %u at %s: %s; the dock shows nothing", (unsigned)uid,
			         addr, err ? err->message : "?");
		_exit(0);
	}
	entry = unity_launcher_entry_get_for_desktop_id(desktop_id);
	if (!entry) {
		if (verbose)
			log_info("launcher: no launcher entry for %s", desktop_id);
		_exit(0);
	}
	if (verbose)
		log_info("launcher: showing dumps on the launcher entry of %s (uid %u, %s)", desktop_id, (unsigned)uid,
		         addr);
	main_loop = g_main_loop_new(NULL, FALSE);
	g_unix_set_fd_nonblocking(fd, TRUE, NULL);
	g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_input, NULL);
	g_main_loop_run(main_loop);
	/* The cleared entry is sent from an idle callback: let it run, then
	 * flush what is queued on the bus. */
	g_timeout_add(100, on_quiet, NULL);
	g_main_loop_run(main_loop);
	g_dbus_connection_flush_sync(bus, NULL, NULL);
	_exit(0);
}
#endif

struct launcher *launcher_start(const char *desktop_id, int verbose)
{
#ifdef DW_HAVE_LIBUNITY
	struct launcher *l;
	char why[256];
	uid_t uid;
	gid_t gid;
	int p[2];

	if (!desktop_id || strcmp(desktop_id, "off") == 0)
		return NULL;
	if (launcher_user(&uid, &gid, why, sizeof(why)) < 0) {
		if (verbose)
			log_info("launcher: none: %s", why);
		return NULL;
	}
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(l);
		return NULL;
	}
	const char *bus = getenv("DBUS_SESSION_BUS_ADDRESS");
	char given[512] = "";
	if (bus)
		snprintf(given, sizeof(given), "%s", bus);
	fflush(NULL);
	l->pid = fork();
	if (l->pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		if (dup2(p[0], 3) < 0)
			_exit(1);
		fds_close_from(4);
		/* ^C at the terminal, or a SIGTERM to the whole group, is for
		 * the parent: the child ends when the pipe does, clearing the
		 * entry first. */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		child_main(3, uid, gid, desktop_id, given, verbose);
		_exit(0);
	}
	close(p[0]);
	if (l->pid < 0) {
		close(p[1]);
		free(l);
		return NULL;
	}
	l->fd = p[1];
	fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN); /* a child gone (no bus) is EPIPE, not our end */
	return l;
#else
	(void)desktop_id;
	(void)verbose;
	return NULL;
#endif
}

static void sendf(struct launcher *l, const char *fmt, ...)
{
	char line[64];
	va_list ap;
	int n;

	if (!l || l->fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (write(l->fd, line, (size_t)n) < 0 && errno == EPIPE) {
		close(l->fd); /* the child is gone (no bus): stop writing */
		l->fd = -1;
	}
}

void launcher_count(struct launcher *l, unsigned n)
{
	sendf(l, "count %u\n", n);
}

void launcher_progress(struct launcher *l, double fraction)
{
	if (fraction < 0)
		sendf(l, "progress -\n");
	else
		sendf(l, "progress %.3f\n", fraction > 1 ? 1.0 : fraction);
}

void launcher_urgent(struct launcher *l, int on)
{
	sendf(l, "urgent %d\n", on ? 1 : 0);
}

void launcher_stop(struct launcher *l)
{
	if (!l)
		return;
	sendf(l, "clear\n");
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
