/* Rule files: JSON text in, validated rules (or positioned diagnostics) out;
 * the format is rulefile_schema.c's (and README "Rule files"). This file
 * holds the file as a whole: its bounds (size, NUL bytes, nesting, number of
 * values and rules), json-c's parse, the positions (jsonpos.h), whether it is
 * a rule file at all, its top level and its rules' names being unique; and
 * after the parse, the checks and matches the daemon makes with the rules
 * (dump directories, process filters).
 *
 * Design: json-c parses (strict mode, UTF-8 validated) but keeps no positions,
 * so a small scanner (jsonpos.c) walks the same text once and builds a tree
 * of nodes with the byte offset of every key and value in document order
 * (node i's path is its chain of parents: rules[1].limits.cooldown). The
 * validator walks the scanner's tree and json-c's objects side by side, so
 * every message carries the line:column of the key or value it is about. */
#include "rulefile_shared.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/trust.h"

/* Parses and validates; returns the number of rules in *ret, or -1 after
 * diagnostics (or -ENOMEM). */
static int parse_text(struct rf_ctx *c, struct file_rule **ret)
{
	struct json_tokener *tok;
	struct json_object *root = NULL, *rules = NULL;
	struct file_rule *out = NULL;
	size_t n = 0, off;
	int rules_node = -1, r;
	const char *nul;

	if (c->jp.len > RULEFILE_SIZE_MAX) {
		rf_diag(c, K_LIMIT, JSONPOS_NONE, "the file is too large (%zu bytes; a rule file may have at most %d)",
		        c->jp.len, RULEFILE_SIZE_MAX);
		return -1;
	}
	if (jsonpos_skip_ws(c->jp.text, c->jp.len, 0) == c->jp.len) {
		rf_diag(c, K_SYNTAX, JSONPOS_NONE,
		        "the file is empty; it must hold a rule object or {\"rules\": [...]}");
		return -1;
	}
	nul = memchr(c->jp.text, '\0', c->jp.len);
	if (nul) {
		rf_diag(c, K_SYNTAX, (uint32_t)(nul - c->jp.text), "invalid JSON: a NUL byte");
		return -1;
	}
	/* json-c counts every value on its stack, scalars too, and refuses more
	 * than max_depth; RULEFILE_DEPTH_MAX containers and a scalar in the
	 * innermost make RULEFILE_DEPTH_MAX + 1. Deeper nesting is reported at the
	 * bracket that opens the level too many (jsonpos_too_deep), as the scanner
	 * does. */
	tok = json_tokener_new_ex(RULEFILE_DEPTH_MAX + 1);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, c->jp.text, (int)c->jp.len);
	if (!root) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		off = json_tokener_get_parse_end(tok);
		if (e == json_tokener_continue)
			rf_diag(c, K_SYNTAX, (uint32_t)c->jp.len, "invalid JSON: unexpected end of file");
		else if (e == json_tokener_error_depth)
			rf_diag(c, K_LIMIT, jsonpos_too_deep(c->jp.text, off, RULEFILE_DEPTH_MAX),
			        "nesting is too deep (at most %d levels)", RULEFILE_DEPTH_MAX);
		else
			rf_diag(c, K_SYNTAX, (uint32_t)off, "invalid JSON: %s", json_tokener_error_desc(e));
		json_tokener_free(tok);
		return -1;
	}
	json_tokener_free(tok);
	r = jsonpos_scan(&c->jp, RULEFILE_DEPTH_MAX, &off);
	if (r == -EINVAL) {
		rf_diag(c, K_SYNTAX, (uint32_t)off,
		        c->jp.text[off < c->jp.len ? off : 0] == '\'' ? "invalid JSON: strings must be in double quotes"
		                                                      : "invalid JSON: unexpected character");
		goto fail;
	}
	if (r == -ELOOP) {
		rf_diag(c, K_LIMIT, (uint32_t)off, "nesting is too deep (at most %d levels)", RULEFILE_DEPTH_MAX);
		goto fail;
	}
	if (r == -E2BIG) {
		rf_diag(c, K_LIMIT, JSONPOS_NONE, "the file has too many values (at most %d)", JSONPOS_NODES_MAX);
		goto fail;
	}
	if (r < 0)
		goto oom;

	if (!json_object_is_type(root, json_type_object)) {
		rf_diag(c, K_TYPE, rf_val_off(c, 0), "a rule file must hold a rule object or {\"rules\": [...]}");
		goto fail;
	}
	if (!rf_is_rule_file(c, json_object_object_get_ex(root, "rules", NULL)))
		goto fail;
	if (json_object_object_get_ex(root, "rules", &rules)) {
		struct rf_field f[2];
		rf_collect(c, 0, root, "rule file", rf_file_keys, f);
		if (f[RF_FILE_SCHEMA].node >= 0 && !json_object_is_type(f[RF_FILE_SCHEMA].v, json_type_string))
			rf_diag(c, K_TYPE, rf_val_off(c, f[RF_FILE_SCHEMA].node), "\"$schema\" must be a string");
		rules_node = f[RF_FILE_RULES].node;
		if (rules_node < 0)
			goto fail; /* reported as a repeated key */
		if (!json_object_is_type(rules, json_type_array)) {
			rf_diag(c, K_TYPE, rf_val_off(c, rules_node), "\"rules\" must be an array of rule objects");
			goto fail;
		}
		n = json_object_array_length(rules);
		if (n > RULEFILE_RULES_MAX) {
			rf_diag(c, K_LIMIT, rf_val_off(c, rules_node), "the file has %zu rules; at most %d are allowed",
			        n, RULEFILE_RULES_MAX);
			goto fail;
		}
	} else {
		n = 1;
	}
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		goto oom;
	if (rules_node < 0) {
		rf_parse_rule(c, 0, root, 1, &out[0]);
	} else {
		size_t i = 0;
		for (int ch = c->jp.nodes[rules_node].first_child; ch >= 0 && i < n;
		     ch = c->jp.nodes[ch].next_sibling, i++) {
			struct json_object *o = json_object_array_get_idx(rules, i);
			if (!json_object_is_type(o, json_type_object))
				rf_diag(c, K_TYPE, rf_val_off(c, ch), "each entry of \"rules\" must be a rule object");
			else
				rf_parse_rule(c, ch, o, 0, &out[i]);
		}
	}
	/* Names are unique within a file (they name dump files and journal lines). */
	for (size_t i = 1; i < n; i++) {
		if (!out[i].rule.name[0] || !out[i].name_line)
			continue;
		for (size_t j = 0; j < i; j++)
			if (out[j].name_line && strcmp(out[i].rule.name, out[j].rule.name) == 0) {
				char q[80];
				int ch = c->jp.nodes[rules_node].first_child;
				for (size_t k = 0; k < i && ch >= 0; k++)
					ch = c->jp.nodes[ch].next_sibling;
				struct rf_field nf;
				nf.node = -1;
				for (int m = ch >= 0 ? c->jp.nodes[ch].first_child : -1; m >= 0;
				     m = c->jp.nodes[m].next_sibling) {
					char key[8];
					if (jsonpos_decode_string(&c->jp, c->jp.nodes[m].key_off, key, sizeof(key)) ==
					        0 &&
					    strcmp(key, "name") == 0)
						nf.node = m;
				}
				rf_diag(c, K_DUP_NAME, rf_val_off(c, nf.node),
				        "rule name \"%s\" is also defined at %d:%d",
				        rf_shown(out[i].rule.name, q, sizeof(q)), out[j].name_line, out[j].name_column);
				break;
			}
	}
	if (c->total)
		goto fail;
	json_object_put(root);
	*ret = out;
	return (int)n;
