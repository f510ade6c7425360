/* The upload queue: see upload.h. One child at a time sends one file: it
 * opens the file as root, then runs the upload helper (dumpwatch-upload,
 * src/helpers/upload/) under a transient uid of its own (uidpool.h), handing
 * it the file, the credentials and the report pipe as descriptors; when it
 * ends, whatever still runs under that uid is killed. The entry file is
 * rewritten (new file, fsync, rename) after each file arrives, so that what
 * is on disk always says what is left to send. The helper writes one line on
 * the pipe: "0 BYTES PARTS" after success, "-ERRNO SENTENCE" after a
 * failure; its exit alone says nothing (a crash is a retryable failure). A
 * helper that is missing, or that root may not run, is a permanent failure:
 * one journaled line, the files kept. */
#include "dumpwatch/upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpwatch/fds.h"
#include "dumpwatch/jsonget.h"
#include "dumpwatch/log.h"
#include "dumpwatch/text.h"
#include "dumpwatch/trust.h"
#include "dumpwatch/uidpool.h"

#define ENTRY_FILE_MAX 65536 /* bytes of one queue entry file read back */
#define CHILD_MSG_MAX 2048

struct up_file {
	char path[PATH_MAX];
	char key[S3_KEY_MAX + 1];
	int done;
	uint64_t bytes;
};

struct up_entry {
	uint64_t seq;
	struct up_file f[UPLOAD_FILES_MAX];
	size_t n;
	int keep_local;
	pid_t pid;
	char process[256];
	char rule[128];
	uint32_t attempts;
	int64_t next_ns;        /* CLOCK_MONOTONIC: when it may be tried (again) */
	int64_t queued_unix_us; /* when it was queued */
	int64_t start_ns;       /* the first try of this run */
};

struct uploader {
	struct loop *loop;
	struct journal *journal;
	struct upload_options o;
	upload_done_fn done;
	void *done_ctx;
	int qfd; /* the queue directory, -1: in memory only */
	struct up_entry **q;
	size_t n, cap;
	uint64_t next_seq;
	struct loop_timer timer;
	/* The upload under way. */
	pid_t child;
	uid_t uid; /* its helper's transient uid; 0: none */
	int pidfd, msg_fd;
	struct up_entry *cur;
	size_t cur_file;
	char msg[CHILD_MSG_MAX];
	size_t msg_len;
};

/* ---- the configuration --------------------------------------------------- */

int upload_parse_url(const char *url, struct upload_options *o, char *err, size_t errlen)
{
	const char *b, *slash;
	size_t blen;

	if (strncmp(url, "s3://", 5) != 0) {
		snprintf(err, errlen, "--upload takes s3://BUCKET[/PREFIX], such as s3://dumps/prod");
		return -EINVAL;
	}
	b = url + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen == 0 || blen >= sizeof(o->bucket)) {
		snprintf(err, errlen, "--upload %s: the bucket name is missing or too long", url);
		return -EINVAL;
	}
	memcpy(o->bucket, b, blen);
	o->bucket[blen] = '\0';
	o->prefix[0] = '\0';
	if (slash && slash[1]) {
		const char *p = slash + 1;
		size_t n = strlen(p);
		if (n + 2 > sizeof(o->prefix) || strstr(p, "..") ||
		    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/") != n) {
			snprintf(
			    err, errlen,
			    "--upload %s: the prefix may only hold letters, digits, '.', '_', '-' and '/', not \"..\"",
			    url);
			return -EINVAL;
		}
		snprintf(o->prefix, sizeof(o->prefix), "%s%s", p, p[n - 1] == '/' ? "" : "/");
	}
	return 0;
}

static void s3_config_of(const struct uploader *u, struct s3_config *c)
{
	memset(c, 0, sizeof(*c));
	c->endpoint = u->o.endpoint;
	c->region = u->o.region[0] ? u->o.region : NULL;
	c->bucket = u->o.bucket;
	c->addressing = u->o.addressing;
	c->part_size = u->o.part_size;
	c->creds = &u->o.creds;
}

