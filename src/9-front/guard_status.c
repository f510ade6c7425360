/* The guard's answer to `dumpwatch status` (docs/status.md): each process it
 * knows, its state, its rules and how far each condition's sustain window has
 * run, the limits used and the dumps taken. Built on request from the live
 * state; nothing here changes it. */
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/metrics.h"
#include "dumpwatch/units.h"
#include "guard_shared.h"

static const char *proc_state(const struct proc *p)
{
	const struct target *t = p->tg;

	if (p->fd_wait)
		return "waiting-fds";
	if (target_dumping(t))
		return "dumping";
	switch (target_state(t)) {
	case TARGET_NEW:
	case TARGET_PROBING:
		return "probing";
	case TARGET_ATTACHING:
		return "attaching";
	case TARGET_ATTACHED:
		return "attached";
	case TARGET_ENDING:
		return "stopping";
	case TARGET_GONE:
		return "idle";
	case TARGET_IDLE:
		break;
	}
	if (target_retrying(t, NULL))
		return "retrying";
	if (target_busy(t))
		return "stopping";
	return "idle";
}

static const char *rule_state(const struct target *t, const struct target_rule *tr)
{
	if (target_dumping(t) && tr->last == EVAL_FIRE)
		return "dumping";
	return eval_result_name(tr->last);
}

static struct json_object *secs(int64_t ns)
{
	return json_object_new_double((double)(ns / 1000000) / 1000.0);
}

static struct json_object *rule_json(const struct target *t, const struct target_rule *tr, int64_t now)
{
	const struct rule *r = &tr->fr.rule;
	struct json_object *o = json_object_new_object(), *conds = json_object_new_array();
	struct session *s = target_session(t);
	struct metrics_at at = {s ? session_metrics(s) : NULL, now};
	uint32_t in_window = 0;

	json_object_object_add(o, "name", json_object_new_string(r->name));
	json_object_object_add(o, "state", json_object_new_string(rule_state(t, tr)));
	for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++) {
		const struct rule_cond *rc = &r->conds[c];
		struct json_object *co = json_object_new_object();
		double v;
		int64_t sample;
		int known = s && target_state(t) == TARGET_ATTACHED && metrics_read_at(&at, &rc->metric, &v, &sample);

		json_object_object_add(co, "text", json_object_new_string(rc->text));
		json_object_object_add(co, "value", known ? json_object_new_double(v) : NULL);
		json_object_object_add(co, "unit", json_object_new_string(units_name(rc->metric.unit)));
		json_object_object_add(co, "holding", json_object_new_boolean(tr->st.holding[c]));
		json_object_object_add(co, "held_s", secs(tr->st.holding[c] ? now - tr->st.since_ns[c] : 0));
		if (rc->for_ns)
			json_object_object_add(co, "for_s", secs(rc->for_ns));
		json_object_array_add(conds, co);
	}
	json_object_object_add(o, "conditions", conds);
	json_object_object_add(o, "fires", json_object_new_int64(tr->st.fires));
	json_object_object_add(o, "max_dumps", json_object_new_int64(r->limits.max_dumps));
	json_object_object_add(o, "window_s", secs(r->limits.window_ns));
	for (uint32_t k = 0; k < tr->st.n_recent && k < EVAL_MAX_WINDOW_FIRES; k++)
		in_window += !r->limits.window_ns || now - tr->st.recent_ns[k] < r->limits.window_ns;
	json_object_object_add(o, "fires_in_window",
	                       json_object_new_int64(r->limits.window_ns ? in_window : tr->st.fires));
	int64_t left = 0;
	if (tr->st.fires && r->limits.cooldown_ns && tr->st.last_fire_ns + r->limits.cooldown_ns > now)
		left = tr->st.last_fire_ns + r->limits.cooldown_ns - now;
	json_object_object_add(o, "cooldown_left_s", secs(left));
	return o;
}

