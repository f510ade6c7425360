/* A small epoll event loop: callbacks on readable descriptors and one timer on
 * CLOCK_MONOTONIC. Generic: it knows nothing of sessions or rules. */
#ifndef DUMPWATCH_LOOP_H
#define DUMPWATCH_LOOP_H

#include <stddef.h>
#include <stdint.h>

struct loop;

typedef void (*loop_fd_fn)(struct loop *l, int fd, uint32_t events, void *ctx);
typedef void (*loop_timer_fn)(struct loop *l, void *ctx);

/* Returns a loop, or NULL with errno set. */
struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Calls fn whenever fd has one of events (EPOLLIN ...). 0 or -errno. */
int loop_add(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx);
/* Stops watching fd; safe from inside a callback. Does not close fd. */
void loop_del(struct loop *l, int fd);

/* Changes the events fd is watched for. 0 or -errno. */
int loop_mod(struct loop *l, int fd, uint32_t events);

/* A timer an owner embeds (one per thing that needs a deadline): fn runs
 * once when CLOCK_MONOTONIC reaches the deadline. Fields are the loop's. */
struct loop_timer {
	int64_t deadline_ns;
	size_t slot; /* position in the loop's heap + 1; 0: not armed */
	loop_timer_fn fn;
	void *ctx;
};
void loop_timer_init(struct loop_timer *t, loop_timer_fn fn, void *ctx);
/* Arms t for deadline_ns, replacing an earlier deadline; 0 disarms. Safe
 * from inside any callback. 0, or -ENOMEM (then t is not armed). */
int loop_timer_arm(struct loop *l, struct loop_timer *t, int64_t deadline_ns);
void loop_timer_disarm(struct loop *l, struct loop_timer *t);

/* The loop's own timer, for owners that need one: loop_timer_arm on a timer
 * the loop holds. A new call replaces the deadline and callback; 0 disarms. */
void loop_set_timer(struct loop *l, int64_t deadline_ns, loop_timer_fn fn, void *ctx);

typedef void (*loop_signal_fn)(struct loop *l, int signo, void *ctx);
/* Delivers the n signals through the loop: blocks them, reads them from a
 * signalfd the loop owns, calls fn for each; SIGPIPE is ignored (peers that
 * go away are errors of the write, not a death). 0 or -errno. */
int loop_add_signals(struct loop *l, const int *signals, size_t n, loop_signal_fn fn, void *ctx);

/* Runs until loop_stop, called from a callback or before: a stop asked for
 * while setting up (a target that failed at once) ends the next run as soon
 * as it starts. Each stop ends one run. Returns 0 or -errno on an epoll
 * failure. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
int64_t loop_now(void);
int64_t loop_wall_now(void);

#endif
