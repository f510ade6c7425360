/* Core dump capture; see dump.h for the two paths and the guarantees. */
#include "dumpwatch/dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/ipc.h"

/* The runtime answers the dump command only after createdump has exited; a
 * heap dump of a few GB takes tens of seconds, so the wait is not bounded
 * here (the caller may abort). */
#define DUMP_IPC_VERSION_NEWEST 3

struct dump_job {
	struct dump_request req;
	char socket_path[512];
	char dir[PATH_MAX];
	char tmp_path[PATH_MAX]; /* where createdump writes, our view */
	char final_path[PATH_MAX];
	int via_exec;
	int fd;      /* IPC connection or pidfd */
	int version; /* IPC dump command version in flight */
	pid_t child; /* createdump child, exec path */
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
	char name[80], rule[80], stamp[40], pidbuf[16], raw[32];
	time_t s = (time_t)(unix_ns / 1000000000LL);
	struct tm tm;
	size_t j = 0;

	if (!outlen)
		return;
	if (!tmpl || !tmpl[0])
		tmpl = DUMP_DEFAULT_TEMPLATE;
	sanitize(process_name, name, sizeof(name), 64);
	sanitize(rule_name, rule, sizeof(rule), 64);
	gmtime_r(&s, &tm);
	strftime(raw, sizeof(raw), "%Y%m%dT%H%M%S", &tm);
	snprintf(stamp, sizeof(stamp), "%s.%03dZ", raw, (int)((unix_ns / 1000000LL) % 1000));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	for (const char *p = tmpl; *p && j + 1 < outlen;) {
		static const char *const keys[] = {"{name}", "{pid}", "{rule}", "{time}"};
		const char *vals[] = {name, pidbuf, rule, stamp};
		size_t k;

		for (k = 0; k < 4; k++)
			if (strncmp(p, keys[k], strlen(keys[k])) == 0)
				break;
		if (k < 4) {
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

/* Every component of path, from / down, must be root-owned and not writable by
 * group or others, or a non-root user could swap what root executes. */
static int path_is_root_safe(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		if (lstat(buf, &st) < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot check %s: %s", buf, strerror(e));
			return -e;
		}
		if (S_ISLNK(st.st_mode)) {
			/* /proc/pid/root is a magic link into the target's tree; the
			 * components below it were checked already. */
			if (strncmp(buf, "/proc/", 6) == 0)
				return 0;
			snprintf(err, errlen, "refusing to execute %s as root: %s is a symbolic link", path, buf);
			return -EPERM;
		}
		if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
			snprintf(err, errlen,
			         "refusing to execute %s as root: %s is owned by uid %u or writable by group/others "
			         "(mode %04o); use the runtime's dump command (--dump-via runtime) instead",
			         path, buf, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf) {
			if (slash && buf[1] != '\0') {
				buf[1] = '\0';
				continue;
			}
			return 0;
		}
		*slash = '\0';
	}
}

#define LIBCORECLR "/libcoreclr.so"

int dump_find_createdump(pid_t pid, int other_mount_ns, char *out, size_t outlen, char *err, size_t errlen)
{
	char path[64], line[PATH_MAX + 256], dir[PATH_MAX] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
		return -e;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t n;
		if (!p)
			continue;
		n = strcspn(p, "\n");
		p[n] = '\0';
		if (n >= sizeof(LIBCORECLR) - 1 && strcmp(p + n - (sizeof(LIBCORECLR) - 1), LIBCORECLR) == 0) {
			p[n - (sizeof(LIBCORECLR) - 1) + 1] = '\0'; /* keep the directory's '/' */
			snprintf(dir, sizeof(dir), "%s", p);
			break;
		}
	}
	fclose(f);
	if (!dir[0]) {
		snprintf(err, errlen, "process %d has no libcoreclr.so mapped: is it a .NET process?", (int)pid);
		return -ENOENT;
	}
	if (other_mount_ns)
		snprintf(out, outlen, "/proc/%d/root%screatedump", (int)pid, dir);
	else
		snprintf(out, outlen, "%screatedump", dir);
	if (access(out, X_OK) < 0) {
		int e = errno;
		snprintf(err, errlen, "createdump not found or not executable at %s: %s", out, strerror(e));
		return -e;
	}
	if (geteuid() == 0) {
		int r = path_is_root_safe(out, err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
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

static int start_exec(struct dump_job *job, char *err, size_t errlen)
{
	char createdump[PATH_MAX], pidbuf[16];
	int r =
	    dump_find_createdump(job->req.pid, job->req.other_mount_ns, createdump, sizeof(createdump), err, errlen);
	if (r < 0)
		return r;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)job->req.pid);
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot start createdump: %s", strerror(e));
		return -e;
	}
	if (child == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		umask(077);
		execl(createdump, "createdump", "--name", job->tmp_path, type_flag(job->req.type), pidbuf,
		      (char *)NULL);
		_exit(127);
	}
	job->child = child;
	job->fd = (int)syscall(SYS_pidfd_open, child, 0);
	if (job->fd < 0) {
		int e = errno;
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		job->child = 0;
		snprintf(err, errlen, "cannot watch createdump (pidfd_open): %s", strerror(e));
		return -e;
	}
	return 0;
}

static int send_runtime(struct dump_job *job, char *err, size_t errlen)
{
	const struct ipc_endpoint ep = {.path = job->socket_path, .pid = job->req.pid, .uid = job->req.uid};

	return ipc_dump_send(&ep, job->version, job->tmp_path, job->req.type, 0, &job->fd, err, errlen);
}

int dump_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen)
{
	struct dump_job *job;
	char name[NAME_MAX + 1];
	int r;

	if (req->dir[0] != '/') {
		snprintf(err, errlen, "dump directory %s must be an absolute path", req->dir);
		return -EINVAL;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->req = *req;
	job->fd = -1;
	snprintf(job->socket_path, sizeof(job->socket_path), "%s", req->socket_path ? req->socket_path : "");
	snprintf(job->dir, sizeof(job->dir), "%s", req->dir);
	job->req.socket_path = job->socket_path;
	job->req.dir = job->dir;
	job->req.process_name = NULL;
	job->req.rule_name = NULL;
	job->req.name_template = NULL;
	dump_file_name_template(req->name_template, req->process_name, req->pid, req->rule_name, req->unix_ns, name,
	                        sizeof(name));
	snprintf(job->final_path, sizeof(job->final_path), "%s/%s", req->dir, name);
	snprintf(job->tmp_path, sizeof(job->tmp_path), "%s/.%s.partial", req->dir, name);
	clock_gettime(CLOCK_MONOTONIC, &job->started);

	enum dump_via via = req->via;
	if (via == DUMP_VIA_AUTO)
		via = req->other_mount_ns ? DUMP_VIA_EXEC : DUMP_VIA_RUNTIME;
	if (via == DUMP_VIA_RUNTIME) {
		if (req->other_mount_ns) {
			snprintf(err, errlen,
			         "process %d runs in another mount namespace, where the runtime cannot see %s: "
			         "use --dump-via exec",
			         (int)req->pid, req->dir);
			free(job);
			return -EXDEV;
		}
		r = dump_dir_writable_by(req->dir, req->pid, req->uid, req->gid, err, errlen);
		if (r < 0) {
			free(job);
			return r;
		}
		job->version = DUMP_IPC_VERSION_NEWEST;
		r = send_runtime(job, err, errlen);
	} else {
		job->via_exec = 1;
		r = start_exec(job, err, errlen);
	}
	if (r < 0) {
		free(job);
		return r;
	}
	*ret = job;
	return 0;
}

int dump_job_fd(const struct dump_job *job)
{
	return job->fd;
}

const char *dump_job_path(const struct dump_job *job)
{
	return job->final_path;
}

static int publish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	struct stat st;
	struct timespec now;

	if (lstat(job->tmp_path, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "createdump reported success but %s is missing or not a regular file",
		         job->tmp_path);
		unlink(job->tmp_path);
		return -EIO;
	}
	if (st.st_size == 0) {
		snprintf(err, errlen, "createdump wrote an empty file");
		unlink(job->tmp_path);
		return -EIO;
	}
	/* The runtime's createdump writes as the target's user; the published
	 * dump belongs to us and is readable by us only. */
	if (chmod(job->tmp_path, 0600) < 0 ||
	    (geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0) && lchown(job->tmp_path, 0, 0) < 0)) {
		int e = errno;
		snprintf(err, errlen, "cannot secure %s: %s", job->tmp_path, strerror(e));
		unlink(job->tmp_path);
		return -e;
	}
	if (renameat2(AT_FDCWD, job->tmp_path, AT_FDCWD, job->final_path, RENAME_NOREPLACE) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot publish %s: %s", job->final_path, strerror(e));
		unlink(job->tmp_path);
		return -e;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	snprintf(res->path, sizeof(res->path), "%s", job->final_path);
	res->bytes = (uint64_t)st.st_size;
	res->duration_ms =
	    (double)(now.tv_sec - job->started.tv_sec) * 1e3 + (double)(now.tv_nsec - job->started.tv_nsec) / 1e6;
	res->via = job->via_exec ? "exec" : "runtime";
	return 0;
}

