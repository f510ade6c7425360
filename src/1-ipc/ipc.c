/* The .NET diagnostics IPC client (PROTOCOL.md section 2; dotnet/diagnostics
 * documentation/design-docs/ipc-protocol.md): the transport and the requests.
 * The messages themselves are built and parsed in wire.c; here they travel.
 * The blocking calls wait in poll() against one deadline, retry EINTR and
 * avoid SIGPIPE with MSG_NOSIGNAL; the ipc_op state machine makes the same
 * exchanges without ever blocking, on the owner's loop. One command per
 * connection, as the runtime closes it after answering (except for the trace
 * stream that follows CollectTracing). */
#include "dumpwatch/ipc.h"

#include "dumpwatch/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Bound of the retry loop in ipc_connect, which has no timeout parameter:
 * connect(2) on a unix socket only waits when the listener's backlog is full. */
#define IPC_CONNECT_TIMEOUT_MS 5000

/* --- socket calls --- */

/* A deadline from a timeout; a negative timeout means none (-1). */
static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : fds_now_ms() + timeout_ms;
}

static int write_all(int fd, const void *buf, size_t n, int64_t deadline)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t w;
		int r = fds_wait(fd, POLLOUT, deadline);

		if (r < 0)
			return r;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads exactly n bytes. On end of stream returns -ECONNRESET and leaves
 * the count read so far in *ret_got. */
static int read_exact(int fd, uint8_t *p, size_t n, int64_t deadline, size_t *ret_got)
{
	size_t got = 0;
	int r = 0;

	while (got < n) {
		ssize_t k;

		if ((r = fds_wait(fd, POLLIN, deadline)) < 0)
			break;
		k = recv(fd, p + got, n - got, MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			r = -errno;
			break;
		}
		if (k == 0) {
			r = -ECONNRESET;
			break;
		}
		got += (size_t)k;
	}
	if (ret_got)
		*ret_got = got;
	return r;
}

static int read_reply_until(int fd, int64_t deadline, struct ipc_reply *reply)
{
	uint8_t hdr[IPC_HEADER_SIZE];
	size_t got = 0;
	int size, r;

	reply->payload_len = 0;
	r = read_exact(fd, hdr, sizeof(hdr), deadline, &got);
	if (r == -ECONNRESET && got > 0)
		return -EBADMSG; /* cut off inside the header */
	if (r < 0)
		return r;
	size = ipc_parse_header(hdr, sizeof(hdr), NULL, NULL);
	if (size < 0)
		return size;
	/* Read only the payload (at most 65515 bytes, which the reply always
	 * holds): a trace stream may follow on the same socket. */
	r = read_exact(fd, reply->payload, (size_t)size - IPC_HEADER_SIZE, deadline, &got);
	if (r == -ECONNRESET)
		return -EBADMSG;
	if (r < 0)
		return r;
	reply->payload_len = (size_t)size - IPC_HEADER_SIZE;
	return ipc_parse_reply(hdr, reply);
}

int ipc_read_reply(int fd, int timeout_ms, struct ipc_reply *reply)
{
	if (fd < 0 || !reply)
		return -EINVAL;
	return read_reply_until(fd, deadline_after(timeout_ms), reply);
}

/* The socket's listener must be the process the endpoint names (SO_PEERCRED
 * holds the pid and uid of whoever called listen(2), translated into our
 * namespaces): anyone who can write the socket directory could otherwise plant
 * a socket under a runtime's name and feed us a stream, or receive the dump
 * path we send. -EPERM with the credentials seen in *seen. */
static int check_peer(int fd, const struct ipc_endpoint *ep, struct ucred *seen)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (ep->pid <= 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (cred.pid == ep->pid && cred.uid == ep->uid)
		return 0;
	if (seen)
		*seen = cred;
	return -EPERM;
}

/* The address of the socket at path. A path longer than sun_path is reached
 * through its directory: opened O_PATH into *dirfd (unless it already is),
 * the address is /proc/self/fd/N/name. 0 or -errno; *dirfd is the caller's
 * to close either way. */
