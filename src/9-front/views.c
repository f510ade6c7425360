/* Live views; see views.h.
 *
 * One epoll loop: a session per followed process, the signals, and one timer
 * that refreshes the counters, lets GC records that wait for missing events
 * fall due, and (by name) looks for new processes every 250 ms. */
#include "dumpwatch/views.h"

#include <errno.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/alloctypes.h"
#include "dumpwatch/catalog.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/discovery.h"
#include "dumpwatch/exitcodes.h"
#include "dumpwatch/gcrec.h"
#include "dumpwatch/jsonl.h"
#include "dumpwatch/log.h"
#include "dumpwatch/loop.h"
#include "dumpwatch/procstat.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

#define SCAN_NS 250000000LL
#define INFO_TIMEOUT_MS 1000
#define STOP_MS 500
#define VIEW_PROCS_MAX 64
/* counters: the allocating types shown, over the window of a guard's history. */
#define VIEW_ALLOC_TYPES 10
#define VIEW_ALLOC_WINDOW_NS DW_DEFAULT_HISTORY_NS

struct vproc {
	struct view *v;
	struct session *s;
	struct gcrec *gc;
	struct procstat *ps;       /* counters: rss, private-memory, ... read at each print */
	struct alloctypes *allocs; /* counters: allocation by type */
	pid_t pid;
	unsigned long long starttime;
	int64_t attached_ns;
	int done;
};

/* A process seen by name that did not match or could not be followed. */
struct skipped {
	pid_t pid;
	unsigned long long starttime;
};

struct view {
	const struct view_options *o;
	struct loop *loop;
	int tty;
	struct vproc procs[VIEW_PROCS_MAX];
	struct skipped *skipped;
	size_t n_skipped, cap_skipped;
	int64_t next_print_ns, next_scan_ns, end_ns;
	int exit_code;
	int waiting_said;
};

/* A number for JSON: whole for bytes and counts, else three decimals. */
static struct json_object *jnum(double v, int whole)
{
	char b[64];
	if (whole)
		return json_object_new_int64((int64_t)llround(v));
	snprintf(b, sizeof(b), "%.3f", v);
	return json_object_new_double_s(v, b);
}

/* CLOCK_MONOTONIC event time to Unix milliseconds. */
static double wall_ms(int64_t t_ns)
{
	return (double)(loop_wall_now() - (loop_now() - t_ns)) / 1e6;
}

