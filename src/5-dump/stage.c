/* The staging of a dump that a runtime running as another user writes (see
 * dump.h): the directory it writes in, DIR/.incoming/UID in the store or one
 * made in the target's own TMPDIR when it lives in another mount namespace;
 * and how the finished file is taken from there, checked by descriptor and
 * linked or copied into the store, so that what is published is the inode
 * checked, whatever its user does with the names meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dump_shared.h"

void stage_init(struct dump_stage *s)
{
	s->fd = s->parent_fd = -1;
	s->name[0] = '\0';
}

void stage_close(struct dump_stage *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->parent_fd >= 0) {
		/* Our staging directory in the target's tree goes with the job
		 * (it is empty by now unless its user put something there). */
		unlinkat(s->parent_fd, s->name, AT_REMOVEDIR);
		close(s->parent_fd);
	}
	stage_init(s);
}

/* A subdirectory name of parent with the given owner and mode, created when
 * missing; anything else under that name is refused. Returns its descriptor
 * or -errno with a sentence. */
static int own_subdir(int parent, const char *pname, const char *name, uid_t uid, gid_t gid, mode_t mode, char *err,
                      size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s/%s: %s", pname, name, strerror(e));
		return -e;
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s/%s is not a directory we can use: %s", pname, name, strerror(e));
		return -e;
	}
	/* Only we can create entries in parent, so a directory owned by root
	 * is one we made: hand it over. */
	if (st.st_uid != uid && (st.st_uid != geteuid() || fchown(fd, uid, gid) < 0)) {
		snprintf(err, errlen, "%s/%s belongs to uid %u, not %u: remove it", pname, name, (unsigned)st.st_uid,
		         (unsigned)uid);
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot set the mode of %s/%s: %s", pname, name, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

/* The runtime's createdump runs as the target's user. As root, that user
 * gets a directory of its own in the store, DIR/.incoming/UID (0700), where
 * the dump is written; it is moved into the store when complete. */
int stage_open_incoming(struct dump_stage *s, const struct dump_request *req, int store_fd, const char *tmp_name,
                        char *tmp_path, size_t tmp_pathlen, char *err, size_t errlen)
{
	char incoming[PATH_MAX], name[16];
	struct stat st;
	int inc, fd;

	if (fstat(store_fd, &st) < 0)
		return -errno;
	if (!(st.st_mode & S_IXOTH)) {
		snprintf(err, errlen,
		         "process %d runs as uid %u and its runtime writes the dump as that user, but it cannot reach "
		         "%s (mode %04o): make it 0711 ('chmod 0711 %s') or use --dump-via exec",
		         (int)req->pid, (unsigned)req->uid, req->dir, (unsigned)(st.st_mode & 07777), req->dir);
		return -EACCES;
	}
	if (snprintf(incoming, sizeof(incoming), "%s/.incoming", req->dir) >= (int)sizeof(incoming)) {
		snprintf(err, errlen, "dump directory %s: path too long", req->dir);
		return -ENAMETOOLONG;
	}
	inc = own_subdir(store_fd, req->dir, ".incoming", geteuid(), getegid(), 0711, err, errlen);
	if (inc < 0)
		return inc;
	snprintf(name, sizeof(name), "%u", (unsigned)req->uid);
	fd = own_subdir(inc, incoming, name, req->uid, req->gid, 0700, err, errlen);
	close(inc);
	if (fd < 0)
		return fd;
	/* Whatever the user left under our temporary name goes first. */
	unlinkat(fd, tmp_name, 0);
	if (snprintf(tmp_path, tmp_pathlen, "%s/%s/%s", incoming, name, tmp_name) >= (int)tmp_pathlen) {
		close(fd);
		snprintf(err, errlen, "dump directory %s: path too long", req->dir);
		return -ENAMETOOLONG;
	}
	s->fd = fd;
	return 0;
}

/* Opens name in dir, which another user can change: never through a link,
 * and never across a mount point (a file mounted over the name). */
static int open_beneath(int dir, const char *name, int flags)
{
	struct open_how how = {.flags = (uint64_t)(unsigned)(flags | O_NOFOLLOW | O_CLOEXEC),
	                       .resolve =
	                           RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A process in another mount namespace: its runtime writes the dump inside
 * its own file tree, where our store does not exist. We make a directory in
 * its TMPDIR, reached through /proc/PID/root without following links, and
 * give it to the target's user; the dump is checked there and moved into the
 * store when complete. The TMPDIR must be one that user could write in
 * anyway: a directory mounted there from elsewhere (the user's own bind mount
 * of /etc, say) is refused, so nothing is created where the user could not. */
int stage_open_in_target(struct dump_stage *s, const struct dump_request *req, const char *tmp_name, char *tmp_path,
                         size_t tmp_pathlen, char *err, size_t errlen)
{
	char root[64];
	struct stat st;
	uint64_t rnd = 0;
	int rootfd, parent, fd;
	const char *sep = strcmp(req->tmpdir, "/") == 0 ? "" : "/";

	if (req->tmpdir[0] != '/') {
		snprintf(err, errlen,
		         "process %d runs in another mount namespace with a relative TMPDIR, so there is no directory "
		         "of its own to stage the dump in: use --dump-via exec",
		         (int)req->pid);
		return -EINVAL;
	}
	snprintf(root, sizeof(root), "/proc/%d/root", (int)req->pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot reach the file system of process %d (%s): %s", (int)req->pid, root,
		         strerror(e));
		return -e;
	}
	parent = dump_open_in_root(rootfd, req->tmpdir, O_RDONLY | O_DIRECTORY);
	close(rootfd);
	if (parent < 0) {
		snprintf(err, errlen, "cannot open %s in the mount namespace of process %d without following links: %s",
		         req->tmpdir, (int)req->pid,
		         parent == -ELOOP ? "a symbolic link is on the way" : strerror(-parent));
		return parent;
	}
	if (fstat(parent, &st) < 0 || !S_ISDIR(st.st_mode) || !dump_writable_by(&st, req->pid, req->uid, req->gid)) {
		snprintf(err, errlen,
		         "%s in the mount namespace of process %d is not a directory its user (uid %u) can write "
		         "(owner uid %u, mode %04o): refusing to create anything there",
		         req->tmpdir, (int)req->pid, (unsigned)req->uid, (unsigned)st.st_uid,
		         (unsigned)(st.st_mode & 07777));
		close(parent);
		return -EPERM;
	}
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		rnd ^= (uint64_t)now.tv_nsec * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)getpid();
	}
	snprintf(s->name, sizeof(s->name), ".dumpwatch-%016llx", (unsigned long long)rnd);
	if (mkdirat(parent, s->name, 0700) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s%s%s in the mount namespace of process %d: %s", req->tmpdir, sep,
		         s->name, (int)req->pid, strerror(e));
		close(parent);
		return -e;
	}
	s->parent_fd = parent;
	/* The user can replace what we just made: what we open must be a
	 * directory of ours, reached without a link or a mount. */
	fd = open_beneath(parent, s->name, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_uid != req->uid && fchown(fd, req->uid, req->gid) < 0) || fchmod(fd, 0700) < 0) {
		snprintf(err, errlen, "the staging directory %s%s%s of process %d was changed under us; not dumping",
		         req->tmpdir, sep, s->name, (int)req->pid);
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	s->fd = fd;
	if (snprintf(tmp_path, tmp_pathlen, "%s%s%s/%s", req->tmpdir, sep, s->name, tmp_name) >= (int)tmp_pathlen) {
		snprintf(err, errlen, "the TMPDIR of process %d is too long", (int)req->pid);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Whether a process in another mount namespace sees our store at the same
 * path: the directory its runtime would reach by that name is ours (a host
 * process seen from a service with a mount namespace of its own, or a
 * namespace that shares the store's mount). Then its runtime writes in the
 * store or DIR/.incoming/UID as any other's, and the dump is linked, not
 * copied. What it reaches instead is of no consequence: the file is checked
 * by our descriptor of the directory either way. */
int stage_sees_store(const struct dump_request *req, int store_fd)
{
	char root[64];
	struct stat a, b;
	int rootfd, fd, same;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)req->pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return 0;
	fd = dump_open_in_root(rootfd, req->dir, O_PATH | O_DIRECTORY);
	close(rootfd);
	if (fd < 0)
		return 0;
	same = fstat(fd, &a) == 0 && fstat(store_fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(fd);
	return same;
}

/* The disk guards on the file system the target's runtime writes to, when
 * that is not the store's. */
int stage_check_free(const struct dump_stage *s, const struct dump_request *req, const struct store_limits *l,
                     uint64_t estimate, char *err, size_t errlen)
{
	struct statvfs vfs;
	char where[PATH_MAX + 96], why[768];

	if (fstatvfs(s->fd, &vfs) < 0)
		return 0;
	snprintf(where, sizeof(where), "the file system of %s in the mount namespace of process %d", req->tmpdir,
	         (int)req->pid);
	int r = store_check_free((uint64_t)vfs.f_blocks * vfs.f_frsize, (uint64_t)vfs.f_bavail * vfs.f_frsize, l,
	                         estimate, where, why, sizeof(why));
	if (r < 0)
		snprintf(err, errlen, "skipped: %s", why);
	return r;
}

/* A staged file we took and refuse goes back to its user before it is
 * removed: whatever a writer still does with it stays on that user's account. */
void stage_give_back(int fd, const struct dump_request *req)
{
	if (fchown(fd, req->uid, req->gid) < 0) {
		/* Removed all the same; nothing more to do. */
	}
}

/* Whether some process still has the file behind fd (ours, opened read-only)
 * open for writing: a read lease is refused exactly then. 1 when it has, 0
 * when not or when the file system cannot tell. */
static int open_for_writing(int fd)
{
	if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
		return errno == EAGAIN;
	fcntl(fd, F_SETLEASE, F_UNLCK);
	return 0;
}

int stage_link(int fd, int dir, const char *name)
{
	char self[64];

	if (linkat(fd, "", dir, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; without it, through /proc. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, self, dir, name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

/* Copies n bytes from src to dst, from their starts. 0 or an errno value. */
static int copy_bytes(int src, int dst, uint64_t n)
{
	loff_t in = 0, out = 0;
	static char buf[1 << 20];

	while (n > 0) {
		size_t want = n > (1u << 30) ? (1u << 30) : (size_t)n;
		ssize_t k = copy_file_range(src, &in, dst, &out, want, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)) {
			/* Between file systems the kernel may refuse: copy by hand. */
			k = pread(src, buf, want < sizeof(buf) ? want : sizeof(buf), in);
			if (k > 0 && pwrite(dst, buf, (size_t)k, out) != k)
				return errno ? errno : EIO;
			if (k > 0) {
				in += k;
				out += k;
			}
		}
		if (k < 0)
			return errno;
		if (k == 0)
			return EIO; /* the file shrank */
		n -= (uint64_t)k;
	}
	return fdatasync(dst) < 0 ? errno : 0;
}

pid_t stage_copy_start(int src, int dst, uint64_t n)
{
	pid_t child = fork();

	if (child == 0)
		_exit(copy_bytes(src, dst, n));
	return child < 0 ? -errno : child;
}

/* Makes the staged file behind fd ours (root's 0600), so that its user can
 * no longer change it. A writer still holding it open could change it after
 * the checks, and would write on root's account: refused, before taking it
 * and after (one that opened it in between). */
static int take_staged(int fd, const struct dump_request *req, const char *tmp_path, char *err, size_t errlen)
{
	int r = 0;

	if (open_for_writing(fd)) {
		r = -EBUSY;
	} else if (fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0600) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot secure %s: %s", tmp_path, strerror(-r));
		return r;
	} else if (open_for_writing(fd)) {
		stage_give_back(fd, req);
		r = -EBUSY;
	}
	if (r == -EBUSY)
		snprintf(err, errlen, "%s is still open for writing by a process of uid %u; not published", tmp_path,
		         (unsigned)req->uid);
	return r;
}

/* The target's user can change the staging directory while we look, so the
 * file is opened once, without following links or crossing a mount, and
 * everything after goes by that descriptor. */
int stage_take(const struct dump_stage *s, const struct dump_request *req, const char *tmp_name, const char *tmp_path,
               int *ret_fd, uint64_t *ret_size, char *err, size_t errlen)
{
	struct stat st = {0};
	int fd = open_beneath(s->fd, tmp_name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	int r = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the runtime reported success but %s is missing or not a regular file", tmp_path);
		r = -EIO;
	} else if (st.st_uid != req->uid || st.st_nlink != 1) {
		snprintf(err, errlen, "%s is owned by uid %u with %lu link(s), not a file createdump wrote as uid %u",
		         tmp_path, (unsigned)st.st_uid, (unsigned long)st.st_nlink, (unsigned)req->uid);
		r = -EPERM;
	} else if (st.st_size == 0) {
		snprintf(err, errlen, "createdump wrote an empty file");
		r = -EIO;
	} else {
		r = take_staged(fd, req, tmp_path, err, errlen);
	}
	*ret_fd = fd;
	*ret_size = (uint64_t)st.st_size;
	return r;
}
