/* Core dump capture; see dump.h for the two paths and the guarantees. */
#include "dumpwatch/dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/cgroup.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/store.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/units.h"

/* The runtime answers the dump command only after createdump has exited; a
 * heap dump of a few GB takes tens of seconds, so the wait is not bounded
 * here (the caller may abort). */
#define DUMP_IPC_VERSION_NEWEST 3

struct dump_job {
	struct dump_request req;
	struct store_limits limits;
	char socket_path[512];
	char dir[PATH_MAX];
	char tmpdir[PATH_MAX];       /* the target's TMPDIR, as it sees it */
	char createdump[PATH_MAX];   /* exec path: what runs */
	char name[NAME_MAX + 1];     /* final name in the store */
	char tmp_name[NAME_MAX + 1]; /* ".NAME.partial", in the staging directory or the store */
	char tmp_path[PATH_MAX];     /* where createdump writes, as a path (runtime path) */
	char final_path[PATH_MAX];
	int store_fd; /* the store directory, opened once and checked */
	int stage_fd; /* the target user's staging directory, or -1: the store */
	/* A staging directory we made in the target's file system: the
	 * directory it is in (the target's TMPDIR) and its name. */
	int stage_parent_fd;
	char stage_name[32];
	int via_exec;
	int copying;       /* the staged file is being copied into the store (child) */
	int fd;            /* IPC connection or pidfd */
	int epfd;          /* what the caller polls: fd and the timer */
	int timerfd;       /* the dump's time limit, or -1 */
	int version;       /* IPC dump command version in flight */
	pid_t child;       /* createdump child (exec path), or the copying child */
	uint64_t estimate; /* the dump's expected size; 0: unknown */
	uint64_t bound;    /* the largest file accepted as its dump; 0: unknown */
	uint64_t bytes;    /* the staged file's checked size, while it is copied */
	int out_fd;        /* createdump's standard output and error (a memfd), or -1 */
	struct timespec started;
};

static void sanitize(const char *in, char *out, size_t outlen, size_t maxlen)
{
	size_t j = 0;

	for (size_t i = 0; in && in[i] && j + 1 < outlen && j < maxlen; i++) {
		char c = in[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		         c == '_' || c == '-';
		out[j++] = ok ? c : '_';
	}
	if (j == 0 && outlen > 1)
		out[j++] = '_';
	out[j] = '\0';
	/* A leading dot would hide the file and collide with our temporary names. */
	if (out[0] == '.')
		out[0] = '_';
}

void dump_file_name(const char *process_name, pid_t pid, const char *rule_name, int64_t unix_ns, char *out,
                    size_t outlen)
{
	dump_file_name_template(NULL, process_name, pid, rule_name, unix_ns, out, outlen);
}

void dump_file_name_template(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                             int64_t unix_ns, char *out, size_t outlen)
{
	dump_file_name_ids(tmpl, process_name, pid, rule_name, NULL, NULL, unix_ns, out, outlen);
}

void dump_file_name_ids(const char *tmpl, const char *process_name, pid_t pid, const char *rule_name,
                        const char *container, const char *pod, int64_t unix_ns, char *out, size_t outlen)
{
	char name[80], rule[80], stamp[40], pidbuf[16], raw[32], ctr[CGROUP_ID_SHORT + 1], podbuf[CGROUP_POD_LEN + 1];
	time_t s = (time_t)(unix_ns / 1000000000LL);
	struct tm tm;
	size_t j = 0;

	if (!outlen)
		return;
	/* Unknown ids expand to nothing, not to the '_' of an empty part. */
	ctr[0] = podbuf[0] = '\0';
	if (container && container[0])
		sanitize(container, ctr, sizeof(ctr), CGROUP_ID_SHORT);
	if (pod && pod[0])
		sanitize(pod, podbuf, sizeof(podbuf), CGROUP_POD_LEN);
	if (!tmpl || !tmpl[0])
		tmpl = ctr[0] ? DW_DEFAULT_DUMP_NAME_TEMPLATE_CONTAINER : DW_DEFAULT_DUMP_NAME_TEMPLATE;
	sanitize(process_name, name, sizeof(name), 64);
	sanitize(rule_name, rule, sizeof(rule), 64);
	gmtime_r(&s, &tm);
	strftime(raw, sizeof(raw), "%Y%m%dT%H%M%S", &tm);
	snprintf(stamp, sizeof(stamp), "%s.%03dZ", raw, (int)((unix_ns / 1000000LL) % 1000));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	for (const char *p = tmpl; *p && j + 1 < outlen;) {
		static const char *const keys[] = {"{name}", "{pid}", "{rule}", "{time}", "{container}", "{pod}"};
		const char *vals[] = {name, pidbuf, rule, stamp, ctr, podbuf};
		size_t k;

		for (k = 0; k < 6; k++)
			if (strncmp(p, keys[k], strlen(keys[k])) == 0)
				break;
		if (k < 6) {
			for (const char *v = vals[k]; *v && j + 1 < outlen; v++)
				out[j++] = *v;
			p += strlen(keys[k]);
			continue;
		}
		/* The template was validated; still, never let it name another directory. */
		out[j++] = *p == '/' ? '_' : *p;
		p++;
	}
	out[j] = '\0';
	if (out[0] == '.' || out[0] == '\0')
		out[0] = '_';
}

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

int dump_dir_writable_by(const char *dir, pid_t pid, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct stat st;
	int ok;

	if (stat(dir, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "dump directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "dump directory %s is not a directory", dir);
		return -ENOTDIR;
	}
	if (uid == 0)
		return 0;
	if (st.st_uid == uid)
		ok = (st.st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR);
	else if (st.st_gid == gid || in_groups(pid, st.st_gid))
		ok = (st.st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP);
	else
		ok = (st.st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
	if (ok)
		return 0;
	snprintf(err, errlen,
	         "dump directory %s is not writable by uid %u, the user of process %d, and the runtime writes the dump "
	         "as that user: choose another --dump-dir, or run e.g. 'install -d -o %u -m 0700 DIR'",
	         dir, (unsigned)uid, (int)pid, (unsigned)uid);
	return -EACCES;
}

int dump_version_ok(const char *v)
{
	size_t n;

	if (!v || !(v[0] >= '0' && v[0] <= '9') || strstr(v, ".."))
		return 0;
	for (n = 0; v[n]; n++) {
		char c = v[n];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
		      c == '-' || c == '+'))
			return 0;
		if (n >= 63)
			return 0;
	}
	return 1;
}

/* The places a host's .NET runtime is installed (Microsoft's packages and
 * tarballs, distributions' packages): DOTNET_ROOT and the dotnet on our PATH
 * are looked at first. */
static const char *const host_dotnet_roots[] = {
    "/usr/share/dotnet", "/usr/lib/dotnet", "/usr/lib64/dotnet", "/usr/local/share/dotnet", "/opt/dotnet",
};

/* The directory of the dotnet found on PATH, resolved, into out ("" when none). */
static void dotnet_on_path(char *out, size_t outlen)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX], real[PATH_MAX];

	out[0] = '\0';
	while (path && *path) {
		size_t n = strcspn(path, ":");
		if (n > 0 && path[0] == '/' &&
		    snprintf(cand, sizeof(cand), "%.*s/dotnet", (int)n, path) < (int)sizeof(cand) &&
		    access(cand, X_OK) == 0 && realpath(cand, real)) {
			char *slash = strrchr(real, '/');
			if (slash) {
				*slash = '\0';
				snprintf(out, outlen, "%s", real);
			}
			return;
		}
		path += n;
		if (*path == ':')
			path++;
	}
}

