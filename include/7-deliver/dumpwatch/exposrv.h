/* Serving the exposition (expo.h): an HTTP endpoint GET /metrics through
 * libmicrohttpd on the shared loop, and a textfile for node_exporter's
 * textfile collector rewritten atomically every interval. Generic: the text
 * comes from the owner's build callback; this module knows nothing of
 * processes or rules.
 *
 * HTTP: libmicrohttpd runs without threads of its own, in external epoll
 * mode: its epoll descriptor sits on the loop, MHD_run runs when it is
 * readable, and a loop timer follows MHD_get_timeout. Connections are
 * accepted here, not by libmicrohttpd, and handed to it once admitted:
 *  - a client is a local user when the socket at the other end is on this
 *    host (found through sock_diag), whatever address it connects from, and
 *    an address otherwise (an IPv6 /64); each client holds at most
 *    EXPOSRV_MAX_PER_CLIENT connections, so that the 127.0.0.0/8 a local
 *    user can connect from does not multiply its share;
 *  - at most EXPOSRV_MAX_CONNECTIONS in all; a connection beyond either is
 *    closed at once;
 *  - every connection is closed EXPOSRV_MAX_AGE_S after it was accepted
 *    whatever it does, and after EXPOSRV_IDLE_S of silence; every answer
 *    ends its connection (Connection: close), so a scrape is one request;
 *  - with an allow list (--metrics-allow), a client not on it is answered
 *    403.
 * GET and HEAD /metrics are answered, another path is 404, another method
 * 405.
 *
 * File: PATH.tmp.PID is written in PATH's directory (0644, never through a
 * link), synced and renamed over PATH, so a reader sees the old text or the
 * new, never a part. The directory must be root's or ours and writable by
 * no one else: others could otherwise replace what root writes there. */
#ifndef DUMPWATCH_EXPOSRV_H
#define DUMPWATCH_EXPOSRV_H

#include <stddef.h>
#include <stdint.h>

struct loop;
struct exposrv;

#define EXPOSRV_MAX_CONNECTIONS 32
#define EXPOSRV_MAX_PER_CLIENT 4
#define EXPOSRV_MAX_AGE_S 10 /* from accept to close, whatever the client does */
#define EXPOSRV_IDLE_S 5     /* of silence */
#define EXPOSRV_ALLOW_MAX 16 /* entries of --metrics-allow */
#define EXPOSRV_DEFAULT_INTERVAL_NS 15000000000LL

/* A malloc'd, NUL-terminated exposition text, freed by the caller here;
 * NULL when it cannot be built (HTTP 500; the file keeps its last text). */
typedef char *(*exposrv_build_fn)(void *ctx);

struct exposrv_config {
	const char *listen;  /* --metrics-listen (expo_parse_listen), or NULL */
	const char *allow;   /* --metrics-allow (exposrv_parse_allow), or NULL: anyone */
	const char *file;    /* --metrics-file, absolute, or NULL */
	int64_t interval_ns; /* of the file; 0: EXPOSRV_DEFAULT_INTERVAL_NS */
	exposrv_build_fn build;
	void *ctx;
};

/* Binds the address and checks the file's directory, then serves on l and
 * writes the file at once and every interval. 0, or -errno with a sentence
 * in err (the address malformed or taken, the directory refused). */
int exposrv_open(struct loop *l, const struct exposrv_config *cfg, struct exposrv **ret, char *err, size_t errlen);

/* Writes the file now (at stop). 0, or -errno with a sentence in err; 0
 * without a file. */
int exposrv_write_file(struct exposrv *s, char *err, size_t errlen);

/* Who may read the page: users, matched by the uid that owns a local
 * client's socket, and networks, matched by the client's address. */
struct exposrv_allow {
	size_t n;
	struct {
		int is_user;
		uint32_t uid;
		int family; /* AF_INET, AF_INET6 */
		uint8_t addr[16];
		unsigned bits;
	} e[EXPOSRV_ALLOW_MAX];
};

/* Parses "USER|UID|ADDR[/BITS],..." into out (users resolved now). 0, or
 * -EINVAL with a sentence in err. */
int exposrv_parse_allow(const char *text, struct exposrv_allow *out, char *err, size_t errlen);

/* Whether a client is allowed: local (uid known) or not, at addr of
 * family. An empty list allows everyone. */
int exposrv_allowed(const struct exposrv_allow *a, int local, uint32_t uid, int family, const uint8_t *addr);

/* Counters, for tests, the status and dumpwatch's own metrics. */
struct exposrv_stats {
	uint64_t served;        /* /metrics answers */
	uint64_t writes;        /* files renamed into place */
	uint64_t failed;        /* file writes that failed */
	uint64_t accepted;      /* connections admitted */
	uint64_t refused_share; /* closed at once: the client held its share */
	uint64_t refused_full;  /* closed at once: every connection in use */
	uint64_t forbidden;     /* answered 403: not on --metrics-allow */
	uint64_t cut;           /* closed at EXPOSRV_MAX_AGE_S */
};
void exposrv_get_stats(const struct exposrv *s, struct exposrv_stats *out);

/* Connections open now (descriptors held), for the guard's count. */
size_t exposrv_connections(const struct exposrv *s);

/* Stops serving and frees; the file stays. NULL is a no-op. */
void exposrv_free(struct exposrv *s);

#endif