static struct json_object *proc_json(const struct proc *p, int64_t now)
{
	const struct target *t = p->tg;
	struct json_object *o = json_object_new_object(), *rules = json_object_new_array();
	struct passwd *pw = getpwuid(p->t.uid);
	char uid[32];
	int64_t at;
	size_t n;
	const struct target_rule *tr = target_rules(t, &n);

	snprintf(uid, sizeof(uid), "%u", (unsigned)p->t.uid);
	json_object_object_add(o, "pid", json_object_new_int(p->t.pid));
	json_object_object_add(o, "process", json_object_new_string(target_name(t)));
	json_object_object_add(o, "user", json_object_new_string(pw ? pw->pw_name : uid));
	json_object_object_add(o, "state", json_object_new_string(proc_state(p)));
	json_object_object_add(o, "runtime_version", json_object_new_string(target_info(t)->runtime_version));
	if (target_attached_ns(t))
		json_object_object_add(o, "attached_s", secs(now - target_attached_ns(t)));
	if (target_error(t)[0])
		json_object_object_add(o, "error", json_object_new_string(target_error(t)));
	if (target_retrying(t, &at))
		json_object_object_add(o, "retry_in_s", secs(at > now ? at - now : 0));
	const char *ticks = target_alloc_ticks_name(target_alloc_ticks(t));
	if (ticks)
		json_object_object_add(o, "alloc_ticks", json_object_new_string(ticks));
	json_object_object_add(o, "dumps", json_object_new_int64(target_dumps(t)));
	json_object_object_add(o, "history_bytes", json_object_new_int64((int64_t)target_history_bytes(t)));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(rules, rule_json(t, &tr[i], now));
	json_object_object_add(o, "rules", rules);
	return o;
}

char *guard_status_text(void *ctx)
{
	struct guard *g = ctx;
	int64_t now = loop_now();
	const struct file_rule *const *active;
	size_t n_rules = g->rs ? ruleset_active(g->rs, &active) : 0;
	struct json_object *o = json_object_new_object(), *procs = json_object_new_array();
	char *text;

	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "started_unix_us", json_object_new_int64(g->start_wall_ns / 1000));
	json_object_object_add(o, "uptime_s", secs(now - g->start_ns));
	json_object_object_add(o, "rules_dir", json_object_new_string(g->o->rules_dir));
	json_object_object_add(o, "dump_dir", json_object_new_string(g->o->target.dump_dir));
	json_object_object_add(o, "rules_in_force", json_object_new_int64((int64_t)n_rules));
	json_object_object_add(o, "dumps_taken", json_object_new_int64((int64_t)g->n_dumps));
	json_object_object_add(o, "dumps_failed", json_object_new_int64((int64_t)g->n_dumps_failed));
	json_object_object_add(o, "dumps_skipped", json_object_new_int64((int64_t)g->n_dumps_skipped));
	json_object_object_add(o, "uploads_done", json_object_new_int64((int64_t)g->n_uploads));
	json_object_object_add(o, "uploads_failed", json_object_new_int64((int64_t)g->n_uploads_failed));
	json_object_object_add(o, "uploads_queued", json_object_new_int64((int64_t)uploader_pending(g->uploads)));
	json_object_object_add(o, "hooks_done", json_object_new_int64((int64_t)g->n_hooks));
	json_object_object_add(o, "hooks_failed", json_object_new_int64((int64_t)g->n_hooks_failed));
	json_object_object_add(o, "hooks_running", json_object_new_int64((int64_t)hook_running(g->hooks)));
	json_object_object_add(o, "hooks_waiting", json_object_new_int64((int64_t)hook_waiting(g->hooks)));
	size_t history = 0;
	for (size_t i = 0; i < g->n_procs; i++) {
		json_object_array_add(procs, proc_json(g->procs[i], now));
		history += target_history_bytes(g->procs[i]->tg);
	}
	json_object_object_add(o, "history_bytes", json_object_new_int64((int64_t)history));
	json_object_object_add(o, "processes", procs);
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return text;
}