int dump_find_createdump(const char *runtime_version, const char *configured, char *out, size_t outlen, char *err,
                         size_t errlen)
{
	char version[64], on_path[PATH_MAX], looked[1024] = "", first_err[512] = "";
	const char *roots[8];
	size_t n_roots = 0, used = 0;
	int unsafe = 0;

	if (configured && configured[0])
		return trust_exec_path(configured, "createdump", out, outlen, err, errlen);
	if (!runtime_version || !runtime_version[0]) {
		snprintf(err, errlen,
		         "the runtime did not report its version, so no createdump of the host can be matched to it: "
		         "pass --createdump PATH, or use the runtime's dump command (--dump-via runtime)");
		return -ENOENT;
	}
	/* "10.0.12+abcdef" names the directory "10.0.12". */
	snprintf(version, sizeof(version), "%.*s", (int)strcspn(runtime_version, "+"), runtime_version);
	if (!dump_version_ok(version)) {
		snprintf(err, errlen,
		         "the runtime reported a version that names no runtime directory: pass --createdump PATH, "
		         "or use the runtime's dump command (--dump-via runtime)");
		return -EINVAL;
	}
	const char *env_root = getenv("DOTNET_ROOT");
	if (env_root && env_root[0] == '/')
		roots[n_roots++] = env_root;
	dotnet_on_path(on_path, sizeof(on_path));
	if (on_path[0])
		roots[n_roots++] = on_path;
	for (size_t i = 0; i < sizeof(host_dotnet_roots) / sizeof(host_dotnet_roots[0]); i++)
		roots[n_roots++] = host_dotnet_roots[i];
	for (size_t i = 0; i < n_roots; i++) {
		char cand[PATH_MAX];
		struct stat st;
		int again = 0;

		/* The dotnet on PATH or DOTNET_ROOT is often one of the usual
		 * places: look, and say so, once. */
		for (size_t j = 0; j < i; j++)
			again |= strcmp(roots[j], roots[i]) == 0;
		if (again)
			continue;
		if (snprintf(cand, sizeof(cand), "%s/shared/Microsoft.NETCore.App/%s/createdump", roots[i], version) >=
		    (int)sizeof(cand))
			continue;
		if (used < sizeof(looked))
			used +=
			    (size_t)snprintf(looked + used, sizeof(looked) - used, "%s%s", used ? ", " : "", roots[i]);
		if (stat(cand, &st) < 0)
			continue;
		/* Found: it must be safe, or the next place is tried. */
		char why[512];
		int r = trust_exec_path(cand, "createdump", out, outlen, why, sizeof(why));
		if (r == 0)
			return 0;
		if (!unsafe) {
			unsafe = r;
			snprintf(first_err, sizeof(first_err), "%s", why);
		}
	}
	if (unsafe) {
		snprintf(err, errlen,
		         "%s; install the .NET %s runtime where only root can change it, or pass --createdump PATH",
		         first_err, version);
		return unsafe;
	}
	snprintf(err, errlen,
	         "no createdump of .NET %s on this host (looked in %s): install the .NET %s runtime, pass "
	         "--createdump PATH, or use the runtime's dump command (--dump-via runtime)",
	         version, looked, version);
	return -ENOENT;
}