static void time_string(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* --- the GC view --- */

static const char *const gen_names[5] = {"gen0", "gen1", "gen2", "loh", "poh"};

static void print_gc(struct vproc *p, const struct gc_record *g)
{
	const struct view_options *o = p->v->o;
	char missing[64];
	uint64_t promoted = 0;

	for (int i = 0; i < 5; i++)
		promoted += g->promoted[i];
	gcrec_missing(g, missing, sizeof(missing));
	if (o->json) {
		struct json_object *j = json_object_new_object(), *sizes = json_object_new_object(),
		                   *prom = json_object_new_object();
		json_object_object_add(j, "pid", json_object_new_int(p->pid));
		json_object_object_add(j, "process", json_object_new_string(session_name(p->s)));
		json_object_object_add(j, "index", json_object_new_int64(g->index));
		json_object_object_add(j, "generation", json_object_new_int((int32_t)g->generation));
		json_object_object_add(j, "reason", json_object_new_string(gcrec_reason_name(g->reason)));
		json_object_object_add(j, "type", json_object_new_string(gcrec_type_name(g->type)));
		if (g->start_ns)
			json_object_object_add(j, "start_unix_ms", jnum(wall_ms(g->start_ns), 0));
		if (g->start_ns && g->end_ns)
			json_object_object_add(j, "duration_ms", jnum((double)(g->end_ns - g->start_ns) / 1e6, 0));
		if (g->pause_ms >= 0) {
			json_object_object_add(j, "pause_ms", jnum(g->pause_ms, 0));
			json_object_object_add(j, "pauses", json_object_new_int((int32_t)g->pauses));
		}
		if (g->suspend_ms >= 0)
			json_object_object_add(j, "suspend_ms", jnum(g->suspend_ms, 0));
		if (g->seen & GCREC_SEEN_HEAP) {
			for (int i = 0; i < 5; i++) {
				json_object_object_add(sizes, gen_names[i], json_object_new_int64((int64_t)g->size[i]));
				json_object_object_add(prom, gen_names[i],
				                       json_object_new_int64((int64_t)g->promoted[i]));
			}
			json_object_object_add(j, "size_after", sizes);
			json_object_object_add(j, "promoted", prom);
			json_object_object_add(j, "promoted_bytes", json_object_new_int64((int64_t)promoted));
		} else {
			json_object_put(sizes);
			json_object_put(prom);
		}
		json_object_object_add(j, "complete", json_object_new_boolean(g->complete));
		if (!g->complete)
			json_object_object_add(j, "missing", json_object_new_string(missing));
		jsonl_print(stdout, j);
		json_object_put(j);
	} else {
		char b[5][32], pb[32], line[512];
		int n = 0;
		if (!o->pid)
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%d ", (int)p->pid);
		n += snprintf(line + n, sizeof(line) - (size_t)n, "#%-5u gen%u %-10s %-17s", g->index, g->generation,
		              gcrec_type_name(g->type), gcrec_reason_name(g->reason));
		if (g->pause_ms >= 0)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " pause %9.3f ms", g->pause_ms);
		else
			n += snprintf(line + n, sizeof(line) - (size_t)n, " pause         ? ms");
		if (g->start_ns && g->end_ns)
			n += snprintf(line + n, sizeof(line) - (size_t)n, "  gc %8.3f ms",
			              (double)(g->end_ns - g->start_ns) / 1e6);
		if (g->seen & GCREC_SEEN_HEAP) {
			for (int i = 0; i < 5; i++)
				units_format((double)g->size[i], UNIT_BYTES, b[i], sizeof(b[i]));
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			              "  after: gen0 %s gen1 %s gen2 %s loh %s poh %s  promoted %s", b[0], b[1], b[2],
			              b[3], b[4], units_format((double)promoted, UNIT_BYTES, pb, sizeof(pb)));
		}
		if (!g->complete && n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n, "  INCOMPLETE (no %s)", missing);
		puts(line);
	}
	fflush(stdout);
}

static void on_gc(void *ctx, const struct gc_record *g)
{
	print_gc(ctx, g);
}

/* --- the counters view --- */

struct shown {
	enum metric_id id;
	enum unit_kind unit;
	const char *group;
};

static const struct shown shown[] = {
    {M_HEAP_SIZE, UNIT_BYTES, "GC heap (from GC events; live between GCs)"},
    {M_GEN0_SIZE, UNIT_BYTES, NULL},
    {M_GEN1_SIZE, UNIT_BYTES, NULL},
    {M_GEN2_SIZE, UNIT_BYTES, NULL},
    {M_LOH_SIZE, UNIT_BYTES, NULL},
    {M_POH_SIZE, UNIT_BYTES, NULL},
    {M_GC_COUNT, UNIT_COUNT, "GCs"},
    {M_GC_RATE, UNIT_PER_SEC, NULL},
    {M_GEN0_GC_RATE, UNIT_PER_SEC, NULL},
    {M_GEN1_GC_RATE, UNIT_PER_SEC, NULL},
    {M_GEN2_GC_RATE, UNIT_PER_SEC, NULL},
    {M_GC_PAUSE, UNIT_MS, NULL},
    {M_TIME_IN_GC, UNIT_PERCENT, NULL},
    {M_ALLOC_RATE, UNIT_BYTES_PER_SEC, "Allocation (from allocation ticks, last 1 s)"},
    {M_SOH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NULL},
    {M_LOH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NULL},
    {M_POH_ALLOC_RATE, UNIT_BYTES_PER_SEC, NULL},
    {M_APPDOMAIN_ALLOCATED, UNIT_BYTES, "AppDomain 1 (DefaultDomain)"},
    {M_APPDOMAIN_SURVIVED, UNIT_BYTES, NULL},
    {M_APPDOMAIN_FREED, UNIT_BYTES, NULL},
    {M_EXCEPTION_RATE, UNIT_PER_SEC, "Exceptions (first-chance, last 1 s)"},
    {M_RSS, UNIT_BYTES, "Process (from /proc, at each print)"},
    {M_PRIVATE_MEMORY, UNIT_BYTES, NULL},
    {M_SWAP, UNIT_BYTES, NULL},
    {M_THREADS, UNIT_COUNT, NULL},
    {M_FDS, UNIT_COUNT, NULL},
};

