/* The .NET diagnostics IPC client (PROTOCOL.md section 2, dotnet/diagnostics
 * ipc-protocol.md): the requests of wire.h sent to a runtime's diagnostics
 * socket, one command per connection, as a non-blocking state machine
 * (ipc_op) or as small blocking exchanges bounded by a timeout. */
#ifndef DUMPWATCH_IPC_H
#define DUMPWATCH_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dumpwatch/strbuf.h"
#include "dumpwatch/wire.h"

/* A diagnostics socket and the process that must be listening on it. When pid
 * is set, every connection is checked with SO_PEERCRED: a listener with
 * another pid or uid (a socket planted under a runtime's name) is refused with
 * -EPERM and a sentence naming who was found. */
struct ipc_endpoint {
	const char *path;
	pid_t pid; /* as seen from here (host pid); 0: not checked */
	uid_t uid; /* the target's uid, checked with pid */
};

/* --- non-blocking requests ---
 *
 * One command to a runtime with its version fallbacks (ProcessInfo3 -> 1,
 * CollectTracing5 -> 1, on UnknownCommand), as a state machine that never
 * blocks: each attempt opens its own connection, sends, and reads the reply
 * as the socket allows. The owner watches ipc_op_fd() for ipc_op_events()
 * on its loop, calls ipc_op_step() when it is ready or at ipc_op_wake(), and
 * may drop the op at any time with ipc_op_clear(). The blocking calls below
 * run the same machine under poll(). */

enum ipc_op_kind { IPC_OP_PROCESS_INFO = 1, IPC_OP_COLLECT_TRACING, IPC_OP_STOP_TRACING };

#define IPC_OP_MAX_PROVIDERS 18
#define IPC_OP_ARGS_MAX 4096
#define IPC_MAX_EVENT_IDS 32

struct ipc_op {
	enum ipc_op_kind kind;
	int version;         /* the command generation being tried */
	int phase;           /* internal */
	unsigned attempt;    /* counts connections: a new one may reuse the last one's number */
	int fd;              /* the connection of the current attempt, -1 */
	int dirfd;           /* the directory of a socket path too long for sun_path */
	int timeout_ms;      /* per attempt */
	int64_t deadline_ns; /* of the current attempt (CLOCK_MONOTONIC) */
	int64_t retry_ns;    /* connect refused for a full backlog: try again then */
	struct ipc_endpoint ep;
	char path[4096];
	struct strbuf req;
	size_t sent;
	uint8_t hdr[IPC_HEADER_SIZE];
	size_t got;
	struct ipc_reply *reply;
	/* CollectTracing's request */
	uint32_t buffer_mb;
	size_t n_providers;
	struct ipc_provider providers[IPC_OP_MAX_PROVIDERS];
	char names[IPC_OP_MAX_PROVIDERS][256];
	char args[IPC_OP_ARGS_MAX]; /* the providers' arguments, one after another */
	uint32_t event_ids[IPC_OP_MAX_PROVIDERS][IPC_MAX_EVENT_IDS];
	uint64_t stop_session;
	/* results */
	struct ipc_process_info info; /* ProcessInfo */
	uint64_t session_id;          /* CollectTracing */
	int stream_fd;                /* CollectTracing: the connection the trace follows on */
	char err[512];                /* the sentence of a failure */
};

/* Starts op. ep->path is copied, as are CollectTracing's providers (at most
 * IPC_OP_MAX_PROVIDERS; names under 256 bytes, all args together under
 * IPC_OP_ARGS_MAX, else -E2BIG). timeout_ms
 * bounds each attempt. 0 in progress (or already done: ipc_op_step says),
 * -errno with op->err on failure. ipc_op_clear must follow either way. */
int ipc_op_process_info(struct ipc_op *op, const struct ipc_endpoint *ep, int timeout_ms);
int ipc_op_collect_tracing(struct ipc_op *op, const struct ipc_endpoint *ep, const struct ipc_provider *providers,
                           size_t n, uint32_t buffer_mb, int timeout_ms);
int ipc_op_stop_tracing(struct ipc_op *op, const struct ipc_endpoint *ep, uint64_t session_id, int timeout_ms);

/* Advances op as far as the socket allows at now_ns. 1 when done (results
 * in op), 0 when it waits (for ipc_op_events on ipc_op_fd, or until
 * ipc_op_wake), -errno with op->err on failure (-ETIMEDOUT past the
 * attempt's deadline, -EPERM for a listener that is not the endpoint's
 * process, the runtime's refusal mapped to an errno). */
int ipc_op_step(struct ipc_op *op, int64_t now_ns);
/* The descriptor to watch, -1 when none (waiting for ipc_op_wake). */
int ipc_op_fd(const struct ipc_op *op);
/* EPOLLIN or EPOLLOUT for ipc_op_fd. */
uint32_t ipc_op_events(const struct ipc_op *op);
/* When to step without readiness: the deadline, or a connect retry. */
int64_t ipc_op_wake(const struct ipc_op *op);
/* Takes the trace stream's descriptor out of a finished CollectTracing op
 * (blocking mode; the caller owns it). -1 otherwise. */
int ipc_op_take_stream(struct ipc_op *op);
/* Closes what op holds and frees its buffers; op can be started again.
 * A zeroed op, or one cleared before, is fine. */
void ipc_op_clear(struct ipc_op *op);

/* --- blocking calls, bounded by timeout_ms --- */

/* Connects to a diagnostics socket. Returns a connected fd (close-on-exec), or
 * -errno (-ENOENT gone, -EACCES not allowed, -EPERM wrong listener,
 * -ECONNREFUSED stale). */
int ipc_connect(const struct ipc_endpoint *ep);

/* ProcessInfo, newest version first, falling back on UnknownCommand.
 * 0, or a negative errno with a sentence in err. */
int ipc_process_info(const struct ipc_endpoint *ep, int timeout_ms, struct ipc_process_info *out, char *err,
                     size_t errlen);

/* Starts an EventPipe session (newest CollectTracing first, falling back on
 * UnknownCommand). Returns 0 with the stream's fd (blocking mode; the caller
 * may switch it) and the session id; or a negative errno with a sentence. */
int ipc_collect_tracing(const struct ipc_endpoint *ep, const struct ipc_provider *providers, size_t n,
                        uint32_t buffer_mb, int timeout_ms, int *ret_fd, uint64_t *ret_session, char *err,
                        size_t errlen);

/* Stops an EventPipe session on a new connection. 0 or negative errno + sentence. */
int ipc_stop_tracing(const struct ipc_endpoint *ep, uint64_t session_id, int timeout_ms, char *err, size_t errlen);

/* Sends a dump request of the given version and returns the connected fd at
 * once, without waiting for the reply (the runtime answers only when
 * createdump has finished). Read the reply later with ipc_read_reply. */
int ipc_dump_send(const struct ipc_endpoint *ep, int version, const char *path, enum dump_type type, uint32_t flags,
                  int *ret_fd, char *err, size_t errlen);

/* Reads one complete reply from fd (blocking up to timeout_ms). 0, -ETIMEDOUT,
 * -EBADMSG, -ECONNRESET/-EPIPE when the peer went away first. */
int ipc_read_reply(int fd, int timeout_ms, struct ipc_reply *reply);

#endif
