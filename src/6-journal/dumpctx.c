/* The context of a dump as JSON; see dumpctx.h. Times in the history and the
 * GC records are milliseconds relative to the fire (negative before it), so
 * a reader sees at once how long before the dump something happened; the
 * fire itself is given in wall-clock milliseconds. */
#include "dumpwatch/dumpctx.h"

#include <math.h>

#include "dumpwatch/defaults.h"
#include "dumpwatch/report.h"
#include "dumpwatch/units.h"

const char *dumpctx_outcome_name(enum dumpctx_outcome o)
{
	switch (o) {
	case DUMPCTX_DUMP:
		return "dump";
	case DUMPCTX_SKIPPED:
		return "skipped";
	case DUMPCTX_FAILED:
		return "failed";
	}
	return "failed";
}

static const char *op_name(enum cond_op op)
{
	switch (op) {
	case COND_GT:
		return ">";
	case COND_GE:
		return ">=";
	case COND_LT:
		return "<";
	case COND_LE:
		return "<=";
	}
	return "?";
}

static struct json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* A value as stored in the history: 7 significant digits is all a float has. */
static struct json_object *val7(double v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%.7g", v);
	return json_object_new_double_s(v, buf);
}

static struct json_object *unix_ms(int64_t ns)
{
	return ns ? json_object_new_int64(ns / 1000000) : NULL;
}

static struct json_object *rel_ms(int64_t t_ns, int64_t fire_ns)
{
	return report_num((double)(t_ns - fire_ns) / 1e6, 1);
}

static struct json_object *rule_json(const struct dumpctx_input *in)
{
	const struct file_rule *fr = in->rule;
	struct json_object *o = json_object_new_object(), *conds = json_object_new_array();

	json_object_object_add(o, DUMPCTX_KEY_RULE_NAME, json_object_new_string(fr->rule.name));
	json_object_object_add(o, DUMPCTX_KEY_RULE_DESCRIPTION, json_object_new_string(fr->description));
	json_object_object_add(o, DUMPCTX_KEY_RULE_FILE, str_or_null(in->rule_file));
	json_object_object_add(o, DUMPCTX_KEY_RULE_LINE,
	                       in->rule_file && fr->line > 0 ? json_object_new_int(fr->line) : NULL);
	json_object_object_add(o, DUMPCTX_KEY_RULE_DUMP_TYPE,
	                       json_object_new_string(rule_dump_type_name(fr->rule.dump_type)));
	for (uint32_t i = 0; i < fr->rule.n_conds && i < RULE_MAX_CONDS; i++) {
		const struct rule_cond *c = &fr->rule.conds[i];
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, DUMPCTX_KEY_COND_TEXT, json_object_new_string(c->text));
		json_object_object_add(j, DUMPCTX_KEY_COND_METRIC, json_object_new_string(c->metric.name));
		json_object_object_add(j, DUMPCTX_KEY_COND_OP, json_object_new_string(op_name(c->op)));
		json_object_object_add(j, DUMPCTX_KEY_COND_THRESHOLD, report_num(c->threshold, -1));
		json_object_object_add(j, DUMPCTX_KEY_COND_UNIT, json_object_new_string(units_name(c->metric.unit)));
		json_object_object_add(j, DUMPCTX_KEY_COND_FOR_MS, json_object_new_int64(c->for_ns / 1000000));
		json_object_object_add(j, DUMPCTX_KEY_COND_VALUE, in->read[i] ? report_num(in->value[i], -1) : NULL);
		json_object_object_add(j, DUMPCTX_KEY_COND_AT_LEAST, json_object_new_boolean(in->read[i] == 2));
		if (in->exc_set && in->exc_cond == i) {
			struct json_object *x = json_object_new_object();
			char hr[16];
			snprintf(hr, sizeof(hr), "0x%08x", (unsigned)in->exc_hresult);
			json_object_object_add(x, DUMPCTX_KEY_EXC_TYPE, json_object_new_string(in->exc_type));
			json_object_object_add(x, DUMPCTX_KEY_EXC_MESSAGE, json_object_new_string(in->exc_message));
			json_object_object_add(x, DUMPCTX_KEY_EXC_HRESULT, json_object_new_string(hr));
			json_object_object_add(x, DUMPCTX_KEY_EXC_T_MS, rel_ms(in->exc_ns, in->fire_ns));
			json_object_object_add(j, DUMPCTX_KEY_COND_EXCEPTION, x);
		}
		json_object_array_add(conds, j);
	}
	json_object_object_add(o, DUMPCTX_KEY_RULE_CONDITIONS, conds);
	return o;
}

static struct json_object *dump_json(const struct dumpctx_input *in)
{
	struct json_object *o = json_object_new_object();
	char path[PATH_MAX + NAME_MAX + 2];

