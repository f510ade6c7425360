/* The desktop launcher entry during a command-line watch (libunity's
 * com.canonical.Unity.LauncherEntry, read by Unity, Plank, Dash to Dock and
 * KDE's task manager): a count badge of the dumps taken, a progress bar while
 * one is written, urgent when a rule fires or a dump fails, all cleared at
 * the end.
 *
 * Root never speaks on a user's session bus and never loads GLib: the
 * launcher is a child process that drops to the user who ran sudo
 * (SUDO_UID/SUDO_GID; a non-root run keeps its own user) for good and then
 * executes the helper program dumpwatch-launcher (src/helpers/launcher/, the
 * only program that links libunity) with an environment of a few checked
 * variables. The watch tells it what to show as lines on a pipe, its stdin.
 * Without the helper (not built, not installed, or not trusted), a user or a
 * session bus there is no launcher and every call here is a no-op; the watch
 * never waits on it (a full pipe drops the update).
 *
 * The lines, one change each, shorter than LAUNCHER_LINE_MAX:
 *   count N        the dumps taken so far (the badge shows when above 0)
 *   progress F     a dump's progress, 0..1; the bar shows
 *   progress -     the bar hides
 *   urgent 0|1
 *   clear          all of it hidden
 * The end of the pipe means clear, and the helper's end. */
#ifndef DUMPWATCH_LAUNCHER_H
#define DUMPWATCH_LAUNCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LAUNCHER_DEFAULT_ID "dumpwatch.desktop"
/* The helper program, found by trust_helper_path. */
#define LAUNCHER_HELPER "dumpwatch-launcher"
/* The longest line, its newline included. */
#define LAUNCHER_LINE_MAX 64

struct launcher;

/* Whether a watch would have a launcher helper: 0 with its path in path, or
 * -errno with a sentence in why (not installed, or refused by the trust
 * checks). Run as root, the check is root's. */
int launcher_helper(char *path, size_t pathlen, char *why, size_t whylen);

/* Starts the launcher for desktop_id ("off" or NULL: none). verbose: the
 * launcher says in one line why there is none, or which entry it shows.
 * Returns NULL when there is none. */
struct launcher *launcher_start(const char *desktop_id, int verbose);

/* The dumps taken so far (shown when above 0). */
void launcher_count(struct launcher *l, unsigned n);
/* A dump's progress, 0..1; below 0 hides the bar. */
void launcher_progress(struct launcher *l, double fraction);
void launcher_urgent(struct launcher *l, int on);

/* Clears everything, lets the helper send that and exit (bounded wait), and
 * frees. NULL is a no-op. */
void launcher_stop(struct launcher *l);

/* For tests and the child: which user the launcher would run as, from the
 * real uid and SUDO_UID/SUDO_GID. Returns 0, or -1 with why (root without
 * sudo, a malformed or root SUDO_UID). */
int launcher_user(uid_t *uid, gid_t *gid, char *why, size_t whylen);

/* Whether id may name a launcher entry: a desktop file id as docks look
 * them up (letters, digits, '-', '_' and '.', ending in ".desktop", not
 * starting with '.' or '-', at most 255 bytes). */
int launcher_desktop_id_ok(const char *id);

/* ---- the protocol (pure) ------------------------------------------------ */

/* What the entry shows. The badge shows exactly when count is above 0: a
 * dock draws "0" for a visible count of 0. */
struct launcher_state {
	int64_t count;
	double progress; /* 0..1 */
	int progress_visible;
	int urgent;
};

enum launcher_op { LAUNCHER_OP_COUNT, LAUNCHER_OP_PROGRESS, LAUNCHER_OP_URGENT, LAUNCHER_OP_CLEAR };

/* The line for op into buf, newline included: count takes value as a whole
 * number (0 and up), progress a fraction (below 0: hide the bar; above 1:
 * 1), urgent 0 or not. Returns its length, or 0 when buf is too short. */
size_t launcher_line(char *buf, size_t len, enum launcher_op op, double value);

/* Applies one line (without its newline) to *s. 0, or -EINVAL for a line
 * that is none of the above (*s untouched). */
int launcher_apply_line(struct launcher_state *s, const char *line);

/* Whether a and b show the same. */
int launcher_state_equal(const struct launcher_state *a, const struct launcher_state *b);