static const char *unit_suffix(enum unit_kind u)
{
	switch (u) {
	case UNIT_BYTES:
		return "bytes";
	case UNIT_BYTES_PER_SEC:
		return "bytes/s";
	case UNIT_PER_SEC:
		return "/s";
	case UNIT_MS:
		return "ms";
	case UNIT_PERCENT:
		return "%";
	default:
		return "";
	}
}

static void print_counters_json(struct vproc *p, int64_t now)
{
	struct json_object *j = json_object_new_object(), *mj = json_object_new_object(),
	                   *units = json_object_new_object(), *cj = json_object_new_object();
	const struct metrics *m = session_metrics(p->s);
	char ts[40];
	struct metrics_counter c;

	time_string(ts, sizeof(ts));
	json_object_object_add(j, "time", json_object_new_string(ts));
	json_object_object_add(j, "pid", json_object_new_int(p->pid));
	json_object_object_add(j, "process", json_object_new_string(session_name(p->s)));
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		struct metric_ref ref = {.id = shown[i].id, .scale = 1};
		double v;
		int64_t t;
		/* Not known yet (no GC or counter sample since the attach): null. */
		json_object_object_add(mj, catalog_id_name(shown[i].id),
		                       metrics_read(m, &ref, now, &v, &t)
		                           ? jnum(v, shown[i].unit == UNIT_BYTES || shown[i].unit == UNIT_COUNT)
		                           : NULL);
		json_object_object_add(units, catalog_id_name(shown[i].id),
		                       json_object_new_string(unit_suffix(shown[i].unit)));
	}
	json_object_object_add(j, "metrics", mj);
	json_object_object_add(j, "units", units);
	for (size_t i = 0; metrics_counter_at(m, i, &c); i++) {
		char key[2 * EV_NAME_MAX + 2];
		struct json_object *one = json_object_new_object();
		snprintf(key, sizeof(key), "%s/%s", c.provider, c.name);
		json_object_object_add(one, "value", jnum(c.value, 0));
		json_object_object_add(one, "units", json_object_new_string(c.units));
		json_object_object_add(cj, key, one);
	}
	json_object_object_add(j, "counters", cj);
	struct json_object *mj2 = json_object_new_array();
	struct meters_series ms;
	for (size_t i = 0; meters_series_at(metrics_meters(m), i, &ms); i++) {
		static const char *const pn[3] = {"p50", "p95", "p99"};
		struct json_object *one = json_object_new_object();
		json_object_object_add(one, "meter", json_object_new_string(ms.meter));
		json_object_object_add(one, "instrument", json_object_new_string(ms.instrument));
		json_object_object_add(one, "tags", json_object_new_string(ms.tags));
		json_object_object_add(one, "kind", json_object_new_string(meters_kind_name(ms.kind)));
		json_object_object_add(one, "unit", json_object_new_string(ms.unit));
		if (ms.has_value)
			json_object_object_add(one, "value", jnum(ms.value, 0));
		if (ms.has_rate)
			json_object_object_add(one, "rate_per_s", jnum(ms.rate, 0));
		for (int q = 0; q < 3; q++)
			if (ms.has_p[q])
				json_object_object_add(one, pn[q], jnum(ms.p[q], 0));
		if (ms.has_count) {
			json_object_object_add(one, "count", json_object_new_int64(ms.count));
			json_object_object_add(one, "sum", jnum(ms.sum, 0));
		}
		json_object_array_add(mj2, one);
	}
	json_object_object_add(j, "meters", mj2);
	struct alloctypes_entry top[VIEW_ALLOC_TYPES];
	struct alloctypes_summary sum;
	size_t n = p->allocs ? alloctypes_top(p->allocs, now, top, VIEW_ALLOC_TYPES, &sum) : 0;
	struct json_object *aj = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *one = json_object_new_object();
		json_object_object_add(one, "type", json_object_new_string(top[i].type));
		json_object_object_add(one, "kind", json_object_new_string(alloctypes_kind_name(top[i].kind)));
		json_object_object_add(
		    one, "bytes",
		    json_object_new_int64((int64_t)(top[i].bytes > INT64_MAX ? INT64_MAX : top[i].bytes)));
		double share = sum.bytes ? (double)top[i].bytes / (double)sum.bytes : 0;
		char sb[32];
		snprintf(sb, sizeof(sb), "%.4f", share);
		json_object_object_add(one, "share", json_object_new_double_s(share, sb));
		json_object_array_add(aj, one);
	}
	json_object_object_add(j, "alloc_types", aj);
	json_object_object_add(j, "alloc_types_window_s", json_object_new_int64(VIEW_ALLOC_WINDOW_NS / 1000000000LL));
	jsonl_print(stdout, j);
	json_object_put(j);
}