	snprintf(path, sizeof(path), "%s/%s", in->dump_dir, in->dump_name);
	json_object_object_add(o, DUMPCTX_KEY_DUMP_FILE, json_object_new_string(in->dump_name));
	json_object_object_add(o, DUMPCTX_KEY_DUMP_PATH, json_object_new_string(path));
	json_object_object_add(o, DUMPCTX_KEY_DUMP_BYTES,
	                       in->dump_bytes >= 0 ? json_object_new_int64(in->dump_bytes) : NULL);
	json_object_object_add(o, DUMPCTX_KEY_DUMP_STARTED_UNIX_MS, unix_ms(in->dump_start_unix_ns));
	json_object_object_add(o, DUMPCTX_KEY_DUMP_ENDED_UNIX_MS, unix_ms(in->dump_end_unix_ns));
	json_object_object_add(o, DUMPCTX_KEY_DUMP_DURATION_MS,
	                       in->dump_duration_ms >= 0 ? report_num(in->dump_duration_ms, 1) : NULL);
	json_object_object_add(o, DUMPCTX_KEY_DUMP_VIA, str_or_null(in->via));
	return o;
}

static struct json_object *process_json(const struct dumpctx_input *in)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, DUMPCTX_KEY_PROC_PID, json_object_new_int(in->pid));
	json_object_object_add(o, DUMPCTX_KEY_PROC_NAME,
	                       json_object_new_string(in->process_name ? in->process_name : ""));
	json_object_object_add(o, DUMPCTX_KEY_PROC_CMDLINE, json_object_new_string(in->cmdline ? in->cmdline : ""));
	json_object_object_add(o, DUMPCTX_KEY_PROC_UID, json_object_new_int64((int64_t)in->uid));
	json_object_object_add(o, DUMPCTX_KEY_PROC_USER, str_or_null(in->user));
	json_object_object_add(o, DUMPCTX_KEY_PROC_RUNTIME_VERSION,
	                       json_object_new_string(in->runtime_version ? in->runtime_version : ""));
	return o;
}

static struct json_object *history_json(const struct dumpctx_input *in)
{
	struct json_object *o = json_object_new_object(), *series = json_object_new_array();
	const struct history *h = in->history;

	json_object_object_add(o, DUMPCTX_KEY_HIST_WINDOW_MS,
	                       json_object_new_int64(h ? history_window_ns(h) / 1000000 : 0));
	json_object_object_add(o, DUMPCTX_KEY_HIST_SLOT_MS,
	                       json_object_new_int64(h ? history_slot_ns(h) / 1000000 : 0));
	for (size_t i = 0; h && i < history_n_series(h); i++) {
		enum unit_kind unit;
		const char *key = history_series_key(h, i, &unit);
		size_t n = history_count(h, i);
		if (n == 0)
			continue;
		struct json_object *s = json_object_new_object(), *pts = json_object_new_array_ext((int)n);
		json_object_object_add(s, DUMPCTX_KEY_SERIES_METRIC, json_object_new_string(key));
		json_object_object_add(s, DUMPCTX_KEY_SERIES_UNIT, json_object_new_string(units_name(unit)));
		for (size_t k = 0; k < n; k++) {
			struct history_point p;
			if (history_get(h, i, k, &p) < 0)
				break;
			struct json_object *pt = json_object_new_array_ext(4);
			json_object_array_add(pt, report_num(round((double)(p.t_ns - in->fire_ns) / 1e6), 0));
			json_object_array_add(pt, val7(p.last));
			json_object_array_add(pt, val7(p.min));
			json_object_array_add(pt, val7(p.max));
			json_object_array_add(pts, pt);
		}
		json_object_object_add(s, DUMPCTX_KEY_SERIES_POINTS, pts);
		json_object_array_add(series, s);
	}
	json_object_object_add(o, DUMPCTX_KEY_HIST_SERIES, series);
	return o;
}

static struct json_object *gcs_json(const struct dumpctx_input *in)
{
	struct json_object *a = json_object_new_array();
	static const char *const gens[5] = {DUMPCTX_KEY_SIZE_GEN0, DUMPCTX_KEY_SIZE_GEN1, DUMPCTX_KEY_SIZE_GEN2,
	                                    DUMPCTX_KEY_SIZE_LOH, DUMPCTX_KEY_SIZE_POH};