static const char *type_flag(enum dump_type t)
{
	switch (t) {
	case DUMP_NORMAL:
		return "--normal";
	case DUMP_TRIAGE:
		return "--triage";
	case DUMP_FULL:
		return "--full";
	default:
		return "--withheap";
	}
}

/* The job's child (createdump, or the copy) is watched through a pidfd in
 * job->fd; when that cannot be, the child is killed. 0 or -errno. */
static int adopt_child(struct dump_job *job, pid_t child, const char *what, char *err, size_t errlen)
{
	job->child = child;
	job->fd = (int)syscall(SYS_pidfd_open, child, 0);
	if (job->fd >= 0)
		return 0;
	int e = errno;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	job->child = 0;
	snprintf(err, errlen, "cannot watch %s (pidfd_open): %s", what, strerror(e));
	return -e;
}

/* createdump resolves its --name through a descriptor of the store it
 * inherits, so a directory swapped above the store cannot redirect what it
 * creates as root. */
static int start_exec(struct dump_job *job, char *err, size_t errlen)
{
	char pidbuf[16];
	int r = dump_find_createdump(job->req.runtime_version, job->req.createdump, job->createdump,
	                             sizeof(job->createdump), err, errlen);
	if (r < 0)
		return r;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)job->req.pid);
	/* createdump names the target by its comm, which the target's user
	 * chose: its output goes to a file read back for an error message
	 * (then escaped like any), never straight to our stderr. */
	job->out_fd = memfd_create("createdump-output", MFD_CLOEXEC);
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot start createdump: %s", strerror(e));
		return -e;
	}
	if (child == 0) {
		char name[PATH_MAX];
		int devnull = open("/dev/null", O_RDWR);
		int out = job->out_fd >= 0 ? job->out_fd : devnull;
		if (devnull >= 0)
			dup2(devnull, 0);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		int keep = fcntl(job->store_fd, F_DUPFD, 3); /* without close-on-exec */
		if (keep < 0)
			_exit(126);
		snprintf(name, sizeof(name), "/proc/self/fd/%d/%s", keep, job->tmp_name);
		umask(077);
		execl(job->createdump, "createdump", "--name", name, type_flag(job->req.type), pidbuf, (char *)NULL);
		_exit(127);
	}
	return adopt_child(job, child, "createdump", err, errlen);
}

