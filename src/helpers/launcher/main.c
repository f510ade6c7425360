/* dumpwatch-launcher: shows a watch's dumps on the desktop launcher entry of
 * the user it runs as, through libunity on that user's session bus.
 *
 *   dumpwatch-launcher [-v] DESKTOP_ID
 *
 * dumpwatch (launcher.c) executes it as the user who ran sudo, with stdin a
 * pipe of the lines launcher.h describes and an environment of what GLib
 * needs to reach the bus. It is the only program of dumpwatch that links
 * libunity (and so GLib, GIO, ICU and libstdc++): the root daemon never loads
 * them. It never runs as root. The end of its stdin clears the entry; then
 * it ends. It stays connected until then: a dock forgets what a sender
 * showed when the sender leaves the bus.
 *
 * The lines are gathered and pushed to libunity at most once every
 * LAUNCHER_PUSH_GAP_US (launcher.h says why: a dock drops Updates that come
 * too close together); the pace is launcher.c's launcher_pacer, this file
 * only runs it on GLib's loop. */
#include <errno.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <unity.h>

#include "dumpwatch/launcher.h"
#include "dumpwatch/log.h"

static UnityLauncherEntry *entry;
static GDBusConnection *bus;
static GMainLoop *main_loop;
static struct launcher_pacer pacer;
static guint push_id;
static int finishing;

/* Tells libunity what to show; it sends what changed as one Update from an
 * idle callback. A count of 0 is never shown: a dock would draw "0". */
static void push(const struct launcher_state *s)
{
	if (s->count > 0) {
		unity_launcher_entry_set_count(entry, s->count);
		unity_launcher_entry_set_count_visible(entry, TRUE);
	} else {
		unity_launcher_entry_set_count_visible(entry, FALSE);
		unity_launcher_entry_set_count(entry, 0);
	}
	unity_launcher_entry_set_progress(entry, s->progress);
	unity_launcher_entry_set_progress_visible(entry, s->progress_visible ? TRUE : FALSE);
	unity_launcher_entry_set_urgent(entry, s->urgent ? TRUE : FALSE);
}

static gboolean on_sent(gpointer data)
{
	(void)data;
	g_dbus_connection_flush_sync(bus, NULL, NULL);
	g_main_loop_quit(main_loop);
	return G_SOURCE_REMOVE;
}

static gboolean on_push(gpointer data);

/* The next push at its time, or the end once all is pushed. */
static void plan(void)
{
	int64_t due = launcher_pacer_due(&pacer);

	if (push_id || finishing)
		return;
	if (due != INT64_MAX) {
		int64_t wait_ms = (due - g_get_monotonic_time() + 999) / 1000;
		push_id = g_timeout_add(wait_ms > 0 ? (guint)wait_ms : 0, on_push, NULL);
	} else if (launcher_pacer_done(&pacer)) {
		/* libunity's last Update goes out from an idle callback of
		 * default idle priority; one of lower priority runs after it. */
		finishing = 1;
		g_idle_add_full(G_PRIORITY_LOW, on_sent, NULL, NULL);
	}
}

static gboolean on_push(gpointer data)
{
	struct launcher_state s;
	(void)data;

	push_id = 0;
	if (launcher_pacer_take(&pacer, g_get_monotonic_time(), &s))
		push(&s);
	plan();
	return G_SOURCE_REMOVE;
}

static gboolean on_input(gint fd, GIOCondition cond, gpointer data)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	(void)cond;
	(void)data;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return G_SOURCE_CONTINUE;
	/* 0: the watch ended (or died); an error ends it all the same. */
	launcher_pacer_feed(&pacer, buf, n > 0 ? (size_t)n : 0);
	plan();
	return n > 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	const char *id = NULL;
	GError *err = NULL;
	int verbose = 0;

	if (argc == 3 && strcmp(argv[1], "-v") == 0) {
		verbose = 1;
		id = argv[2];
	} else if (argc == 2) {
		id = argv[1];
	}
	if (!id || !launcher_desktop_id_ok(id)) {
		fprintf(stderr,
		        "usage: %s [-v] DESKTOP_ID\n"
		        "Shows on the launcher entry DESKTOP_ID (such as dumpwatch.desktop) what dumpwatch\n"
		        "writes on stdin; dumpwatch runs it.\n",
		        LAUNCHER_HELPER);
		return 2;
	}
	if (getuid() == 0 || geteuid() == 0) {
		log_error("launcher: %s runs as the desktop user, never as root", LAUNCHER_HELPER);
		return 1;
	}
	bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &err);
	if (!bus) {
		if (verbose)
			log_info("launcher: no session bus for uid %u at %s: %s; the dock shows nothing",
			         (unsigned)getuid(), g_getenv("DBUS_SESSION_BUS_ADDRESS") ?: "?",
			         err ? err->message : "?");
		return 0;
	}
	entry = unity_launcher_entry_get_for_desktop_id(id);
	if (!entry) {
		if (verbose)
			log_info("launcher: no launcher entry for %s", id);
		return 0;
	}
	if (verbose)
		log_info("launcher: showing dumps on the launcher entry of %s (uid %u, %s)", id, (unsigned)getuid(),
		         g_getenv("DBUS_SESSION_BUS_ADDRESS") ?: "?");
	/* libunity sends the whole entry as soon as it finds the dock; the
	 * first push waits a gap after the entry is made. */
	launcher_pacer_init(&pacer, g_get_monotonic_time());
	main_loop = g_main_loop_new(NULL, FALSE);
	g_unix_set_fd_nonblocking(STDIN_FILENO, TRUE, NULL);
	g_unix_fd_add(STDIN_FILENO, G_IO_IN | G_IO_HUP | G_IO_ERR, on_input, NULL);
	g_main_loop_run(main_loop);
	return 0;
}
