/* Journal records and -v lines shared by the watcher and the guard; see report.h. */
#include "dumpwatch/report.h"

#include <string.h>

#include "dumpwatch/log.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

#define REPORT_DESCRIBE_EVERY_NS 1000000000LL

struct json_object *report_num(double v, int decimals)
{
	char buf[64];
	if (decimals < 0)
		snprintf(buf, sizeof(buf), "%.15g", v);
	else
		snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

int report_fire_exception(const struct rule *r, const struct metrics *m, struct metrics_exception *x,
                          uint32_t *ret_cond)
{
	for (uint32_t c = 0; c < r->n_conds && c < RULE_MAX_CONDS; c++)
		if (r->conds[c].metric.id == M_EXCEPTIONS) {
			*ret_cond = c;
			return metrics_exception_last(m, &r->conds[c].metric, x);
		}
	return 0;
}

void report_fire(struct json_object *rec, const struct rule *r, const struct metrics *m, int64_t now, int64_t read_ns,
                 char *desc, size_t desclen)
{
	struct json_object *conds = json_object_new_array(), *vals = json_object_new_object(), *floors = NULL;
	int64_t newest_sample = 0;
	size_t off = 0;

	if (desclen)
		desc[0] = '\0';
	for (uint32_t c = 0; c < r->n_conds; c++) {
		double v;
		int64_t sample = 0;
		char vb[32];
		int floor = 0;
		json_object_array_add(conds, json_object_new_string(r->conds[c].text));
		if (!metrics_read(m, &r->conds[c].metric, now, &v, &sample)) {
			floor = 1;
			if (!metrics_read_floor(m, &r->conds[c].metric, &v, &sample))
				continue;
			/* Not known yet, but at least this (metrics.h). */
			if (!floors)
				floors = json_object_new_array();
			json_object_array_add(floors, json_object_new_string(r->conds[c].metric.name));
		}
		json_object_object_add(vals, r->conds[c].metric.name, report_num(v, -1));
		if (sample > newest_sample)
			newest_sample = sample;
		if (off < desclen) {
			int n = snprintf(desc + off, desclen - off, "%s%s%s%s", off ? " " : "", r->conds[c].metric.name,
			                 floor ? ">=" : "=", units_format(v, r->conds[c].metric.unit, vb, sizeof(vb)));
			if (n > 0)
				off += (size_t)n;
		}
	}
	/* The exception that fired an exception condition: the program's own
	 * text, cut for the log line, which log.c escapes whole (JSON escapes
	 * it in the journal). */
	struct metrics_exception x;
	uint32_t xc;
	if (report_fire_exception(r, m, &x, &xc)) {
		char hr[16];
		struct json_object *xo = json_object_new_object();
		snprintf(hr, sizeof(hr), "0x%08x", (unsigned)x.hresult);
		json_object_object_add(xo, "type", json_object_new_string(x.type));
		json_object_object_add(xo, "message", json_object_new_string(x.message));
		json_object_object_add(xo, "hresult", json_object_new_string(hr));
		json_object_object_add(xo, "inner", json_object_new_boolean(x.flags & 0x1));
		json_object_object_add(xo, "thrown_before_fire_ms", report_num((double)(now - x.t_ns) / 1e6, 3));
		json_object_object_add(rec, "exception", xo);
		if (off < desclen) {
			int n = snprintf(desc + off, desclen - off, " (%.100s: \"%.200s\")", x.type, x.message);
			if (n > 0)
				off += (size_t)n;
		}
	}
	json_object_object_add(rec, "rule", json_object_new_string(r->name));
	json_object_object_add(rec, "conditions", conds);
	json_object_object_add(rec, "metrics", vals);
	if (floors)
		json_object_object_add(rec, "at_least", floors);
	/* How long after the event that made the rule true it fired: the
	 * transport's flush delay plus dumpwatch's own. */
	if (newest_sample > 0 && newest_sample <= now)
		json_object_object_add(rec, "detect_delay_ms", report_num((double)(now - newest_sample) / 1e6, 3));
	/* dumpwatch's own share: from reading the bytes to this decision. */
	if (read_ns > 0)
		json_object_object_add(rec, "read_to_fire_ms", report_num((double)(now - read_ns) / 1e6, 3));
}

void report_dump(struct json_object *rec, const struct dump_result *res, enum dump_type type)
{
	json_object_object_add(rec, "path", json_object_new_string(res->path));
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)res->bytes));
	json_object_object_add(rec, "duration_ms", report_num(res->duration_ms, 1));
	json_object_object_add(rec, "via", json_object_new_string(res->via));
	json_object_object_add(rec, "type", json_object_new_string(rule_dump_type_name(type)));
}