oom:
	json_object_put(root);
	free(out);
	return -ENOMEM;
fail:
	json_object_put(root);
	free(out);
	return -1;
}

int rulefile_parse(const char *text, size_t len, struct file_rule **ret, struct rule_diag *diags, size_t max_diags,
                   size_t *ret_ndiags)
{
	struct rf_ctx c;
	enum rf_diag_kind kinds_small[64], *kinds = kinds_small;
	int r;

	*ret = NULL;
	if (ret_ndiags)
		*ret_ndiags = 0;
	if (!diags)
		max_diags = 0;
	if (max_diags > 64) {
		kinds = calloc(max_diags, sizeof(*kinds));
		if (!kinds)
			return -ENOMEM;
	}
	memset(&c, 0, sizeof(c));
	jsonpos_init(&c.jp, text ? text : "", text ? len : 0);
	c.diags = diags;
	c.kinds = kinds;
	c.max = max_diags;
	r = parse_text(&c, ret);
	jsonpos_free(&c.jp);
	if (kinds != kinds_small)
		free(kinds);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		rf_diag_sort(diags, c.n);
		if (ret_ndiags)
			*ret_ndiags = c.n;
		return -EINVAL;
	}
	return r;
}

int rulefile_check_dump_dirs(const struct file_rule *rules, size_t n, const char *const *dirs, size_t n_dirs,
                             struct rule_diag *diags, size_t max_diags, size_t *ret_ndiags)
{
	char norm[PATH_MAX], list[320], q[80];
	size_t nd = 0, bad = 0, l = 0;