/* ---- the entry files ----------------------------------------------------- */

static void entry_name(const struct up_entry *e, char *out, size_t outlen)
{
	snprintf(out, outlen, "%016llu.json", (unsigned long long)e->seq);
}

/* Writes e to the queue directory (a new file, synced, renamed over the
 * old). 0 or -errno. */
static int entry_save(struct uploader *u, const struct up_entry *e)
{
	char name[64];
	struct json_object *o, *files;
	int r;

	if (u->qfd < 0)
		return 0;
	o = json_object_new_object();
	files = json_object_new_array();
	for (size_t i = 0; i < e->n; i++) {
		struct json_object *f = json_object_new_object();
		json_object_object_add(f, "path", json_object_new_string(e->f[i].path));
		json_object_object_add(f, "key", json_object_new_string(e->f[i].key));
		json_object_object_add(f, "done", json_object_new_boolean(e->f[i].done));
		if (e->f[i].done)
			json_object_object_add(f, "bytes", json_object_new_int64((int64_t)e->f[i].bytes));
		json_object_array_add(files, f);
	}
	json_object_object_add(o, "files", files);
	json_object_object_add(o, "keep_local", json_object_new_boolean(e->keep_local));
	json_object_object_add(o, "pid", json_object_new_int(e->pid));
	json_object_object_add(o, "process", json_object_new_string(e->process));
	json_object_object_add(o, "rule", json_object_new_string(e->rule));
	json_object_object_add(o, "attempts", json_object_new_int64(e->attempts));
	json_object_object_add(o, "queued_unix_us", json_object_new_int64(e->queued_unix_us));
	char *text = NULL;
	if (asprintf(&text, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	entry_name(e, name, sizeof(name));
	r = fds_write_file(u->qfd, name, text, strlen(text), 0600, 0);
	free(text);
	json_object_put(o);
	return r;
}

static void entry_remove(struct uploader *u, const struct up_entry *e)
{
	char name[64];

	if (u->qfd < 0)
		return;
	entry_name(e, name, sizeof(name));
	unlinkat(u->qfd, name, 0);
	fsync(u->qfd);
}

/* o's integer member key, 0 when missing or not one. */
static int64_t jint(struct json_object *o, const char *key)
{
	int64_t x;
	return jv_int64(o, key, &x) ? x : 0;
}

/* Reads the entry file name of the queue directory into e. 0, or -EINVAL
 * when it is not one of ours (left alone, said once). */
static int entry_load(struct uploader *u, const char *name, struct up_entry *e)
{
	char *text = NULL, *end;
	struct json_object *o = NULL, *files;
	struct stat st;
	int fd, r = -EINVAL;

	memset(e, 0, sizeof(*e));
	e->seq = strtoull(name, &end, 10);
	if (strcmp(end, ".json") != 0)
		return -EINVAL;
	fd = openat(u->qfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > ENTRY_FILE_MAX)
		goto out;
	text = malloc((size_t)st.st_size + 1);
	if (!text || read(fd, text, (size_t)st.st_size) != st.st_size)
		goto out;
	text[st.st_size] = '\0';
	o = json_tokener_parse(text);
	if (!(files = jv_typed(o, "files", json_type_array)))
		goto out;
	for (size_t i = 0; i < json_object_array_length(files) && e->n < UPLOAD_FILES_MAX; i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		const char *p = jv_str(f, "path", NULL), *k = jv_str(f, "key", NULL);
		if (!p || !k || p[0] != '/' || strlen(p) >= sizeof(e->f[0].path) || strlen(k) >= sizeof(e->f[0].key))
			goto out;
		snprintf(e->f[e->n].path, sizeof(e->f[0].path), "%s", p);
		snprintf(e->f[e->n].key, sizeof(e->f[0].key), "%s", k);
		e->f[e->n].done = json_object_get_boolean(jv_typed(f, "done", json_type_boolean));
		e->f[e->n].bytes = (uint64_t)jint(f, "bytes");
		e->n++;
	}
	if (e->n == 0)
		goto out;
	const char *process = jv_str(o, "process", NULL), *rule = jv_str(o, "rule", NULL);
	e->keep_local = json_object_get_boolean(jv_typed(o, "keep_local", json_type_boolean));
	e->pid = (pid_t)jint(o, "pid");
	snprintf(e->process, sizeof(e->process), "%s", process ? process : "");
	snprintf(e->rule, sizeof(e->rule), "%s", rule ? rule : "");
	e->attempts = (uint32_t)jint(o, "attempts");
	e->queued_unix_us = jint(o, "queued_unix_us");
	r = 0;
out:
	json_object_put(o);
	free(text);
	close(fd);
	return r;
}

static int seq_cmp(const void *a, const void *b)
{
	const struct up_entry *x = *(struct up_entry *const *)a, *y = *(struct up_entry *const *)b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Opens (creating) the queue directory: ours, 0700, not a link. */
static int open_queue_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the upload queue %s: %s", dir, strerror(errno));
		return -errno;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the upload queue %s: %s", dir, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen,
		         "the upload queue %s must be a directory of dumpwatch's user with mode 0700 "
		         "('chown %u %s; chmod 0700 %s')",
		         dir, (unsigned)geteuid(), dir, dir);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* ---- running ------------------------------------------------------------- */

static void pump(struct uploader *u);

static struct json_object *entry_rec(const struct up_entry *e)
{
	struct json_object *rec = json_object_new_object();
	if (e->pid)
		json_object_object_add(rec, "pid", json_object_new_int(e->pid));
	if (e->process[0])
		json_object_object_add(rec, "process", json_object_new_string(e->process));
	if (e->rule[0])
		json_object_object_add(rec, "rule", json_object_new_string(e->rule));
	json_object_object_add(rec, "dump", json_object_new_string(e->f[0].path));
	return rec;
}

static void entry_drop(struct uploader *u, struct up_entry *e)
{
	for (size_t i = 0; i < u->n; i++)
		if (u->q[i] == e) {
			memmove(&u->q[i], &u->q[i + 1], (u->n - i - 1) * sizeof(u->q[0]));
			u->n--;
			break;
		}
	entry_remove(u, e);
	free(e);
}

/* Every file of e is up: journal, remove the local copies unless kept. */
static void entry_done(struct uploader *u, struct up_entry *e)
{
	struct json_object *rec = entry_rec(e), *files = json_object_new_array();
	uint64_t total = 0;

	for (size_t i = 0; i < e->n; i++) {
		struct json_object *f = json_object_new_object();
		json_object_object_add(f, "path", json_object_new_string(e->f[i].path));
		json_object_object_add(f, "key", json_object_new_string(e->f[i].key));
		json_object_object_add(f, "bytes", json_object_new_int64((int64_t)e->f[i].bytes));
		json_object_array_add(files, f);
		total += e->f[i].bytes;
	}
	json_object_object_add(rec, "bucket", json_object_new_string(u->o.bucket));
	json_object_object_add(rec, "files", files);
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)total));
	json_object_object_add(rec, "attempts", json_object_new_int64(e->attempts));
	if (e->start_ns) {
		char ms[32];
		double v = (double)(loop_now() - e->start_ns) / 1e6;
		snprintf(ms, sizeof(ms), "%.1f", v);
		json_object_object_add(rec, "duration_ms", json_object_new_double_s(v, ms));
	}
	json_object_object_add(rec, "local", json_object_new_string(e->keep_local ? "kept" : "removed"));
	if (!e->keep_local)
		for (size_t i = 0; i < e->n; i++)
			unlink(e->f[i].path);
	journal_write(u->journal, "upload", rec);
	log_info("uploaded %s (%.1f MB in %zu file(s)) to s3://%s/%s%s", e->f[0].path, (double)total / 1e6, e->n,
	         u->o.bucket, e->f[0].key, e->keep_local ? "" : "; local copies removed");
	entry_drop(u, e);
	if (u->done)
		u->done(u->done_ctx, 1);
}

