/* Rule files (JSON, parsed with json-c): one rule object, or {"rules": [...]}.
 * Strict validation with positions: every problem is reported as
 * "file:line:column: message", where the position is that of the offending
 * key or value in the source text (json-c keeps no positions, so the text is
 * scanned for them). Pure: text in, rules and diagnostics out; reading the
 * file is the caller's job (rulefile_io.h: rulefile_read_trusted checks it
 * first, trust.h), and `dumpwatch check` reports with rulecheck.h.
 * See dumpwatch-rules(5) for the format and its defaults.
 *
 * Messages quote keys and values of a file only when it looks like a rule
 * file: its top level (and each entry of "rules") is an object that has
 * "name" or "when" ("rules" for the list form), and more than half of its keys
 * are keys of the format or near misses of one (a typo). Anything else (a link
 * to some other JSON file, say) gets one diagnostic with a position and what
 * was expected, and nothing of its content. */
#ifndef DUMPWATCH_RULEFILE_H
#define DUMPWATCH_RULEFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/hookcmd.h"
#include "dumpwatch/rules.h"

#define RULEFILE_GLOB_MAX 256
#define RULEFILE_DESC_MAX 512
#define RULEFILE_MSG_MAX 512
#define RULEFILE_SIZE_MAX (1024 * 1024) /* bytes; a larger file is refused */
#define RULEFILE_DEPTH_MAX 32           /* nesting levels of objects and arrays */
#define RULEFILE_RULES_MAX 1000         /* rules in one file */
#define RULEFILE_DIR_MAX 10000          /* rule files taken from one directory */

/* Which processes a rule guards; every filter given must match. */
struct rule_filter {
	char name[RULEFILE_GLOB_MAX];    /* glob on the process name; "" = any */
	char cmdline[RULEFILE_GLOB_MAX]; /* glob on the full command line; "" = any */
	int has_pid;
	pid_t pid;
	int has_user;
	char user[64]; /* as written: a user name or a decimal uid */
};

struct file_rule {
	struct rule rule; /* name, conditions, limits, dump type */
	char description[RULEFILE_DESC_MAX];
	struct rule_filter filter;
	char dump_dir[PATH_MAX]; /* "" = the daemon's --dump-dir */
	char name_template[256]; /* dump file name template; "" = the default */
	int enabled;
	/* "hooks": commands run when the rule fires and when its dump is
	 * published (argc 0: the daemon's --on-fire / --on-dump), and their
	 * timeout (0: the daemon's --hook-timeout). */
	struct hook_cmd on_fire, on_dump;
	int64_t hook_timeout_ns;
	/* "upload": -1 as the daemon is configured (--upload), 0 not uploaded,
	 * 1 uploaded (the daemon's --upload must say where); a key prefix of the
	 * rule's own ("" the daemon's), and whether the local copy is kept (-1
	 * as the daemon says). */
	int upload;
	char upload_prefix[256];
	int upload_keep;
	int line;                           /* where the rule object starts in its file */
	int name_line, name_column;         /* where its "name" value is, for duplicate reports */
	int dump_dir_line, dump_dir_column; /* where its "dump.dir" value is (0 when none) */
};

struct rule_diag {
	int line, column; /* 1-based; 0 when unknown */
	char message[RULEFILE_MSG_MAX];
};

/* Parses the rule file text (len bytes; need not be NUL-terminated).
 * On success returns the number of rules (>= 0) in *ret (malloc'd, free with
 * free()). When the file has any error, returns -EINVAL, *ret is NULL, and up
 * to max_diags diagnostics are stored in diags with their count in
 * *ret_ndiags (the first error of each kind is always among them). A file is
 * all or nothing: one bad rule rejects the file, so that the caller keeps its
 * last good version. */
int rulefile_parse(const char *text, size_t len, struct file_rule **ret, struct rule_diag *diags, size_t max_diags,
                   size_t *ret_ndiags);

/* Formats d as "path:line:column: message" into buf. */
void rulefile_format_diag(const char *path, const struct rule_diag *d, char *buf, size_t len);

/* Whether a process matches a rule's filter. name is the process name as
 * discovery_process_name gives it, cmdline the full command line, uid its
 * real uid; user names are resolved with getpwnam by the caller beforehand
 * into uid_of_user (-1 when the name does not exist). */
int rulefile_filter_match(const struct rule_filter *f, const char *name, const char *cmdline, pid_t pid, uid_t uid,
                          long uid_of_user);

/* Checks that every rule's dump.dir lies inside one of dirs (n_dirs
 * normalized absolute directories: the daemon's --dump-dir and its
 * --allow-dump-dir; trust_path_within) and has no ".." component. Rules
 * without dump.dir use the daemon's --dump-dir and always pass; so does every
 * rule when n_dirs is 0. Returns 0, or -EINVAL with up to max_diags
 * diagnostics at the position of each offending value, naming the allowed
 * directories. Pure. */
int rulefile_check_dump_dirs(const struct file_rule *rules, size_t n, const char *const *dirs, size_t n_dirs,
                             struct rule_diag *diags, size_t max_diags, size_t *ret_ndiags);

/* Formats the diagnostic for rule r of path whose name is already defined at
 * other_path:line:column: "path:line:column: rule name "x" is also defined at
 * other:line:column". */
void rulefile_format_duplicate(const char *path, const struct file_rule *r, const char *other_path, int other_line,
                               int other_column, char *buf, size_t len);

#endif