	if (ret_ndiags)
		*ret_ndiags = 0;
	if (n_dirs == 0)
		return 0;
	list[0] = '\0';
	for (size_t i = 0; i < n_dirs; i++) {
		size_t need = strlen(dirs[i]) + (i ? 2 : 0);
		if (l + need + 5 >= sizeof(list)) {
			snprintf(list + l, sizeof(list) - l, ", ...");
			break;
		}
		l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", dirs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct file_rule *r = &rules[i];
		size_t k = 0;
		int e;

		if (!r->dump_dir[0])
			continue;
		e = trust_path_normalize(r->dump_dir, norm, sizeof(norm));
		for (k = 0; e == 0 && k < n_dirs; k++)
			if (trust_path_within(norm, dirs[k]))
				break;
		if (e == 0 && k < n_dirs)
			continue;
		bad++;
		if (nd >= max_diags || !diags)
			continue;
		diags[nd].line = r->dump_dir_line;
		diags[nd].column = r->dump_dir_column;
		if (e == -EINVAL)
			snprintf(diags[nd].message, sizeof(diags[nd].message),
			         "dump dir \"%s\" has a \"..\" component; write the directory it means",
			         rf_shown(r->dump_dir, q, sizeof(q)));
		else
			snprintf(
			    diags[nd].message, sizeof(diags[nd].message),
			    "dump dir \"%s\" is not inside an allowed dump directory (%s): dumps go only below the "
			    "daemon's --dump-dir and its --allow-dump-dir directories",
			    rf_shown(r->dump_dir, q, sizeof(q)), list);
		nd++;
	}
	if (ret_ndiags)
		*ret_ndiags = nd;
	return bad ? -EINVAL : 0;
}

int rulefile_filter_match(const struct rule_filter *f, const char *name, const char *cmdline, pid_t pid, uid_t uid,
                          long uid_of_user)
{
	if (f->name[0] && (!name || fnmatch(f->name, name, 0) != 0))
		return 0;
	if (f->cmdline[0] && (!cmdline || fnmatch(f->cmdline, cmdline, 0) != 0))
		return 0;
	if (f->has_pid && f->pid != pid)
		return 0;
	if (f->has_user) {
		const char *u = f->user;
		if (u[0] && strspn(u, "0123456789") == strlen(u)) {
			/* A decimal uid; at most 10 digits fit in uid_t. */
			if (strlen(u) > 10 || strtoull(u, NULL, 10) != (unsigned long long)uid)
				return 0;
		} else if (uid_of_user < 0 || (unsigned long long)uid_of_user != (unsigned long long)uid) {
			return 0;
		}
	}
	return 1;
}
