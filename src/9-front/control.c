/* The guard's status socket; see control.h.
 *
 * Design note. Creating the socket safely: the directory is opened once
 * (O_PATH, O_NOFOLLOW) and checked (ours or root's, not writable by others);
 * everything after that - looking at an old socket, removing it, binding - goes
 * through that descriptor (fstatat/unlinkat on it, bind to
 * /proc/self/fd/N/name), so the directory cannot be swapped under us between
 * the check and the bind. The socket is bound under umask 0177, so it is 0600
 * from its first moment, not chmod'ed afterwards.
 *
 * Serving: each permitted connection gets its whole answer built at once and
 * written with non-blocking sends; what the socket buffer does not take waits
 * for EPOLLOUT. Nothing is read from clients except a drain before close (a
 * unix socket closed with unread data makes the peer's read fail with
 * ECONNRESET instead of seeing EOF). Without timers, a client that never reads
 * is bounded by count, not by time: the ninth connection closes the oldest.
 *
 * Running out of descriptors: a listening socket with a pending connection
 * stays readable, so failing accept4 with EMFILE would spin the loop. A spare
 * descriptor (/dev/null) is kept for that moment: closed, the connection
 * accepted and closed at once, the spare reopened. */
#include "dumpwatch/control.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"

#define CONTROL_BACKLOG 16
#define CONTROL_ACCEPTS_PER_WAKEUP 32 /* then other watches get their turn */
#define CONTROL_DRAIN_MAX (64 * 1024) /* bytes read from a client before closing it */
#define CONTROL_LOG_EVERY_NS (60LL * 1000000000LL)

/* At most one log line a minute for one kind of event; the rest counted. */
struct ratelimit {
	int64_t last_ns; /* 0: never logged */
	uint64_t quiet;  /* events not logged since the last line */
};

struct client {
	struct control *c;
	int fd; /* -1: free slot */
	int watched;
	uint64_t seq; /* accept order; the smallest is the oldest */
	char *buf;
	size_t len, off;
};

struct control {
	struct loop *l;
	int fd, dirfd, spare_fd;
	char *path;
	char name[NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
	uid_t uid;
	control_build_fn build;
	void *ctx;
	struct client clients[CONTROL_MAX_CLIENTS];
	uint64_t seq;
	struct control_stats st;
	struct ratelimit rl_refused, rl_fds, rl_build;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whether to log this event now; *ret_quiet gets the events not logged since
 * the last line (they are counted as logged by this one). */
static int ratelimit_pass(struct ratelimit *rl, uint64_t *ret_quiet)
{
	int64_t now = mono_ns();

	if (rl->last_ns != 0 && now - rl->last_ns < CONTROL_LOG_EVERY_NS) {
		rl->quiet++;
		return 0;
	}
	*ret_quiet = rl->quiet;
	rl->quiet = 0;
	rl->last_ns = now;
	return 1;
}

/* " (and N more since the last such message)" when some were not logged. */
static const char *quiet_text(uint64_t quiet, char *buf, size_t buflen)
{
	if (quiet == 0)
		return "";
	snprintf(buf, buflen, " (and %llu more since the last such message)", (unsigned long long)quiet);
	return buf;
}

/* The name of dirfd/name that bind and connect can take whatever the length
 * of the directory's own path. */
static int proc_addr(struct sockaddr_un *sa, int dirfd, const char *name)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	return n < 0 || (size_t)n >= sizeof(sa->sun_path) ? -ENAMETOOLONG : 0;
}

/* Whether someone answers on the socket at sa: 1 yes, 0 no (a stale socket
 * left by a guard that died), or -errno. */
static int socket_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		r = 1;
	else if (errno == EAGAIN || errno == EINPROGRESS) /* a full backlog: alive but busy */
		r = 1;
	else if (errno == ECONNREFUSED || errno == ENOENT)
		r = 0;
	else
		r = -errno;
	close(fd);
	return r;
}

