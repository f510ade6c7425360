/* The HTTP endpoint and the textfile of the exposition (see exposrv.h). */
#include "dumpwatch/exposrv.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
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
#include "dumpwatch/text.h"

/* A connection admitted, from accept to libmicrohttpd's close. */
struct conn {
	int used;
	int fd;
	int64_t start_ns;
	int local;    /* the client's socket is on this host: uid is its owner */
	uint32_t uid; /* when local */
	int family;
	uint8_t addr[16]; /* the client's address; an IPv6 one cut to its /64 for the share */
	int forbidden;    /* not on the allow list: answered 403 */
	int cut;          /* shut down at its age */
};

struct exposrv {
	struct loop *loop;
	exposrv_build_fn build;
	void *ctx;
	struct MHD_Daemon *mhd;
	int mhd_fd; /* its epoll descriptor, on the loop; -1 */
	struct loop_timer mhd_timer;
	int listen_fd; /* on the loop; -1 */
	struct exposrv_allow allow;
	struct conn conns[EXPOSRV_MAX_CONNECTIONS];
	struct loop_timer age_timer;
	int dirfd; /* the file's directory; -1 without a file */
	char base[NAME_MAX + 1];
	char path[PATH_MAX];
	int64_t interval_ns;
	struct loop_timer file_timer;
	int file_warned; /* a failure logged; cleared by the next success */
	struct exposrv_stats st;
};

/* ---- libmicrohttpd, loaded when the endpoint is on ---------------------- */

/* The daemon does not link libmicrohttpd: it is loaded (dlopen, by its
 * soname, from the system's library directories) only when --metrics-listen
 * is given, so that every other run maps nothing of it. Its header gives the
 * types; these are the functions used. */
#define MHD_SONAME "libmicrohttpd.so.12"
static struct {
	void *so;
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_run) run;
	__typeof__(&MHD_get_timeout) get_timeout;
	__typeof__(&MHD_get_daemon_info) get_daemon_info;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_add_connection) add_connection;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
} mhd;

static int mhd_load(char *err, size_t errlen)
{
	if (mhd.so)
		return 0;
	void *so = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		snprintf(err, errlen, "--metrics-listen needs libmicrohttpd (%s), which could not be loaded: %s",
		         MHD_SONAME, dlerror());
		return -ENOENT;
	}
	const char *missing = NULL;
#define MHD_SYM(field, name)                                                                                           \
	do {                                                                                                           \
		*(void **)&mhd.field = dlsym(so, name);                                                                \
		if (!mhd.field && !missing)                                                                            \
			missing = name;                                                                                \
	} while (0)
	MHD_SYM(start_daemon, "MHD_start_daemon");
	MHD_SYM(stop_daemon, "MHD_stop_daemon");
	MHD_SYM(run, "MHD_run");
	MHD_SYM(get_timeout, "MHD_get_timeout");
	MHD_SYM(get_daemon_info, "MHD_get_daemon_info");
	MHD_SYM(get_connection_info, "MHD_get_connection_info");
	MHD_SYM(add_connection, "MHD_add_connection");
	MHD_SYM(create_response_from_buffer, "MHD_create_response_from_buffer");
	MHD_SYM(add_response_header, "MHD_add_response_header");
	MHD_SYM(queue_response, "MHD_queue_response");
	MHD_SYM(destroy_response, "MHD_destroy_response");
#undef MHD_SYM
	if (missing) {
		snprintf(err, errlen, "--metrics-listen: %s has no %s: install libmicrohttpd 0.9.71 or newer",
		         MHD_SONAME, missing);
		dlclose(so);
		memset(&mhd, 0, sizeof(mhd));
		return -ENOENT;
	}
	mhd.so = so;
	return 0;
}

/* ---- who may read ----------------------------------------------------- */

