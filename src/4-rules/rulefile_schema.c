/* The rule-file format, validated: the JSON objects json-c parsed, walked
 * side by side with their positions (jsonpos.h), into struct file_rule, each
 * problem a diagnostic at the key or value it is about (rulefile_diag.c).
 *
 * Format: one rule object, or {"rules": [rule, ...]}; either may also carry a
 * "$schema" string for editors (ignored). A rule:
 *
 *   name         required; 1-63 characters of [A-Za-z0-9._-]; unique in a file
 *   description  free text (at most 511 bytes); default ""
 *   process      {name, cmdline, user, pid}: every filter given must match;
 *                name and cmdline are globs (fnmatch), user a user name or a
 *                uid, pid a process id; default: any .NET process
 *   when         required; a condition or an array of 1-8 of them, all of which
 *                must hold. A condition is a string in the --when grammar
 *                ("loh-size > 500MB for 10s") or an object
 *                {"metric": M, "above"|"below": VALUE, "for": DURATION}
 *                with exactly one of above/below; "for" defaults to 0 (at
 *                once). VALUE is a string with its unit ("500MB", "90%"); a
 *                JSON number is accepted only for a metric without a unit.
 *   dump         {type, dir, name, heap-summary}: type
 *                normal|withheap|triage|full|gcdump (default withheap);
 *                heap-summary true or false (default false); dir an absolute directory (default "": the
 *                daemon's; that it lies inside a directory the daemon allows
 *                is rulefile_check_dump_dirs's part); name a file name
 *                template using only {name} {pid} {rule} {time} {container}
 *                {pod} (default "":
 *                the daemon's)
 *   limits       {max-dumps, window, cooldown}: max-dumps a non-negative
 *                integer (default 1; 0 = no limit) per process within window
 *                (default 0 = the lifetime of the process); cooldown the least
 *                time between two dumps of one process (default 10m); the
 *                defaults are named, with their reasons, in defaults.h
 *   enabled      true or false (default true)
 *
 * Unknown keys at any level are errors (with the nearest allowed key
 * suggested), and so is a key given twice in one object. A file that parses
 * but does not look like a rule file (rf_is_rule_file; see rulefile.h) gets one
 * diagnostic instead, which quotes nothing of it (nor do syntax errors). Bounds: a file over
 * RULEFILE_SIZE_MAX bytes, nesting deeper than RULEFILE_DEPTH_MAX, or more than
 * RULEFILE_RULES_MAX rules is refused. */
#include "rulefile_shared.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dumpwatch/catalog.h"
#include "dumpwatch/defaults.h"
#include "dumpwatch/text.h"
#include "dumpwatch/units.h"

/* ---- objects ---------------------------------------------------------- */

void rf_collect(struct rf_ctx *c, int node, struct json_object *obj, const char *what, const char *const *keys,
                struct rf_field *out)
{
	char key[JSONPOS_KEY_MAX], q[80], list[256];
	size_t nkeys = 0;

	while (keys[nkeys])
		nkeys++;
	for (size_t k = 0; k < nkeys; k++) {
		out[k].node = -1;
		out[k].v = NULL;
	}
	for (int ch = c->jp.nodes[node].first_child; ch >= 0; ch = c->jp.nodes[ch].next_sibling) {
		size_t k;
		int fits = jsonpos_decode_string(&c->jp, c->jp.nodes[ch].key_off, key, sizeof(key)) == 0;

		for (k = 0; fits && k < nkeys; k++)
			if (strcmp(key, keys[k]) == 0)
				break;
		if (fits && k < nkeys) {
			if (out[k].node >= 0) {
				int line, col;
				if (!rf_diag_wanted(c, K_DUP_KEY)) {
					c->total++;
					continue;
				}
				jsonpos_line_col(&c->jp, rf_key_off(c, out[k].node), &line, &col);
				rf_diag(c, K_DUP_KEY, rf_key_off(c, ch),
				        "key \"%s\" appears twice in %s (first at %d:%d)", keys[k], what, line, col);
				continue;
			}
			out[k].node = ch;
			json_object_object_get_ex(obj, keys[k], &out[k].v);
			continue;
		}
		/* Unknown: suggest the nearest allowed key when it is close. */
		int bi = fits ? rf_near_key(key, keys, 0) : -1;
		if (bi >= 0) {
			rf_diag(c, K_UNKNOWN_KEY, rf_key_off(c, ch), "unknown key \"%s\" in %s; did you mean \"%s\"?",
			        rf_shown(key, q, sizeof(q)), what, keys[bi]);
		} else {
			list[0] = '\0';
			for (k = 0; k < nkeys; k++)
				if (keys[k][0] != '$')
					snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					         k ? ", " : "", keys[k]);
			rf_diag(c, K_UNKNOWN_KEY, rf_key_off(c, ch), "unknown key \"%s\" in %s; the keys are %s",
			        rf_shown(key, q, sizeof(q)), what, list);
		}
	}
}

