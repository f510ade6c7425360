/* The dump job: a core dump of one process from its start to its
 * publication in the store; see dump.h for the two paths and the guarantees.
 * The job admits the dump (the disk guards), has it written (the runtime's
 * dump command, or createdump run by us), watches it with its time limit,
 * and publishes the file: renamed in the store, or taken from the staging
 * directory a runtime of another user wrote it in (stage.c). The names
 * (dumpname.c), the createdump to run (createdump.c) and the checks of the
 * store directory (storedir.c) are beside it. */
#include "dumpwatch/dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump_shared.h"
#include "dumpwatch/gcdump.h"
#include "dumpwatch/heapdump.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/store.h"
#include "dumpwatch/text.h"
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
	char name[NAME_MAX + 1];     /* final name in the store, as the caller decided it */
	char tmp_name[NAME_MAX + 1]; /* ".NAME.partial", in the staging directory or the store */
	char tmp_path[PATH_MAX];     /* where createdump writes, as a path (runtime path) */
	char final_path[PATH_MAX];
	int store_fd;            /* the store directory, the caller's (req.store_fd), not closed here */
	struct dump_stage stage; /* where the target's user writes it, or none: the store */
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
	int heap;          /* a heap snapshot by our child: HEAP_GCDUMP or HEAP_SUMMARY, else 0 */
	int summary_fd;    /* the heap summary's JSON, written by the child (a memfd), or -1 */
	struct timespec started;
};

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

enum { HEAP_GCDUMP = 1, HEAP_SUMMARY };

/* The largest heap summary read back from the child. */
#define HEAP_SUMMARY_MAX (4u * 1024 * 1024)

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

/* A heap snapshot, taken by a child of ours so that the loop goes on: it
 * connects to the target's socket (checked to be served by the target),
 * writes the .gcdump into the store's partial file (HEAP_GCDUMP) and the
 * summary into a memfd; what went wrong, as one line, into out_fd. */
static int start_heap(struct dump_job *job, char *err, size_t errlen)
{
	int gfd = -1;

	job->out_fd = memfd_create("heap-snapshot-error", MFD_CLOEXEC);
	job->summary_fd = memfd_create("heap-summary", MFD_CLOEXEC);
	if (job->out_fd < 0 || job->summary_fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot start the heap snapshot (memfd): %s", strerror(e));
		return -e;
	}
	if (job->heap == HEAP_GCDUMP) {
		gfd = openat(job->store_fd, job->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (gfd < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot create %s: %s", job->tmp_path, strerror(e));
			return -e;
		}
	}
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		if (gfd >= 0)
			close(gfd);
		snprintf(err, errlen, "cannot start the heap snapshot: %s", strerror(e));
		return -e;
	}
	if (child == 0) {
		char why[512];
		struct heapdump_request hr = {
		    .ep = {.path = job->socket_path, .pid = job->req.pid, .uid = job->req.uid},
		    .timeout_ns = job->req.timeout_ns,
		    .gcdump_fd = gfd,
		    .summary_fd = job->summary_fd,
		};
		int r = heapdump_run(&hr, why, sizeof(why));
		if (r < 0) {
			size_t n = strlen(why);
			why[n] = '\n';
			if (write(job->out_fd, why, n + 1) < 0)
				_exit(2);
			_exit(1);
		}
		_exit(0);
	}
	if (gfd >= 0)
		close(gfd);
	return adopt_child(job, child, "the heap snapshot", err, errlen);
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
	stage_close(&job->stage);
	if (job->out_fd >= 0)
		close(job->out_fd);
	if (job->summary_fd >= 0)
		close(job->summary_fd);
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
	if (job->stage.fd >= 0)
		unlinkat(job->stage.fd, job->tmp_name, 0);
	if (job->stage.fd < 0 || job->copying)
		unlinkat(job->store_fd, job->tmp_name, 0);
}

static void kill_job(struct dump_job *job);