void report_verbose_event(FILE *out, struct report_verbose *v, const char *prefix, const struct metrics *m,
                          const struct ev_record *r, int64_t t_ns)
{
	double rel = (double)(t_ns - v->start_ns) / 1e9;
	char b1[32], b2[32], b3[32], b4[32], b5[32];

	switch (r->type) {
	case EV_COUNTER: {
		/* The runtime names its counters: escaped, one line each. */
		char ep[4 * EV_NAME_MAX + 1], en[4 * EV_NAME_MAX + 1], eu[4 * EV_UNITS_MAX + 1];
		fprintf(out, "%8.3fs %s%s/%s = %g %s\n", rel, prefix,
		        text_escape_str(r->u.counter.provider, ep, sizeof(ep)),
		        text_escape_str(r->u.counter.name, en, sizeof(en)), r->u.counter.value,
		        text_escape_str(r->u.counter.display_units, eu, sizeof(eu)));
		break;
	}
	case EV_GC_END:
		/* GCHeapStats follows the GCEnd of the GC it describes. */
		v->last_gc_index = r->u.gc_end.count;
		v->last_gc_gen = r->u.gc_end.depth;
		return;
	case EV_GC_HEAP_STATS: {
		const struct ev_gc_heap_stats *h = &r->u.heap_stats;
		fprintf(out, "%8.3fs %sgc #%u gen%u end: gen0=%s gen1=%s gen2=%s loh=%s poh=%s\n", rel, prefix,
		        v->last_gc_index, v->last_gc_gen, units_format((double)h->size[0], UNIT_BYTES, b1, sizeof(b1)),
		        units_format((double)h->size[1], UNIT_BYTES, b2, sizeof(b2)),
		        units_format((double)h->size[2], UNIT_BYTES, b3, sizeof(b3)),
		        units_format((double)h->size[3], UNIT_BYTES, b4, sizeof(b4)),
		        units_format((double)h->size[4], UNIT_BYTES, b5, sizeof(b5)));
		break;
	}
	case EV_GC_RESTART_EE_END: {
		struct metric_ref ref = {.id = M_GC_PAUSE, .scale = 1};
		double val;
		int64_t s;
		if (!metrics_read(m, &ref, t_ns, &val, &s) || s != t_ns)
			return;
		fprintf(out, "%8.3fs %sgc pause %.3f ms\n", rel, prefix, val);
		break;
	}
	case EV_GC_ALLOC_TICK: {
		char line[512];
		if (t_ns - v->last_describe_ns < REPORT_DESCRIBE_EVERY_NS)
			return;
		v->last_describe_ns = t_ns;
		metrics_describe(m, t_ns, line, sizeof(line));
		fprintf(out, "%8.3fs %s%s\n", rel, prefix, line);
		break;
	}
	default:
		return;
	}
	fflush(out);
}

void report_ruleset(struct journal *journal, const struct ruleset_change *c)
{
	struct json_object *rec = json_object_new_object();

	switch (c->kind) {
	case RULESET_LOADED: {
		struct json_object *names = json_object_new_array();
		for (size_t i = 0; i < c->n_rules; i++)
			json_object_array_add(names, json_object_new_string(c->rules[i].rule.name));
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		json_object_object_add(rec, "rules", names);
		journal_write(journal, "rules-loaded", rec);
		log_info("rules: loaded %s (%zu rule%s)", c->file, c->n_rules, c->n_rules == 1 ? "" : "s");
		break;
	}
	case RULESET_REJECTED: {
		struct json_object *errs = json_object_new_array();
		for (size_t i = 0; i < c->n_diags; i++) {
			json_object_array_add(errs, json_object_new_string(c->diags[i]));
			log_error("%s", c->diags[i]);
		}
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		json_object_object_add(rec, "errors", errs);
		json_object_object_add(rec, "kept_last_good", json_object_new_boolean(c->kept_last_good));
		if (c->refused) {
			json_object_object_add(rec, "refused", json_object_new_boolean(1));
			json_object_object_add(rec, "withdrawn_rules",
			                       json_object_new_int64((int64_t)c->withdrawn_rules));
		}
		journal_write(journal, "rules-rejected", rec);
		if (c->refused)
			break; /* its one line, "FILE: refused: REASON", is said */
		if (c->kept_last_good)
			log_warn("rules: %s rejected; its last good version (%zu rule%s) stays in force", c->file,
			         c->kept_rules, c->kept_rules == 1 ? "" : "s");
		else
			log_warn("rules: %s rejected, ignoring it until it is fixed", c->file);
		break;
	}
	case RULESET_REMOVED:
		json_object_object_add(rec, "file", json_object_new_string(c->file));
		journal_write(journal, "rules-removed", rec);
		log_info("rules: %s removed; its rules are withdrawn", c->file);
		break;
	case RULESET_DIR_GONE:
		json_object_object_add(rec, "dir", json_object_new_string(c->dir));
		journal_write(journal, "rules-dir-gone", rec);
		log_warn("rules: directory %s is missing; no rules in force until it appears", c->dir);
		break;
	case RULESET_DIR_BACK:
		json_object_object_add(rec, "dir", json_object_new_string(c->dir));
		journal_write(journal, "rules-dir-back", rec);
		log_info("rules: directory %s is back", c->dir);
		break;
	default:
		json_object_put(rec);
		break;
	}
}