/* Cuts what the pipe gives into lines. A line longer than LAUNCHER_LINE_MAX,
 * or holding a NUL, is dropped up to its newline. */
struct launcher_reader {
	char buf[LAUNCHER_LINE_MAX];
	size_t len;
	int skipping; /* in a line too long: dropped up to its newline */
};

/* Takes one line (without its newline): 0, or -EINVAL when it is not one. */
typedef int (*launcher_line_fn)(void *ctx, const char *line);

/* Feeds n bytes to r, calling fn for every line they end. Returns the number
 * of lines dropped or refused by fn. */
size_t launcher_reader_feed(struct launcher_reader *r, const char *data, size_t n, launcher_line_fn fn, void *ctx);

/* ---- the helper's pace (pure) ------------------------------------------- */

/* The least time between two states the helper pushes to libunity, which
 * sends each as one Update of the properties that changed. Plank (0.11.89,
 * lib/Services/Unity.vala, handle_update_request) takes an Update that
 * arrives less than 32 ms after the last one it applied from the same
 * sender (from the fifth on) only after a 32 ms timer, and one arriving
 * meanwhile replaces it: of a burst only the first and the last count, and
 * what a dropped one changed is never sent again (the count after a dump,
 * written between "progress 1" and "progress -", was lost so). 100 ms apart,
 * three Updates meet within 32 ms only when the dock stalls for 200 ms. */
#define LAUNCHER_PUSH_GAP_US 100000

/* The lines gathered into the state to push, at most one push per gap. A
 * "clear" (or the pipe's end) while a state is still to be pushed comes
 * after it: what the watch showed last, the count after a dump, is pushed
 * before the entry is cleared at the end. */
struct launcher_pacer {
	struct launcher_reader reader;
	struct launcher_state shown;   /* pushed last */
	struct launcher_state pending; /* to push next */
	struct launcher_state next;    /* after pending: the lines since a clear */
	int cleared;                   /* next is in use */
	int ended;                     /* the pipe ended */
	int64_t last_push_us;
};

/* Starts with the entry as libunity makes it (nothing shown), the first
 * push a gap after now_us. */
void launcher_pacer_init(struct launcher_pacer *p, int64_t now_us);
/* Feeds bytes from the pipe; n == 0: its end (as "clear"). Returns the
 * number of lines dropped. */
size_t launcher_pacer_feed(struct launcher_pacer *p, const char *data, size_t n);
/* When the next push is due, or INT64_MAX when there is nothing to push. */
int64_t launcher_pacer_due(const struct launcher_pacer *p);
/* At now_us: 1 with the state to push in *out when one is due, else 0. */
int launcher_pacer_take(struct launcher_pacer *p, int64_t now_us, struct launcher_state *out);
/* Whether the pipe ended and everything, the cleared entry last, is pushed. */
int launcher_pacer_done(const struct launcher_pacer *p);

/* ---- the helper's environment (pure) ------------------------------------ */

/* What the helper's environment is made of; NULL or empty: not known. */
struct launcher_env_in {
	uid_t uid;
	const char *bus;         /* the session bus's address (required) */
	const char *home;        /* the user's home directory */
	const char *user;        /* the user's name */
	const char *runtime_dir; /* the user's XDG_RUNTIME_DIR */
	const char *lang;        /* LANG, passed on when it is a plain locale name */
};

#define LAUNCHER_ENV_VARS 10
#define LAUNCHER_ENV_BYTES 2048

/* The environment the helper is executed with: only what GLib needs to reach
 * the user's session bus. Nothing is taken over from the caller's
 * environment by name: no LD_*, no GIO_* or GTK module variables, no
 * DISPLAY. */
struct launcher_env {
	char *envp[LAUNCHER_ENV_VARS + 1]; /* for execve, NULL-terminated */
	char buf[LAUNCHER_ENV_BYTES];
};

/* Fills *out from in. Every value is checked: the bus address must be a
 * D-Bus address (printable, no blanks, only the characters the D-Bus
 * specification's address syntax allows) else -EINVAL with why; a home or
 * runtime directory that is not an absolute path of printable characters is
 * replaced by "/" or left out, a user name of other than portable characters
 * is left out, and so is a LANG that is not a plain locale name. 0 or
 * -EINVAL. */
int launcher_env_build(const struct launcher_env_in *in, struct launcher_env *out, char *why, size_t whylen);

#endif