static int send_runtime(struct dump_job *job, char *err, size_t errlen)
{
	const struct ipc_endpoint ep = {.path = job->socket_path, .pid = job->req.pid, .uid = job->req.uid};

	return ipc_dump_send(&ep, job->version, job->tmp_path, job->req.type, 0, &job->fd, err, errlen);
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
 * another directory, or a link, in its place between two dumps. */
static int ancestors_safe(const char *dir, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;
	uid_t me = geteuid();

	if (!realpath(dir, buf)) {
		int e = errno;
		snprintf(err, errlen, "dump directory %s: %s", dir, strerror(e));
		return -e;
	}
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

static int open_in_root(int rootfd, const char *path, int flags);

/* Opens the store and checks it: a directory of ours that no one else can
 * write. Returns the descriptor or -errno with a sentence. */
int dump_open_store(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	uid_t me = geteuid();
	/* Without following links: a rule's dump.dir is checked to lie in a
	 * directory the operator allowed, and a link placed below it by whoever
	 * may write there must not lead the dump elsewhere. */
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = root < 0 ? -errno : open_in_root(root, dir, O_RDONLY | O_DIRECTORY);

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
	int r = ancestors_safe(dir, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
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
static int open_staging(struct dump_job *job, char *err, size_t errlen)
{
	char incoming[PATH_MAX], name[16];
	struct stat st;
	int inc, fd;

	if (fstat(job->store_fd, &st) < 0)
		return -errno;
	if (!(st.st_mode & S_IXOTH)) {
		snprintf(err, errlen,
		         "process %d runs as uid %u and its runtime writes the dump as that user, but it cannot reach "
		         "%s (mode %04o): make it 0711 ('chmod 0711 %s') or use --dump-via exec",
		         (int)job->req.pid, (unsigned)job->req.uid, job->dir, (unsigned)(st.st_mode & 07777), job->dir);
		return -EACCES;
	}
	if (snprintf(incoming, sizeof(incoming), "%s/.incoming", job->dir) >= (int)sizeof(incoming)) {
		snprintf(err, errlen, "dump directory %s: path too long", job->dir);
		return -ENAMETOOLONG;
	}
	inc = own_subdir(job->store_fd, job->dir, ".incoming", geteuid(), getegid(), 0711, err, errlen);
	if (inc < 0)
		return inc;
	snprintf(name, sizeof(name), "%u", (unsigned)job->req.uid);
	fd = own_subdir(inc, incoming, name, job->req.uid, job->req.gid, 0700, err, errlen);
	close(inc);
	if (fd < 0)
		return fd;
	/* Whatever the user left under our temporary name goes first. */
	unlinkat(fd, job->tmp_name, 0);
	if (snprintf(job->tmp_path, sizeof(job->tmp_path), "%s/%s/%s", incoming, name, job->tmp_name) >=
	    (int)sizeof(job->tmp_path)) {
		close(fd);
		snprintf(err, errlen, "dump directory %s: path too long", job->dir);
		return -ENAMETOOLONG;
	}
	job->stage_fd = fd;
	return 0;
}

/* Opens path below rootfd (a process's root, /proc/PID/root) as that
 * process would resolve it, but never through a symbolic link: openat2 with
 * RESOLVE_IN_ROOT (so ".." and absolute names stay inside) and
 * RESOLVE_NO_SYMLINKS; on kernels without openat2 (before 5.6), the same walk
 * one component at a time with O_NOFOLLOW, ".." refused. -errno on failure. */
static int open_in_root(int rootfd, const char *path, int flags)
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

/* Whether a directory with st may be written by the process pid of uid/gid,
 * going by its permission bits (the runtime made its socket there). */
static int writable_by(const struct stat *st, pid_t pid, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return 1;
	if (st->st_uid == uid)
		return (st->st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR);
	if (st->st_gid == gid || in_groups(pid, st->st_gid))
		return (st->st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP);
	return (st->st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
}

/* A process in another mount namespace: its runtime writes the dump inside
 * its own file tree, where our store does not exist. We make a directory in
 * its TMPDIR, reached through /proc/PID/root without following links, and
 * give it to the target's user; the dump is checked there and moved into the
 * store when complete. The TMPDIR must be one that user could write in
 * anyway: a directory mounted there from elsewhere (the user's own bind mount
 * of /etc, say) is refused, so nothing is created where the user could not. */
static int open_target_staging(struct dump_job *job, char *err, size_t errlen)
{
	char root[64];
	struct stat st;
	uint64_t rnd = 0;
	int rootfd, parent, fd;
	const char *sep = strcmp(job->tmpdir, "/") == 0 ? "" : "/";

	if (job->tmpdir[0] != '/') {
		snprintf(err, errlen,
		         "process %d runs in another mount namespace with a relative TMPDIR, so there is no directory "
		         "of its own to stage the dump in: use --dump-via exec",
		         (int)job->req.pid);
		return -EINVAL;
	}
	snprintf(root, sizeof(root), "/proc/%d/root", (int)job->req.pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot reach the file system of process %d (%s): %s", (int)job->req.pid, root,
		         strerror(e));
		return -e;
	}
	parent = open_in_root(rootfd, job->tmpdir, O_RDONLY | O_DIRECTORY);
	close(rootfd);
	if (parent < 0) {
		snprintf(err, errlen, "cannot open %s in the mount namespace of process %d without following links: %s",
		         job->tmpdir, (int)job->req.pid,
		         parent == -ELOOP ? "a symbolic link is on the way" : strerror(-parent));
		return parent;
	}
	if (fstat(parent, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    !writable_by(&st, job->req.pid, job->req.uid, job->req.gid)) {
		snprintf(err, errlen,
		         "%s in the mount namespace of process %d is not a directory its user (uid %u) can write "
		         "(owner uid %u, mode %04o): refusing to create anything there",
		         job->tmpdir, (int)job->req.pid, (unsigned)job->req.uid, (unsigned)st.st_uid,
		         (unsigned)(st.st_mode & 07777));
		close(parent);
		return -EPERM;
	}
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rnd ^= (uint64_t)job->started.tv_nsec * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)getpid();
	snprintf(job->stage_name, sizeof(job->stage_name), ".dumpwatch-%016llx", (unsigned long long)rnd);
	if (mkdirat(parent, job->stage_name, 0700) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s%s%s in the mount namespace of process %d: %s", job->tmpdir, sep,
		         job->stage_name, (int)job->req.pid, strerror(e));
		close(parent);
		return -e;
	}
	job->stage_parent_fd = parent;
	/* The user can replace what we just made: what we open must be a
	 * directory of ours, reached without a link or a mount. */
	fd = open_beneath(parent, job->stage_name, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_uid != job->req.uid && fchown(fd, job->req.uid, job->req.gid) < 0) || fchmod(fd, 0700) < 0) {
		snprintf(err, errlen, "the staging directory %s%s%s of process %d was changed under us; not dumping",
		         job->tmpdir, sep, job->stage_name, (int)job->req.pid);
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	job->stage_fd = fd;
	if (snprintf(job->tmp_path, sizeof(job->tmp_path), "%s%s%s/%s", job->tmpdir, sep, job->stage_name,
	             job->tmp_name) >= (int)sizeof(job->tmp_path)) {
		snprintf(err, errlen, "the TMPDIR of process %d is too long", (int)job->req.pid);
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
static int target_sees_store(const struct dump_job *job)
{
	char root[64];
	struct stat a, b;
	int rootfd, fd, same;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)job->req.pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return 0;
	fd = open_in_root(rootfd, job->dir, O_PATH | O_DIRECTORY);
	close(rootfd);
	if (fd < 0)
		return 0;
	same = fstat(fd, &a) == 0 && fstat(job->store_fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(fd);
	return same;
}

/* The disk guards on the file system the target's runtime writes to, when
 * that is not the store's. */
static int admit_stage(struct dump_job *job, char *err, size_t errlen)
{
	struct statvfs vfs;
	char where[PATH_MAX + 96], why[768];

	if (fstatvfs(job->stage_fd, &vfs) < 0)
		return 0;
	snprintf(where, sizeof(where), "the file system of %s in the mount namespace of process %d", job->tmpdir,
	         (int)job->req.pid);
	int r = store_check_free((uint64_t)vfs.f_blocks * vfs.f_frsize, (uint64_t)vfs.f_bavail * vfs.f_frsize,
	                         &job->limits, job->estimate, where, why, sizeof(why));
	if (r < 0)
		snprintf(err, errlen, "skipped: %s", why);
	return r;
}

/* The disk guards: admit the dump, deleting the oldest stored dumps first
 * when configured, or -ENOSPC with the reason. */
static int admit(struct dump_job *job, const struct dump_request *req, char *err, size_t errlen)
{
	struct store_state s;
	size_t n_delete = 0;
	char why[768];
	int r = store_scan(job->store_fd, &s);

	if (r < 0) {
		snprintf(err, errlen, "cannot read the dump directory %s: %s", job->dir, strerror(-r));
		return r;
	}
	struct store_estimate est;
	store_estimate(req->pid, req->type, &est);
	uint64_t estimate = est.bytes;
	job->estimate = est.bytes;
	job->bound = est.bound;
	/* The dump's context files come with it. */
	r = store_admit(&s, &job->limits, estimate + STORE_CONTEXT_ALLOWANCE, &n_delete, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errlen, "skipped: %s", why);
		store_state_free(&s);
		return r;
	}
	for (size_t i = 0; i < s.n && n_delete > 0; i++) {
		char path[PATH_MAX + NAME_MAX + 2];
		if (!s.entries[i].doomed)
			continue;
		n_delete--;
		snprintf(path, sizeof(path), "%s/%s", job->dir, s.entries[i].name);
		r = store_delete(job->store_fd, &s.entries[i]);
		if (r < 0) {
			int e = -r;
			snprintf(err, errlen, "skipped: cannot delete %s to make room: %s", path, strerror(e));
			store_state_free(&s);
			return -e;
		}
		if (req->deleted)
			req->deleted(req->ctx, path, s.entries[i].bytes, s.entries[i].context_only);
	}
	store_state_free(&s);
	return 0;
}

/* Puts the job's descriptors (the dump's own and its timer) behind one
 * descriptor for the caller's loop. */
static int watch_job(struct dump_job *job, char *err, size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN};

	if (job->epfd < 0) {
		job->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (job->epfd < 0)
			goto fail;
		if (job->req.timeout_ns > 0) {
			struct itimerspec its = {.it_value = {.tv_sec = job->req.timeout_ns / 1000000000,
			                                      .tv_nsec = job->req.timeout_ns % 1000000000}};
			job->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
			if (job->timerfd < 0 || timerfd_settime(job->timerfd, 0, &its, NULL) < 0)
				goto fail;
			if (epoll_ctl(job->epfd, EPOLL_CTL_ADD, job->timerfd, &ev) < 0)
				goto fail;
		}
	}
	if (epoll_ctl(job->epfd, EPOLL_CTL_ADD, job->fd, &ev) < 0)
		goto fail;
	return 0;
fail:;
	int e = errno;
	snprintf(err, errlen, "cannot watch the dump: %s", strerror(e));
	return -e;
}

static void job_close(struct dump_job *job)
{
	if (job->fd >= 0)
		close(job->fd);
	if (job->epfd >= 0)
		close(job->epfd);
	if (job->timerfd >= 0)
		close(job->timerfd);
	if (job->stage_fd >= 0)
		close(job->stage_fd);
	if (job->stage_parent_fd >= 0) {
		/* Our staging directory in the target's tree goes with the job
		 * (it is empty by now unless its user put something there). */
		unlinkat(job->stage_parent_fd, job->stage_name, AT_REMOVEDIR);
		close(job->stage_parent_fd);
	}
	if (job->store_fd >= 0)
		close(job->store_fd);
	if (job->out_fd >= 0)
		close(job->out_fd);
	free(job);
}

/* The last line createdump wrote (exec path), into out; "" when none. */
static void createdump_last_line(const struct dump_job *job, char *out, size_t outlen)
{
	char buf[1024];
	struct stat st;
	off_t from;
	ssize_t n;
	char *end, *start;

	out[0] = '\0';
	if (job->out_fd < 0 || fstat(job->out_fd, &st) < 0)
		return;
	from = st.st_size > (off_t)sizeof(buf) - 1 ? st.st_size - (off_t)sizeof(buf) + 1 : 0;
	n = pread(job->out_fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		return;
	buf[n] = '\0';
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		*--end = '\0';
	start = strrchr(buf, '\n');
	start = start ? start + 1 : buf;
	size_t len = strlen(start);
	if (len >= outlen)
		len = text_utf8_trim(start, outlen - 1);
	memcpy(out, start, len);
	out[len] = '\0';
}

/* Removes what the job wrote: the file being written or staged, and the
 * partial copy in the store. */
static void remove_tmp(struct dump_job *job)
{
	if (job->stage_fd >= 0)
		unlinkat(job->stage_fd, job->tmp_name, 0);
	if (job->stage_fd < 0 || job->copying)
		unlinkat(job->store_fd, job->tmp_name, 0);
}

static void kill_job(struct dump_job *job);

int dump_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen)
{
	struct dump_job *job;
	int r;

	if (req->dir[0] != '/') {
		snprintf(err, errlen, "dump directory %s must be an absolute path", req->dir);
		return -EINVAL;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->req = *req;
	job->fd = job->epfd = job->timerfd = job->stage_fd = job->stage_parent_fd = job->out_fd = -1;
	if (req->limits)
		job->limits = *req->limits;
	snprintf(job->socket_path, sizeof(job->socket_path), "%s", req->socket_path ? req->socket_path : "");
	snprintf(job->dir, sizeof(job->dir), "%s", req->dir);
	snprintf(job->tmpdir, sizeof(job->tmpdir), "%s", req->tmpdir ? req->tmpdir : "");
	job->req.socket_path = job->socket_path;
	job->req.dir = job->dir;
	job->req.tmpdir = job->tmpdir;
	job->req.process_name = NULL;
	job->req.rule_name = NULL;
	job->req.name_template = NULL;
	job->req.limits = NULL;
	dump_file_name_ids(req->name_template, req->process_name, req->pid, req->rule_name, req->container, req->pod,
	                   req->unix_ns, job->name, sizeof(job->name));
	snprintf(job->final_path, sizeof(job->final_path), "%s/%s", req->dir, job->name);
	snprintf(job->tmp_name, sizeof(job->tmp_name), ".%.*s.partial", NAME_MAX - 10, job->name);
	snprintf(job->tmp_path, sizeof(job->tmp_path), "%s/%s", req->dir, job->tmp_name);
	clock_gettime(CLOCK_MONOTONIC, &job->started);

	/* The runtime's own dump command unless exec was asked for: then no
	 * file of the target's is executed by us. */
	enum dump_via via = req->via == DUMP_VIA_EXEC ? DUMP_VIA_EXEC : DUMP_VIA_RUNTIME;
	r = dump_open_store(req->dir, err, errlen);
	if (r < 0) {
		free(job);
		return r;
	}
	job->store_fd = r;
	r = admit(job, req, err, errlen);
	if (r < 0)
		goto fail;

	/* The store of the user who ran sudo, dumping that user's process:
	 * its runtime writes there directly. */
	struct stat store_st;
	int users_own_store = fstat(job->store_fd, &store_st) == 0 && store_st.st_uid == req->uid;
	if (via == DUMP_VIA_RUNTIME && req->other_mount_ns && !target_sees_store(job)) {
		r = open_target_staging(job, err, errlen);
		if (r == 0)
			r = admit_stage(job, err, errlen);
		if (r < 0)
			goto fail;
	} else if (via == DUMP_VIA_RUNTIME && geteuid() == 0 && req->uid != 0 && !users_own_store) {
		r = open_staging(job, err, errlen);
		if (r < 0)
			goto fail;
	} else {
		/* Without root, a runtime of another user can only write
		 * where that user may. */
		if (via == DUMP_VIA_RUNTIME && req->uid != geteuid()) {
			r = dump_dir_writable_by(req->dir, req->pid, req->uid, req->gid, err, errlen);
			if (r < 0)
				goto fail;
		} else {
			/* Claim the name: createdump opens it with O_TRUNC,
			 * never through a link someone put there. */
			int fd = openat(job->store_fd, job->tmp_name,
			                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0) {
				r = -errno;
				snprintf(err, errlen, "cannot create %s: %s", job->tmp_path, strerror(-r));
				goto fail;
			}
			close(fd);
		}
	}
	if (via == DUMP_VIA_RUNTIME) {
		job->version = DUMP_IPC_VERSION_NEWEST;
		r = send_runtime(job, err, errlen);
	} else {
		job->via_exec = 1;
		r = start_exec(job, err, errlen);
	}
	if (r < 0) {
		remove_tmp(job);
		goto fail;
	}
	r = watch_job(job, err, errlen);
	if (r < 0) {
		kill_job(job);
		remove_tmp(job);
		goto fail;
	}
	*ret = job;
	return 0;
fail:
	job_close(job);
	return r;
}

int dump_job_fd(const struct dump_job *job)
{
	return job->epfd;
}

const char *dump_job_path(const struct dump_job *job)
{
	return job->final_path;
}

int dump_job_progress(const struct dump_job *job, uint64_t *written, uint64_t *estimate)
{
	struct stat st;
	int dir = job->stage_fd >= 0 ? job->stage_fd : job->store_fd;

	*estimate = job->estimate;
	if (job->copying) {
		*written = job->bytes; /* written; being moved into the store */
		return 0;
	}
	if (dir < 0 || fstatat(dir, job->tmp_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
		*written = 0;
		return 0;
	}
	*written = (uint64_t)st.st_size;
	return 0;
}

static void fill_result(struct dump_job *job, struct dump_result *res, uint64_t bytes)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	snprintf(res->path, sizeof(res->path), "%s", job->final_path);
	res->bytes = bytes;
	res->duration_ms =
	    (double)(now.tv_sec - job->started.tv_sec) * 1e3 + (double)(now.tv_nsec - job->started.tv_nsec) / 1e6;
	res->via = job->via_exec ? "exec" : "runtime";
}

/* Closes what publishing opened; on failure (r < 0) nothing is left behind,
 * on success res is filled. */
static int publish_end(struct dump_job *job, struct dump_result *res, int fd, int r, uint64_t bytes)
{
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		remove_tmp(job);
		return r;
	}
	fill_result(job, res, bytes);
	return 0;
}

static int check_dump(struct dump_job *job, int fd, uint64_t size, char *err, size_t errlen);

/* A dump written in the store itself (by us, root's runtime, or a runtime of
 * our own user): secure it and rename it to its final name. */
static int publish_in_place(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	struct stat st = {0};
	int fd = openat(job->store_fd, job->tmp_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int r = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "createdump reported success but %s is missing or not a regular file",
		         job->tmp_path);
		r = -EIO;
	} else if (st.st_size == 0) {
		snprintf(err, errlen, "createdump wrote an empty file");
		r = -EIO;
	} else if (fchmod(fd, 0600) < 0 || (st.st_uid != geteuid() && fchown(fd, geteuid(), getegid()) < 0)) {
		r = -errno;
		snprintf(err, errlen, "cannot secure %s: %s", job->tmp_path, strerror(-r));
	} else if ((r = check_dump(job, fd, (uint64_t)st.st_size, err, errlen)) < 0) {
		/* said */
	} else if (renameat2(job->store_fd, job->tmp_name, job->store_fd, job->name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot publish %s: %s", job->final_path, strerror(-r));
	}
	return publish_end(job, res, fd, r, (uint64_t)st.st_size);
}

/* A staged file we took and refuse goes back to its user before it is
 * removed: whatever a writer still does with it stays on that user's account. */
static void give_back(const struct dump_job *job, int fd)
{
	if (fchown(fd, job->req.uid, job->req.gid) < 0) {
		/* Removed all the same; nothing more to do. */
	}
}

/* Whether the file behind fd holds a dump (store_check_core), with the
 * reason in err when not. */
static int check_dump(struct dump_job *job, int fd, uint64_t size, char *err, size_t errlen)
{
	char why[512];
	int r = store_check_core(fd, size, job->bound, why, sizeof(why));

	if (r < 0)
		snprintf(err, errlen, "%s is not published: %s", job->tmp_path, why);
	return r;
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

/* Links the file behind fd into dir as name. -errno. */
static int link_fd(int fd, int dir, const char *name)
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

/* The staged file (src, checked, n bytes) lies on another file system than
 * the store: a child copies it into the store's partial file while the loop
 * goes on; dump_job_finish publishes the copy when the child is done. */
static int start_copy(struct dump_job *job, int src, uint64_t n, char *err, size_t errlen)
{
	int dst = openat(job->store_fd, job->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	pid_t child;

	if (dst < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s/%s: %s", job->dir, job->tmp_name, strerror(e));
		return -e;
	}
	job->copying = 1;
	child = fork();
	if (child == 0)
		_exit(copy_bytes(src, dst, n));
	close(dst);
	if (child < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot copy the dump into the store: %s", strerror(e));
		return -e;
	}
	job->bytes = n;
	int r = adopt_child(job, child, "the copy", err, errlen);
	return r < 0 ? r : watch_job(job, err, errlen);
}

/* Makes the staged file behind fd ours (root's 0600), so that its user can
 * no longer change it. A writer still holding it open could change it after
 * the checks, and would write on root's account: refused, before taking it
 * and after (one that opened it in between). */
static int take_staged(struct dump_job *job, int fd, char *err, size_t errlen)
{
	int r = 0;

	if (open_for_writing(fd)) {
		r = -EBUSY;
	} else if (fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0600) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot secure %s: %s", job->tmp_path, strerror(-r));
		return r;
	} else if (open_for_writing(fd)) {
		give_back(job, fd);
		r = -EBUSY;
	}
	if (r == -EBUSY)
		snprintf(err, errlen, "%s is still open for writing by a process of uid %u; not published",
		         job->tmp_path, (unsigned)job->req.uid);
	return r;
}

/* A dump written by the target's user in its staging directory. That user
 * can change the directory while we look, so the file is opened once without
 * following links or crossing a mount, checked, made ours, and linked into
 * the store by its descriptor: what is published is the inode checked,
 * whatever the name in the staging directory points to by then. A writer
 * still holding it open could change it after the check: refused. */
static int publish_staged(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	struct stat st = {0};
	int fd = open_beneath(job->stage_fd, job->tmp_name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	int r = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the runtime reported success but %s is missing or not a regular file",
		         job->tmp_path);
		r = -EIO;
	} else if (st.st_uid != job->req.uid || st.st_nlink != 1) {
		snprintf(err, errlen, "%s is owned by uid %u with %lu link(s), not a file createdump wrote as uid %u",
		         job->tmp_path, (unsigned)st.st_uid, (unsigned long)st.st_nlink, (unsigned)job->req.uid);
		r = -EPERM;
	} else if (st.st_size == 0) {
		snprintf(err, errlen, "createdump wrote an empty file");
		r = -EIO;
	} else if ((r = take_staged(job, fd, err, errlen)) < 0) {
		/* said */
	} else if ((r = check_dump(job, fd, (uint64_t)st.st_size, err, errlen)) < 0) {
		give_back(job, fd);
	} else if ((r = link_fd(fd, job->store_fd, job->name)) == -EXDEV) {
		r = start_copy(job, fd, (uint64_t)st.st_size, err, errlen);
		close(fd);
		if (r < 0) {
			remove_tmp(job);
			return r;
		}
		return -EAGAIN;
	} else if (r < 0) {
		snprintf(err, errlen, "cannot publish %s: %s", job->final_path, strerror(-r));
	} else {
		unlinkat(job->stage_fd, job->tmp_name, 0);
		/* Another name made for it in the meantime would outlive the
		 * store's accounting and deletion. */
		if (fstat(fd, &st) < 0 || st.st_nlink != 1) {
			unlinkat(job->store_fd, job->name, 0);
			snprintf(err, errlen, "%s got another hard link while it was published; removed",
			         job->tmp_path);
			r = -EPERM;
		}
	}
	return publish_end(job, res, fd, r, (uint64_t)st.st_size);
}

/* The copy child is done: publish its copy, or remove it. */
static int finish_copy(struct dump_job *job, const siginfo_t *si, struct dump_result *res, char *err, size_t errlen)
{
	int r = 0;

	if (si->si_code != CLD_EXITED || si->si_status != 0) {
		if (si->si_code == CLD_EXITED)
			snprintf(err, errlen, "copying %s into the store failed: %s", job->tmp_path,
			         strerror(si->si_status));
		else
			snprintf(err, errlen, "copying %s into the store was killed by signal %d", job->tmp_path,
			         si->si_status);
		r = -EIO;
	} else if (renameat2(job->store_fd, job->tmp_name, job->store_fd, job->name, RENAME_NOREPLACE) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot publish %s: %s", job->final_path, strerror(-r));
	}
	if (r < 0) {
		remove_tmp(job);
		return r;
	}
	unlinkat(job->stage_fd, job->tmp_name, 0);
	job->copying = 0;
	fill_result(job, res, job->bytes);
	return 0;
}

static int publish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	return job->stage_fd >= 0 ? publish_staged(job, res, err, errlen) : publish_in_place(job, res, err, errlen);
}

static int timed_out(struct dump_job *job)
{
	uint64_t n = 0;
	return job->timerfd >= 0 && read(job->timerfd, &n, sizeof(n)) == (ssize_t)sizeof(n) && n > 0;
}

/* Whether fd has something to read now. */
static int readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	return poll(&pfd, 1, 0) > 0;
}

int dump_job_finish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	if (timed_out(job)) {
		char limit[32];
		kill_job(job);
		remove_tmp(job);
		snprintf(err, errlen, "%s did not finish within %s (--dump-timeout): killed it",
		         job->copying ? "copying the dump into the store" : "createdump",
		         units_format((double)job->req.timeout_ns / 1e6, UNIT_MS, limit, sizeof(limit)));
		return -ETIMEDOUT;
	}
	if (job->via_exec || job->copying) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)job->child, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
			return -EAGAIN;
		job->child = 0;
		close(job->fd);
		job->fd = -1;
		if (job->copying)
			return finish_copy(job, &si, res, err, errlen);
		if (si.si_code != CLD_EXITED || si.si_status != 0) {
			char said[256];
			createdump_last_line(job, said, sizeof(said));
			if (si.si_code == CLD_EXITED && si.si_status == 127)
				snprintf(err, errlen, "createdump could not be executed");
			else if (si.si_code == CLD_EXITED)
				snprintf(err, errlen,
				         "createdump failed with exit status %d (is the process gone, or "
				         "is ptrace not allowed?)%s%s",
				         si.si_status, said[0] ? ": " : "", said);
			else
				snprintf(err, errlen, "createdump was killed by signal %d", si.si_status);
			remove_tmp(job);
			return -EIO;
		}
		return publish(job, res, err, errlen);
	}

	if (!readable(job->fd))
		return -EAGAIN;
	struct ipc_reply *reply = malloc(sizeof(*reply));
	int r;
	if (!reply)
		return -ENOMEM;
	r = ipc_read_reply(job->fd, 1000, reply);
	close(job->fd);
	job->fd = -1;
	if (r < 0) {
		free(reply);
		snprintf(err, errlen,
		         "the runtime closed the connection before answering the dump command (%s): did the "
		         "process exit?",
		         strerror(-r));
		kill_job(job);
		remove_tmp(job);
		return r == -EAGAIN ? -EIO : r;
	}
	if (reply->id != 0x00) {
		if (reply->hresult == IPC_HR_UNKNOWN_COMMAND && job->version > 1) {
			free(reply);
			job->version--;
			r = send_runtime(job, err, errlen);
			if (r == 0)
				r = watch_job(job, err, errlen);
			if (r < 0) {
				remove_tmp(job);
				return r;
			}
			return -EAGAIN;
		}
		ipc_describe_error(reply, err, errlen);
		free(reply);
		remove_tmp(job);
		return -EIO;
	}
	free(reply);
	return publish(job, res, err, errlen);
}

