/* Trust: which files may give orders to dumpwatch, and where the rules may
 * send dumps.
 *
 * A rule file decides what root dumps and where, so it is checked as sshd
 * checks its configuration: the file, every symbolic link on the way to it and
 * every directory passed, from / down, must be owned by root or by the user
 * dumpwatch runs as, and not writable by group or others. Two exceptions, each
 * because no one else can change what the path leads to:
 * - a directory with the sticky bit (/tmp): others may add entries but cannot
 *   rename or remove entries that are not theirs, and every entry passed is
 *   checked itself;
 * - a component on a read-only mount (a Kubernetes ConfigMap volume is a
 *   read-only mount whose top directory has mode 0777): nothing can be written
 *   through it.
 * A symbolic link's own mode means nothing; its owner is what counts.
 *
 * trust_judge is the decision for one component (pure); trust_open walks a
 * path component by component without following links on its own (it reads
 * each link and walks its target the same way) and returns a descriptor of the
 * file it checked, so that the file read is the file checked. */
#ifndef DUMPWATCH_TRUST_H
#define DUMPWATCH_TRUST_H

#include <stddef.h>
#include <sys/types.h>

#define TRUST_LINKS_MAX 40 /* symbolic links followed in one path, as the kernel's own limit */

/* Whether one component of a path may lead to a rule file. mode and uid are
 * its stat's; self is the user dumpwatch runs as (geteuid), trusted beside
 * root; ro says the component is on a read-only mount. path names it in the
 * reason. Returns 0, or -EPERM with a sentence in reason naming the component,
 * its owner and mode and the command that fixes it. Of a symbolic link or a
 * special file only the owner counts (a link's mode means nothing; a special
 * file is never read as a rule file). Pure. */
int trust_judge(const char *path, mode_t mode, uid_t uid, uid_t self, int ro, char *reason, size_t len);

/* Opens the regular file at path (absolute) for reading, checking every
 * component with trust_judge as it walks: "/" and each directory passed, each
 * symbolic link (read with readlinkat and its target walked the same way, at
 * most TRUST_LINKS_MAX of them; relative targets from the link's directory,
 * ".." physically), and finally the opened file itself (fstat of the returned
 * descriptor). Returns the descriptor (O_RDONLY, O_CLOEXEC, O_NONBLOCK), or
 * -errno with a phrase in err: -EPERM when a component is refused (err is
 * trust_judge's reason), -ENOENT when a component is missing (a dangling
 * link), -ELOOP, -ENOTDIR, -EISDIR, -EINVAL (not absolute, or not a regular
 * file), -ENAMETOOLONG, -EACCES. Does I/O. */
int trust_open(const char *path, uid_t self, char *err, size_t errlen);

/* Normalizes an absolute path into out: repeated '/' collapsed, "."
 * components and a trailing '/' dropped. Returns 0, -EINVAL when path is not
 * absolute or has a ".." component, -ENAMETOOLONG when it does not fit. Pure. */
int trust_path_normalize(const char *path, char *out, size_t outlen);

/* Whether path is dir or lies below it, on component boundaries: "/a/b" is
 * within "/a", "/ab" is not. Both must be normalized. Pure. */
int trust_path_within(const char *path, const char *dir);

/* Resolves path (a program dumpwatch is asked to execute: createdump, a
 * hook) to its real path in out, checking it as createdump is checked: not
 * on /proc (a process's own file tree there), and the file and every
 * directory above it owned by root (or by the user dumpwatch runs as, when
 * that is not root) and writable by no one else, a root-owned sticky
 * directory excepted; and executable. what names it in err ("createdump",
 * "hook"). 0, or -errno with a sentence in err. Does I/O. */
int trust_exec_path(const char *path, const char *what, char *out, size_t outlen, char *err, size_t errlen);

/* Finds dumpwatch's helper program name (dumpwatch-upload, ...) into out,
 * never through the environment: in the libexec directory given at build
 * time (DW_LIBEXEC_DIR), else beside the running program (the build tree),
 * else in ../libexec/dumpwatch from it (an installation moved elsewhere),
 * the first that exists; it must pass trust_exec_path. 0, or -errno with a
 * sentence in err naming where it was looked for, or why it was refused. */
int trust_helper_path(const char *name, char *out, size_t outlen, char *err, size_t errlen);

#endif