/* The instruments' series: one row each, grouped by meter, with what its
 * kind publishes, in the instrument's unit. */
static void print_meters_table(const struct meters *ms)
{
	struct meters_series x;
	const char *meter = NULL;
	char e1[4 * EV_NAME_MAX + 1], e2[4 * EV_METER_TAGS_MAX + 1], e3[4 * EV_UNITS_MAX + 1], line[256];

	for (size_t i = 0; meters_series_at(ms, i, &x); i++) {
		size_t off = 0;
		if (!meter || strcmp(meter, x.meter) != 0) {
			meter = x.meter;
			printf("  %s (meter)\n", text_escape_str(meter, e1, sizeof(e1)));
		}
		line[0] = '\0';
		if (x.kind == EV_METER_HISTOGRAM) {
			static const char *const pn[3] = {"p50", "p95", "p99"};
			for (int q = 0; q < 3; q++)
				if (x.has_p[q] && off < sizeof(line))
					off += (size_t)snprintf(line + off, sizeof(line) - off, "%s %.6g  ", pn[q],
					                        x.p[q]);
			if (x.has_count && off < sizeof(line))
				snprintf(line + off, sizeof(line) - off, "count %lld  sum %.6g", (long long)x.count,
				         x.sum);
		} else if (x.kind == EV_METER_GAUGE) {
			if (x.has_value)
				snprintf(line, sizeof(line), "%.6g", x.value);
		} else {
			if (x.has_value)
				off = (size_t)snprintf(line, sizeof(line), "%.6g  ", x.value);
			if (x.has_rate && off < sizeof(line))
				snprintf(line + off, sizeof(line) - off, "%+.6g/s", x.rate);
		}
		printf("    %-28s %-15s %s %s", text_escape_str(x.instrument, e1, sizeof(e1)), meters_kind_name(x.kind),
		       line[0] ? line : "-", text_escape_str(x.unit, e3, sizeof(e3)));
		if (x.tags[0])
			printf("  [%s]", text_escape_str(x.tags, e2, sizeof(e2)));
		putchar('\n');
	}
}

/* The types that allocated most over the window: bytes, share, kind, and
 * the name the process gave, escaped. */
static void print_alloc_types(struct vproc *p, int64_t now)
{
	struct alloctypes_entry top[VIEW_ALLOC_TYPES];
	struct alloctypes_summary sum;
	char b[48], e[4 * EV_NAME_MAX + 1];

	if (!p->allocs)
		return;
	size_t n = alloctypes_top(p->allocs, now, top, VIEW_ALLOC_TYPES, &sum);
	printf("  Allocation by type (from allocation ticks, last %.0f min: %s)\n", (double)VIEW_ALLOC_WINDOW_NS / 60e9,
	       units_format((double)sum.bytes, UNIT_BYTES, b, sizeof(b)));
	for (size_t i = 0; i < n; i++) {
		units_format((double)top[i].bytes, UNIT_BYTES, b, sizeof(b));
		printf("    %10s %5.1f%% %3s  %s\n", b,
		       sum.bytes ? 100.0 * (double)top[i].bytes / (double)sum.bytes : 0,
		       alloctypes_kind_name(top[i].kind),
		       top[i].type[0] ? text_escape_str(top[i].type, e, sizeof(e)) : "(no type name)");
	}
	if (n == 0)
		printf("    none yet\n");
}

/* Names, versions, counter names and units come from the process: each is
 * escaped (text_escape) so the table stays one line per row on the terminal. */