	for (size_t i = 0; i < in->n_gcs; i++) {
		const struct gc_record *g = &in->gcs[i];
		struct json_object *j = json_object_new_object(), *sz = json_object_new_object();
		json_object_object_add(j, DUMPCTX_KEY_GC_INDEX, json_object_new_int64(g->index));
		json_object_object_add(j, DUMPCTX_KEY_GC_GENERATION, json_object_new_int64(g->generation));
		json_object_object_add(j, DUMPCTX_KEY_GC_REASON, json_object_new_string(gcrec_reason_name(g->reason)));
		json_object_object_add(j, DUMPCTX_KEY_GC_TYPE, json_object_new_string(gcrec_type_name(g->type)));
		json_object_object_add(j, DUMPCTX_KEY_GC_START_MS,
		                       g->start_ns ? rel_ms(g->start_ns, in->fire_ns) : NULL);
		json_object_object_add(j, DUMPCTX_KEY_GC_END_MS, g->end_ns ? rel_ms(g->end_ns, in->fire_ns) : NULL);
		json_object_object_add(j, DUMPCTX_KEY_GC_PAUSE_MS,
		                       g->pause_ms >= 0 ? report_num(g->pause_ms, 3) : NULL);
		for (int k = 0; k < 5; k++)
			json_object_object_add(sz, gens[k], json_object_new_int64((int64_t)g->size[k]));
		json_object_object_add(j, DUMPCTX_KEY_GC_SIZES, sz);
		json_object_object_add(j, DUMPCTX_KEY_GC_COMPLETE, json_object_new_boolean(g->complete));
		json_object_array_add(a, j);
	}
	return a;
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* The types that allocated most in the window up to the newest tick, which
 * may be after the fire: the ticks of the moments before it are still on
 * their way when it fires, and a dump stops the process for its length. */
static struct json_object *allocs_json(const struct dumpctx_input *in)
{
	struct alloctypes_entry top[DUMPCTX_ALLOC_TYPES];
	struct alloctypes_summary s;
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	size_t n = alloctypes_top(in->allocs, 0, top, DUMPCTX_ALLOC_TYPES, &s);
	uint64_t listed = 0;

	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_WINDOW_MS,
	                       json_object_new_int64(alloctypes_window_ns(in->allocs) / 1000000));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_SINCE_MS, s.until_ns ? rel_ms(s.since_ns, in->fire_ns) : NULL);
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_UNTIL_MS, s.until_ns ? rel_ms(s.until_ns, in->fire_ns) : NULL);
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_BYTES, u64(s.bytes));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_TICKS, u64(s.ticks));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_TYPE_COUNT, u64(s.types));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_TYPES_MAX, json_object_new_int(ALLOCTYPES_MAX));
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();
		json_object_object_add(e, DUMPCTX_KEY_ATYPE_TYPE, json_object_new_string(top[i].type));
		json_object_object_add(e, DUMPCTX_KEY_ATYPE_KIND,
		                       json_object_new_string(alloctypes_kind_name(top[i].kind)));
		json_object_object_add(e, DUMPCTX_KEY_ATYPE_BYTES, u64(top[i].bytes));
		json_object_object_add(e, DUMPCTX_KEY_ATYPE_SHARE,
		                       report_num(s.bytes ? (double)top[i].bytes / (double)s.bytes : 0, 4));
		json_object_object_add(e, DUMPCTX_KEY_ATYPE_TICKS, u64(top[i].ticks));
		json_object_array_add(a, e);
		listed += top[i].bytes;
	}
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_OTHER_BYTES, u64(s.bytes >= listed ? s.bytes - listed : 0));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_UNTRACKED_BYTES, u64(s.other_bytes));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS_TYPES, a);
	return o;
}

struct json_object *dumpctx_build(const struct dumpctx_input *in)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, DUMPCTX_KEY_CONTEXT, json_object_new_int(DUMPCTX_VERSION));
	json_object_object_add(o, DUMPCTX_KEY_VERSION, json_object_new_string(DW_VERSION));
	json_object_object_add(o, DUMPCTX_KEY_OUTCOME, json_object_new_string(dumpctx_outcome_name(in->outcome)));
	if (in->outcome != DUMPCTX_DUMP)
		json_object_object_add(o, DUMPCTX_KEY_ERROR, json_object_new_string(in->error ? in->error : ""));
	json_object_object_add(o, DUMPCTX_KEY_FIRED_UNIX_MS, json_object_new_int64(in->fire_unix_ns / 1000000));
	json_object_object_add(o, DUMPCTX_KEY_RULE, rule_json(in));
	json_object_object_add(o, DUMPCTX_KEY_DUMP, dump_json(in));
	json_object_object_add(o, DUMPCTX_KEY_PROCESS, process_json(in));
	json_object_object_add(o, DUMPCTX_KEY_HISTORY, history_json(in));
	json_object_object_add(o, DUMPCTX_KEY_GCS, gcs_json(in));
	json_object_object_add(o, DUMPCTX_KEY_ALLOCS, in->allocs ? allocs_json(in) : NULL);
	if (in->heap)
		json_object_object_add(o, DUMPCTX_KEY_HEAP, json_object_get(in->heap));
	if (in->heap_error)
		json_object_object_add(o, DUMPCTX_KEY_HEAP_ERROR, json_object_new_string(in->heap_error));
	return o;
}