/* The upload under way ended: r 0 (bytes up), -EAGAIN (try again later) or
 * a permanent -errno, with why. */
static void upload_ended(struct uploader *u, int r, uint64_t bytes, const char *why)
{
	struct up_entry *e = u->cur;
	size_t i = u->cur_file;

	u->cur = NULL;
	u->child = 0;
	if (r == 0) {
		e->f[i].done = 1;
		e->f[i].bytes = bytes;
		size_t left = 0;
		for (size_t k = 0; k < e->n; k++)
			left += !e->f[k].done;
		if (left == 0) {
			entry_done(u, e);
		} else {
			int sr = entry_save(u, e);
			if (sr < 0)
				log_warn("cannot update the upload queue entry of %s: %s", e->f[0].path, strerror(-sr));
		}
		pump(u);
		return;
	}
	struct json_object *rec = entry_rec(e);
	json_object_object_add(rec, "file", json_object_new_string(e->f[i].path));
	json_object_object_add(rec, "key", json_object_new_string(e->f[i].key));
	json_object_object_add(rec, "error", json_object_new_string(why));
	json_object_object_add(rec, "attempts", json_object_new_int64(e->attempts));
	if (r == -EAGAIN) {
		int64_t backoff = UPLOAD_RETRY_MIN_NS;
		for (uint32_t k = 1; k < e->attempts && backoff < UPLOAD_RETRY_MAX_NS; k++)
			backoff *= 2;
		if (backoff > UPLOAD_RETRY_MAX_NS)
			backoff = UPLOAD_RETRY_MAX_NS;
		e->next_ns = loop_now() + backoff;
		json_object_object_add(rec, "retry_in_s", json_object_new_int64(backoff / 1000000000LL));
		journal_write(u->journal, "upload-failed", rec);
		log_warn("upload of %s failed (attempt %u), retrying in %lld s: %s", e->f[i].path, e->attempts,
		         (long long)(backoff / 1000000000LL), why);
		entry_save(u, e);
		/* The others wait behind it: a server that is down is down for all. */
		pump(u);
		return;
	}
	json_object_object_add(rec, "permanent", json_object_new_boolean(1));
	json_object_object_add(rec, "local", json_object_new_string("kept"));
	journal_write(u->journal, "upload-failed", rec);
	log_error("upload of %s failed and is not retried (the local files are kept): %s", e->f[i].path, why);
	entry_drop(u, e);
	if (u->done)
		u->done(u->done_ctx, 0);
	pump(u);
}