/* One address: 4 or 16 bytes into addr, its family into *family. */
static int parse_addr(const char *s, int *family, uint8_t *addr)
{
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int exposrv_parse_allow(const char *text, struct exposrv_allow *out, char *err, size_t errlen)
{
	const char *p = text;

	memset(out, 0, sizeof(*out));
	while (*p) {
		size_t n = strcspn(p, ",");
		char item[128], q[160];
		if (n == 0 || n >= sizeof(item)) {
			snprintf(err, errlen,
			         "--metrics-allow: \"%s\" is not a list of users and ADDR[/BITS], comma-separated",
			         text_escape_str(text, q, sizeof(q)));
			return -EINVAL;
		}
		if (out->n == EXPOSRV_ALLOW_MAX) {
			snprintf(err, errlen, "--metrics-allow: at most %d entries", EXPOSRV_ALLOW_MAX);
			return -EINVAL;
		}
		memcpy(item, p, n);
		item[n] = '\0';
		p += n + (p[n] == ',');
		char *slash = strchr(item, '/');
		int family;
		uint8_t addr[16] = {0};
		if (slash)
			*slash = '\0';
		if (parse_addr(item, &family, addr) == 0) {
			unsigned max = family == AF_INET ? 32 : 128, bits = max;
			if (slash) {
				char *end;
				unsigned long b = strtoul(slash + 1, &end, 10);
				if (slash[1] < '0' || slash[1] > '9' || *end || b > max) {
					snprintf(err, errlen, "--metrics-allow: \"%s/%s\": the prefix is 0 to %u bits",
					         item, text_escape_str(slash + 1, q, sizeof(q)), max);
					return -EINVAL;
				}
				bits = (unsigned)b;
			}
			out->e[out->n].family = family;
			memcpy(out->e[out->n].addr, addr, sizeof(addr));
			out->e[out->n].bits = bits;
			out->n++;
			continue;
		}
		if (slash) {
			snprintf(err, errlen, "--metrics-allow: \"%s\" is not an address",
			         text_escape_str(item, q, sizeof(q)));
			return -EINVAL;
		}
		struct passwd pw, *pwp = NULL;
		char buf[4096], *end;
		unsigned long v = strtoul(item, &end, 10);
		if (item[0] >= '0' && item[0] <= '9' && *end == '\0')
			getpwuid_r((uid_t)v, &pw, buf, sizeof(buf), &pwp);
		else
			getpwnam_r(item, &pw, buf, sizeof(buf), &pwp);
		if (!pwp) {
			snprintf(err, errlen, "--metrics-allow: \"%s\" is neither a user nor an address",
			         text_escape_str(item, q, sizeof(q)));
			return -EINVAL;
		}
		out->e[out->n].is_user = 1;
		out->e[out->n].uid = pw.pw_uid;
		out->n++;
	}
	if (out->n == 0) {
		snprintf(err, errlen, "--metrics-allow: name at least one user or address");
		return -EINVAL;
	}
	return 0;
}

static int prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return 0;
	return rest == 0 || ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

int exposrv_allowed(const struct exposrv_allow *a, int local, uint32_t uid, int family, const uint8_t *addr)
{
	if (a->n == 0)
		return 1;
	for (size_t i = 0; i < a->n; i++) {
		if (a->e[i].is_user ? local && a->e[i].uid == uid
		                    : a->e[i].family == family && prefix_match(a->e[i].addr, addr, a->e[i].bits))
			return 1;
	}
	return 0;
}

/* ---- clients ---------------------------------------------------------- */

/* The uid owning the socket at the other end of fd when that socket is on
 * this host (in our network namespace), found by its exact address pair
 * through sock_diag. 1 with *uid, or 0 (not local, or not found). */
static int peer_uid(int fd, uint32_t *uid)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	int found = 0;

	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    me.ss_family != peer.ss_family)
		return 0;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (uint8_t)peer.ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	/* The client's socket: its own end is the peer's address, its other
	 * end ours. */
	if (peer.ss_family == AF_INET) {
		const struct sockaddr_in *p4 = (const struct sockaddr_in *)&peer, *m4 = (const struct sockaddr_in *)&me;
		req.r.id.idiag_sport = p4->sin_port;
		req.r.id.idiag_dport = m4->sin_port;
		memcpy(req.r.id.idiag_src, &p4->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &m4->sin_addr, 4);
	} else if (peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)&peer,
		                          *m6 = (const struct sockaddr_in6 *)&me;
		req.r.id.idiag_sport = p6->sin6_port;
		req.r.id.idiag_dport = m6->sin6_port;
		memcpy(req.r.id.idiag_src, &p6->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &m6->sin6_addr, 16);
	} else {
		return 0;
	}
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return 0;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) == (ssize_t)sizeof(req)) {
		ssize_t n = recv(nl, &ans, sizeof(ans), 0);
		if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) && NLMSG_OK(&ans.nh, (size_t)n) &&
		    ans.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			const struct inet_diag_msg *m = NLMSG_DATA(&ans.nh);
			*uid = m->idiag_uid;
			found = 1;
		}
	}
	close(nl);
	return found;
}

