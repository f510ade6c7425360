/* The guard's Prometheus exposition (docs/metrics.md): dumpwatch's own
 * counters and, for every process in the table, its labels and the metrics
 * its session holds. Built on request from the live state, as the status
 * document is (guard_status.c); nothing here changes it. The text format is
 * expo.c's, the serving exposrv.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/exitcodes.h"
#include "dumpwatch/expo.h"
#include "dumpwatch/exposrv.h"
#include "dumpwatch/log.h"
#include "guard_shared.h"

static void counter(struct strbuf *b, const char *name, const char *help, uint64_t v)
{
	expo_family(b, name, "counter", help);
	expo_sample(b, name, NULL, 0, (double)v);
}

static void gauge(struct strbuf *b, const char *name, const char *help, double v)
{
	expo_family(b, name, "gauge", help);
	expo_sample(b, name, NULL, 0, v);
}

/* A counter family with one sample per result. */
static void results(struct strbuf *b, const char *name, const char *help, const char *const *what, const uint64_t *v,
                    size_t n)
{
	expo_family(b, name, "counter", help);
	for (size_t i = 0; i < n; i++) {
		struct expo_label l = {"result", what[i]};
		expo_sample(b, name, &l, 1, (double)v[i]);
	}
}

static void own(struct strbuf *b, struct guard *g, size_t attached)
{
	const struct file_rule *const *active;
	size_t n_rules = g->rs ? ruleset_active(g->rs, &active) : 0;
	static const char *const dumps[] = {"taken", "skipped", "failed"};
	static const char *const okfail[] = {"ok", "failed"};
	uint64_t d[] = {g->n_dumps, g->n_dumps_skipped, g->n_dumps_failed};
	uint64_t u[] = {g->n_uploads, g->n_uploads_failed};
	uint64_t h[] = {g->n_hooks, g->n_hooks_failed};

	gauge(b, "dumpwatch_start_time_seconds", "When the guard started (Unix time).",
	      (double)(g->start_wall_ns / 1000000) / 1000.0);
	results(b, "dumpwatch_dumps_total", "Dumps by result: taken (published), skipped (disk guards), failed.", dumps,
	        d, 3);
	results(b, "dumpwatch_uploads_total", "Dump uploads by result.", okfail, u, 2);
	results(b, "dumpwatch_hooks_total", "Hooks run by result.", okfail, h, 2);
	gauge(b, "dumpwatch_processes", ".NET processes known to the guard, attached or not.", (double)g->n_procs);
	gauge(b, "dumpwatch_sessions_attached", "Processes streaming events to the guard now.", (double)attached);
	counter(b, "dumpwatch_attach_failures_total", "Attachments that failed (retried with backoff).",
	        g->n_attach_failed);
	gauge(b, "dumpwatch_rules_in_force", "Rules in force from the rules directory.", (double)n_rules);
	if (g->o->metrics_listen) {
		static const char *const conns[] = {"accepted", "refused_share", "refused_full", "forbidden", "cut"};
		struct exposrv_stats st;
		exposrv_get_stats(g->expo, &st);
		uint64_t c[] = {st.accepted, st.refused_share, st.refused_full, st.forbidden, st.cut};
		results(b, "dumpwatch_metrics_connections_total",
		        "Connections to this page: accepted; closed at once because the client held its share or all "
		        "were in use; answered 403 (--metrics-allow); cut at their age.",
		        conns, c, 5);
	}
	counter(b, "dumpwatch_rule_reloads_total", "Changes of the rules directory taken in, and SIGHUP reloads.",
	        g->n_rule_reloads);
}

