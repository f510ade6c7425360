/* epoll + timerfd event loop; see loop.h. Watches removed from inside a
 * callback are freed only after the current batch of events is dispatched, so
 * a later event of the same batch never reaches a freed watch. */
#include "dumpwatch/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
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
	int sigfd;
	int stop;
	struct watch *watches;
	struct loop_timer own;    /* loop_set_timer's */
	struct loop_timer **heap; /* armed timers, a binary min-heap on deadline */
	size_t n_heap, cap_heap;
	int64_t programmed; /* what tfd is set to; 0: disarmed */
	loop_signal_fn sig_fn;
	void *sig_ctx;
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
	l->sigfd = -1;
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
	if (l->sigfd >= 0)
		close(l->sigfd);
	for (size_t i = 0; i < l->n_heap; i++)
		l->heap[i]->slot = 0;
	free(l->heap);
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

int loop_mod(struct loop *l, int fd, uint32_t events)
{
	for (struct watch *w = l->watches; w; w = w->next)
		if (w->fd == fd && !w->dead) {
			struct epoll_event ev;
			memset(&ev, 0, sizeof(ev));
			ev.events = events;
			ev.data.ptr = w;
			return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
		}
	return -ENOENT;
}

/* --- timers: a binary heap of pointers, each timer knowing its slot --- */

static void heap_set(struct loop *l, size_t i, struct loop_timer *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void heap_up(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (l->heap[parent]->deadline_ns <= t->deadline_ns)
			break;
		heap_set(l, i, l->heap[parent]);
		i = parent;
	}
	heap_set(l, i, t);
}

static void heap_down(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && l->heap[c + 1]->deadline_ns < l->heap[c]->deadline_ns)
			c++;
		if (l->heap[c]->deadline_ns >= t->deadline_ns)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

void loop_timer_init(struct loop_timer *t, loop_timer_fn fn, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->ctx = ctx;
}

void loop_timer_disarm(struct loop *l, struct loop_timer *t)
{
	if (!t->slot)
		return;
	size_t i = t->slot - 1;
	t->slot = 0;
	l->n_heap--;
	if (i == l->n_heap)
		return;
	struct loop_timer *moved = l->heap[l->n_heap];
	heap_set(l, i, moved);
	heap_up(l, i);
	heap_down(l, moved->slot - 1);
}

int loop_timer_arm(struct loop *l, struct loop_timer *t, int64_t deadline_ns)
{
	if (deadline_ns <= 0) {
		loop_timer_disarm(l, t);
		return 0;
	}
	if (t->slot) {
		size_t i = t->slot - 1;
		t->deadline_ns = deadline_ns;
		heap_up(l, i);
		heap_down(l, t->slot - 1);
		return 0;
	}
	if (l->n_heap == l->cap_heap) {
		size_t cap = l->cap_heap ? l->cap_heap * 2 : 16;
		struct loop_timer **h = realloc(l->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->cap_heap = cap;
	}
	t->deadline_ns = deadline_ns;
	heap_set(l, l->n_heap++, t);
	heap_up(l, l->n_heap - 1);
	return 0;
}

void loop_set_timer(struct loop *l, int64_t deadline_ns, loop_timer_fn fn, void *ctx)
{
	l->own.fn = fn;
	l->own.ctx = ctx;
	loop_timer_arm(l, &l->own, deadline_ns);
}

/* Sets the timerfd to the earliest deadline, when that changed. */
static void program(struct loop *l)
{
	int64_t next = l->n_heap ? l->heap[0]->deadline_ns : 0;
	struct itimerspec its;

	if (next == l->programmed)
		return;
	memset(&its, 0, sizeof(its));
	if (next > 0) {
		its.it_value.tv_sec = next / 1000000000LL;
		its.it_value.tv_nsec = next % 1000000000LL;
	}
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	l->programmed = next;
}

/* Runs the timers that are due; each is disarmed before its callback, which
 * may arm it again. At most as many callbacks per round as timers were armed,
 * so a timer that keeps arming itself for the past cannot starve the
 * descriptors. */
static void run_timers(struct loop *l)
{
	int64_t now = loop_now();
	size_t budget = l->n_heap;

	while (l->n_heap > 0 && l->heap[0]->deadline_ns <= now && budget-- > 0 && !l->stop) {
		struct loop_timer *t = l->heap[0];
		loop_timer_disarm(l, t);
		t->fn(l, t->ctx);
	}
}

static void on_signalfd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct signalfd_siginfo si;
	(void)events;
	(void)ctx;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (l->sig_fn)
			l->sig_fn(l, (int)si.ssi_signo, l->sig_ctx);
}

int loop_add_signals(struct loop *l, const int *signals, size_t n, loop_signal_fn fn, void *ctx)
{
	sigset_t mask;
	int r;

	if (l->sigfd >= 0)
		return -EBUSY;
	sigemptyset(&mask);
	for (size_t i = 0; i < n; i++)
		sigaddset(&mask, signals[i]);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	l->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sigfd < 0)
		return -errno;
	l->sig_fn = fn;
	l->sig_ctx = ctx;
	if ((r = loop_add(l, l->sigfd, EPOLLIN, on_signalfd, NULL)) < 0) {
		close(l->sigfd);
		l->sigfd = -1;
		return r;
	}
	return 0;
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

	while (!l->stop) {
		program(l);
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
				if (read(l->tfd, &expirations, sizeof(expirations)) > 0)
					l->programmed = 0; /* fired: program() sets it again */
				run_timers(l);
				continue;
			}
			if (!w->dead)
				w->fn(l, w->fd, evs[i].events, w->ctx);
		}
		reap(l);
	}
	l->stop = 0;
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stop = 1;
}