static void print_counters_table(struct vproc *p, int64_t now)
{
	const struct metrics *m = session_metrics(p->s);
	const struct ipc_process_info *info = session_info(p->s);
	struct metrics_counter c;
	const char *provider = NULL;
	char b[48], e1[4 * 256 + 1], e2[4 * EV_NAME_MAX + 1], e3[4 * EV_NAME_MAX + 1];

	printf("pid %d  %s  .NET %s  (following for %.0f s)\n", (int)p->pid,
	       text_escape_str(session_name(p->s), e1, sizeof(e1)),
	       text_escape_str(info && info->runtime_version[0] ? info->runtime_version : "?", e2, sizeof(e2)),
	       (double)(now - p->attached_ns) / 1e9);
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		struct metric_ref ref = {.id = shown[i].id, .scale = 1};
		double v;
		int64_t t;
		if (shown[i].group)
			printf("  %s\n", shown[i].group);
		if (!metrics_read(m, &ref, now, &v, &t))
			snprintf(b, sizeof(b), "unknown");
		else if (shown[i].unit == UNIT_PER_SEC)
			snprintf(b, sizeof(b), "%.1f/min", v * 60);
		else
			units_format(v, shown[i].unit, b, sizeof(b));
		printf("    %-28s %16s\n", catalog_id_name(shown[i].id), b);
	}
	for (size_t i = 0; metrics_counter_at(m, i, &c); i++) {
		if (!provider || strcmp(provider, c.provider) != 0) {
			provider = c.provider;
			printf("  %s (EventCounters)\n", text_escape_str(provider, e1, sizeof(e1)));
		}
		printf("    %-28s %16.6g %s\n", text_escape_str(c.name, e2, sizeof(e2)), c.value,
		       text_escape_str(c.units, e3, sizeof(e3)));
	}
	print_meters_table(metrics_meters(m));
	print_alloc_types(p, now);
}

static void print_counters(struct view *v, int64_t now)
{
	size_t n = 0;
	char ts[40];

	if (v->tty && !v->o->json) {
		time_string(ts, sizeof(ts));
		fputs("\033[H\033[J", stdout); /* home, clear: the table is redrawn in place */
		printf("dumpwatch counters  %s  every %.0f s  (Ctrl-C to stop)\n\n", ts,
		       (double)v->o->interval_ns / 1e9);
	}
	for (size_t i = 0; i < VIEW_PROCS_MAX; i++) {
		struct vproc *p = &v->procs[i];
		struct proc_sample ps;
		char err[256];
		if (!p->s || p->done)
			continue;
		n++;
		if (p->ps && procstat_read(p->ps, &ps, err, sizeof(err)) == 0)
			metrics_on_proc(session_metrics(p->s), &ps, now);
		if (v->o->json)
			print_counters_json(p, now);
		else {
			print_counters_table(p, now);
			putchar('\n');
		}
	}
	if (!n && !v->o->json && v->tty)
		printf("waiting for a .NET process named %s ...\n", v->o->name_glob ? v->o->name_glob : "?");
	fflush(stdout);
}

/* --- processes --- */

static void proc_end(struct vproc *p, const char *why)
{
	struct view *v = p->v;

	if (p->done)
		return;
	p->done = 1;
	if (p->gc)
		gcrec_flush(p->gc);
	log_info("pid %d (%s) %s", (int)p->pid, session_name(p->s), why);
	if (v->o->pid)
		loop_stop(v->loop);
}

static void proc_free(struct vproc *p)
{
	if (p->s) {
		int fd = session_fd(p->s);
		if (fd >= 0)
			loop_del(p->v->loop, fd);
		session_free(p->s);
	}
	gcrec_free(p->gc);
	alloctypes_free(p->allocs);
	procstat_close(p->ps);
	memset(p, 0, sizeof(*p));
}

static void on_event(void *ctx, struct session *s, const struct ev_record *r, int64_t t_ns)
{
	struct vproc *p = ctx;
	(void)s;
	if (p->gc)
		gcrec_on_event(p->gc, r, t_ns);
	if (p->allocs)
		alloctypes_on_event(p->allocs, r, t_ns);
}

static void on_stream(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct vproc *p = ctx;
	char err[512];
	(void)events;

	int r = session_read(p->s, err, sizeof(err));
	if (r == 0)
		return;
	loop_del(l, fd);
	if (r == 1 || (kill(p->pid, 0) < 0 && errno == ESRCH)) {
		proc_end(p, "exited");
		return;
	}
	log_error("pid %d: %s", (int)p->pid, err);
	if (p->v->o->pid)
		p->v->exit_code = DW_EXIT_RUNTIME;
	proc_end(p, "is no longer followed");
}

