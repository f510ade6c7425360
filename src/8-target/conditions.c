/* The rules' conditions as the attached process feeds them: which of their
 * metrics are known yet (journaled as "metrics-known" until all are), which
 * exception conditions the session counts, which meter instruments cannot
 * give what a condition asks, and what System.Diagnostics.Metrics says went
 * wrong. Said once each per attachment. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/log.h"
#include "dumpwatch/units.h"
#include "target_shared.h"

int target_scan_known(struct target *t, int64_t now, struct json_object *known, struct json_object *unknown, char *line,
                      size_t linelen)
{
	const struct metrics *m = t->session ? session_metrics(t->session) : NULL;
	int left = 0;
	size_t off = 0;

	if (linelen)
		line[0] = '\0';
	for (size_t i = 0; i < t->n_rules; i++) {
		struct target_rule *tr = &t->rules[i];
		for (uint32_t c = 0; c < tr->fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
			const struct metric_ref *ref = &tr->fr.rule.conds[c].metric;
			const char *basis = m ? metrics_basis(m, ref, now) : NULL;
			double v;
			int64_t sample;
			if (tr->known[c])
				continue;
			if (!basis || !metrics_read(m, ref, now, &v, &sample)) {
				left++;
				if (!json_object_object_get_ex(unknown, ref->name, NULL))
					json_object_object_add(unknown, ref->name, json_object_new_boolean(1));
				continue;
			}
			tr->known[c] = 1;
			if (json_object_object_get_ex(known, ref->name, NULL))
				continue;
			struct json_object *one = json_object_new_object();
			json_object_object_add(one, "value", report_num(v, -1));
			json_object_object_add(one, "basis", json_object_new_string(basis));
			json_object_object_add(known, ref->name, one);
			if (off < linelen) {
				char vb[32];
				int n = snprintf(line + off, linelen - off, "%s%s=%s (%s)", off ? " " : "", ref->name,
				                 units_format(v, ref->unit, vb, sizeof(vb)), basis);
				if (n > 0)
					off += (size_t)n;
			}
		}
	}
	return left;
}

struct json_object *target_names_of(struct json_object *set)
{
	struct json_object *a = json_object_new_array();
	json_object_object_foreach(set, k, v)
	{
		(void)v;
		json_object_array_add(a, json_object_new_string(k));
	}
	return a;
}

/* Whether a condition's metric became known since it was last looked at:
 * checked before anything is built, as a metric that never becomes known (a
 * counter its process does not publish) is looked at after every event. */
static int any_newly_known(const struct target *t, int64_t now)
{
	const struct metrics *m = session_metrics(t->session);
	double v;
	int64_t sample;

	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++)
			if (!t->rules[i].known[c] &&
			    metrics_read(m, &t->rules[i].fr.rule.conds[c].metric, now, &v, &sample))
				return 1;
	return 0;
}

/* Journals the metrics of the rules that became known since the last call
 * ("metrics-known": each with its value and how it is known), until all are. */
void target_note_known(struct target *t, int64_t now)
{
	struct json_object *known, *unknown;
	char line[512];
	int left;

	if (t->all_known || !t->session || !any_newly_known(t, now))
		return;
	known = json_object_new_object();
	unknown = json_object_new_object();
	left = target_scan_known(t, now, known, unknown, line, sizeof(line));
	if (json_object_object_length(known) > 0) {
		struct json_object *rec = rec_new(t);
		double after = (double)(now - t->attached_ns) / 1e6;
		json_object_object_add(rec, "metrics", json_object_get(known));
		json_object_object_add(rec, "unknown", target_names_of(unknown));
		json_object_object_add(rec, "after_attach_ms", report_num(after, 3));
		journal_write(t->cfg->journal, "metrics-known", rec);
		log_info("pid %d (%s): known %.0f ms after the attach: %s%s", (int)t->dt.pid, t->name, after, line,
		         left ? "; others still unknown" : "");
	}
	json_object_put(known);
	json_object_put(unknown);
	t->all_known = left == 0;
}

/* Has the session's metrics count the exceptions of every exception
 * condition of the rules, and of no other (the rules changed): a condition
 * that stays keeps its count. */
void target_watch_exceptions(struct target *t)
{
	const struct metric_ref *keep[METRICS_EXC_FILTERS_MAX];
	size_t n = 0;

	if (!t->session)
		return;
	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++)
			if (t->rules[i].fr.rule.conds[c].metric.id == M_EXCEPTIONS && n < METRICS_EXC_FILTERS_MAX)
				keep[n++] = &t->rules[i].fr.rule.conds[c].metric;
	metrics_unwatch_exceptions(session_metrics(t->session), keep, n);
	for (size_t i = 0; i < t->n_rules; i++)
		for (uint32_t c = 0; c < t->rules[i].fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
			const struct metric_ref *ref = &t->rules[i].fr.rule.conds[c].metric;
			if (ref->id == M_EXCEPTIONS && metrics_watch_exceptions(session_metrics(t->session), ref) < 0)
				log_warn("pid %d (%s): rule %s: \"%s\" is not counted: one process counts at most %d "
				         "different exception conditions",
				         (int)t->dt.pid, t->name, t->rules[i].fr.rule.name, ref->name,
				         METRICS_EXC_FILTERS_MAX);
		}
}