static void read_msg(struct uploader *u)
{
	ssize_t n;

	while (u->msg_fd >= 0 && u->msg_len < sizeof(u->msg) - 1 &&
	       (n = read(u->msg_fd, u->msg + u->msg_len, sizeof(u->msg) - 1 - u->msg_len)) > 0)
		u->msg_len += (size_t)n;
	u->msg[u->msg_len] = '\0';
}

static void child_reaped(struct uploader *u, int status)
{
	char why[1024];
	int r = -EAGAIN;
	uint64_t bytes = 0;

	read_msg(u);
	loop_del(u->loop, u->pidfd);
	close(u->pidfd);
	u->pidfd = -1;
	/* Whatever the helper left running under its uid goes with it. */
	if (u->uid)
		uidpool_release(u->uid, 1);
	u->uid = 0;
	if (u->msg_fd >= 0) {
		loop_del(u->loop, u->msg_fd);
		close(u->msg_fd);
		u->msg_fd = -1;
	}
	char *end;
	long code = strtol(u->msg, &end, 10);
	if (u->msg_len > 0 && end != u->msg && *end == ' ') {
		if (code == 0) {
			bytes = strtoull(end + 1, NULL, 10);
			r = 0;
			why[0] = '\0';
		} else {
			r = (int)code;
			char *nl = strchr(end + 1, '\n');
			if (nl)
				*nl = '\0';
			snprintf(why, sizeof(why), "%s", end + 1);
		}
	} else if (WIFSIGNALED(status)) {
		snprintf(why, sizeof(why), "the upload process was killed by signal %d", WTERMSIG(status));
	} else {
		snprintf(why, sizeof(why), "the upload process ended without a word (status %d)",
		         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	if (r < 0 && r != -EAGAIN && r != -EACCES && r != -ENOENT && r != -EINVAL && r != -EIO && r != -EFBIG &&
	    r != -EPERM && r != -ENAMETOOLONG)
		r = -EAGAIN;
	upload_ended(u, r, bytes, why);
}

static void on_child(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct uploader *u = ctx;
	int status = 0;
	(void)l;
	(void)fd;
	(void)events;

	if (waitpid(u->child, &status, WNOHANG) == 0)
		return;
	child_reaped(u, status);
}

static void on_msg(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct uploader *u = ctx;
	(void)events;

	read_msg(u);
	if (u->msg_len >= sizeof(u->msg) - 1 || (events & (EPOLLHUP | EPOLLERR))) {
		loop_del(l, fd);
		close(fd);
		u->msg_fd = -1;
	}
}

static const char *content_type(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && strcmp(path + n - 5, ".json") == 0)
		return "application/json";
	if (n > 4 && strcmp(path + n - 4, ".svg") == 0)
		return "image/svg+xml";
	return "application/octet-stream";
}

/* The daemon's environment variables the helper keeps: the proxy and the
 * CA certificates an operator may set for the service; nothing else. */
static const char *const helper_env[] = {"http_proxy", "https_proxy", "no_proxy",  "HTTP_PROXY",    "HTTPS_PROXY",
                                         "NO_PROXY",   "ALL_PROXY",   "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"};

/* The child: opens the file (as root), hands it, the credentials and the
 * report pipe (out) to the helper as descriptors, becomes uid (when root)
 * and executes the helper. Never returns; a failure before the helper runs
 * is said on out. */
static void child_run(struct uploader *u, const struct up_file *f, const char *helper, uid_t uid, int out)
{
	char line[CHILD_MSG_MAX], part[32], *env[sizeof(helper_env) / sizeof(helper_env[0]) + 2];
	const char *addressing[] = {"auto", "path", "vhost"};
	size_t n_env = 0;
	int creds[2], r;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	int fd = open(f->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = fd < 0 && errno == ENOENT ? -ENOENT : -EIO;
		snprintf(line, sizeof(line), "%d %s: %s\n", r, f->path,
		         fd < 0 ? strerror(errno) : "not a regular file");
		goto fail;
	}
	/* The credentials go through a pipe, whole before the helper reads
	 * (three lines, far less than a pipe holds). */
	if (pipe2(creds, O_CLOEXEC) < 0) {
		snprintf(line, sizeof(line), "%d cannot hand over the credentials: %s\n", -EAGAIN, strerror(errno));
		goto fail;
	}
	dprintf(creds[1], "AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n", u->o.creds.access_key_id,
	        u->o.creds.secret_access_key);
	if (u->o.creds.session_token[0])
		dprintf(creds[1], "AWS_SESSION_TOKEN=%s\n", u->o.creds.session_token);
	close(creds[1]);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* Onto 0 to 3, moved above them first so that no dup2 clobbers one. */
	int a = fcntl(fd, F_DUPFD, 10), b = fcntl(out, F_DUPFD, 10), c = fcntl(creds[0], F_DUPFD, 10),
	    d = fcntl(devnull, F_DUPFD, 10);
	if (a < 0 || b < 0 || c < 0 || d < 0 || dup2(a, 0) < 0 || dup2(b, 1) < 0 || dup2(d, 2) < 0 || dup2(c, 3) < 0) {
		snprintf(line, sizeof(line), "%d cannot hand over the file: %s\n", -EAGAIN, strerror(errno));
		out = b >= 0 ? b : out;
		goto fail;
	}
	out = 1;
	fds_close_from(4);
	if (geteuid() == 0 && (r = uidpool_become(uid)) < 0) {
		snprintf(line, sizeof(line),
		         "%d cannot become uid %u to upload: %s (CAP_SETUID and CAP_SETGID are needed)\n", -EAGAIN,
		         (unsigned)uid, strerror(-r));
		goto fail;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (chdir("/") < 0)
		_exit(1);
	for (size_t i = 0; i < sizeof(helper_env) / sizeof(helper_env[0]); i++) {
		const char *v = getenv(helper_env[i]);
		if (v && asprintf(&env[n_env], "%s=%s", helper_env[i], v) >= 0)
			n_env++;
	}
	env[n_env++] = "LANG=C.UTF-8";
	env[n_env] = NULL;
	snprintf(part, sizeof(part), "%llu", (unsigned long long)u->o.part_size);
	const char *argv[] = {helper,
	                      "--endpoint",
	                      u->o.endpoint,
	                      "--bucket",
	                      u->o.bucket,
	                      "--key",
	                      f->key,
	                      "--region",
	                      u->o.region[0] ? u->o.region : S3_DEFAULT_REGION,
	                      "--addressing",
	                      addressing[u->o.addressing <= S3_ADDRESSING_VHOST ? u->o.addressing : 0],
	                      "--part-size",
	                      part,
	                      "--content-type",
	                      content_type(f->path),
	                      NULL};
	execve(helper, (char *const *)argv, env);
	snprintf(line, sizeof(line), "%d cannot execute %.1024s: %s\n", -EIO, helper, strerror(errno));
fail:
	if (write(out, line, strlen(line)) < 0)
		_exit(1);
	_exit(1);
}

/* Starts the next upload due, or arms the timer for it. */
static void pump(struct uploader *u)
{
	int64_t now = loop_now(), next = 0;
	struct up_entry *e = NULL;

	if (u->child || !u->loop)
		return;
	for (size_t i = 0; i < u->n; i++) {
		if (u->q[i]->next_ns <= now) {
			e = u->q[i];
			break;
		}
		if (!next || u->q[i]->next_ns < next)
			next = u->q[i]->next_ns;
	}
	if (!e) {
		loop_timer_arm(u->loop, &u->timer, next);
		return;
	}
	size_t i;
	for (i = 0; i < e->n && e->f[i].done; i++)
		;
	if (i == e->n) {
		entry_done(u, e);
		pump(u);
		return;
	}
	/* The helper is found and checked here, as root: missing or not
	 * root's, it is one permanent failure, and the dump stays. */
	char helper[PATH_MAX], why[PATH_MAX + 256];
	int hr = trust_helper_path("dumpwatch-upload", helper, sizeof(helper), why, sizeof(why));
	if (hr < 0) {
		e->attempts++;
		u->cur = e;
		u->cur_file = i;
		upload_ended(u, hr == -ENOENT ? -ENOENT : -EPERM, 0, why);
		return;
	}
	uid_t uid = 0;
	if (geteuid() == 0 && uidpool_lease(&uid, why, sizeof(why)) < 0) {
		log_warn("upload of %s waits: %s", e->f[i].path, why);
		e->next_ns = now + UPLOAD_RETRY_MIN_NS;
		loop_timer_arm(u->loop, &u->timer, e->next_ns);
		return;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		if (uid)
			uidpool_release(uid, 0);
		e->next_ns = now + UPLOAD_RETRY_MIN_NS;
		loop_timer_arm(u->loop, &u->timer, e->next_ns);
		return;
	}
	e->attempts++;
	if (!e->start_ns)
		e->start_ns = now;
	pid_t pid = fork();
	if (pid == 0)
		child_run(u, &e->f[i], helper, uid, p[1]);
	close(p[1]);
	if (pid < 0) {
		if (uid)
			uidpool_release(uid, 0);
		close(p[0]);
		e->next_ns = now + UPLOAD_RETRY_MIN_NS;
		loop_timer_arm(u->loop, &u->timer, e->next_ns);
		return;
	}
	u->uid = uid;
	u->child = pid;
	u->cur = e;
	u->cur_file = i;
	u->msg_len = 0;
	u->msg_fd = p[0];
	u->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (u->pidfd < 0 || loop_add(u->loop, u->pidfd, EPOLLIN, on_child, u) < 0) {
		int status = 0;
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (u->pidfd >= 0) {
			close(u->pidfd);
		}
		u->pidfd = -1;
		close(u->msg_fd);
		u->msg_fd = -1;
		u->child = 0;
		u->cur = NULL;
		if (u->uid)
			uidpool_release(u->uid, 1);
		u->uid = 0;
		e->next_ns = now + UPLOAD_RETRY_MIN_NS;
		loop_timer_arm(u->loop, &u->timer, e->next_ns);
		return;
	}
	loop_add(u->loop, u->msg_fd, EPOLLIN, on_msg, u);
	log_debug("uploading %s to s3://%s/%s (attempt %u)", e->f[i].path, u->o.bucket, e->f[i].key, e->attempts);
}

static void on_timer(struct loop *l, void *ctx)
{
	(void)l;
	pump(ctx);
}

/* ---- the queue ----------------------------------------------------------- */

static int push(struct uploader *u, struct up_entry *e)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 16;
		struct up_entry **q = realloc(u->q, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		u->q = q;
		u->cap = cap;
	}
	u->q[u->n++] = e;
	return 0;
}

struct uploader *uploader_new(struct loop *l, struct journal *j, const struct upload_options *o, upload_done_fn done,
                              void *done_ctx, char *err, size_t errlen)
{
	struct uploader *u = calloc(1, sizeof(*u));
	struct s3_config c;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u->loop = l;
	u->journal = j;
	u->o = *o;
	u->done = done;
	u->done_ctx = done_ctx;
	u->qfd = u->pidfd = u->msg_fd = -1;
	u->next_seq = 1;
	loop_timer_init(&u->timer, on_timer, u);
	s3_config_of(u, &c);
	if (s3_config_check(&c, err, errlen) < 0) {
		uploader_free(u);
		return NULL;
	}
	if (o->queue_dir) {
		u->qfd = open_queue_dir(o->queue_dir, err, errlen);
		if (u->qfd < 0) {
			uploader_free(u);
			return NULL;
		}
		DIR *d = fdopendir(dup(u->qfd));
		struct dirent *de;
		size_t refused = 0;
		while (d && (de = readdir(d)) && u->n < UPLOAD_QUEUE_MAX) {
			if (de->d_name[0] == '.') {
				if (strstr(de->d_name, ".tmp"))
					unlinkat(u->qfd, de->d_name, 0); /* a save cut short */
				continue;
			}
			struct up_entry *e = malloc(sizeof(*e));
			if (!e || entry_load(u, de->d_name, e) < 0 || push(u, e) < 0) {
				free(e);
				refused++;
				continue;
			}
			if (e->seq >= u->next_seq)
				u->next_seq = e->seq + 1;
		}
		if (d)
			closedir(d);
		if (refused)
			log_warn("the upload queue %s holds %zu file(s) that are not upload entries: left alone",
			         o->queue_dir, refused);
		if (u->n) {
			qsort(u->q, u->n, sizeof(u->q[0]), seq_cmp);
			log_info("%zu upload(s) queued before the last stop: starting them", u->n);
		}
	}
	pump(u);
	return u;
}

void uploader_free(struct uploader *u)
{
	if (!u)
		return;
	if (u->child) {
		int status;
		kill(u->child, SIGKILL);
		waitpid(u->child, &status, 0);
	}
	if (u->uid)
		uidpool_release(u->uid, 1);
	if (u->pidfd >= 0) {
		loop_del(u->loop, u->pidfd);
		close(u->pidfd);
	}
	if (u->msg_fd >= 0) {
		loop_del(u->loop, u->msg_fd);
		close(u->msg_fd);
	}
	if (u->loop)
		loop_timer_disarm(u->loop, &u->timer);
	for (size_t i = 0; i < u->n; i++)
		free(u->q[i]);
	free(u->q);
	if (u->qfd >= 0)
		close(u->qfd);
	s3_credentials_clear(&u->o.creds);
	free(u);
}

size_t uploader_pending(const struct uploader *u)
{
	return u ? u->n : 0;
}

int uploader_enqueue(struct uploader *u, const struct upload_item *it, char *err, size_t errlen)
{
	struct up_entry *e;
	int r;

	if (u->n >= UPLOAD_QUEUE_MAX) {
		snprintf(err, errlen, "the upload queue is full (%d dumps waiting): this one is not uploaded",
		         UPLOAD_QUEUE_MAX);
		r = -ENOSPC;
		goto refused;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto refused;
	}
	const char *prefix = it->prefix && it->prefix[0] ? it->prefix : u->o.prefix;
	for (size_t i = 0; i < it->n_files && i < UPLOAD_FILES_MAX; i++) {
		const char *slash = strrchr(it->files[i], '/');
		const char *base = slash ? slash + 1 : it->files[i];
		const char *sep = prefix[0] && prefix[strlen(prefix) - 1] != '/' ? "/" : "";
		snprintf(e->f[e->n].path, sizeof(e->f[0].path), "%s", it->files[i]);
		if (snprintf(e->f[e->n].key, sizeof(e->f[0].key), "%s%s%s", prefix, sep, base) >=
		    (int)sizeof(e->f[0].key)) {
			free(e);
			snprintf(err, errlen, "the key of %s is longer than %d bytes", it->files[i], S3_KEY_MAX);
			r = -ENAMETOOLONG;
			goto refused;
		}
		e->n++;
	}
	e->seq = u->next_seq++;
	e->keep_local = it->keep_local < 0 ? u->o.keep_local : it->keep_local;
	e->pid = it->pid;
	snprintf(e->process, sizeof(e->process), "%s", it->process ? it->process : "");
	snprintf(e->rule, sizeof(e->rule), "%s", it->rule ? it->rule : "");
	e->queued_unix_us = loop_wall_now() / 1000;
	r = entry_save(u, e);
	if (r < 0) {
		/* Uploaded all the same; only a restart before it ends loses it. */
		log_warn("cannot write the upload queue entry of %s (%s): it is uploaded, but a restart before it ends "
		         "forgets it",
		         it->files[0], strerror(-r));
	}
	if (push(u, e) < 0) {
		entry_remove(u, e);
		free(e);
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto refused;
	}
	pump(u);
	return 0;
refused:;
	struct json_object *rec = json_object_new_object();
	json_object_object_add(rec, "pid", json_object_new_int(it->pid));
	if (it->process)
		json_object_object_add(rec, "process", json_object_new_string(it->process));
	if (it->rule)
		json_object_object_add(rec, "rule", json_object_new_string(it->rule));
	json_object_object_add(rec, "dump", json_object_new_string(it->n_files ? it->files[0] : ""));
	json_object_object_add(rec, "error", json_object_new_string(err));
	json_object_object_add(rec, "permanent", json_object_new_boolean(1));
	json_object_object_add(rec, "local", json_object_new_string("kept"));
	journal_write(u->journal, "upload-failed", rec);
	log_error("upload of %s: %s", it->n_files ? it->files[0] : "?", err);
	if (u->done)
		u->done(u->done_ctx, 0);
	return r;
}