char *guard_metrics_text(void *ctx)
{
	struct guard *g = ctx;
	struct strbuf b = EXPO_BUF;
	struct expo_process *ps = g->n_procs ? calloc(g->n_procs, sizeof(*ps)) : NULL;
	size_t attached = 0;
	char pid[16];
	struct expo_label l[EXPO_PROCESS_LABELS];

	if (g->n_procs && !ps)
		return NULL;
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct proc *p = g->procs[i];
		const struct cgroup_ident *id = target_ident(p->tg);
		struct session *s = target_session(p->tg);
		ps[i] = (struct expo_process){p->t.pid, target_name(p->tg), id->container, id->pod, NULL};
		if (guard_proc_attached(p) && s) {
			ps[i].m = session_metrics(s);
			attached++;
		}
	}
	own(&b, g, attached);
	/* Every process, attached or not, with its labels: the series a
	 * dashboard joins the others to. */
	if (g->n_procs) {
		expo_family(&b, "dumpwatch_process_attached", "gauge",
		            "1 while the guard streams the process's events, 0 when it only knows it.");
		for (size_t i = 0; i < g->n_procs; i++) {
			expo_process_labels(&ps[i], pid, sizeof(pid), l);
			expo_sample(&b, "dumpwatch_process_attached", l, EXPO_PROCESS_LABELS, ps[i].m ? 1 : 0);
		}
		expo_family(&b, "dumpwatch_process_dumps_total", "counter", "Dumps taken of the process.");
		for (size_t i = 0; i < g->n_procs; i++) {
			expo_process_labels(&ps[i], pid, sizeof(pid), l);
			expo_sample(&b, "dumpwatch_process_dumps_total", l, EXPO_PROCESS_LABELS,
			            (double)target_dumps(g->procs[i]->tg));
		}
		/* Whether the allocation ticks come now (only near a
		 * threshold by default): of the processes whose rules read them. */
		int family = 0;
		for (size_t i = 0; i < g->n_procs; i++) {
			enum target_alloc_ticks k = target_alloc_ticks(g->procs[i]->tg);
			if (k == TARGET_TICKS_NONE)
				continue;
			if (!family++)
				expo_family(
				    &b, "dumpwatch_process_alloc_ticks", "gauge",
				    "1 while the runtime sends the allocation ticks the process's rules read, 0 while "
				    "no rule is near its threshold (--alloc-ticks near).");
			expo_process_labels(&ps[i], pid, sizeof(pid), l);
			expo_sample(&b, "dumpwatch_process_alloc_ticks", l, EXPO_PROCESS_LABELS,
			            k == TARGET_TICKS_OFF ? 0 : 1);
		}
	}
	expo_processes(&b, ps, g->n_procs, loop_now());
	free(ps);
	if (b.failed || !b.p) {
		strbuf_free(&b);
		return NULL;
	}
	return b.p;
}

int guard_metrics_wanted(const struct guard_options *o)
{
	return o->metrics_listen || o->metrics_file;
}

int guard_metrics_open(struct guard *g)
{
	const struct guard_options *o = g->o;
	struct exposrv_config cfg = {
	    .listen = o->metrics_listen,
	    .allow = o->metrics_allow,
	    .file = o->metrics_file,
	    .interval_ns = o->metrics_interval_ns,
	    .build = guard_metrics_text,
	    .ctx = g,
	};
	char err[PATH_MAX + 256];

	if (!guard_metrics_wanted(o))
		return DW_EXIT_OK;
	int r = exposrv_open(g->loop, &cfg, &g->expo, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		/* A malformed address or a refused directory is the command
		 * line's fault; an address taken is the host's state. */
		return r == -EINVAL || r == -EPERM ? DW_EXIT_USAGE : DW_EXIT_RUNTIME;
	}
	if (o->metrics_listen)
		log_info("metrics: serving GET /metrics on %s", o->metrics_listen);
	if (o->metrics_file)
		log_info("metrics: writing %s every %.0f s", o->metrics_file, (double)o->metrics_interval_ns / 1e9);
	return DW_EXIT_OK;
}

void guard_metrics_close(struct guard *g)
{
	char err[PATH_MAX + 256];

	if (!g->expo)
		return;
	if (exposrv_write_file(g->expo, err, sizeof(err)) < 0)
		log_warn("metrics file: %s", err);
	exposrv_free(g->expo);
	g->expo = NULL;
}