static int socket_address(const char *path, int *dirfd, struct sockaddr_un *sa)
{
	size_t plen = strlen(path);
	const char *slash;
	char dir[PATH_MAX];
	size_t dlen;
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (plen == 0)
		return -EINVAL;
	if (plen < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, plen + 1);
		return 0;
	}
	slash = strrchr(path, '/');
	if (!slash || slash == path || (dlen = (size_t)(slash - path)) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (*dirfd < 0) {
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
		*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*dirfd < 0)
			return -errno;
	}
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", *dirfd, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* Connects to ep's path (socket_address) before the deadline. The socket is
 * non-blocking while connecting, so a full backlog (EAGAIN) is retried
 * instead of blocking, then made blocking. */
static int connect_until(const struct ipc_endpoint *ep, int64_t deadline, struct ucred *seen)
{
	const char *path = ep ? ep->path : NULL;
	struct sockaddr_un sa;
	int dirfd = -1, fd = -1, r = 0, flags;

	if (!path)
		return -EINVAL;
	if ((r = socket_address(path, &dirfd, &sa)) < 0)
		goto out;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EISCONN)
			break;
		if (errno == EAGAIN) {
			struct timespec ts = {0, 10 * 1000 * 1000};

			if (deadline >= 0 && fds_now_ms() >= deadline) {
				r = -ETIMEDOUT;
				goto out;
			}
			nanosleep(&ts, NULL);
			continue;
		}
		if (errno == EINTR || errno == EINPROGRESS || errno == EALREADY) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if ((r = fds_wait(fd, POLLOUT, deadline)) < 0)
				goto out;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
				r = -errno;
				goto out;
			}
			if (soerr) {
				r = -soerr;
				goto out;
			}
			break;
		}
		r = -errno;
		goto out;
	}
	if ((r = check_peer(fd, ep, seen)) < 0)
		goto out;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		r = -errno;
out:
	if (dirfd >= 0)
		close(dirfd);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

int ipc_connect(const struct ipc_endpoint *ep)
{
	return connect_until(ep, deadline_after(IPC_CONNECT_TIMEOUT_MS), NULL);
}

/* A sentence for a transport failure talking to ep; seen holds the
 * listener's credentials when the peer check refused it. */
static void describe_transport(char *err, size_t errlen, const char *what, const struct ipc_endpoint *ep, int r,
                               int timeout_ms, const struct ucred *seen)
{
	const char *path = ep->path;

	if (!err || !errlen)
		return;
	if (r == -EPERM && seen && seen->pid) {
		snprintf(err, errlen,
		         "%s: refusing %s: it is served by pid %d uid %u, not by process %d uid %u (a socket "
		         "planted by another process or user?)",
		         what, path, (int)seen->pid, (unsigned)seen->uid, (int)ep->pid, (unsigned)ep->uid);
		return;
	}
	switch (r) {
	case -ETIMEDOUT:
		snprintf(err, errlen, "%s: the runtime did not answer within %d ms on %s (is the process stopped?)",
		         what, timeout_ms, path);
		break;
	case -ENOENT:
		snprintf(err, errlen, "%s: the diagnostics socket %s is gone (the process has exited?)", what, path);
		break;
	case -ECONNREFUSED:
		snprintf(err, errlen, "%s: nobody listens on %s any more (the process has exited?)", what, path);
		break;
	case -EACCES:
	case -EPERM:
		snprintf(err, errlen,
		         "%s: not allowed to connect to %s: run as root or as the user that owns the process", what,
		         path);
		break;
	case -ECONNRESET:
	case -EPIPE:
		snprintf(err, errlen, "%s: the runtime closed the connection on %s without answering", what, path);
		break;
	case -EBADMSG:
		snprintf(err, errlen, "%s: the runtime sent a malformed reply on %s", what, path);
		break;
	default:
		snprintf(err, errlen, "%s: %s: %s", what, path, strerror(-r));
		break;
	}
}

static int is_ok(const struct ipc_reply *r)
{
	return r->set == IPC_SET_SERVER && r->id == 0x00;
}

static int is_unknown_command(const struct ipc_reply *r)
{
	return r->set == IPC_SET_SERVER && r->id == 0xFF && r->hresult == IPC_HR_UNKNOWN_COMMAND;
}

/* The sentence and errno for a reply that is not OK. */
static int refused(const struct ipc_reply *reply, const char *what, char *err, size_t errlen)
{
	char why[384];

	ipc_describe_error(reply, why, sizeof(why));
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", what, why);
	return ipc_reply_errno(reply);
}

/* --- non-blocking requests --- */

