/* epoll + timerfd event loop; see loop.h. Watches removed from inside a
 * callback are freed only after the current batch of events is dispatched, so
 * a later event of the same batch never reaches a freed watch. */
#include "dumpwatch/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define LOOP_BATCH 64

struct watch {
	int fd;
	int dead;
	loop_fd_fn fn;
	void *ctx;
	struct watch *next;
};

struct loop {
	int epfd;
	int tfd;
	int stop;
	struct watch *watches;
	loop_timer_fn timer_fn;
	void *timer_ctx;
};

int64_t loop_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t loop_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->epfd < 0 || l->tfd < 0) {
		int e = errno;
		loop_free(l);
		errno = e;
		return NULL;
	}
	ev.data.ptr = NULL; /* NULL marks the timer */
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev) < 0) {
		int e = errno;
		loop_free(l);
		errno = e;
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	while (l->watches) {
		struct watch *w = l->watches;
		l->watches = w->next;
		free(w);
	}
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->tfd >= 0)
		close(l->tfd);
	free(l);
}

int loop_add(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx)
{
	struct watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev;

	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->fn = fn;
	w->ctx = ctx;
	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		free(w);
		return -e;
	}
	w->next = l->watches;
	l->watches = w;
	return 0;
}

void loop_del(struct loop *l, int fd)
{
	for (struct watch *w = l->watches; w; w = w->next)
		if (w->fd == fd && !w->dead) {
			epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
			w->dead = 1;
			return;
		}
}

void loop_set_timer(struct loop *l, int64_t deadline_ns, loop_timer_fn fn, void *ctx)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	l->timer_fn = fn;
	l->timer_ctx = ctx;
	if (deadline_ns > 0) {
		its.it_value.tv_sec = deadline_ns / 1000000000LL;
		its.it_value.tv_nsec = deadline_ns % 1000000000LL;
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void reap(struct loop *l)
{
	struct watch **pp = &l->watches;

	while (*pp) {
		if ((*pp)->dead) {
			struct watch *w = *pp;
			*pp = w->next;
			free(w);
		} else {
			pp = &(*pp)->next;
		}
	}
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_BATCH];

	l->stop = 0;
	while (!l->stop) {
		int n = epoll_wait(l->epfd, evs, LOOP_BATCH, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !l->stop; i++) {
			struct watch *w = evs[i].data.ptr;
			if (!w) {
				uint64_t expirations;
				if (read(l->tfd, &expirations, sizeof(expirations)) > 0 && l->timer_fn)
					l->timer_fn(l, l->timer_ctx);
				continue;
			}
			if (!w->dead)
				w->fn(l, w->fd, evs[i].events, w->ctx);
		}
		reap(l);
	}
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stop = 1;
}