/* A string member into out (outlen bytes). Returns 0, or -1 after a diagnostic. */
static int get_string(struct rf_ctx *c, const struct rf_field *f, const char *key, char *out, size_t outlen)
{
	const char *s;

	if (!json_object_is_type(f->v, json_type_string)) {
		rf_diag(c, K_TYPE, rf_val_off(c, f->node), "\"%s\" must be a string", key);
		return -1;
	}
	s = json_object_get_string(f->v);
	if ((size_t)json_object_get_string_len(f->v) >= outlen || strlen(s) >= outlen) {
		rf_diag(c, K_TYPE, rf_val_off(c, f->node), "\"%s\" is too long (at most %zu bytes)", key, outlen - 1);
		return -1;
	}
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int is_object(struct rf_ctx *c, const struct rf_field *f, const char *key)
{
	if (json_object_is_type(f->v, json_type_object))
		return 1;
	rf_diag(c, K_TYPE, rf_val_off(c, f->node), "\"%s\" must be an object", key);
	return 0;
}

static int get_duration(struct rf_ctx *c, const struct rf_field *f, const char *key, const char *example, int64_t *out)
{
	char s[RULE_TEXT_MAX], err[256];

	if (!json_object_is_type(f->v, json_type_string)) {
		rf_diag(c, K_TYPE, rf_val_off(c, f->node), "\"%s\" must be a duration string such as \"%s\"", key,
		        example);
		return -1;
	}
	if (get_string(c, f, key, s, sizeof(s)) < 0)
		return -1;
	if (units_parse_duration(s, out, err, sizeof(err)) < 0) {
		rf_diag(c, K_DURATION, rf_val_off(c, f->node), "\"%s\": %s", key, err);
		return -1;
	}
	return 0;
}

/* ---- conditions ------------------------------------------------------- */

static const char *const cond_keys[] = {"metric", "above", "below", "for", NULL};
enum { CK_METRIC, CK_ABOVE, CK_BELOW, CK_FOR };

static int parse_cond_object(struct rf_ctx *c, int node, struct json_object *obj, struct rule_cond *out)
{
	struct rf_field f[4];
	struct rule_cond rc;
	char name[CATALOG_NAME_MAX], err[RULEFILE_MSG_MAX], value[RULE_TEXT_MAX], forv[RULE_TEXT_MAX] = "";
	const struct rf_field *vf;
	const char *vkey;
	size_t before = c->total;

	memset(&rc, 0, sizeof(rc));
	rf_collect(c, node, obj, "condition", cond_keys, f);
	if (f[CK_METRIC].node < 0) {
		rf_diag(
		    c, K_MISSING, rf_val_off(c, node),
		    "condition has no \"metric\"; write one such as {\"metric\": \"loh-size\", \"above\": \"500MB\"}");
		return -1;
	}
	if (get_string(c, &f[CK_METRIC], "metric", name, sizeof(name)) < 0)
		return -1;
	if (strncasecmp(name, "meter ", 6) == 0 || strncasecmp(name, "exception ", 10) == 0 ||
	    strcasecmp(name, "exception") == 0) {
		rf_diag(c, K_COND, rf_val_off(c, f[CK_METRIC].node),
		        "a %s condition is written as a string, as in \"when\": \"%s\"",
		        name[0] == 'm' || name[0] == 'M' ? "meter" : "exception",
		        name[0] == 'm' || name[0] == 'M' ? "meter Meter.Name/instrument p99 > 2s for 30s"
		                                         : "exception TimeoutException* >= 3 in 1m");
		return -1;
	}
	if (catalog_resolve(name, &rc.metric, err, sizeof(err)) < 0) {
		rf_diag(c, K_COND, rf_val_off(c, f[CK_METRIC].node), "%s", err);
		return -1;
	}
	if (f[CK_ABOVE].node >= 0 && f[CK_BELOW].node >= 0) {
		int second = f[CK_ABOVE].node > f[CK_BELOW].node ? f[CK_ABOVE].node : f[CK_BELOW].node;
		rf_diag(c, K_ABOVE_BELOW, rf_key_off(c, second),
		        "condition has both \"above\" and \"below\"; give one (two conditions make a range)");
		return -1;
	}
	if (f[CK_ABOVE].node < 0 && f[CK_BELOW].node < 0) {
		rf_diag(c, K_ABOVE_BELOW, rf_val_off(c, node),
		        "condition needs \"above\" or \"below\", as in \"above\": \"%s\"",
		        rule_unit_example(rc.metric.unit));
		return -1;
	}
	vf = f[CK_ABOVE].node >= 0 ? &f[CK_ABOVE] : &f[CK_BELOW];
	vkey = f[CK_ABOVE].node >= 0 ? "above" : "below";
	rc.op = f[CK_ABOVE].node >= 0 ? COND_GT : COND_LT;
	if (json_object_is_type(vf->v, json_type_string)) {
		if (get_string(c, vf, vkey, value, sizeof(value)) < 0)
			return -1;
		if (units_parse_value(value, rc.metric.unit, &rc.threshold, err, sizeof(err)) < 0) {
			rf_diag(c, K_VALUE, rf_val_off(c, vf->node), "\"%s\": %s", vkey, err);
			return -1;
		}
	} else if (json_object_is_type(vf->v, json_type_int) || json_object_is_type(vf->v, json_type_double)) {
		double v = json_object_get_double(vf->v);
		if (rc.metric.unit != UNIT_NONE && rc.metric.unit != UNIT_COUNT) {
			rf_diag(c, K_VALUE, rf_val_off(c, vf->node),
			        "\"%s\" needs a unit for %s: write a string such as \"%s\"", vkey, rc.metric.name,
			        rule_unit_example(rc.metric.unit));
			return -1;
		}
		if (!isfinite(v) || fabs(v) >= 9.2e18 || (rc.metric.unit == UNIT_COUNT && v < 0)) {
			rf_diag(c, K_VALUE, rf_val_off(c, vf->node), "\"%s\" must be a finite%s number", vkey,
			        rc.metric.unit == UNIT_COUNT ? " non-negative" : "");
			return -1;
		}
		rc.threshold = v;
		snprintf(value, sizeof(value), "%.15g", v);
	} else {
		rf_diag(c, K_TYPE, rf_val_off(c, vf->node), "\"%s\" must be a value string such as \"%s\"", vkey,
		        rule_unit_example(rc.metric.unit));
		return -1;
	}
	if (f[CK_FOR].node >= 0) {
		if (get_duration(c, &f[CK_FOR], "for", "10s", &rc.for_ns) < 0)
			return -1;
		snprintf(forv, sizeof(forv), " for %s", json_object_get_string(f[CK_FOR].v));
	}
	if (c->total != before)
		return -1;
	snprintf(rc.text, sizeof(rc.text), "%.*s %s %.*s%.*s", (int)CATALOG_NAME_MAX, rc.metric.name,
	         rc.op == COND_GT ? ">" : "<", 60, value, 64, forv);
	*out = rc;
	return 0;
}

static int parse_cond(struct rf_ctx *c, int node, struct json_object *v, struct rule_cond *out)
{
	char s[RULE_TEXT_MAX + 1], err[RULEFILE_MSG_MAX];
	const char *text;

	if (json_object_is_type(v, json_type_object))
		return parse_cond_object(c, node, v, out);
	if (!json_object_is_type(v, json_type_string)) {
		rf_diag(c, K_TYPE, rf_val_off(c, node),
		        "a condition must be a string such as \"loh-size > 500MB\" or an object with \"metric\"");
		return -1;
	}
	text = json_object_get_string(v);
	/* rule_cond_parse refuses text of RULE_TEXT_MAX or more; copy just past it. */
	snprintf(s, sizeof(s), "%s", text);
	if (rule_cond_parse(s, out, err, sizeof(err)) < 0) {
		rf_diag(c, K_COND, rf_val_off(c, node), "%s", err);
		return -1;
	}
	return 0;
}

static void parse_when(struct rf_ctx *c, const struct rf_field *f, struct rule *r)
{
	if (!json_object_is_type(f->v, json_type_array)) {
		if (parse_cond(c, f->node, f->v, &r->conds[0]) == 0)
			r->n_conds = 1;
		return;
	}
	size_t n = json_object_array_length(f->v), i = 0;
	if (n == 0) {
		rf_diag(c, K_MISSING, rf_val_off(c, f->node), "\"when\" is empty; give at least one condition");
		return;
	}
	if (n > RULE_MAX_CONDS) {
		rf_diag(c, K_LIMIT, rf_val_off(c, f->node), "\"when\" has %zu conditions; a rule takes at most %d", n,
		        RULE_MAX_CONDS);
		return;
	}
	for (int ch = c->jp.nodes[f->node].first_child; ch >= 0 && i < n; ch = c->jp.nodes[ch].next_sibling, i++)
		if (parse_cond(c, ch, json_object_array_get_idx(f->v, i), &r->conds[r->n_conds]) == 0)
			r->n_conds++;
}

/* ---- rule parts -------------------------------------------------------- */

static const char *const process_keys[] = {"name", "cmdline", "user", "pid", NULL};
static const char *const dump_keys[] = {"type", "dir", "name", "heap-summary", NULL};
static const char *const limits_keys[] = {"max-dumps", "window", "cooldown", NULL};
static const char *const hooks_keys[] = {"on-fire", "on-dump", "timeout", NULL};
static const char *const upload_keys[] = {"prefix", "keep-local", NULL};

static void parse_process(struct rf_ctx *c, const struct rf_field *pf, struct rule_filter *flt)
{
	struct rf_field f[4];

	if (!is_object(c, pf, "process"))
		return;
	rf_collect(c, pf->node, pf->v, "process", process_keys, f);
	if (f[0].node >= 0)
		get_string(c, &f[0], "name", flt->name, sizeof(flt->name));
	if (f[1].node >= 0)
		get_string(c, &f[1], "cmdline", flt->cmdline, sizeof(flt->cmdline));
	if (f[2].node >= 0) {
		if (json_object_is_type(f[2].v, json_type_int) && json_object_get_int64(f[2].v) >= 0 &&
		    json_object_get_int64(f[2].v) <= UINT32_MAX - 1) {
			snprintf(flt->user, sizeof(flt->user), "%lld", (long long)json_object_get_int64(f[2].v));
			flt->has_user = 1;
		} else if (!json_object_is_type(f[2].v, json_type_string)) {
			rf_diag(c, K_TYPE, rf_val_off(c, f[2].node), "\"user\" must be a user name or a uid");
		} else if (get_string(c, &f[2], "user", flt->user, sizeof(flt->user)) == 0) {
			if (flt->user[0] == '\0')
				rf_diag(c, K_FILTER, rf_val_off(c, f[2].node),
				        "\"user\" is empty; leave it out to match any user");
			flt->has_user = 1;
		}
	}
	if (f[3].node >= 0) {
		int64_t pid = json_object_get_int64(f[3].v);
		if (!json_object_is_type(f[3].v, json_type_int) || pid <= 0 || pid > INT32_MAX) {
			rf_diag(c, K_TYPE, rf_val_off(c, f[3].node), "\"pid\" must be a positive integer");
		} else {
			flt->pid = (pid_t)pid;
			flt->has_pid = 1;
		}
	}
}

/* Dump file name templates take {name} {pid} {rule} {time} {container} {pod}
 * and no '/'. */
static void check_template(struct rf_ctx *c, int node, const char *t)
{
	static const char *const ph[] = {"{name}", "{pid}", "{rule}", "{time}", "{container}", "{pod}"};
	char q[80];

	for (const char *p = t; *p; p++) {
		if (*p == '/') {
			rf_diag(c, K_TEMPLATE, rf_val_off(c, node), "dump name \"%s\" must be a file name, without '/'",
			        rf_shown(t, q, sizeof(q)));
			return;
		}
		if (*p == '}') {
			rf_diag(c, K_TEMPLATE, rf_val_off(c, node), "dump name \"%s\" has a '}' without its '{'",
			        rf_shown(t, q, sizeof(q)));
			return;
		}
		if (*p != '{')
			continue;
		const char *end = strchr(p, '}');
		size_t k;
		if (!end) {
			rf_diag(c, K_TEMPLATE, rf_val_off(c, node), "dump name \"%s\" has a '{' without its '}'",
			        rf_shown(t, q, sizeof(q)));
			return;
		}
		for (k = 0; k < 6; k++)
			if ((size_t)(end - p + 1) == strlen(ph[k]) && strncmp(p, ph[k], strlen(ph[k])) == 0)
				break;
		if (k == 6) {
			char part[80];
			snprintf(part, sizeof(part), "%.*s", (int)(end - p + 1 > 60 ? 60 : end - p + 1), p);
			rf_diag(
			    c, K_TEMPLATE, rf_val_off(c, node),
			    "dump name: unknown placeholder \"%s\"; use {name}, {pid}, {rule}, {time}, {container} or "
			    "{pod}",
			    rf_shown(part, q, sizeof(q)));
			return;
		}
		p = end;
	}
}

static void parse_dump(struct rf_ctx *c, const struct rf_field *df, struct file_rule *fr)
{
	struct rf_field f[4];
	char s[64], q[80];

	if (!is_object(c, df, "dump"))
		return;
	rf_collect(c, df->node, df->v, "dump", dump_keys, f);
	if (f[0].node >= 0 && get_string(c, &f[0], "type", s, sizeof(s)) == 0 &&
	    rule_dump_type_parse(s, &fr->rule.dump_type) < 0)
		rf_diag(c, K_DUMP, rf_val_off(c, f[0].node),
		        "dump type \"%s\" is not one of normal, withheap, triage, full, gcdump", rf_shown(s, q, sizeof(q)));
	if (f[1].node >= 0 && get_string(c, &f[1], "dir", fr->dump_dir, sizeof(fr->dump_dir)) == 0) {
		jsonpos_line_col(&c->jp, rf_val_off(c, f[1].node), &fr->dump_dir_line, &fr->dump_dir_column);
		if (fr->dump_dir[0] && fr->dump_dir[0] != '/')
			rf_diag(c, K_DUMP, rf_val_off(c, f[1].node),
			        "dump dir \"%s\" must be an absolute path, such as \"/var/lib/dumpwatch/dumps\"",
			        rf_shown(fr->dump_dir, q, sizeof(q)));
	}
	if (f[2].node >= 0 && get_string(c, &f[2], "name", fr->name_template, sizeof(fr->name_template)) == 0)
		check_template(c, f[2].node, fr->name_template);
	if (f[3].node >= 0) {
		if (json_object_is_type(f[3].v, json_type_boolean))
			fr->rule.heap_summary = json_object_get_boolean(f[3].v);
		else
			rf_diag(c, K_TYPE, rf_val_off(c, f[3].node), "\"heap-summary\" must be true or false");
	}
}

static void parse_limits(struct rf_ctx *c, const struct rf_field *lf, struct rule_limits *l)
{
	struct rf_field f[3];

	if (!is_object(c, lf, "limits"))
		return;
	rf_collect(c, lf->node, lf->v, "limits", limits_keys, f);
	if (f[0].node >= 0) {
		int64_t v = json_object_get_int64(f[0].v);
		if (!json_object_is_type(f[0].v, json_type_int) || v < 0 || v > 1000000)
			rf_diag(c, K_TYPE, rf_val_off(c, f[0].node),
			        "\"max-dumps\" must be a non-negative integer (0 = no limit; at most 1000000)");
		else
			l->max_dumps = (uint32_t)v;
	}
	if (f[1].node >= 0)
		get_duration(c, &f[1], "window", "1h", &l->window_ns);
	if (f[2].node >= 0)
		get_duration(c, &f[2], "cooldown", "10m", &l->cooldown_ns);
}

/* A hook command: an array of strings (argv), or one string split into
 * words as a shell would, without expanding anything. */
static void parse_hook_cmd(struct rf_ctx *c, const struct rf_field *f, const char *key, struct hook_cmd *cmd)
{
	char err[256], text[HOOK_ARGV_BYTES];

	if (json_object_is_type(f->v, json_type_string)) {
		if (get_string(c, f, key, text, sizeof(text)) == 0 && hook_cmd_parse(text, cmd, err, sizeof(err)) < 0)
			rf_diag(c, K_HOOK, rf_val_off(c, f->node), "\"%s\": %s", key, err);
		return;
	}
	if (!json_object_is_type(f->v, json_type_array) || json_object_array_length(f->v) == 0) {
		rf_diag(
		    c, K_TYPE, rf_val_off(c, f->node),
		    "\"%s\" must be a command: an array such as [\"/usr/local/bin/notify\", \"--dump\"] or a string",
		    key);
		return;
	}
	memset(cmd, 0, sizeof(*cmd));
	for (size_t i = 0; i < json_object_array_length(f->v); i++) {
		struct json_object *a = json_object_array_get_idx(f->v, i);
		if (!json_object_is_type(a, json_type_string)) {
			rf_diag(c, K_TYPE, rf_val_off(c, f->node), "\"%s\": every word of the command must be a string",
			        key);
			return;
		}
		if (hook_cmd_add(cmd, json_object_get_string(a)) < 0) {
			rf_diag(c, K_HOOK, rf_val_off(c, f->node), "\"%s\" is too long: at most %d words, %d bytes",
			        key, HOOK_ARGS_MAX, HOOK_ARGV_BYTES);
			return;
		}
	}
	if (cmd->buf[0] != '/')
		rf_diag(c, K_HOOK, rf_val_off(c, f->node),
		        "\"%s\": the program must be an absolute path (hooks run without a shell or PATH)", key);
}

static void parse_hooks(struct rf_ctx *c, const struct rf_field *hf, struct file_rule *fr)
{
	struct rf_field f[3];

	if (!is_object(c, hf, "hooks"))
		return;
	rf_collect(c, hf->node, hf->v, "hooks", hooks_keys, f);
	if (f[0].node >= 0)
		parse_hook_cmd(c, &f[0], "on-fire", &fr->on_fire);
	if (f[1].node >= 0)
		parse_hook_cmd(c, &f[1], "on-dump", &fr->on_dump);
	if (f[2].node >= 0 && get_duration(c, &f[2], "timeout", "2m", &fr->hook_timeout_ns) == 0 &&
	    (fr->hook_timeout_ns < DW_NS_PER_SEC || fr->hook_timeout_ns > 24 * 3600 * DW_NS_PER_SEC))
		rf_diag(c, K_HOOK, rf_val_off(c, f[2].node), "hook \"timeout\" must be from 1s to 24h");
}

/* "upload": true, false, or {"prefix": "...", "keep-local": bool}. */
static void parse_upload(struct rf_ctx *c, const struct rf_field *uf, struct file_rule *fr)
{
	struct rf_field f[2];
	char q[80];

	if (json_object_is_type(uf->v, json_type_boolean)) {
		fr->upload = json_object_get_boolean(uf->v);
		return;
	}
	if (!json_object_is_type(uf->v, json_type_object)) {
		rf_diag(c, K_TYPE, rf_val_off(c, uf->node),
		        "\"upload\" must be true, false or an object such as {\"prefix\": \"orders/\", \"keep-local\": "
		        "false}");
		return;
	}
	fr->upload = 1;
	rf_collect(c, uf->node, uf->v, "upload", upload_keys, f);
	if (f[0].node >= 0 && get_string(c, &f[0], "prefix", fr->upload_prefix, sizeof(fr->upload_prefix)) == 0) {
		const char *p = fr->upload_prefix;
		if (p[0] == '/' || strstr(p, "..") ||
		    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/") != strlen(p))
			rf_diag(c, K_UPLOAD, rf_val_off(c, f[0].node),
			        "upload prefix \"%s\" may only hold letters, digits, '.', '_', '-' and '/', not start "
			        "with '/' "
			        "nor hold \"..\"",
			        rf_shown(p, q, sizeof(q)));
	}
	if (f[1].node >= 0) {
		if (json_object_is_type(f[1].v, json_type_boolean))
			fr->upload_keep = json_object_get_boolean(f[1].v);
		else
			rf_diag(c, K_TYPE, rf_val_off(c, f[1].node), "\"keep-local\" must be true or false");
	}
}

static const char *const rule_keys[] = {"name",    "description", "process", "when",    "dump",  "limits",
                                        "enabled", "hooks",       "upload",  "$schema", "rules", NULL};
enum {
	RK_NAME,
	RK_DESC,
	RK_PROCESS,
	RK_WHEN,
	RK_DUMP,
	RK_LIMITS,
	RK_ENABLED,
	RK_HOOKS,
	RK_UPLOAD,
	RK_SCHEMA,
	RK_RULES
};
/* The keys of a {"rules": [...]} file; those of a rule inside it; the keys
 * that mark an object as a rule, or a file as a list of rules. */
const char *const rf_file_keys[] = {"rules", "$schema", NULL};
static const char *const inner_rule_keys[] = {"name",   "description", "process", "when",   "dump",
                                              "limits", "enabled",     "hooks",   "upload", NULL};
static const char *const rule_anchors[] = {"name", "when", NULL};
static const char *const file_anchors[] = {"rules", NULL};

void rf_parse_rule(struct rf_ctx *c, int node, struct json_object *obj, int top, struct file_rule *fr)
{
	/* "rules" is listed only for its suggestion: a rule with it is a container. */
	const char *const *keys = rule_keys;
	struct rf_field f[11];
	char q[80];
	int column;

	memset(fr, 0, sizeof(*fr));
	fr->enabled = 1;
	fr->rule.dump_type = RULE_DEFAULT_DUMP_TYPE;
	fr->rule.limits.max_dumps = DW_DEFAULT_MAX_DUMPS;
	fr->rule.limits.window_ns = DW_DEFAULT_RULE_WINDOW_NS;
	fr->rule.limits.cooldown_ns = DW_DEFAULT_RULE_COOLDOWN_NS;
	fr->upload = -1;
	fr->upload_keep = -1;
	jsonpos_line_col(&c->jp, rf_val_off(c, node), &fr->line, &column); /* the column is not kept */

	if (!top) {
		rf_collect(c, node, obj, "rule", inner_rule_keys, f);
		f[RK_SCHEMA].node = -1;
	} else {
		rf_collect(c, node, obj, "rule", keys, f);
	}
	if (f[RK_NAME].node < 0) {
		rf_diag(c, K_MISSING, rf_val_off(c, node),
		        "rule has no \"name\"; add one such as \"name\": \"loh-balloon\"");
	} else if (get_string(c, &f[RK_NAME], "name", fr->rule.name, sizeof(fr->rule.name)) == 0) {
		const char *n = fr->rule.name;
		jsonpos_line_col(&c->jp, rf_val_off(c, f[RK_NAME].node), &fr->name_line, &fr->name_column);
		if (n[0] == '\0')
			rf_diag(c, K_NAME, rf_val_off(c, f[RK_NAME].node), "rule name is empty");
		else if (strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(n))
			rf_diag(c, K_NAME, rf_val_off(c, f[RK_NAME].node),
			        "rule name \"%s\" may only hold letters, digits, '.', '_' and '-'",
			        rf_shown(n, q, sizeof(q)));
	}
	if (f[RK_DESC].node >= 0)
		get_string(c, &f[RK_DESC], "description", fr->description, sizeof(fr->description));
	if (f[RK_PROCESS].node >= 0)
		parse_process(c, &f[RK_PROCESS], &fr->filter);
	if (f[RK_WHEN].node < 0)
		rf_diag(c, K_MISSING, rf_val_off(c, node),
		        "rule has no \"when\"; add a condition such as \"when\": \"loh-size > 500MB\"");
	else
		parse_when(c, &f[RK_WHEN], &fr->rule);
	if (f[RK_DUMP].node >= 0)
		parse_dump(c, &f[RK_DUMP], fr);
	if (f[RK_LIMITS].node >= 0)
		parse_limits(c, &f[RK_LIMITS], &fr->rule.limits);
	if (f[RK_HOOKS].node >= 0)
		parse_hooks(c, &f[RK_HOOKS], fr);
	if (f[RK_UPLOAD].node >= 0)
		parse_upload(c, &f[RK_UPLOAD], fr);
	if (f[RK_ENABLED].node >= 0) {
		if (json_object_is_type(f[RK_ENABLED].v, json_type_boolean))
			fr->enabled = json_object_get_boolean(f[RK_ENABLED].v);
		else
			rf_diag(c, K_TYPE, rf_val_off(c, f[RK_ENABLED].node), "\"enabled\" must be true or false");
	}
	if (f[RK_SCHEMA].node >= 0 && !json_object_is_type(f[RK_SCHEMA].v, json_type_string))
		rf_diag(c, K_TYPE, rf_val_off(c, f[RK_SCHEMA].node), "\"$schema\" must be a string");
}

/* ---- is it a rule file? ----------------------------------------------- */

/* Whether the object at node looks like what keys describe: it has one of
 * the anchors, and more than half of its keys are keys or close misses of one.
 * Decides whether messages may quote the file (see rulefile.h): a file that
 * is not a rule file (some other JSON a link leads to) has few of our keys. */
static int looks_like(struct rf_ctx *c, int node, const char *const *keys, const char *const *anchors)
{
	char k[JSONPOS_KEY_MAX];
	size_t total = 0, known = 0;
	int anchored = 0;

	for (int ch = c->jp.nodes[node].first_child; ch >= 0; ch = c->jp.nodes[ch].next_sibling) {
		size_t i;
		total++;
		if (jsonpos_decode_string(&c->jp, c->jp.nodes[ch].key_off, k, sizeof(k)) < 0)
			continue;
		for (i = 0; anchors[i]; i++)
			anchored |= strcmp(k, anchors[i]) == 0;
		for (i = 0; keys[i] && strcmp(k, keys[i]) != 0; i++)
			;
		if (keys[i] || rf_near_key(k, keys, 1) >= 0)
			known++;
	}
	return anchored && known * 2 > total;
}

int rf_is_rule_file(struct rf_ctx *c, int listed)
{
	static const char msg[] = "this does not look like a rule file (a rule object with \"name\" and \"when\", or "
	                          "{\"rules\": [rule, ...]}), so nothing of it is shown";
	int rules_node;

	if (!looks_like(c, 0, listed ? rf_file_keys : rule_keys, listed ? file_anchors : rule_anchors)) {
		rf_diag(c, K_NOT_RULES, rf_val_off(c, 0), "%s", msg);
		return 0;
	}
	rules_node = listed ? jsonpos_member(&c->jp, 0, "rules") : -1;
	if (rules_node < 0 || c->jp.text[c->jp.nodes[rules_node].val_off] != '[')
		return 1;
	for (int ch = c->jp.nodes[rules_node].first_child; ch >= 0; ch = c->jp.nodes[ch].next_sibling)
		if (c->jp.text[c->jp.nodes[ch].val_off] == '{' && !looks_like(c, ch, inner_rule_keys, rule_anchors)) {
			rf_diag(c, K_NOT_RULES, rf_val_off(c, ch), "%s", msg);
			return 0;
		}
	return 1;
}
