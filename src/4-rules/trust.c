/* Trust: the checks a rule file passes before dumpwatch reads it, and the
 * containment of dump directories. See trust.h for the policy.
 *
 * Design note on the walk. Resolving the path first (realpath) and checking
 * the result afterwards would leave a window in which a component can be
 * swapped; opening the path with the kernel following links would let a link
 * lead anywhere unchecked. So the walk holds a descriptor of the directory it
 * is in (O_PATH), opens the next component relative to it without following a
 * link (O_NOFOLLOW), judges it by fstat of that descriptor, and, for a link,
 * reads it (readlinkat on the link's own descriptor) and puts its target in
 * front of what is left of the path. The file is finally opened relative to
 * the descriptor of its directory, again without following a link, and judged
 * by fstat of the descriptor that is returned: what the caller reads is what
 * was checked. ".." is taken physically (the parent of the directory the walk
 * is in, judged like any directory), as the kernel does. */
#include "dumpwatch/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* ---- the decision ----------------------------------------------------- */

int trust_judge(const char *path, mode_t mode, uid_t uid, uid_t self, int ro, char *reason, size_t len)
{
	const char *what;
	char owners[64];

	if (S_ISREG(mode))
		what = "file";
	else if (S_ISDIR(mode))
		what = "directory";
	else if (S_ISLNK(mode))
		what = "symbolic link";
	else
		what = "special file";
	if (self == 0)
		snprintf(owners, sizeof(owners), "root");
	else
		snprintf(owners, sizeof(owners), "root or uid %u (dumpwatch's user)", (unsigned)self);
	if (uid != 0 && uid != self) {
		snprintf(reason, len,
		         "%s %s is owned by uid %u, not by %s, whose files, links and directories alone may give "
		         "dumpwatch orders ('chown %sroot %s')",
		         what, path, (unsigned)uid, owners, S_ISLNK(mode) ? "-h " : "", path);
		return -EPERM;
	}
	/* A link's mode is always 0777 and means nothing. A sticky directory
	 * lets others add entries but not rename or remove ours, and every
	 * entry passed is judged itself. Nothing is written through a
	 * read-only mount. */
	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return 0; /* a special file is not read anyway (the caller says so) */
	if (ro || !(mode & (S_IWGRP | S_IWOTH)) || (S_ISDIR(mode) && (mode & S_ISVTX)))
		return 0;
	snprintf(reason, len,
	         "%s %s is writable by group or others (mode %04o): only files and directories no one else can "
	         "change may give dumpwatch orders ('chmod go-w %s')",
	         what, path, (unsigned)(mode & 07777), path);
	return -EPERM;
}

/* ---- paths ------------------------------------------------------------ */