int dump_job_finish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	if (job->via_exec) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)job->child, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
			return -EAGAIN;
		job->child = 0;
		close(job->fd);
		job->fd = -1;
		if (si.si_code != CLD_EXITED || si.si_status != 0) {
			if (si.si_code == CLD_EXITED && si.si_status == 127)
				snprintf(err, errlen, "createdump could not be executed");
			else if (si.si_code == CLD_EXITED)
				snprintf(err, errlen,
				         "createdump failed with exit status %d (is the process gone, or "
				         "is ptrace not allowed?)",
				         si.si_status);
			else
				snprintf(err, errlen, "createdump was killed by signal %d", si.si_status);
			unlink(job->tmp_path);
			return -EIO;
		}
		return publish(job, res, err, errlen);
	}

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
		unlink(job->tmp_path);
		return r == -EAGAIN ? -EIO : r;
	}
	if (reply->id != 0x00) {
		if (reply->hresult == IPC_HR_UNKNOWN_COMMAND && job->version > 1) {
			free(reply);
			job->version--;
			r = send_runtime(job, err, errlen);
			if (r < 0) {
				unlink(job->tmp_path);
				return r;
			}
			return -EAGAIN;
		}
		ipc_describe_error(reply, err, errlen);
		free(reply);
		unlink(job->tmp_path);
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

void dump_job_abort(struct dump_job *job)
{
	if (!job)
		return;
	if (job->child > 0) {
		kill(job->child, SIGKILL);
		waitpid(job->child, NULL, 0);
	} else if (job->fd >= 0 && kill_runtime_createdump(job->req.pid) > 0) {
		/* Give the runtime's createdump a moment to be gone before the
		 * file is removed, so it cannot create it again. */
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (job->fd >= 0)
		close(job->fd);
	unlink(job->tmp_path);
	free(job);
}

void dump_job_free(struct dump_job *job)
{
	if (!job)
		return;
	if (job->fd >= 0)
		close(job->fd);
	free(job);
}
