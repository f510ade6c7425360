/* The desktop launcher entry during a command-line watch (libunity's
 * com.canonical.Unity.LauncherEntry, read by Unity, Plank, Dash to Dock and
 * KDE's task manager): a count badge of the dumps taken, a progress bar while
 * one is written, urgent when a rule fires or a dump fails, all cleared at
 * the end.
 *
 * Root never speaks on a user's session bus: the launcher is a child process
 * that drops to the user who ran sudo (SUDO_UID/SUDO_GID; a non-root run
 * keeps its own user) for good before any GLib or D-Bus call, and takes what
 * to show as lines on a pipe. Without libunity at build time, without a user
 * or without a session bus there is no launcher and every call here is a
 * no-op; the watch never waits on it (a full pipe drops the update). */
#ifndef DUMPWATCH_LAUNCHER_H
#define DUMPWATCH_LAUNCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LAUNCHER_DEFAULT_ID "dumpwatch.desktop"

struct launcher;

/* Whether this build has the launcher (libunity). */
int launcher_built_in(void);

/* Starts the launcher for desktop_id ("off" or NULL: none). verbose: the
 * child says in one line why there is no launcher. Returns NULL when there is
 * none. */
struct launcher *launcher_start(const char *desktop_id, int verbose);

/* The dumps taken so far (shown when above 0). */
void launcher_count(struct launcher *l, unsigned n);
/* A dump's progress, 0..1; below 0 hides the bar. */
void launcher_progress(struct launcher *l, double fraction);
void launcher_urgent(struct launcher *l, int on);

/* Clears everything, lets the child send that and exit (bounded wait), and
 * frees. NULL is a no-op. */
void launcher_stop(struct launcher *l);

/* For tests and the child: which user the launcher would run as, from the
 * real uid and SUDO_UID/SUDO_GID. Returns 0, or -1 with why (root without
 * sudo, a malformed or root SUDO_UID). */
int launcher_user(uid_t *uid, gid_t *gid, char *why, size_t whylen);

#endif