int trust_path_normalize(const char *path, char *out, size_t outlen)
{
	size_t o = 0;
	const char *p = path;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (outlen < 2)
		return -ENAMETOOLONG;
	while (*p) {
		const char *s;
		size_t n;
		while (*p == '/')
			p++;
		s = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return -EINVAL;
		if (o + 1 + n + 1 > outlen)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, s, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

int trust_path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- the walk --------------------------------------------------------- */

/* Judges the component open at fd, named path. 0, or -errno with a phrase. */
static int judge_fd(int fd, const char *path, uid_t self, struct stat *st, char *err, size_t errlen)
{
	struct statvfs vfs;
	int ro;

	if (fstat(fd, st) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(e));
		return e == EPERM ? -EACCES : -e;
	}
	ro = fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
	return trust_judge(path, st->st_mode, st->st_uid, self, ro, err, errlen);
}

static int open_root(uid_t self, char *err, size_t errlen)
{
	struct stat st;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open /: %s", strerror(e));
		return -e;
	}
	r = judge_fd(fd, "/", self, &st, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* A failed syscall on component path: -errno with a phrase (EPERM from the
 * kernel becomes EACCES, so that -EPERM always means a refusal). */
static int sys_fail(const char *what, const char *path, char *err, size_t errlen)
{
	int e = errno;

	if (e == ENOENT)
		snprintf(err, errlen, "%s does not exist", path);
	else
		snprintf(err, errlen, "cannot %s %s: %s", what, path, strerror(e));
	return e == EPERM ? -EACCES : -e;
}

int trust_open(const char *path, uid_t self, char *err, size_t errlen)
{
	/* rest: what is left to walk; here: the path of the directory at cur. */
	char rest[PATH_MAX], here[PATH_MAX], comp[PATH_MAX], target[PATH_MAX];
	int cur = -1, links = 0, r;
	size_t pos = 0;

	if (!path || path[0] != '/') {
		snprintf(err, errlen, "not an absolute path");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(rest)) {
		snprintf(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	snprintf(rest, sizeof(rest), "%s", path);
	cur = open_root(self, err, errlen);
	if (cur < 0)
		return cur;
	snprintf(here, sizeof(here), "/");

	for (;;) {
		char name[NAME_MAX + 1];
		struct stat st;
		size_t start, n;
		int last, fd;

		while (rest[pos] == '/')
			pos++;
		if (rest[pos] == '\0') {
			snprintf(err, errlen, "not a regular file");
			r = -EISDIR;
			goto fail;
		}
		start = pos;
		while (rest[pos] && rest[pos] != '/')
			pos++;
		n = pos - start;
		if (n > NAME_MAX) {
			snprintf(err, errlen, "a component of the path is too long");
			r = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(name, rest + start, n);
		name[n] = '\0';
		/* A trailing '/' asks for a directory: not last, then. */
		last = rest[pos] == '\0';

		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			char *slash;
			fd = openat(cur, "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				r = sys_fail("open the parent of", here, err, errlen);
				goto fail;
			}
			slash = strrchr(here, '/');
			if (slash && slash != here)
				*slash = '\0';
			else
				snprintf(here, sizeof(here), "/");
			close(cur);
			cur = fd;
			r = judge_fd(cur, here, self, &st, err, errlen);
			if (r < 0)
				goto fail;
			continue;
		}

		if ((size_t)snprintf(comp, sizeof(comp), "%s%s%s", here, strcmp(here, "/") == 0 ? "" : "/", name) >=
		    sizeof(comp)) {
			snprintf(err, errlen, "path too long");
			r = -ENAMETOOLONG;
			goto fail;
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = sys_fail("open", comp, err, errlen);
			goto fail;
		}
		r = judge_fd(fd, comp, self, &st, err, errlen);
		if (r < 0) {
			close(fd);
			goto fail;
		}

		if (S_ISLNK(st.st_mode)) {
			ssize_t tl;
			size_t left = strlen(rest + pos);
			if (++links > TRUST_LINKS_MAX) {
				close(fd);
				snprintf(err, errlen, "more than %d symbolic links on the way", TRUST_LINKS_MAX);
				r = -ELOOP;
				goto fail;
			}
			tl = readlinkat(fd, "", target, sizeof(target));
			close(fd);
			if (tl < 0) {
				r = sys_fail("read the link", comp, err, errlen);
				goto fail;
			}
			if (tl == 0 || (size_t)tl + left + 1 > sizeof(rest)) {
				snprintf(err, errlen, "%s: the link's target is %s", comp, tl ? "too long" : "empty");
				r = tl ? -ENAMETOOLONG : -ENOENT;
				goto fail;
			}
			/* rest becomes the target followed by what was left after
			 * the link (empty, or starting with '/'). */
			memmove(rest + tl, rest + pos, left + 1);
			memcpy(rest, target, (size_t)tl);
			pos = 0;
			if (target[0] == '/') {
				close(cur);
				cur = open_root(self, err, errlen);
				if (cur < 0)
					return cur;
				snprintf(here, sizeof(here), "/");
			}
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			close(cur);
			cur = fd;
			snprintf(here, sizeof(here), "%s", comp);
			continue;
		}
		close(fd);
		if (!last) {
			snprintf(err, errlen, "%s is not a directory", comp);
			r = -ENOTDIR;
			goto fail;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "not a regular file");
			r = -EINVAL;
			goto fail;
		}
		/* The file itself, judged again by the descriptor that is read:
		 * whatever was swapped in since is what is judged. O_NONBLOCK: a
		 * FIFO swapped in cannot hang the open. */
		fd = openat(cur, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			r = sys_fail("open", comp, err, errlen);
			goto fail;
		}
		r = judge_fd(fd, comp, self, &st, err, errlen);
		if (r == 0 && !S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "not a regular file");
			r = -EINVAL;
		}
		if (r < 0) {
			close(fd);
			goto fail;
		}
		close(cur);
		return fd;
	}
fail:
	close(cur);
	return r;
}

/* ---- what root executes ------------------------------------------------ */

/* Owners whose files we may execute: root, and we ourselves when we are not
 * root (a user running dumpwatch trusts their own files, never another's). */
static int exec_owner_ok(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Every component of path (absolute, no symbolic links), from the file up to
 * /, must have a trusted owner and be writable by no one else: otherwise
 * another user could swap what we execute. A root-owned sticky directory
 * (/tmp) lets no one else rename or remove what root put in it. Nothing on
 * /proc: a process's root there is its own tree, whatever it holds. */
static int path_is_exec_safe(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;
	struct statfs sf;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (;;) {
		if (lstat(buf, &st) < 0 || statfs(buf, &sf) < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot check %s: %s", buf, strerror(e));
			return -e;
		}
		if (sf.f_type == PROC_SUPER_MAGIC) {
			snprintf(err, errlen, "refusing to execute %s: it lies on /proc, in a process's own file tree",
			         path);
			return -EPERM;
		}
		if (S_ISLNK(st.st_mode)) {
			snprintf(err, errlen, "refusing to execute %s: %s is a symbolic link", path, buf);
			return -EPERM;
		}
		int sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
		if (!exec_owner_ok(st.st_uid) || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_dir)) {
			snprintf(
			    err, errlen,
			    "refusing to execute %s: %s is owned by uid %u or writable by group/others (mode %04o)%s",
			    path, buf, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			    geteuid() == 0 ? "; as root, only files root alone can change are executed" : "");
			return -EPERM;
		}
		char *slash = strrchr(buf, '/');
		if (!slash)
			return 0;
		if (slash == buf) {
			if (buf[1] == '\0')
				return 0;
			buf[1] = '\0';
			continue;
		}
		*slash = '\0';
	}
}

#ifndef DW_LIBEXEC_DIR
#define DW_LIBEXEC_DIR "/usr/local/libexec/dumpwatch"
#endif

int trust_helper_path(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	char self[PATH_MAX], cand[3][PATH_MAX + NAME_MAX + 32];
	size_t n = 0;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (strchr(name, '/') || strlen(name) > NAME_MAX) {
		snprintf(err, errlen, "helper program \"%.64s\": not a file name", name);
		return -EINVAL;
	}
	snprintf(cand[n++], sizeof(cand[0]), "%s/%s", DW_LIBEXEC_DIR, name);
	if (len > 0) {
		self[len] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand[n++], sizeof(cand[0]), "%s/%s", self, name);
			snprintf(cand[n++], sizeof(cand[0]), "%s/../libexec/dumpwatch/%s", self, name);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (access(cand[i], F_OK) == 0)
			return trust_exec_path(cand[i], name, out, outlen, err, errlen);
	}
	snprintf(err, errlen, "helper program %s not found in %s%s%s: reinstall dumpwatch", name, DW_LIBEXEC_DIR,
	         n > 1 ? " nor beside " : "", n > 1 ? self : "");
	return -ENOENT;
}

int trust_exec_path(const char *path, const char *what, char *out, size_t outlen, char *err, size_t errlen)
{
	char real[PATH_MAX];

	if (strncmp(path, "/proc/", 6) == 0 || strcmp(path, "/proc") == 0) {
		snprintf(err, errlen, "refusing to execute %s: it lies on /proc, in a process's own file tree", path);
		return -EPERM;
	}
	if (!realpath(path, real)) {
		int e = errno;
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
		return -e;
	}
	int r = path_is_exec_safe(real, err, errlen);
	if (r < 0)
		return r;
	if (access(real, X_OK) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s %s is not executable: %s", what, real, strerror(e));
		return -e;
	}
	if (snprintf(out, outlen, "%s", real) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}
