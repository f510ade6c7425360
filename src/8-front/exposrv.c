/* The HTTP endpoint and the textfile of the exposition (see exposrv.h). */
#include "dumpwatch/exposrv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpwatch/expo.h"
#include "dumpwatch/fds.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"

struct exposrv {
	struct loop *loop;
	exposrv_build_fn build;
	void *ctx;
	struct MHD_Daemon *mhd;
	int mhd_fd; /* its epoll descriptor, on the loop; -1 */
	struct loop_timer mhd_timer;
	int dirfd; /* the file's directory; -1 without a file */
	char base[NAME_MAX + 1];
	char path[PATH_MAX];
	int64_t interval_ns;
	struct loop_timer file_timer;
	int file_warned; /* a failure logged; cleared by the next success */
	struct exposrv_stats st;
};

/* ---- HTTP ------------------------------------------------------------- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("metrics http: %s", line);
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)(uintptr_t)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	struct exposrv *s = cls;
	(void)version;
	(void)upload_data;
	(void)con_cls;

	/* A body is neither needed nor read: it is dropped as it comes. */
	*upload_data_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics is served\n");
	if (strcmp(url, "/metrics") != 0)
		return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
	char *text = s->build(s->ctx);
	if (!text)
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the metrics could not be built\n");
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, EXPO_CONTENT_TYPE);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	s->st.served++;
	return ret;
}

/* The next MHD_run is due when its descriptor is readable or at its
 * timeout (a connection's idle limit), whichever comes first. */
static void mhd_arm(struct exposrv *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_get_timeout(s->mhd, &ms) == MHD_YES)
		loop_timer_arm(s->loop, &s->mhd_timer, loop_now() + (int64_t)ms * 1000000LL + 1);
	else
		loop_timer_disarm(s->loop, &s->mhd_timer);
}

static void mhd_step(struct exposrv *s)
{
	MHD_run(s->mhd);
	mhd_arm(s);
}

static void on_mhd_fd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	(void)l;
	(void)fd;
	(void)events;
	mhd_step(ctx);
}

static void on_mhd_timer(struct loop *l, void *ctx)
{
	(void)l;
	mhd_step(ctx);
}

static int listen_socket(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, r = expo_parse_listen(addr, &ss, &len, err, errlen);

	if (r < 0)
		return r;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "--metrics-listen %s: cannot create a socket: %s", addr, strerror(-r));
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "--metrics-listen %s: cannot listen there: %s", addr, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

static int http_open(struct exposrv *s, const char *addr, char *err, size_t errlen)
{
	int fd = listen_socket(addr, err, errlen);
	if (fd < 0)
		return fd;
	/* Given a socket, libmicrohttpd owns it from here, also on failure. */
	s->mhd = MHD_start_daemon(
	    MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)EXPOSRV_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned)EXPOSRV_MAX_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)EXPOSRV_TIMEOUT_S,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(err, errlen, "--metrics-listen %s: the HTTP server (libmicrohttpd) did not start", addr);
		return -EIO;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		snprintf(err, errlen, "--metrics-listen %s: libmicrohttpd gives no epoll descriptor", addr);
		return -EIO;
	}
	int r = loop_add(s->loop, info->epoll_fd, EPOLLIN, on_mhd_fd, s);
	if (r < 0) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, strerror(-r));
		return r;
	}
	s->mhd_fd = info->epoll_fd;
	mhd_arm(s);
	return 0;
}

/* ---- the file --------------------------------------------------------- */

static int file_open(struct exposrv *s, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;
	int r;

	if (path[0] != '/' || !slash || !slash[1] || strlen(slash + 1) > NAME_MAX - 24 || strcmp(slash + 1, ".") == 0 ||
	    strcmp(slash + 1, "..") == 0) {
		snprintf(err, errlen, "--metrics-file %s: give an absolute path to a file", path);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	snprintf(s->base, sizeof(s->base), "%s", slash + 1);
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		r = -errno;
		snprintf(err, errlen, "--metrics-file %s: cannot open the directory %s: %s", path, dir, strerror(-r));
		return r;
	}
	if (fstat(s->dirfd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "--metrics-file %s: %s: %s", path, dir, strerror(-r));
		return r;
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen,
		         "--metrics-file %s: refused: the directory %s (owner uid %u, mode %04o) must be root's or "
		         "uid %u's and writable by no one else (chmod go-w %s)",
		         path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(), dir);
		return -EPERM;
	}
	return 0;
}

int exposrv_write_file(struct exposrv *s, char *err, size_t errlen)
{
	int r;

	if (!s || s->dirfd < 0)
		return 0;
	char *text = s->build(s->ctx);
	if (!text) {
		snprintf(err, errlen, "%s: the metrics could not be built (out of memory)", s->path);
		return -ENOMEM;
	}
	/* 0644 whatever the umask: node_exporter reads it as another user. */
	r = fds_write_file(s->dirfd, s->base, text, strlen(text), 0644, 0);
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "cannot write %s: %s", s->path, strerror(-r));
		s->st.failed++;
		return r;
	}
	s->st.writes++;
	return 0;
}

static void on_file_timer(struct loop *l, void *ctx)
{
	struct exposrv *s = ctx;
	char err[PATH_MAX + 128];
	int64_t now = loop_now();

	if (exposrv_write_file(s, err, sizeof(err)) < 0) {
		if (!s->file_warned)
			log_warn("metrics file: %s; trying again every %.0f s", err, (double)s->interval_ns / 1e9);
		s->file_warned = 1;
	} else if (s->file_warned) {
		log_info("metrics file: %s written again", s->path);
		s->file_warned = 0;
	}
	loop_timer_arm(l, &s->file_timer, (now / s->interval_ns + 1) * s->interval_ns);
}

/* ---- open, free ------------------------------------------------------- */

int exposrv_open(struct loop *l, const struct exposrv_config *cfg, struct exposrv **ret, char *err, size_t errlen)
{
	struct exposrv *s = calloc(1, sizeof(*s));
	int r;

	*ret = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory starting the metrics exposition");
		return -ENOMEM;
	}
	s->loop = l;
	s->build = cfg->build;
	s->ctx = cfg->ctx;
	s->mhd_fd = s->dirfd = -1;
	s->interval_ns = cfg->interval_ns > 0 ? cfg->interval_ns : EXPOSRV_DEFAULT_INTERVAL_NS;
	loop_timer_init(&s->mhd_timer, on_mhd_timer, s);
	loop_timer_init(&s->file_timer, on_file_timer, s);
	if (cfg->file && (r = file_open(s, cfg->file, err, errlen)) < 0)
		goto fail;
	if (cfg->listen && (r = http_open(s, cfg->listen, err, errlen)) < 0)
		goto fail;
	if (s->dirfd >= 0)
		loop_timer_arm(l, &s->file_timer, loop_now());
	*ret = s;
	return 0;
fail:
	exposrv_free(s);
	return r;
}

void exposrv_get_stats(const struct exposrv *s, struct exposrv_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (s)
		*out = s->st;
}

void exposrv_free(struct exposrv *s)
{
	if (!s)
		return;
	loop_timer_disarm(s->loop, &s->mhd_timer);
	loop_timer_disarm(s->loop, &s->file_timer);
	if (s->mhd_fd >= 0)
		loop_del(s->loop, s->mhd_fd);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s);
}
