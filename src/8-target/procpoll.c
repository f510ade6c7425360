/* Metrics from /proc (rss, private-memory, swap, threads, fds) for a
 * target whose rules read them: the files are opened once per attachment
 * (procstat.h) and polled every target_options.proc_interval_ns while
 * attached, each poll evaluated at once, so such a rule fires while the
 * stream is quiet or late. */
#include <errno.h>

#include "dumpwatch/defaults.h"
#include "dumpwatch/log.h"
#include "target_shared.h"

static int64_t proc_interval(const struct target *t)
{
	return t->cfg->opt->proc_interval_ns > 0 ? t->cfg->opt->proc_interval_ns : DW_DEFAULT_PROC_INTERVAL_NS;
}

void target_proc_sync(struct target *t)
{
	int want = t->proc_needs && t->state == TARGET_ATTACHED && !t->exited && t->session;
	int want_fds = (t->proc_needs & NEED_PROC_FDS) != 0;
	char err[256];

	if (t->ps && (!want || (want_fds && procstat_fds(t->ps) < 2))) {
		procstat_close(t->ps);
		t->ps = NULL;
	}
	if (!want) {
		t->proc_next_ns = 0;
		return;
	}
	if (!t->ps && t->proc_warned)
		return; /* refused once in this attachment: not tried again until the next */
	if (!t->ps) {
		int r = procstat_open(t->dt.pid, t->dt.starttime, want_fds, &t->ps, err, sizeof(err));
		if (r < 0) {
			/* An exit is the pidfd's to report. */
			if (r != -ESRCH && !t->proc_warned)
				log_warn(
				    "pid %d (%s): cannot poll /proc: %s; rules on rss, private-memory, swap, threads "
				    "and fds stay unknown for it",
				    (int)t->dt.pid, t->name, err);
			t->proc_warned = 1;
			t->proc_next_ns = 0;
			return;
		}
	}
	if (!t->proc_next_ns)
		t->proc_next_ns = loop_now();
}

/* One poll of /proc, taken in (and evaluated at once by the caller). The next is due at the
 * next multiple of the interval on the monotonic clock: every target polls
 * on the same grid, so one wake of the loop serves them all. A wake costs
 * far more than a poll (tests/bench/proc.sh: about 8 us per poll, about 120
 * us per wake of an otherwise idle process in a VM, mostly the scheduler). */
int target_proc_poll(struct target *t, int64_t now)
{
	struct proc_sample p;
	char err[256];
	int r = procstat_read(t->ps, &p, err, sizeof(err));
	int64_t iv = proc_interval(t);

	t->proc_next_ns = (now / iv + 1) * iv;
	if (r < 0) {
		procstat_close(t->ps);
		t->ps = NULL;
		t->proc_next_ns = 0;
		if (r != -ESRCH && !t->proc_warned)
			log_warn("pid %d (%s): polling /proc stopped: %s", (int)t->dt.pid, t->name, err);
		t->proc_warned = 1;
		return 0;
	}
	metrics_on_proc(session_metrics(t->session), &p, now);
	if (t->ct)
		ctxtrack_on_proc(t->ct, session_metrics(t->session), now);
	return 1;
}

int target_proc_files(const struct target *t)
{
	return t->proc_needs ? 1 + ((t->proc_needs & NEED_PROC_FDS) != 0) : 0;
}
