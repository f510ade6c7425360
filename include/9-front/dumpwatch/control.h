/* The guard's status socket, the server side of `dumpwatch status`: a unix
 * stream socket (the guard puts it at STATE_DIR/status.sock) on which every
 * connection is answered with one JSON document and closed. The request is
 * implicit: nothing a client sends is read, only drained. The answer comes
 * from the caller's build callback, so this module knows nothing of sessions
 * or rules; it only guards the door (SO_PEERCRED: root or the guard's own
 * user), never blocks on a client, and bounds what clients can hold.
 *
 * Limits: at most CONTROL_MAX_CLIENTS answers in flight; a new connection
 * beyond that closes the oldest one (a client that never reads holds its
 * answer only until then). An answer larger than CONTROL_MAX_ANSWER is not
 * sent. No timers: everything happens on socket readiness, and of the loop
 * only loop_add and loop_del are used (loop_del from inside a callback, and
 * the same descriptor number added again in the same batch after a close). */
#ifndef DUMPWATCH_CONTROL_H
#define DUMPWATCH_CONTROL_H

#include <stddef.h>
#include <stdint.h>

struct loop;
struct control;

#define CONTROL_MAX_CLIENTS 8
#define CONTROL_MAX_ANSWER (16u * 1024 * 1024)

/* Builds the answer: a malloc'd, NUL-terminated JSON text (the status
 * document: docs/status.md, tests/data/status-sample.json), which the control
 * module frees; or NULL when it cannot, and the client is closed without an
 * answer. Called from the loop, once per accepted and permitted connection. */
typedef char *(*control_build_fn)(void *ctx);

/* Counters since control_open, for the guard's own status document and tests. */
struct control_stats {
	size_t clients;   /* answers in flight now (<= CONTROL_MAX_CLIENTS) */
	uint64_t served;  /* answers written whole */
	uint64_t refused; /* connections closed at once: another user, or no descriptor left */
	uint64_t dropped; /* answers not finished: closed as the oldest, the client gone, build failed */
};

/* Creates the listening socket at path and registers it on l. The directory
 * holding it must exist, must not be a symbolic link, must belong to us or to
 * root and must not be writable by other users (they could swap the socket).
 * An old socket at path is replaced only when it is a socket of our user that
 * nobody answers on any more; a live one (another guard) is -EADDRINUSE, and
 * anything else there is left alone (-EEXIST). The socket is created 0600.
 * Returns 0 and *out, or -errno with a sentence in err. */
int control_open(struct loop *l, const char *path, control_build_fn build, void *ctx, struct control **out, char *err,
                 size_t errlen);

/* Closes every client and the socket, removes the socket from its directory
 * (only if it is still the one control_open made) and frees c. Call before
 * loop_free. control_free(NULL) is a no-op. */
void control_free(struct control *c);

/* The counters so far. */
void control_get_stats(const struct control *c, struct control_stats *out);

#endif