enum { OP_IDLE = 0, OP_CONNECT, OP_SEND, OP_HEADER, OP_PAYLOAD, OP_DONE };

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The command's name for messages. */
static const char *op_name(const struct ipc_op *op)
{
	static const char *const info[] = {"", "ProcessInfo", "ProcessInfo2", "ProcessInfo3"};
	static const char *const collect[] = {
	    "", "CollectTracing", "CollectTracing2", "CollectTracing3", "CollectTracing4", "CollectTracing5"};

	switch (op->kind) {
	case IPC_OP_PROCESS_INFO:
		return op->version >= 1 && op->version <= 3 ? info[op->version] : "ProcessInfo";
	case IPC_OP_COLLECT_TRACING:
		return op->version >= 1 && op->version <= 5 ? collect[op->version] : "CollectTracing";
	case IPC_OP_STOP_TRACING:
		return "StopTracing";
	}
	return "request";
}

static void op_close(struct ipc_op *op)
{
	if (op->phase != OP_IDLE && op->fd >= 0)
		close(op->fd);
	if (op->phase != OP_IDLE && op->dirfd >= 0)
		close(op->dirfd);
	op->fd = op->dirfd = -1;
}

void ipc_op_clear(struct ipc_op *op)
{
	if (!op)
		return;
	op_close(op);
	if (op->phase != OP_IDLE && op->stream_fd >= 0)
		close(op->stream_fd);
	op->stream_fd = -1;
	strbuf_free(&op->req);
	free(op->reply);
	op->reply = NULL;
	op->phase = OP_IDLE;
}

static int op_fail(struct ipc_op *op, int r)
{
	op_close(op);
	op->phase = OP_DONE;
	return r;
}

/* Builds the request of the current version. */
static int op_build(struct ipc_op *op)
{
	switch (op->kind) {
	case IPC_OP_PROCESS_INFO:
		return ipc_build_process_info(op->version, &op->req);
	case IPC_OP_COLLECT_TRACING:
		return ipc_build_collect_tracing(op->version, op->buffer_mb, op->providers, op->n_providers, &op->req);
	case IPC_OP_STOP_TRACING:
		return ipc_build_stop_tracing(op->stop_session, &op->req);
	}
	return -EINVAL;
}

/* One attempt: a new connection for the current version. */
static int op_attempt(struct ipc_op *op, int64_t now)
{
	int r;

	op_close(op);
	op->attempt++;
	op->sent = op->got = 0;
	op->retry_ns = 0;
	op->deadline_ns = now + (int64_t)op->timeout_ms * 1000000LL;
	if ((r = op_build(op)) < 0) {
		if (op->kind == IPC_OP_COLLECT_TRACING)
			snprintf(op->err, sizeof(op->err),
			         "%s: invalid request (a provider needs a name in UTF-8 and a level 0-5, the buffer at "
			         "least 1 MB, the message at most 64 KiB)",
			         op_name(op));
		else
			snprintf(op->err, sizeof(op->err), "%s: cannot build the request", op_name(op));
		return op_fail(op, r);
	}
	op->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (op->fd < 0) {
		r = -errno;
		snprintf(op->err, sizeof(op->err), "%s: socket: %s", op_name(op), strerror(-r));
		return op_fail(op, r);
	}
	op->phase = OP_CONNECT;
	return 0;
}

/* A failure of the transport, with the sentence describe_transport gives. */
static int op_transport_fail(struct ipc_op *op, int r, const struct ucred *seen)
{
	describe_transport(op->err, sizeof(op->err), op_name(op), &op->ep, r, op->timeout_ms, seen);
	return op_fail(op, r);
}

static int op_start(struct ipc_op *op, enum ipc_op_kind kind, int version, const struct ipc_endpoint *ep,
                    int timeout_ms)
{
	ipc_op_clear(op);
	op->kind = kind;
	op->version = version;
	op->fd = op->dirfd = op->stream_fd = -1;
	op->err[0] = '\0';
	op->timeout_ms = timeout_ms;
	if (!ep || !ep->path || snprintf(op->path, sizeof(op->path), "%s", ep->path) >= (int)sizeof(op->path)) {
		snprintf(op->err, sizeof(op->err), "%s: no usable socket path", op_name(op));
		op->phase = OP_DONE;
		return -EINVAL;
	}
	op->ep = *ep;
	op->ep.path = op->path;
	op->reply = malloc(sizeof(*op->reply));
	if (!op->reply) {
		snprintf(op->err, sizeof(op->err), "out of memory");
		op->phase = OP_DONE;
		return -ENOMEM;
	}
	return op_attempt(op, mono_ns());
}

