/* `dumpwatch record`; see record.h. The bytes are written exactly as the
 * runtime sent them, so a recording is a faithful parser test input. */
#include "dumpwatch/record.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/ipc.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/session.h"

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int record_run(pid_t pid, const char *path, int64_t duration_ns, unsigned needs, const char *meters, char *err,
               size_t errlen)
{
	struct dn_target t;
	/* The providers a session with these needs subscribes to, System.Runtime's
	 * counters at 1 s, and the meters on top; every event of their keywords
	 * (a recording is for reading later, not only for what dumpwatch decodes). */
	struct session_subscription sub = {.needs = needs, .counter_interval_ms = 1000, .all_events = 1};
	struct ipc_provider provs[SESSION_MAX_PROVIDERS];
	char args[SESSION_ARGS_MAX];
	size_t n = 0;
	uint64_t session;
	uint8_t buf[65536];
	int sock, out, r, stopped = 0;

	r = discovery_find(pid, &t, err, errlen);
	if (r < 0)
		return r;
	const struct ipc_endpoint ep = discovery_endpoint(&t);
	if (needs & NEED_COUNTERS)
		snprintf(sub.counter_providers[sub.n_counter_providers++], CATALOG_NAME_MAX, "System.Runtime");
	if (meters && session_subscription_add_meters(&sub, meters, 1, err, errlen) < 0)
		return -EINVAL;
	n = session_providers(&sub, provs, args, sizeof(args));
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(-r));
		return r;
	}
	r = ipc_collect_tracing(&ep, provs, n, 16, 3000, &sock, &session, err, errlen);
	if (r < 0) {
		close(out);
		unlink(path);
		return r;
	}
	int64_t deadline = loop_now() + duration_ns;
	for (;;) {
		int64_t left = deadline - loop_now();
		if (!stopped && left <= 0) {
			/* The stream drains to its closing tag after the stop. */
			if (ipc_stop_tracing(&ep, session, 3000, err, errlen) < 0)
				break;
			stopped = 1;
			deadline = loop_now() + 5000000000LL;
			continue;
		}
		if (stopped && left <= 0)
			break;
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)(left / 1000000 + 1));
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		ssize_t got = read(sock, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break; /* end of stream: stopped, or the process exited */
		r = write_all(out, buf, (size_t)got);
		if (r < 0) {
			snprintf(err, errlen, "writing %s: %s", path, strerror(-r));
			close(sock);
			close(out);
			return r;
		}
	}
	close(sock);
	if (close(out) < 0) {
		r = -errno;
		snprintf(err, errlen, "writing %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
}
