/* Serving the exposition (expo.h): an HTTP endpoint GET /metrics through
 * libmicrohttpd on the shared loop, and a textfile for node_exporter's
 * textfile collector rewritten atomically every interval. Generic: the text
 * comes from the owner's build callback; this module knows nothing of
 * processes or rules.
 *
 * HTTP: libmicrohttpd runs without threads of its own, in external epoll
 * mode: its epoll descriptor sits on the loop, MHD_run runs when it is
 * readable, and a loop timer follows MHD_get_timeout. At most
 * EXPOSRV_MAX_CONNECTIONS connections (EXPOSRV_MAX_PER_IP from one address),
 * each closed after EXPOSRV_TIMEOUT_S of silence, so that a slow client
 * holds little and nothing for long. GET and HEAD /metrics are answered,
 * another path is 404, another method 405.
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

#define EXPOSRV_MAX_CONNECTIONS 16
#define EXPOSRV_MAX_PER_IP 4
#define EXPOSRV_TIMEOUT_S 10
#define EXPOSRV_DEFAULT_INTERVAL_NS 15000000000LL

/* A malloc'd, NUL-terminated exposition text, freed by the caller here;
 * NULL when it cannot be built (HTTP 500; the file keeps its last text). */
typedef char *(*exposrv_build_fn)(void *ctx);

struct exposrv_config {
	const char *listen;  /* --metrics-listen (expo_parse_listen), or NULL */
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

/* Counters, for tests and the status. */
struct exposrv_stats {
	uint64_t served; /* /metrics answers */
	uint64_t writes; /* files renamed into place */
	uint64_t failed; /* file writes that failed */
};
void exposrv_get_stats(const struct exposrv *s, struct exposrv_stats *out);

/* Stops serving and frees; the file stays. NULL is a no-op. */
void exposrv_free(struct exposrv *s);

#endif