int ipc_op_process_info(struct ipc_op *op, const struct ipc_endpoint *ep, int timeout_ms)
{
	return op_start(op, IPC_OP_PROCESS_INFO, 3, ep, timeout_ms);
}

int ipc_op_collect_tracing(struct ipc_op *op, const struct ipc_endpoint *ep, const struct ipc_provider *providers,
                           size_t n, uint32_t buffer_mb, int timeout_ms)
{
	ipc_op_clear(op);
	op->fd = op->dirfd = op->stream_fd = -1;
	if (n > IPC_OP_MAX_PROVIDERS || (n && !providers)) {
		op->kind = IPC_OP_COLLECT_TRACING;
		snprintf(op->err, sizeof(op->err), "CollectTracing: at most %d providers", IPC_OP_MAX_PROVIDERS);
		op->phase = OP_DONE;
		return -EINVAL;
	}
	op->n_providers = n;
	op->buffer_mb = buffer_mb;
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		op->providers[i] = providers[i];
		if (providers[i].n_event_ids > IPC_MAX_EVENT_IDS) {
			op->kind = IPC_OP_COLLECT_TRACING;
			snprintf(op->err, sizeof(op->err), "CollectTracing: at most %d event ids per provider",
			         IPC_MAX_EVENT_IDS);
			op->phase = OP_DONE;
			return -EINVAL;
		}
		if (providers[i].n_event_ids) {
			memcpy(op->event_ids[i], providers[i].event_ids, providers[i].n_event_ids * sizeof(uint32_t));
			op->providers[i].event_ids = op->event_ids[i];
		}
		if (providers[i].name) {
			snprintf(op->names[i], sizeof(op->names[i]), "%s", providers[i].name);
			op->providers[i].name = op->names[i];
		}
		if (providers[i].args) {
			size_t len = strlen(providers[i].args);
			if (len >= sizeof(op->args) - used) {
				op->kind = IPC_OP_COLLECT_TRACING;
				snprintf(op->err, sizeof(op->err),
				         "CollectTracing: the providers' arguments exceed %d bytes",
				         IPC_OP_ARGS_MAX - 1);
				op->phase = OP_DONE;
				return -E2BIG;
			}
			memcpy(op->args + used, providers[i].args, len + 1);
			op->providers[i].args = op->args + used;
			used += len + 1;
		}
	}
	return op_start(op, IPC_OP_COLLECT_TRACING, 5, ep, timeout_ms);
}

int ipc_op_stop_tracing(struct ipc_op *op, const struct ipc_endpoint *ep, uint64_t session_id, int timeout_ms)
{
	op->stop_session = session_id;
	return op_start(op, IPC_OP_STOP_TRACING, 1, ep, timeout_ms);
}

/* The reply is complete: act on it. 1 done, 0 another attempt started,
 * -errno failed. */
static int op_reply(struct ipc_op *op, int64_t now)
{
	struct ipc_reply *reply = op->reply;

	if (is_unknown_command(reply) && op->version > 1 && op->kind != IPC_OP_STOP_TRACING) {
		/* A runtime that does not know this generation: the one before. */
		op->version--;
		return op_attempt(op, now);
	}
	if (!is_ok(reply)) {
		int r = refused(reply, op_name(op), op->err, sizeof(op->err));
		return op_fail(op, r);
	}
	switch (op->kind) {
	case IPC_OP_PROCESS_INFO:
		if (ipc_parse_process_info(op->version, reply->payload, reply->payload_len, &op->info) < 0) {
			snprintf(op->err, sizeof(op->err), "%s: the runtime's reply on %.400s is malformed",
			         op_name(op), op->path);
			return op_fail(op, -EBADMSG);
		}
		break;
	case IPC_OP_COLLECT_TRACING: {
		if (ipc_parse_session_id(reply->payload, reply->payload_len, &op->session_id) < 0) {
			snprintf(op->err, sizeof(op->err), "%s: the runtime's reply has no session id", op_name(op));
			return op_fail(op, -EBADMSG);
		}
		/* The trace follows on this connection. */
		op->stream_fd = op->fd;
		op->fd = -1;
		break;
	}
	case IPC_OP_STOP_TRACING:
		break;
	}
	op_close(op);
	op->phase = OP_DONE;
	return 1;
}