/* What System.Diagnostics.Metrics says went wrong, once per kind and
 * attachment: another tool's session that excludes or disagrees with
 * dumpwatch's, a limit reached, a gauge's callback that threw. */
void target_meter_error(struct target *t, const struct ev_meter *m)
{
	static const struct {
		const char *event, *means;
	} kinds[] = {
	    {"MultipleSessionsNotSupportedError",
	     "another tool holds the process's only metrics session (a runtime before .NET 8, or a tool that does not "
	     "share it): meter rules get no values in this attachment"},
	    {"MultipleSessionsConfiguredIncorrectlyError",
	     "another tool runs the process's shared metrics session with other settings than dumpwatch's (its "
	     "interval is --counter-interval): meter rules get no values in this attachment"},
	    {"TimeSeriesLimitReached",
	     "the shared session's 1000 time series are taken: new tag sets are not published"},
	    {"HistogramLimitReached", "the shared session's 10 histograms are taken: more are not published"},
	    {"ObservableInstrumentCallbackError", "a gauge's or observable counter's callback threw"},
	    {"Error", "the metrics session failed"},
	};
	char mine[32];

	/* Another tool's refusal is said to it, not to dumpwatch: a tool that
	 * cannot join the shared session dumpwatch runs (the running one is
	 * "SHARED"), one whose settings disagree (not this identifier). */
	snprintf(mine, sizeof(mine), "dumpwatch-%d-", (int)getpid());
	if ((strncmp(m->error, "MultipleSessionsNotSupportedError", 33) == 0 && strcmp(m->session, "SHARED") == 0) ||
	    (strncmp(m->error, "MultipleSessionsConfiguredIncorrectlyError", 42) == 0 &&
	     strncmp(m->session, mine, strlen(mine)) != 0))
		return;
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t n = strlen(kinds[k].event);
		if (strncmp(m->error, kinds[k].event, n) != 0 || (m->error[n] && m->error[n] != ':'))
			continue;
		if (!(t->meter_said & (1u << k)))
			log_warn("pid %d (%s): System.Diagnostics.Metrics: %s; it says: %s", (int)t->dt.pid, t->name,
			         kinds[k].means, m->error);
		t->meter_said |= 1u << k;
		return;
	}
}

/* A meter condition whose instrument, now seen, cannot give what it asks
 * (a percentile of a counter, seconds of an instrument in bytes): said once.
 * Returns whether any rule reads this instrument (else its values need no
 * evaluation: another tool's, in the shared session, or an instrument of a
 * watched meter no rule names). */
int target_meter_fit(struct target *t, const struct ev_meter *m)
{
	int used = 0;

	for (size_t i = 0; i < t->n_rules; i++) {
		struct target_rule *tr = &t->rules[i];
		for (uint32_t c = 0; c < tr->fr.rule.n_conds; c++) {
			const struct rule_cond *rc = &tr->fr.rule.conds[c];
			const struct meters *ms = metrics_meters(session_metrics(t->session));
			const char *what;
			if (rc->metric.id != M_METER || strcmp(rc->metric.provider, m->meter) != 0 ||
			    strcasecmp(rc->metric.counter, m->instrument) != 0)
				continue;
			used = 1;
			if (tr->meter_warned[c])
				continue;
			if (meters_stat_mismatch(ms, &rc->metric, &what)) {
				log_warn("pid %d (%s): rule %s: %s/%s is a %s, which has no %s: \"%s\" never holds",
				         (int)t->dt.pid, t->name, tr->fr.rule.name, m->meter, m->instrument, what,
				         catalog_meter_stat_name(rc->metric.stat), rc->text);
				tr->meter_warned[c] = 1;
			} else if (meters_unit_mismatch(ms, &rc->metric, &what)) {
				log_warn("pid %d (%s): rule %s: %s/%s is measured in \"%s\", which is not %s: \"%s\" "
				         "never holds; write the threshold as a plain number in its unit",
				         (int)t->dt.pid, t->name, tr->fr.rule.name, m->meter, m->instrument, what,
				         rc->metric.unit == UNIT_MS              ? "a duration"
				         : rc->metric.unit == UNIT_BYTES         ? "a size"
				         : rc->metric.unit == UNIT_BYTES_PER_SEC ? "bytes per second"
				                                                 : "a percentage or a ratio",
				         rc->text);
				tr->meter_warned[c] = 1;
			}
		}
	}
	return used;
}
