/* A small epoll event loop: callbacks on readable descriptors and one timer on
 * CLOCK_MONOTONIC. Generic: it knows nothing of sessions or rules. */
#ifndef DUMPWATCH_LOOP_H
#define DUMPWATCH_LOOP_H

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

/* The single timer: fn runs once at deadline_ns (CLOCK_MONOTONIC); a new call
 * replaces the deadline; 0 disarms it. */
void loop_set_timer(struct loop *l, int64_t deadline_ns, loop_timer_fn fn, void *ctx);

/* Runs until loop_stop. Returns 0 or -errno on an epoll failure. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
int64_t loop_now(void);
int64_t loop_wall_now(void);

#endif
