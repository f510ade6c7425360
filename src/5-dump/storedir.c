/* The directories a dump passes through, and who may change them: the store
 * (ours, writable by no one else, below directories only root can change),
 * a path inside a process's own root reached without following links, and
 * whether a target's user may write a directory; see dump.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dump_shared.h"
#include "dumpwatch/dump.h"
#include "dumpwatch/trust.h"

/* Reads the supplementary groups of pid from /proc/pid/status. */
static int in_groups(pid_t pid, gid_t gid)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		char *p = line + 7, *end;
		for (;;) {
			unsigned long g = strtoul(p, &end, 10);
			if (end == p)
				break;
			if ((gid_t)g == gid)
				found = 1;
			p = end;
		}
		break;
	}
	fclose(f);
	return found;
}

/* Whether a directory with st may be written by the process pid of uid/gid,
 * going by its permission bits (the runtime made its socket there). */
int dump_writable_by(const struct stat *st, pid_t pid, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return 1;
	if (st->st_uid == uid)
		return (st->st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR);
	if (st->st_gid == gid || in_groups(pid, st->st_gid))
		return (st->st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP);
	return (st->st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
}

int dump_dir_writable_by(const char *dir, pid_t pid, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "dump directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "dump directory %s is not a directory", dir);
		return -ENOTDIR;
	}
	if (dump_writable_by(&st, pid, uid, gid))
		return 0;
	snprintf(err, errlen,
	         "dump directory %s is not writable by uid %u, the user of process %d, and the runtime writes the dump "
	         "as that user: choose another --dump-dir, or run e.g. 'install -d -o %u -m 0700 DIR'",
	         dir, (unsigned)uid, (int)pid, (unsigned)uid);
	return -EACCES;
}

/* Whether uid is the user who ran us through sudo: `sudo dumpwatch PID MB`
 * from that user's own directory writes the dump there. That user can rename
 * what is in it, but not read what we publish (root's, 0600), and we create
 * nothing there through a name they could have prepared (O_EXCL|O_NOFOLLOW
 * relative to the directory's descriptor). */
static int is_sudo_user(uid_t uid)
{
	const char *s = getenv("SUDO_UID");
	char *end;
	unsigned long v;

	if (geteuid() != 0 || !s || !*s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	return !errno && !*end && v != 0 && (uid_t)v == uid;
}

/* Every directory above the store must be one that only root (or we) can
 * change, or sticky: otherwise its owner could move the store away and put
 * another directory, or a link, in its place between two dumps. norm is dir
 * normalized (trust_path_normalize); dir was opened without following a
 * link, so norm is its real path and needs no resolving again. */
static int ancestors_safe(const char *dir, const char *norm, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;
	uid_t me = geteuid();

	snprintf(buf, sizeof(buf), "%s", norm);
	for (char *slash = strrchr(buf, '/'); slash; slash = strrchr(buf, '/')) {
		if (slash == buf)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (stat(buf, &st) < 0)
			return -errno;
		if ((st.st_uid != 0 && st.st_uid != me && !is_sudo_user(st.st_uid)) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
			snprintf(err, errlen,
			         "dump directory %s is below %s, which uid %u owns or others can write (mode %04o): "
			         "choose a directory whose parents only root can change",
			         dir, buf, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		if (slash == buf)
			break;
	}
	return 0;
}

/* Opens path below rootfd (a process's root, /proc/PID/root) as that
 * process would resolve it, but never through a symbolic link: openat2 with
 * RESOLVE_IN_ROOT (so ".." and absolute names stay inside) and
 * RESOLVE_NO_SYMLINKS; on kernels without openat2 (before 5.6), the same walk
 * one component at a time with O_NOFOLLOW, ".." refused. -errno on failure. */
int dump_open_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char buf[PATH_MAX], *save = NULL, *comp;
	int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

	if (fd >= 0)
		return fd;
	if (errno != ENOSYS)
		return -errno;
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			close(fd);
			return -EXDEV;
		}
		int last = save == NULL || *save == '\0';
		int next = openat(fd, comp, (last ? flags : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (next < 0)
			return -e;
		fd = next;
	}
	return fd;
}

/* Opens the store and checks it: a directory of ours that no one else can
 * write. Returns the descriptor or -errno with a sentence. */
int dump_open_store(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	uid_t me = geteuid();
	char norm[PATH_MAX];
	int r = trust_path_normalize(dir, norm, sizeof(norm));

	if (r == -EINVAL && dir[0] != '/') {
		snprintf(err, errlen, "dump directory %s must be an absolute path", dir);
		return r;
	}
	if (r == -EINVAL) {
		snprintf(
		    err, errlen,
		    "dump directory %s has a \"..\" component; dumps go only to a directory named by its real path",
		    dir);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "dump directory %s: %s", dir, strerror(-r));
		return r;
	}
	/* Without following links: a rule's dump.dir is checked to lie in a
	 * directory the operator allowed, and a link placed below it by whoever
	 * may write there must not lead the dump elsewhere. */
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = root < 0 ? -errno : dump_open_in_root(root, dir, O_RDONLY | O_DIRECTORY);

	if (root >= 0)
		close(root);
	if (fd < 0) {
		int e = -fd;
		struct stat lst;
		if (e == ENOTDIR && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode))
			e = ELOOP;
		if (e == ENOTDIR)
			snprintf(err, errlen, "dump directory %s is not a directory", dir);
		else if (e == ELOOP)
			snprintf(err, errlen,
			         "dump directory %s: a symbolic link is on the way; dumps go only to a directory named "
			         "by its real path",
			         dir);
		else
			snprintf(err, errlen, "dump directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "dump directory %s: %s", dir, strerror(e));
		return -e;
	}
	if ((st.st_uid != me && !is_sudo_user(st.st_uid)) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen,
		         "dump directory %s is owned by uid %u with mode %04o: dumps go only to a directory owned by "
		         "uid %u that no one else can write ('install -d -o %u -m 0711 %s')",
		         dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)me, (unsigned)me, dir);
		close(fd);
		return -EPERM;
	}
	r = ancestors_safe(dir, norm, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}
