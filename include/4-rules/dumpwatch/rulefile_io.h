/* Rule files on disk: reading one for rulefile_parse (bounded; through the
 * trust checks when it may give orders, trust.h) and listing the rule files
 * of a directory. Does I/O; the parser (rulefile.h) does none. */
#ifndef DUMPWATCH_RULEFILE_IO_H
#define DUMPWATCH_RULEFILE_IO_H

#include <stddef.h>
#include <sys/types.h>

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

#endif