int ipc_op_step(struct ipc_op *op, int64_t now)
{
	for (;;) {
		switch (op->phase) {
		case OP_IDLE:
			return -EINVAL;
		case OP_DONE:
			return op->err[0] ? -EIO : 1;
		case OP_CONNECT: {
			struct sockaddr_un sa;
			struct ucred seen = {0};
			int r;

			if (op->retry_ns && now < op->retry_ns) {
				if (now >= op->deadline_ns)
					return op_transport_fail(op, -ETIMEDOUT, NULL);
				return 0;
			}
			/* The directory of a long path is opened once per attempt. */
			if ((r = socket_address(op->path, &op->dirfd, &sa)) < 0)
				return op_transport_fail(op, r, NULL);
			if (connect(op->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EISCONN) {
				if (errno == EAGAIN || errno == EINTR) {
					/* A full backlog: a unix socket does not complete the
					 * connection later by itself; try again shortly. */
					if (now >= op->deadline_ns)
						return op_transport_fail(op, -ETIMEDOUT, NULL);
					op->retry_ns = now + 10000000LL;
					return 0;
				}
				if (errno == EINPROGRESS || errno == EALREADY) {
					op->retry_ns = now + 10000000LL;
					return 0;
				}
				return op_transport_fail(op, -errno, NULL);
			}
			op->retry_ns = 0;
			if (op->dirfd >= 0) {
				close(op->dirfd);
				op->dirfd = -1;
			}
			if ((r = check_peer(op->fd, &op->ep, &seen)) < 0)
				return op_transport_fail(op, r, &seen);
			op->phase = OP_SEND;
			continue;
		}
		case OP_SEND: {
			ssize_t w =
			    send(op->fd, op->req.p + op->sent, op->req.len - op->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					goto wait;
				return op_transport_fail(op, -errno, NULL);
			}
			op->sent += (size_t)w;
			if (op->sent == op->req.len) {
				op->phase = OP_HEADER;
				op->got = 0;
			}
			continue;
		}
		case OP_HEADER:
		case OP_PAYLOAD: {
			int hdr = op->phase == OP_HEADER;
			size_t need = hdr ? IPC_HEADER_SIZE : op->reply->payload_len;
			uint8_t *dst = hdr ? op->hdr : op->reply->payload;
			ssize_t k;

			if (op->got < need) {
				/* Exactly what the reply holds: a trace stream may follow. */
				k = recv(op->fd, dst + op->got, need - op->got, MSG_DONTWAIT);
				if (k < 0) {
					if (errno == EINTR)
						continue;
					if (errno == EAGAIN || errno == EWOULDBLOCK)
						goto wait;
					return op_transport_fail(op, -errno, NULL);
				}
				if (k == 0)
					return op_transport_fail(op, hdr && op->got == 0 ? -ECONNRESET : -EBADMSG,
					                         NULL);
				op->got += (size_t)k;
				continue;
			}
			if (hdr) {
				int size = ipc_parse_header(op->hdr, sizeof(op->hdr), NULL, NULL);
				if (size < 0)
					return op_transport_fail(op, size, NULL);
				op->reply->payload_len = (size_t)size - IPC_HEADER_SIZE;
				op->phase = OP_PAYLOAD;
				op->got = 0;
				continue;
			}
			if (ipc_parse_reply(op->hdr, op->reply) < 0)
				return op_transport_fail(op, -EBADMSG, NULL);
			int r = op_reply(op, now);
			if (r != 0)
				return r;
			continue; /* the next version's attempt */
		}
		}
	}
wait:
	if (now >= op->deadline_ns)
		return op_transport_fail(op, -ETIMEDOUT, NULL);
	return 0;
}

int ipc_op_fd(const struct ipc_op *op)
{
	if (op->phase == OP_CONNECT && op->retry_ns)
		return -1;
	return op->phase == OP_CONNECT || op->phase == OP_SEND || op->phase == OP_HEADER || op->phase == OP_PAYLOAD
	           ? op->fd
	           : -1;
}

uint32_t ipc_op_events(const struct ipc_op *op)
{
	return op->phase == OP_CONNECT || op->phase == OP_SEND ? EPOLLOUT : EPOLLIN;
}

int64_t ipc_op_wake(const struct ipc_op *op)
{
	if (op->phase == OP_CONNECT && op->retry_ns && op->retry_ns < op->deadline_ns)
		return op->retry_ns;
	return op->deadline_ns;
}

int ipc_op_take_stream(struct ipc_op *op)
{
	int fd = op->phase == OP_DONE ? op->stream_fd : -1;

	if (fd >= 0) {
		op->stream_fd = -1;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	}
	return fd;
}

/* Runs op to its end under poll(): the blocking calls. */
static int op_run(struct ipc_op *op, int r)
{
	while (r == 0) {
		int64_t now = mono_ns();
		r = ipc_op_step(op, now);
		if (r != 0)
			break;
		int fd = ipc_op_fd(op);
		int64_t wait_ns = ipc_op_wake(op) - now;
		int ms = wait_ns <= 0 ? 0 : (int)((wait_ns + 999999) / 1000000);
		if (fd >= 0) {
			struct pollfd p = {.fd = fd,
			                   .events = (short)(ipc_op_events(op) == EPOLLOUT ? POLLOUT : POLLIN)};
			poll(&p, 1, ms);
		} else {
			struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	return r < 0 ? r : 0;
}

int ipc_process_info(const struct ipc_endpoint *ep, int timeout_ms, struct ipc_process_info *out, char *err,
                     size_t errlen)
{
	struct ipc_op *op = calloc(1, sizeof(*op));
	int r;

	if (!op)
		return -ENOMEM;
	r = op_run(op, ipc_op_process_info(op, ep, timeout_ms));
	if (r == 0)
		*out = op->info;
	else if (err && errlen)
		snprintf(err, errlen, "%s", op->err);
	ipc_op_clear(op);
	free(op);
	return r;
}

int ipc_collect_tracing(const struct ipc_endpoint *ep, const struct ipc_provider *providers, size_t n,
                        uint32_t buffer_mb, int timeout_ms, int *ret_fd, uint64_t *ret_session, char *err,
                        size_t errlen)
{
	struct ipc_op *op;
	int r;

	if (ret_fd)
		*ret_fd = -1;
	if (!ret_fd || !ret_session)
		return -EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	r = op_run(op, ipc_op_collect_tracing(op, ep, providers, n, buffer_mb, timeout_ms));
	if (r == 0) {
		*ret_fd = ipc_op_take_stream(op);
		*ret_session = op->session_id;
	} else if (err && errlen) {
		snprintf(err, errlen, "%s", op->err);
	}
	ipc_op_clear(op);
	free(op);
	return r;
}

int ipc_stop_tracing(const struct ipc_endpoint *ep, uint64_t session_id, int timeout_ms, char *err, size_t errlen)
{
	struct ipc_op *op = calloc(1, sizeof(*op));
	int r;

	if (!op)
		return -ENOMEM;
	r = op_run(op, ipc_op_stop_tracing(op, ep, session_id, timeout_ms));
	if (r < 0 && err && errlen)
		snprintf(err, errlen, "%s", op->err);
	ipc_op_clear(op);
	free(op);
	return r;
}

int ipc_dump_send(const struct ipc_endpoint *ep, int version, const char *path, enum dump_type type, uint32_t flags,
                  int *ret_fd, char *err, size_t errlen)
{
	struct ucred seen = {0};
	static const char *const names[] = {"", "GenerateCoreDump", "GenerateCoreDump2", "GenerateCoreDump3"};
	struct strbuf req = {0};
	int64_t deadline = deadline_after(IPC_CONNECT_TIMEOUT_MS);
	int fd, r;

	if (ret_fd)
		*ret_fd = -1;
	if (!ret_fd)
		return -EINVAL;
	r = ipc_build_dump(version, path, type, flags, &req);
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen,
			         "dump request: invalid (version 1-3, a non-empty UTF-8 path, type 1-4; "
			         "version 1 takes only the logging flag)");
		return r;
	}
	fd = connect_until(ep, deadline, &seen);
	if (fd < 0) {
		describe_transport(err, errlen, names[version], ep, fd, IPC_CONNECT_TIMEOUT_MS, &seen);
		strbuf_free(&req);
		return fd;
	}
	r = write_all(fd, req.p, req.len, deadline);
	strbuf_free(&req);
	if (r < 0) {
		describe_transport(err, errlen, names[version], ep, r, IPC_CONNECT_TIMEOUT_MS, &seen);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}