/* Whether a and b are the same client for the share. */
static int same_client(const struct conn *a, const struct conn *b)
{
	if (a->local || b->local)
		return a->local && b->local && a->uid == b->uid;
	return a->family == b->family && memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 8) == 0;
}

/* Fills c's client from fd (accepted) and its address. */
static void classify(struct exposrv *s, struct conn *c, const struct sockaddr_storage *ss)
{
	memset(c->addr, 0, sizeof(c->addr));
	c->family = ss->ss_family;
	if (ss->ss_family == AF_INET)
		memcpy(c->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(c->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	c->local = peer_uid(c->fd, &c->uid);
	c->forbidden = !exposrv_allowed(&s->allow, c->local, c->uid, c->family, c->addr);
	/* A remote IPv6 client is its /64: one host has many addresses. */
	if (c->family == AF_INET6)
		memset(c->addr + 8, 0, 8);
}

static void age_arm(struct exposrv *s)
{
	int64_t next = 0;

	for (size_t i = 0; i < EXPOSRV_MAX_CONNECTIONS; i++) {
		const struct conn *c = &s->conns[i];
		int64_t due = c->start_ns + (int64_t)EXPOSRV_MAX_AGE_S * 1000000000LL;
		if (c->used && !c->cut && (!next || due < next))
			next = due;
	}
	if (next)
		loop_timer_arm(s->loop, &s->age_timer, next);
	else
		loop_timer_disarm(s->loop, &s->age_timer);
}

/* ---- HTTP ------------------------------------------------------------- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("metrics http: %s", line);
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	/* One request a connection: a slow or idle one holds nothing after. */
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = mhd.queue_response(c, status, r);
	mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r =
	    mhd.create_response_from_buffer(strlen(text), (void *)(uintptr_t)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	return queue(c, status, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	struct exposrv *s = cls;
	const union MHD_ConnectionInfo *ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct conn *cn = ci ? ci->socket_context : NULL;
	(void)version;
	(void)upload_data;
	(void)con_cls;

	/* A body is neither needed nor read: it is dropped as it comes. */
	*upload_data_size = 0;
	if (!cn || cn->forbidden) {
		s->st.forbidden++;
		return answer_text(c, MHD_HTTP_FORBIDDEN, "forbidden: not on dumpwatch's --metrics-allow\n");
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics is served\n");
	if (strcmp(url, "/metrics") != 0)
		return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
	char *text = s->build(s->ctx);
	if (!text)
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the metrics could not be built\n");
	struct MHD_Response *r = mhd.create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, EXPO_CONTENT_TYPE);
	s->st.served++;
	return queue(c, MHD_HTTP_OK, r);
}

/* libmicrohttpd took a connection (ours, by its descriptor) or let it go. */
static void on_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
	struct exposrv *s = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		for (size_t i = 0; ci && i < EXPOSRV_MAX_CONNECTIONS; i++)
			if (s->conns[i].used && s->conns[i].fd == ci->connect_fd)
				*socket_context = &s->conns[i];
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		struct conn *cn = *socket_context;
		cn->used = 0;
		*socket_context = NULL;
	}
}

/* The next MHD_run is due when its descriptor is readable or at its
 * timeout (a connection's idle limit), whichever comes first. */
static void mhd_arm(struct exposrv *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (mhd.get_timeout(s->mhd, &ms) == MHD_YES)
		loop_timer_arm(s->loop, &s->mhd_timer, loop_now() + (int64_t)ms * 1000000LL + 1);
	else
		loop_timer_disarm(s->loop, &s->mhd_timer);
}

static void mhd_step(struct exposrv *s)
{
	mhd.run(s->mhd);
	mhd_arm(s);
	age_arm(s);
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

/* Connections at their age are shut down: libmicrohttpd reads the end and
 * closes them. */
static void on_age(struct loop *l, void *ctx)
{
	struct exposrv *s = ctx;
	int64_t now = loop_now();
	(void)l;

	for (size_t i = 0; i < EXPOSRV_MAX_CONNECTIONS; i++) {
		struct conn *c = &s->conns[i];
		if (c->used && !c->cut && now >= c->start_ns + (int64_t)EXPOSRV_MAX_AGE_S * 1000000000LL) {
			shutdown(c->fd, SHUT_RDWR);
			c->cut = 1;
			s->st.cut++;
		}
	}
	mhd_step(s);
}

/* Admits or closes one accepted connection. */
static void admit(struct exposrv *s, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	struct conn probe = {.used = 1, .fd = fd}, *slot = NULL;
	size_t mine = 0;

	classify(s, &probe, ss);
	for (size_t i = 0; i < EXPOSRV_MAX_CONNECTIONS; i++) {
		if (!s->conns[i].used) {
			if (!slot)
				slot = &s->conns[i];
		} else if (same_client(&s->conns[i], &probe)) {
			mine++;
		}
	}
	if (mine >= EXPOSRV_MAX_PER_CLIENT || !slot) {
		if (slot)
			s->st.refused_share++;
		else
			s->st.refused_full++;
		log_debug("metrics http: a connection refused: %s", slot ? "its client holds its share" : "all in use");
		close(fd);
		return;
	}
	probe.start_ns = loop_now();
	*slot = probe;
	/* On failure libmicrohttpd closes the socket itself. */
	if (mhd.add_connection(s->mhd, fd, (const struct sockaddr *)ss, len) != MHD_YES) {
		slot->used = 0;
		return;
	}
	s->st.accepted++;
}

static void on_listen(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct exposrv *s = ctx;
	(void)l;
	(void)events;

	/* A burst is taken in bounded rounds, so that the loop serves the rest
	 * in between. */
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0)
			break;
		admit(s, c, &ss, len);
	}
	mhd_step(s);
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
	int r = mhd_load(err, errlen);
	if (r < 0)
		return r;
	int fd = listen_socket(addr, err, errlen);
	if (fd < 0)
		return fd;
	s->listen_fd = fd;
	/* Connections come from on_listen (MHD_add_connection); the limits
	 * are ours, libmicrohttpd's only a backstop. */
	s->mhd = mhd.start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
	                          on_request, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)EXPOSRV_MAX_CONNECTIONS + 1,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)EXPOSRV_IDLE_S, MHD_OPTION_NOTIFY_CONNECTION,
	                          on_notify, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(err, errlen, "--metrics-listen %s: the HTTP server (libmicrohttpd) did not start", addr);
		return -EIO;
	}
	const union MHD_DaemonInfo *info = mhd.get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		snprintf(err, errlen, "--metrics-listen %s: libmicrohttpd gives no epoll descriptor", addr);
		return -EIO;
	}
	r = loop_add(s->loop, info->epoll_fd, EPOLLIN, on_mhd_fd, s);
	if (r < 0) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, strerror(-r));
		return r;
	}
	s->mhd_fd = info->epoll_fd;
	r = loop_add(s->loop, s->listen_fd, EPOLLIN, on_listen, s);
	if (r < 0) {
		snprintf(err, errlen, "--metrics-listen %s: %s", addr, strerror(-r));
		return r;
	}
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
	s->mhd_fd = s->dirfd = s->listen_fd = -1;
	s->interval_ns = cfg->interval_ns > 0 ? cfg->interval_ns : EXPOSRV_DEFAULT_INTERVAL_NS;
	loop_timer_init(&s->mhd_timer, on_mhd_timer, s);
	loop_timer_init(&s->age_timer, on_age, s);
	loop_timer_init(&s->file_timer, on_file_timer, s);
	if (cfg->allow && (r = exposrv_parse_allow(cfg->allow, &s->allow, err, errlen)) < 0)
		goto fail;
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

size_t exposrv_connections(const struct exposrv *s)
{
	size_t n = 0;

	for (size_t i = 0; s && i < EXPOSRV_MAX_CONNECTIONS; i++)
		n += s->conns[i].used ? 1u : 0u;
	return n;
}

void exposrv_free(struct exposrv *s)
{
	if (!s)
		return;
	loop_timer_disarm(s->loop, &s->mhd_timer);
	loop_timer_disarm(s->loop, &s->age_timer);
	if (s->listen_fd >= 0) {
		loop_del(s->loop, s->listen_fd);
		close(s->listen_fd);
	}
	loop_timer_disarm(s->loop, &s->file_timer);
	if (s->mhd_fd >= 0)
		loop_del(s->loop, s->mhd_fd);
	if (s->mhd)
		mhd.stop_daemon(s->mhd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s);
}