static int follow(struct view *v, const struct dn_target *t, char *err, size_t errlen)
{
	struct vproc *p = NULL;
	struct session_subscription sub;

	for (size_t i = 0; i < VIEW_PROCS_MAX && !p; i++)
		if (!v->procs[i].s)
			p = &v->procs[i];
	if (!p) {
		snprintf(err, errlen, "already following %d processes", VIEW_PROCS_MAX);
		return -ENOSPC;
	}
	memset(&sub, 0, sizeof(sub));
	/* Whole seconds: the view's interval is at least 1 s. */
	sub.counter_interval_ms = (uint32_t)(v->o->interval_ns / 1000000000LL) * 1000;
	if (!sub.counter_interval_ms)
		sub.counter_interval_ms = 1000;
	if (v->o->kind == VIEW_GC) {
		sub.needs = NEED_GC;
	} else {
		sub.needs = NEED_GC | NEED_ALLOC_TICKS | NEED_COUNTERS | NEED_EXCEPTIONS;
		snprintf(sub.counter_providers[sub.n_counter_providers++], CATALOG_NAME_MAX, "System.Runtime");
		for (size_t i = 0; i < v->o->n_providers && sub.n_counter_providers < SESSION_MAX_COUNTER_PROVIDERS;
		     i++)
			snprintf(sub.counter_providers[sub.n_counter_providers++], CATALOG_NAME_MAX, "%s",
			         v->o->providers[i]);
		for (size_t i = 0; i < v->o->meters.n_meters; i++)
			session_subscription_add_meter(&sub, v->o->meters.meters[i]);
	}
	p->v = v;
	p->pid = t->pid;
	p->starttime = t->starttime;
	p->s = session_new(t, on_event, p);
	if (!p->s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((v->o->kind == VIEW_GC && !(p->gc = gcrec_new(on_gc, p))) ||
	    (v->o->kind == VIEW_COUNTERS && !(p->allocs = alloctypes_new(VIEW_ALLOC_WINDOW_NS, 0)))) {
		proc_free(p);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = session_start(p->s, &sub, err, errlen);
	if (r < 0 || loop_add(v->loop, session_fd(p->s), EPOLLIN, on_stream, p) < 0) {
		proc_free(p);
		return r < 0 ? r : -ENOMEM;
	}
	/* Without /proc (another user's process, as non-root) those rows stay unknown. */
	char perr[256];
	if (v->o->kind == VIEW_COUNTERS && procstat_open(t->pid, t->starttime, 1, &p->ps, perr, sizeof(perr)) < 0)
		p->ps = NULL;
	p->attached_ns = loop_now();
	log_info("following pid %d (%s)", (int)t->pid, session_name(p->s));
	return 0;
}

static int skipped(const struct view *v, const struct dn_target *t)
{
	for (size_t i = 0; i < v->n_skipped; i++)
		if (v->skipped[i].pid == t->pid && v->skipped[i].starttime == t->starttime)
			return 1;
	return 0;
}

static void skip(struct view *v, const struct dn_target *t)
{
	if (v->n_skipped == v->cap_skipped) {
		size_t c = v->cap_skipped ? v->cap_skipped * 2 : 64;
		struct skipped *n = realloc(v->skipped, c * sizeof(*n));
		if (!n)
			return;
		v->skipped = n;
		v->cap_skipped = c;
	}
	v->skipped[v->n_skipped].pid = t->pid;
	v->skipped[v->n_skipped].starttime = t->starttime;
	v->n_skipped++;
}

/* A process whose only socket is another user's: said once, never looked
 * at again. */
static void on_foreign(void *ctx, const struct dn_target *t, const char *path, uid_t owner)
{
	struct view *v = ctx;
	char why[1024];

	if (skipped(v, t))
		return;
	discovery_describe_foreign(t, path, owner, why, sizeof(why));
	log_warn("pid %d: %s", (int)t->pid, why);
	skip(v, t);
}

/* By name: follows every .NET process not seen before whose name matches. */
static void scan(struct view *v)
{
	struct dn_target *ts = NULL;
	size_t n = 0;

	if (discovery_list_ex(on_foreign, v, &ts, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct dn_target *t = &ts[i];
		int known = skipped(v, t);
		for (size_t k = 0; k < VIEW_PROCS_MAX && !known; k++)
			known = v->procs[k].s && v->procs[k].pid == t->pid && v->procs[k].starttime == t->starttime;
		if (known)
			continue;
		struct ipc_process_info info;
		char name[256], err[512];
		const struct ipc_endpoint ep = discovery_endpoint(t);
		memset(&info, 0, sizeof(info));
		int r = ipc_process_info(&ep, INFO_TIMEOUT_MS, &info, err, sizeof(err));
		if (r == -EPERM) {
			/* Someone else serves this socket: said once, never asked again. */
			log_warn("pid %d: %s", (int)t->pid, err);
			skip(v, t);
			continue;
		}
		if (r < 0) {
			/* A runtime still starting answers later: try again next scan. */
			continue;
		}
		discovery_process_name(t, info.entry_assembly, name, sizeof(name));
		if (fnmatch(v->o->name_glob, name, 0) != 0) {
			skip(v, t);
			continue;
		}
		if (follow(v, t, err, sizeof(err)) < 0) {
			log_error("pid %d (%s): %s", (int)t->pid, name, err);
			skip(v, t);
		}
	}
	free(ts);
	/* Forget processes that ended, so the table stays current. */
	for (size_t k = 0; k < VIEW_PROCS_MAX; k++)
		if (v->procs[k].s && v->procs[k].done)
			proc_free(&v->procs[k]);
}

static void on_timer(struct loop *l, void *ctx)
{
	struct view *v = ctx;
	int64_t now = loop_now();

	if (v->end_ns && now >= v->end_ns) {
		loop_stop(l);
		return;
	}
	for (size_t i = 0; i < VIEW_PROCS_MAX; i++)
		if (v->procs[i].gc && !v->procs[i].done)
			gcrec_advance(v->procs[i].gc, now);
	if (!v->o->pid && now >= v->next_scan_ns) {
		scan(v);
		v->next_scan_ns = now + SCAN_NS;
	}
	if (v->o->kind == VIEW_COUNTERS && now >= v->next_print_ns) {
		print_counters(v, now);
		v->next_print_ns += v->o->interval_ns;
		if (v->next_print_ns <= now)
			v->next_print_ns = now + v->o->interval_ns;
	}
	int64_t next = now + SCAN_NS;
	if (v->o->kind == VIEW_COUNTERS && v->next_print_ns < next)
		next = v->next_print_ns;
	if (v->end_ns && v->end_ns < next)
		next = v->end_ns;
	loop_set_timer(l, next, on_timer, v);
}

static void on_signal(struct loop *l, int signo, void *ctx)
{
	(void)signo;
	(void)ctx;
	loop_stop(l);
}

int view_run(const struct view_options *o)
{
	static const int signals[] = {SIGINT, SIGTERM};
	struct view v;
	char err[512];
	int rc;

	memset(&v, 0, sizeof(v));
	v.o = o;
	v.exit_code = DW_EXIT_OK;
	v.tty = isatty(STDOUT_FILENO);
	v.loop = loop_new();
	if (!v.loop) {
		log_error("cannot create the event loop: %s", strerror(errno));
		return DW_EXIT_RUNTIME;
	}
	rc = loop_add_signals(v.loop, signals, 2, on_signal, &v);
	if (rc < 0) {
		log_error("cannot watch signals: %s", strerror(-rc));
		loop_free(v.loop);
		return DW_EXIT_RUNTIME;
	}
	if (o->pid) {
		struct dn_target t;
		if (discovery_find(o->pid, &t, err, sizeof(err)) < 0) {
			log_error("%s", err);
			rc = DW_EXIT_TARGET;
			goto out;
		}
		if (follow(&v, &t, err, sizeof(err)) < 0) {
			log_error("pid %d: %s", (int)o->pid, err);
			rc = DW_EXIT_TARGET;
			goto out;
		}
	} else {
		log_info("following every .NET process named %s, present and future", o->name_glob);
	}
	int64_t now = loop_now();
	v.next_print_ns = now + o->interval_ns;
	v.end_ns = o->duration_ns ? now + o->duration_ns : 0;
	on_timer(v.loop, &v);
	if (loop_run(v.loop) < 0)
		v.exit_code = DW_EXIT_RUNTIME;
	rc = v.exit_code;
out:
	for (size_t i = 0; i < VIEW_PROCS_MAX; i++)
		if (v.procs[i].s) {
			if (!v.procs[i].done) {
				session_stop(v.procs[i].s, STOP_MS);
				if (v.procs[i].gc)
					gcrec_flush(v.procs[i].gc);
			}
			proc_free(&v.procs[i]);
		}
	free(v.skipped);
	loop_free(v.loop);
	return rc;
}