int dump_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen)
{
	struct dump_job *job;
	int r;

	if (req->dir[0] != '/' || req->store_fd < 0 || !dump_file_name_ok(req->name)) {
		snprintf(err, errlen,
		         "cannot dump to %s/%s: a dump needs an absolute directory, its store opened and a "
		         "plain file name",
		         req->dir, req->name ? req->name : "");
		return -EINVAL;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->req = *req;
	job->fd = job->epfd = job->timerfd = job->out_fd = job->summary_fd = -1;
	stage_init(&job->stage);
	if (req->limits)
		job->limits = *req->limits;
	snprintf(job->socket_path, sizeof(job->socket_path), "%s", req->socket_path ? req->socket_path : "");
	snprintf(job->dir, sizeof(job->dir), "%s", req->dir);
	snprintf(job->tmpdir, sizeof(job->tmpdir), "%s", req->tmpdir ? req->tmpdir : "");
	job->req.socket_path = job->socket_path;
	job->req.dir = job->dir;
	job->req.tmpdir = job->tmpdir;
	job->req.limits = NULL;
	snprintf(job->name, sizeof(job->name), "%s", req->name);
	job->req.name = job->name;
	job->store_fd = req->store_fd;
	snprintf(job->final_path, sizeof(job->final_path), "%s/%s", req->dir, job->name);
	snprintf(job->tmp_name, sizeof(job->tmp_name), ".%.*s.partial", NAME_MAX - 10, job->name);
	snprintf(job->tmp_path, sizeof(job->tmp_path), "%s/%s", req->dir, job->tmp_name);
	clock_gettime(CLOCK_MONOTONIC, &job->started);

	/* The runtime's own dump command unless exec was asked for: then no
	 * file of the target's is executed by us. */
	enum dump_via via = req->via == DUMP_VIA_EXEC ? DUMP_VIA_EXEC : DUMP_VIA_RUNTIME;
	r = admit(job, req, err, errlen);
	if (r < 0)
		goto fail;
	if (req->type == DUMP_GCDUMP) {
		/* Written by us, in the store: no staging, no runtime's file. */
		job->heap = HEAP_GCDUMP;
		via = DUMP_VIA_AUTO;
	}

	/* The store of the user who ran sudo, dumping that user's process:
	 * its runtime writes there directly. */
	struct stat store_st;
	int users_own_store = fstat(job->store_fd, &store_st) == 0 && store_st.st_uid == req->uid;
	if (via == DUMP_VIA_RUNTIME && req->other_mount_ns && !stage_sees_store(&job->req, job->store_fd)) {
		r = stage_open_in_target(&job->stage, &job->req, job->tmp_name, job->tmp_path, sizeof(job->tmp_path),
		                         err, errlen);
		if (r == 0)
			r = stage_check_free(&job->stage, &job->req, &job->limits, job->estimate, err, errlen);
		if (r < 0)
			goto fail;
	} else if (job->heap) {
		/* start_heap claims the name. */
	} else if (via == DUMP_VIA_RUNTIME && geteuid() == 0 && req->uid != 0 && !users_own_store) {
		r = stage_open_incoming(&job->stage, &job->req, job->store_fd, job->tmp_name, job->tmp_path,
		                        sizeof(job->tmp_path), err, errlen);
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
	if (job->heap) {
		r = start_heap(job, err, errlen);
	} else if (via == DUMP_VIA_RUNTIME) {
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

int dump_heap_summary_start(const struct dump_request *req, struct dump_job **ret, char *err, size_t errlen)
{
	struct dump_job *job = calloc(1, sizeof(*job));
	int r;

	if (!job)
		return -ENOMEM;
	job->req = *req;
	job->fd = job->epfd = job->timerfd = job->out_fd = job->summary_fd = job->store_fd = -1;
	stage_init(&job->stage);
	snprintf(job->socket_path, sizeof(job->socket_path), "%s", req->socket_path ? req->socket_path : "");
	job->req.socket_path = job->socket_path;
	job->req.dir = job->req.name = job->req.tmpdir = NULL;
	job->req.limits = NULL;
	job->heap = HEAP_SUMMARY;
	clock_gettime(CLOCK_MONOTONIC, &job->started);
	r = start_heap(job, err, errlen);
	if (r == 0)
		r = watch_job(job, err, errlen);
	if (r < 0) {
		kill_job(job);
		job_close(job);
		return r;
	}
	*ret = job;
	return 0;
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
	int dir = job->stage.fd >= 0 ? job->stage.fd : job->store_fd;

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
	res->via = job->heap ? "eventpipe" : job->via_exec ? "exec" : "runtime";
	res->heap = NULL;
}

static int publish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen);

/* The summary the heap snapshot child wrote, parsed: NULL when there is
 * none, it is too long or it does not parse (the dump stands without it). */
static struct json_object *read_summary(const struct dump_job *job)
{
	struct stat st;
	struct json_object *j = NULL;

	if (job->summary_fd < 0 || fstat(job->summary_fd, &st) < 0 || st.st_size <= 0 ||
	    (uint64_t)st.st_size > HEAP_SUMMARY_MAX)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return NULL;
	if (pread(job->summary_fd, buf, (size_t)st.st_size, 0) == st.st_size) {
		buf[st.st_size] = '\0';
		j = json_tokener_parse(buf);
		if (j && !json_object_is_type(j, json_type_object)) {
			json_object_put(j);
			j = NULL;
		}
	}
	free(buf);
	return j;
}

/* The heap snapshot child has ended: its summary (and, for a gcdump, its
 * file published), or why not. */
static int finish_heap(struct dump_job *job, const siginfo_t *si, struct dump_result *res, char *err, size_t errlen)
{
	if (si->si_code != CLD_EXITED || si->si_status != 0) {
		char said[384];
		createdump_last_line(job, said, sizeof(said));
		if (si->si_code == CLD_EXITED && said[0])
			snprintf(err, errlen, "the heap snapshot failed: %s", said);
		else if (si->si_code == CLD_EXITED)
			snprintf(err, errlen, "the heap snapshot failed (exit status %d)", si->si_status);
		else
			snprintf(err, errlen, "the heap snapshot was killed by signal %d", si->si_status);
		if (job->heap == HEAP_GCDUMP)
			remove_tmp(job);
		return -EIO;
	}
	struct json_object *summary = read_summary(job);
	int r = 0;
	if (job->heap == HEAP_GCDUMP)
		r = publish(job, res, err, errlen);
	else
		fill_result(job, res, 0);
	if (r < 0) {
		json_object_put(summary);
		return r;
	}
	res->heap = summary;
	return 0;
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

/* Whether the file behind fd holds a dump (store_check_core), with the
 * reason in err when not. */
static int check_dump(struct dump_job *job, int fd, uint64_t size, char *err, size_t errlen)
{
	char why[512];
	int r = job->heap ? store_check_gcdump(fd, size, why, sizeof(why))
	                  : store_check_core(fd, size, job->bound, why, sizeof(why));

	if (r < 0)
		snprintf(err, errlen, "%s is not published: %s", job->tmp_path, why);
	return r;
}

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
	child = stage_copy_start(src, dst, n);
	close(dst);
	if (child < 0) {
		snprintf(err, errlen, "cannot copy the dump into the store: %s", strerror((int)-child));
		return (int)child;
	}
	job->bytes = n;
	int r = adopt_child(job, child, "the copy", err, errlen);
	return r < 0 ? r : watch_job(job, err, errlen);
}

/* A dump written by the target's user in its staging directory, taken by
 * one descriptor (stage_take), checked, and linked into the store by that
 * descriptor: what is published is the inode checked, whatever the name in
 * the staging directory points to by then. */
static int publish_staged(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	struct stat st;
	uint64_t size = 0;
	int fd = -1;
	int r = stage_take(&job->stage, &job->req, job->tmp_name, job->tmp_path, &fd, &size, err, errlen);

	if (r < 0) {
		/* said */
	} else if ((r = check_dump(job, fd, size, err, errlen)) < 0) {
		stage_give_back(fd, &job->req);
	} else if ((r = stage_link(fd, job->store_fd, job->name)) == -EXDEV) {
		r = start_copy(job, fd, size, err, errlen);
		close(fd);
		if (r < 0) {
			remove_tmp(job);
			return r;
		}
		return -EAGAIN;
	} else if (r < 0) {
		snprintf(err, errlen, "cannot publish %s: %s", job->final_path, strerror(-r));
	} else {
		unlinkat(job->stage.fd, job->tmp_name, 0);
		/* Another name made for it in the meantime would outlive the
		 * store's accounting and deletion. */
		if (fstat(fd, &st) < 0 || st.st_nlink != 1) {
			unlinkat(job->store_fd, job->name, 0);
			snprintf(err, errlen, "%s got another hard link while it was published; removed",
			         job->tmp_path);
			r = -EPERM;
		}
	}
	return publish_end(job, res, fd, r, size);
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
	unlinkat(job->stage.fd, job->tmp_name, 0);
	job->copying = 0;
	fill_result(job, res, job->bytes);
	return 0;
}

static int publish(struct dump_job *job, struct dump_result *res, char *err, size_t errlen)
{
	return job->stage.fd >= 0 ? publish_staged(job, res, err, errlen) : publish_in_place(job, res, err, errlen);
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
		         job->copying ? "copying the dump into the store"
		         : job->heap  ? "the heap snapshot"
		                      : "createdump",
		         units_format((double)job->req.timeout_ns / 1e6, UNIT_MS, limit, sizeof(limit)));
		return -ETIMEDOUT;
	}
	if (job->via_exec || job->copying || job->heap) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)job->child, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
			return -EAGAIN;
		job->child = 0;
		close(job->fd);
		job->fd = -1;
		if (job->copying)
			return finish_copy(job, &si, res, err, errlen);
		if (job->heap)
			return finish_heap(job, &si, res, err, errlen);
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
	} else if (!job->via_exec && !job->heap && kill_runtime_createdump(job->req.pid) > 0) {
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
