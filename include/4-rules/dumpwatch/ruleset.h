/* The rules directory: every *.json directly in one directory (hidden files,
 * *.schema.json and editor leftovers skipped), parsed with rulefile and
 * watched with libinotifytools so that a change takes effect without a
 * restart.
 *
 * Guarantees:
 * - A file is accepted or rejected as a whole. A rejected edit leaves that
 *   file's last good version in force (if it ever had one); the file is read
 *   again on its next change and accepted once it is fixed.
 * - A rule name may be defined by one file only. A file that defines a name
 *   another file already has in force is rejected (with a "file:line:column:
 *   rule name "x" is also defined at other:line:column" diagnostic); the file
 *   that had it first keeps it.
 * - A file that is deleted or moved out of the directory takes its rules with
 *   it. When the directory itself is removed every rule goes; when it is
 *   created again (or when it did not exist at open) it is loaded as soon as
 *   it appears: the parent directory is watched meanwhile.
 * - Changes are taken on close-after-write and rename into the directory (an
 *   editor's save-by-rename), a symbolic link created in it, deletion and
 *   rename out; a burst of events on one file reads it once.
 * - Every file is read through the trust checks (trust.h: the file, each link
 *   on the way and every directory above them must be root's or the
 *   daemon's and writable by no one else). A file that fails them is refused:
 *   REJECTED with refused set and one "path: refused: REASON" line, and its
 *   last good version is withdrawn, not kept. A change of owner or mode of a
 *   file or of the directory itself is taken at once (IN_ATTRIB); of a
 *   directory further up, at the next reload.
 * - Rule files may be symbolic links, as in a Kubernetes ConfigMap volume
 *   (x.json -> ..data/x.json, ..data -> ..TIMESTAMP/): any change to a name
 *   starting with ".." (the ..data swap of an update) reads every file again,
 *   and only the files whose outcome changed are reported. A link to a file
 *   outside the directory is read again only when the link changes or on
 *   reload.
 * - A rule's dump.dir must lie inside one of the policy's dump directories
 *   (rulefile_check_dump_dirs); a file with one that does not is rejected
 *   like any invalid file.
 *
 * The caller polls ruleset_fd() and calls ruleset_process() when it is
 * readable. Every load, rejection and removal is reported through the
 * callback, which is where the caller logs and journals. */
#ifndef DUMPWATCH_RULESET_H
#define DUMPWATCH_RULESET_H

#include <stddef.h>
#include <stdint.h>

#include "dumpwatch/rulefile.h"

#define RULESET_DIAGS_MAX 16
/* Rules in force across all files (a struct file_rule is about 11 KB, so at
 * most ~110 MB); a file that would go beyond is rejected. */
#define RULESET_RULES_MAX 10000

enum ruleset_change_kind {
	RULESET_LOADED,   /* a file was (re)loaded: its rules are in force */
	RULESET_REJECTED, /* a file has errors: nothing of this version is in force */
	RULESET_REMOVED,  /* a file that had rules in force is gone: its rules are withdrawn */
	RULESET_DIR_GONE, /* the directory is gone (or missing): no rules in force */
	RULESET_DIR_BACK, /* the directory exists (again); its files follow as LOADED/REJECTED */
};

struct ruleset_change {
	enum ruleset_change_kind kind;
	const char *dir;  /* the rules directory */
	const char *file; /* full path of the file; NULL for DIR_* */
	/* LOADED: the rules of the file now in force (enabled or not). */
	const struct file_rule *rules;
	size_t n_rules;
	/* REJECTED: formatted "file:line:column: message" lines. */
	const char *const *diags;
	size_t n_diags;
	int kept_last_good; /* REJECTED: an earlier good version stays in force */
	size_t kept_rules;  /* REJECTED: how many rules that version has */
	/* REJECTED by the trust checks (one diagnostic, "path: refused: REASON"):
	 * kept_last_good is 0 and the withdrawn_rules rules of the version that
	 * was in force have left force. */
	int refused;
	size_t withdrawn_rules;
};

/* What the rules of the directory may ask for beyond the format. */
struct ruleset_policy {
	/* A rule's dump.dir must lie inside one of these (normalized absolute
	 * paths: the daemon's --dump-dir, then its --allow-dump-dir); none: not
	 * checked. Copied at open. */
	const char *const *dump_dirs;
	size_t n_dump_dirs;
};

typedef void (*ruleset_report_fn)(void *ctx, const struct ruleset_change *c);

struct ruleset;

/* Opens dir (absolute), loads every file in it (reporting each through fn,
 * in file name order) and starts watching. policy may be NULL (no dump.dir
 * check). Files are trusted when they are root's or the effective uid's (at
 * open). A missing directory is not an error: DIR_GONE is reported and the
 * directory is loaded when it appears. Returns 0, or -errno with a sentence
 * in err (inotify unavailable, the parent of dir missing, dir not a
 * directory). libinotifytools is process-wide, so only one ruleset may be
 * open in a process at a time: -EBUSY while another is. fn must not call back
 * into the ruleset. */
int ruleset_open(const char *dir, const struct ruleset_policy *policy, ruleset_report_fn fn, void *ctx,
                 struct ruleset **ret, char *err, size_t errlen);

/* NULL is a no-op. */
void ruleset_free(struct ruleset *rs);

/* The descriptor to poll for readability (the inotify descriptor). */
int ruleset_fd(const struct ruleset *rs);

/* Takes the pending directory events and applies them. Returns 1 when the
 * rules in force changed, 0 when not, -errno on a failure of inotify itself
 * (the caller may fall back to ruleset_reload). Never blocks. */
int ruleset_process(struct ruleset *rs);

/* Reads every file again, as at open (SIGHUP). Unchanged files report LOADED
 * again. Returns 1 when the rules in force changed, 0 when not. */
int ruleset_reload(struct ruleset *rs);

/* The enabled rules in force, across all files, in file name then file order.
 * The array and the rules stay valid until the next ruleset_process,
 * ruleset_reload or ruleset_free. */
size_t ruleset_active(const struct ruleset *rs, const struct file_rule *const **ret);

/* The full path of the file a rule of ruleset_active comes from, into out.
 * 0, or -ENOENT when r is not one of them. */
int ruleset_rule_path(const struct ruleset *rs, const struct file_rule *r, char *out, size_t outlen);

/* Increases whenever the rules in force change: the enabled rules, their
 * order, or any field of one but its position in its file. */
uint64_t ruleset_generation(const struct ruleset *rs);

/* A 64-bit hash of everything that defines how a rule behaves: its name,
 * conditions, limits, dump type, process filter, dump directory and name
 * template (not its description, position or enabled flag). Two versions of a
 * rule with the same hash are the same rule, so their limit state carries
 * over. Pure. */
uint64_t ruleset_rule_hash(const struct file_rule *r);

#endif
