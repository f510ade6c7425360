/* Rule files (JSON, parsed with json-c): one rule object, or {"rules": [...]}.
 * Strict validation with positions: every problem is reported as
 * "file:line:column: message", where the position is that of the offending
 * key or value in the source text (json-c keeps no positions, so the text is
 * scanned for them). Pure: text in, rules and diagnostics out; reading the
 * file is the caller's job (rulefile_read_trusted checks it first, trust.h).
 * See README "Rule files" for the format and its defaults.
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
#include <stdio.h>
#include <sys/types.h>

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

/* Reads a rule file for rulefile_parse: at most RULEFILE_SIZE_MAX + 1 bytes
 * (so that an oversized file reaches the parser and is refused there with a
 * diagnostic). Returns 0 with *ret_text (malloc'd, NUL-terminated) and
 * *ret_len, or -errno with a sentence in err (no such file, not a regular
 * file, permission). No trust checks: for files the caller already trusts
 * (tests, tools). Does I/O. */
int rulefile_read(const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen);

/* The same from an open descriptor (not closed); path names it in err. */
int rulefile_read_fd(int fd, const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen);

/* Reads a rule file after the trust checks (trust_open with trusted owners
 * root and self): the file read is the file checked. A relative path is taken
 * from the current directory. Returns as rulefile_read; -EPERM when refused,
 * with "path: refused: REASON" in err; -ENOENT when it (or a link's target)
 * is not there; other errors with "path: PHRASE". Does I/O. */
int rulefile_read_trusted(const char *path, uid_t self, char **ret_text, size_t *ret_len, char *err, size_t errlen);

/* Whether a directory entry is a rule file: *.json, not hidden, not
 * *.schema.json (editors' temporary and backup files never end in .json). */
int rulefile_is_rule_file_name(const char *name);

/* The rule file names directly in dir, sorted (at most RULEFILE_DIR_MAX;
 * *ret_truncated says when there were more). Free with rulefile_free_names.
 * 0 or -errno. Does I/O. */
int rulefile_list_dir(const char *dir, char ***ret, size_t *ret_n, int *ret_truncated);
void rulefile_free_names(char **names, size_t n);

/* Formats the diagnostic for rule r of path whose name is already defined at
 * other_path:line:column: "path:line:column: rule name "x" is also defined at
 * other:line:column". */
void rulefile_format_duplicate(const char *path, const struct file_rule *r, const char *other_path, int other_line,
                               int other_column, char *buf, size_t len);

/* `dumpwatch check`: validates each path, a rule file or a directory (every
 * *.json directly in it, sorted by name; hidden files and *.schema.json are
 * skipped), as the daemon would: each file is read through
 * rulefile_read_trusted with the caller's effective uid trusted beside root
 * (a refusal is printed as "file: refused: REASON"), and every dump.dir must
 * lie inside one of dump_dirs (rulefile_check_dump_dirs; none given: not
 * checked). Prints each diagnostic as "file:line:column: message" to errf
 * and, for each good file, "file: N rules OK" to outf; also reports a rule
 * name defined in two files ("rule name "x" is also defined at
 * other:line:column"). Returns DW_EXIT_OK (0) when all files are good,
 * DW_EXIT_USAGE (1) when any has an error or is refused, DW_EXIT_TARGET (2)
 * when a path cannot be read (after checking the others). Does I/O. */
int rulefile_check_paths(char *const *paths, size_t n_paths, const char *const *dump_dirs, size_t n_dump_dirs,
                         FILE *outf, FILE *errf);

#endif