/* Kills the createdump that the runtime of pid forked for a dump: a child of
 * pid whose command is createdump. Only the exec path's child is ours; on the
 * runtime path the file would otherwise keep growing, or be created after we
 * removed it. Returns how many were killed. */
static int kill_runtime_createdump(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int killed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[64], buf[512], comm[64];
		unsigned long long ppid = 0;
		char *end;
		long child = strtol(de->d_name, &end, 10);
		int fd;
		ssize_t n;

		if (*end || child <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", child);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces and ')'. */
		char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
		if (!open_paren || !close_paren || close_paren < open_paren ||
		    (size_t)(close_paren - open_paren - 1) >= sizeof(comm))
			continue;
		memcpy(comm, open_paren + 1, (size_t)(close_paren - open_paren - 1));
		comm[close_paren - open_paren - 1] = '\0';
		if (sscanf(close_paren + 1, " %*c %llu", &ppid) != 1 || ppid != (unsigned long long)pid)
			continue;
		if (strcmp(comm, "createdump") == 0 && kill((pid_t)child, SIGKILL) == 0)
			killed++;
	}
	closedir(d);
	return killed;
}

/* Stops whatever createdump runs for the job. */
static void kill_job(struct dump_job *job)
{
	if (job->child > 0) {
		kill(job->child, SIGKILL);
		waitpid(job->child, NULL, 0);
		job->child = 0;
	} else if (!job->via_exec && kill_runtime_createdump(job->req.pid) > 0) {
		/* Give the runtime's createdump a moment to be gone before the
		 * file is removed, so it cannot create it again. */
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

void dump_job_abort(struct dump_job *job)
{
	if (!job)
		return;
	if (job->child > 0 || job->fd >= 0)
		kill_job(job);
	remove_tmp(job);
	job_close(job);
}

void dump_job_free(struct dump_job *job)
{
	if (!job)
		return;
	job_close(job);
}