/* Opens the directory of path and checks it; fills c->dirfd and c->name. */
static int open_dir(struct control *c, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	size_t dlen;
	struct stat st;

	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) > NAME_MAX) {
		snprintf(err, errlen, "status socket %s: the path must end in a file name", path);
		return -EINVAL;
	}
	if (!slash) {
		strcpy(dir, ".");
	} else {
		dlen = (size_t)(slash - path);
		while (dlen > 1 && path[dlen - 1] == '/') /* a trailing slash would follow a link */
			dlen--;
		if (dlen >= sizeof(dir)) {
			snprintf(err, errlen, "status socket %s: path too long", path);
			return -ENAMETOOLONG;
		}
		if (dlen == 0)
			dlen = 1; /* "/name" */
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	snprintf(c->name, sizeof(c->name), "%s", name);

	c->dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->dirfd < 0) {
		int e = errno;
		if (e == ENOTDIR || e == ELOOP)
			snprintf(err, errlen,
			         "status socket directory %s is not a directory (a symbolic link is not followed: give "
			         "the directory it points to)",
			         dir);
		else
			snprintf(err, errlen, "status socket directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (fstat(c->dirfd, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "status socket directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (st.st_uid != c->uid && st.st_uid != 0) {
		snprintf(err, errlen,
		         "status socket directory %s belongs to uid %u, not to root or to us (uid %u): it could "
		         "replace the socket",
		         dir, (unsigned)st.st_uid, (unsigned)c->uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
		         "status socket directory %s is writable by other users (mode %04o): they could replace the "
		         "socket; make it 0700 or 0755",
		         dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Clears the way for the socket: nothing there, or an old socket of ours
 * that nobody answers on (removed). */
static int clear_old(struct control *c, const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int live;

	if (fstatat(c->dirfd, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		if (e == ENOENT)
			return 0;
		snprintf(err, errlen, "status socket %s: %s", c->path, strerror(e));
		return -e;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket: not replacing it; remove it", c->path);
		return -EEXIST;
	}
	if (st.st_uid != c->uid) {
		snprintf(err, errlen, "%s is a socket of uid %u, not ours (uid %u): not replacing it", c->path,
		         (unsigned)st.st_uid, (unsigned)c->uid);
		return -EEXIST;
	}
	live = socket_live(sa);
	if (live > 0) {
		snprintf(err, errlen, "another dumpwatch guard already answers on %s", c->path);
		return -EADDRINUSE;
	}
	if (live < 0) {
		snprintf(err, errlen, "status socket %s: cannot tell whether it is in use: %s", c->path,
		         strerror(-live));
		return live;
	}
	if (unlinkat(c->dirfd, c->name, 0) < 0 && errno != ENOENT) {
		int e = errno;
		snprintf(err, errlen, "cannot remove the stale socket %s: %s", c->path, strerror(e));
		return -e;
	}
	return 0;
}

/* Reads and discards what the client sent, up to a bound (see the note). */
static void drain(int fd)
{
	char scratch[4096];
	size_t total = 0;

	while (total < CONTROL_DRAIN_MAX) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
	}
}

static void client_close(struct client *cl, int served)
{
	struct control *c = cl->c;

	if (cl->fd < 0)
		return;
	if (cl->watched)
		loop_del(c->l, cl->fd);
	drain(cl->fd);
	close(cl->fd);
	free(cl->buf);
	if (served)
		c->st.served++;
	else
		c->st.dropped++;
	cl->fd = -1;
	cl->watched = 0;
	cl->buf = NULL;
	cl->len = cl->off = 0;
}

/* Sends what the socket takes. Returns 1 when the client is done (and
 * closed), 0 when the rest waits for EPOLLOUT. */
static int client_write(struct client *cl)
{
	while (cl->off < cl->len) {
		ssize_t n = send(cl->fd, cl->buf + cl->off, cl->len - cl->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			cl->off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		client_close(cl, 0); /* the client left (EPIPE, ECONNRESET) */
		return 1;
	}
	client_close(cl, 1);
	return 1;
}

static void on_client(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct client *cl = ctx;

	(void)l;
	(void)fd;
	if (events & EPOLLERR)
		client_close(cl, 0);
	else
		client_write(cl); /* after EPOLLHUP the send fails and closes it */
}

/* A free slot, closing the oldest client when there is none. */
static struct client *free_slot(struct control *c)
{
	struct client *oldest = NULL;

	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		struct client *cl = &c->clients[i];
		if (cl->fd < 0)
			return cl;
		if (!oldest || cl->seq < oldest->seq)
			oldest = cl;
	}
	log_debug("status socket %s: %d answers in flight, closing the oldest", c->path, CONTROL_MAX_CLIENTS);
	client_close(oldest, 0);
	return oldest;
}

/* Closes a connection we do not answer; cr NULL when SO_PEERCRED failed
 * with error e. */
static void refuse(struct control *c, int fd, const struct ucred *cr, int e)
{
	char who[48], q[80];
	uint64_t quiet = 0;

	c->st.refused++;
	close(fd);
	if (!ratelimit_pass(&c->rl_refused, &quiet))
		return;
	if (c->uid == 0)
		snprintf(who, sizeof(who), "root");
	else
		snprintf(who, sizeof(who), "root and uid %u", (unsigned)c->uid);
	if (cr)
		log_warn("status socket %s: refused a connection from uid %u (pid %d): only %s may ask%s", c->path,
		         (unsigned)cr->uid, (int)cr->pid, who, quiet_text(quiet, q, sizeof(q)));
	else
		log_warn("status socket %s: refused a connection whose sender is unknown (SO_PEERCRED: %s)%s", c->path,
		         strerror(e), quiet_text(quiet, q, sizeof(q)));
}

static void serve(struct control *c, int fd)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct client *cl;
	char *text;
	size_t len;
	uint64_t quiet = 0;
	char q[80];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
		refuse(c, fd, NULL, errno);
		return;
	}
	if (cr.uid != 0 && cr.uid != c->uid) {
		refuse(c, fd, &cr, 0);
		return;
	}
	/* Make room first, so no more than CONTROL_MAX_CLIENTS answers are
	 * ever held at once. */
	cl = free_slot(c);
	text = c->build(c->ctx);
	len = text ? strnlen(text, (size_t)CONTROL_MAX_ANSWER + 1) : 0;
	if (!text || len > CONTROL_MAX_ANSWER) {
		if (ratelimit_pass(&c->rl_build, &quiet))
			log_warn("status socket %s: %s%s", c->path,
			         text ? "the status document is larger than 16 MiB: not sent"
			              : "could not build the status document",
			         quiet_text(quiet, q, sizeof(q)));
		free(text);
		close(fd);
		c->st.dropped++;
		return;
	}
	cl->c = c;
	cl->fd = fd;
	cl->buf = text;
	cl->len = len;
	cl->off = 0;
	cl->seq = ++c->seq;
	cl->watched = 0;
	if (client_write(cl))
		return;
	if (loop_add(c->l, fd, EPOLLOUT, on_client, cl) < 0)
		client_close(cl, 0);
	else
		cl->watched = 1;
}

/* Accepts and at once closes one connection using the spare descriptor, so a
 * pending connection does not keep the listening socket readable forever.
 * Returns 0 when it took one, -1 when there was none or no spare. */
static int shed_one(struct control *c)
{
	uint64_t quiet = 0;
	char q[80];
	int fd;

	if (c->spare_fd < 0)
		return -1;
	close(c->spare_fd);
	fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	c->st.refused++;
	if (ratelimit_pass(&c->rl_fds, &quiet))
		log_warn("status socket %s: out of file descriptors, closed a status request unanswered%s", c->path,
		         quiet_text(quiet, q, sizeof(q)));
	return 0;
}

static void on_listen(struct loop *l, int lfd, uint32_t events, void *ctx)
{
	struct control *c = ctx;

	(void)l;
	(void)events;
	for (int i = 0; i < CONTROL_ACCEPTS_PER_WAKEUP; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			serve(c, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if ((errno == EMFILE || errno == ENFILE) && shed_one(c) == 0)
			continue;
		return; /* EAGAIN: nothing more pending */
	}
}

int control_open(struct loop *l, const char *path, control_build_fn build, void *ctx, struct control **out, char *err,
                 size_t errlen)
{
	struct control *c;
	struct sockaddr_un sa;
	struct stat st;
	mode_t old_mask;
	int r;

	*out = NULL;
	if (!l || !path || !*path || !build) {
		snprintf(err, errlen, "status socket: no path given");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		snprintf(err, errlen, "status socket %s: out of memory", path);
		return -ENOMEM;
	}
	c->l = l;
	c->fd = c->dirfd = c->spare_fd = -1;
	c->uid = geteuid();
	c->build = build;
	c->ctx = ctx;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		c->clients[i].c = c;
		c->clients[i].fd = -1;
	}

	if ((r = open_dir(c, path, err, errlen)) < 0)
		goto fail;
	if ((r = proc_addr(&sa, c->dirfd, c->name)) < 0) {
		snprintf(err, errlen, "status socket %s: the file name is too long for a unix socket", path);
		goto fail;
	}
	if ((r = clear_old(c, &sa, err, errlen)) < 0)
		goto fail;

	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		r = -errno;
		snprintf(err, errlen, "status socket %s: %s", path, strerror(-r));
		goto fail;
	}
	old_mask = umask(0177);
	r = bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old_mask);
	if (r < 0) {
		snprintf(err, errlen, "cannot create the status socket %s: %s%s", path, strerror(-r),
		         r == -ENOENT ? " (is /proc mounted?)" : "");
		goto fail;
	}
	if (fstatat(c->dirfd, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		snprintf(err, errlen, "status socket %s: %s", path, strerror(-r));
		goto fail_unlink;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	if (listen(c->fd, CONTROL_BACKLOG) < 0) {
		r = -errno;
		snprintf(err, errlen, "status socket %s: listen: %s", path, strerror(-r));
		goto fail_unlink;
	}
	if ((r = loop_add(l, c->fd, EPOLLIN, on_listen, c)) < 0) {
		snprintf(err, errlen, "status socket %s: %s", path, strerror(-r));
		goto fail_unlink;
	}
	c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	*out = c;
	return 0;

fail_unlink:
	unlinkat(c->dirfd, c->name, 0);
fail:
	if (c->fd >= 0)
		close(c->fd);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->path);
	free(c);
	return r;
}

void control_free(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++)
		client_close(&c->clients[i], 0);
	loop_del(c->l, c->fd);
	close(c->fd);
	/* Only our own socket: a successor may have replaced it already. */
	if (fstatat(c->dirfd, c->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlinkat(c->dirfd, c->name, 0);
	close(c->dirfd);
	if (c->spare_fd >= 0)
		close(c->spare_fd);
	free(c->path);
	free(c);
}

void control_get_stats(const struct control *c, struct control_stats *out)
{
	*out = c->st;
	out->clients = 0;
	for (size_t i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0)
			out->clients++;
}
